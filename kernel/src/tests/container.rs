//! Container IPC (seed 004): every mode through a box, the direct
//! operations, SWAP as a real page exchange, empty-container management,
//! rights, and no leaks.

use super::{end, live, ok};
use abi::{ContainerMode as M, Error, SpawnOptions};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::frames;
use kcore::mm::layout::PAGE_SIZE;
use resource::mediator;
use resource::{self, ResId, container, container_box};

/// A container's memory in its process: the space and where it lies.
fn memory_of(id: ResId) -> Result<(resource::vspace::SpaceRef, u64, usize), String> {
    let (pid, link, _, _) = container::in_process(id).map_err(|e| format!("{e:?}"))?;
    let space = proc::get(pid).and_then(|p| p.space()).ok_or("no space")?;
    let (base, pages) = {
        let s = space.lock();
        let a = s.regions().find(|a| a.link_id == link).ok_or("not attached")?;
        (a.base, a.region.pages())
    };
    Ok((space, base, pages))
}

/// The frames behind a process's container (a move must keep them).
fn frames_of(id: ResId) -> Result<Vec<u64>, String> {
    let (space, base, _) = memory_of(id)?;
    let s = space.lock();
    let a = s.regions().find(|a| a.base == base).ok_or("not attached")?;
    Ok(a.region.frames().to_vec())
}

/// Writes `tag + i` into the first word of page `i`, through the process's
/// own page tables.
fn fill(id: ResId, tag: u64) -> Result<(), String> {
    let (space, base, pages) = memory_of(id)?;
    let mut s = space.lock();
    for i in 0..pages {
        s.copy_in(base + i as u64 * 4096, &(tag + i as u64).to_le_bytes())
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

fn holds(id: ResId, tag: u64) -> Result<bool, String> {
    let (space, base, pages) = memory_of(id)?;
    let mut s = space.lock();
    for i in 0..pages {
        let mut w = [0u8; 8];
        s.copy_out(base + i as u64 * 4096, &mut w)
            .map_err(|e| format!("{e:?}"))?;
        if u64::from_le_bytes(w) != tag + i as u64 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A resource's description, as the kernel sees it.
fn info(id: ResId) -> Result<abi::ResInfo, String> {
    ok(mediator::query(KERNEL_PID, id))
}

/// Moves an ICA the system call's way: for process `me` itself.
fn move_for(me: &proc::Process, container: ResId, target: u64) -> Result<u64, Error> {
    container::move_for(me, container, target, 0)
}

pub fn every_mode_carries_data_through_a_box() -> TestResult {
    let (a, b) = (live()?, live()?);
    let before_copied = container::stats().bytes_copied;
    for pages in [1u64, 16, 512] {
        let bx = ok(container_box::create(a, pages, 1, 1, 4, 0))?;
        ok(container_box::grant(a, bx, b, abi::BOX_RECEIVE))?;
        for (n, mode) in [M::Copy, M::Share, M::Move, M::Swap].into_iter().enumerate() {
            let tag = 0x1000 * (n as u64 + 1) + pages;
            let c = ok(container::create(a, pages, 0))?;
            fill(c, tag)?;
            let copied = container::stats().bytes_copied;
            let mine = if mode == M::Swap {
                let r = ok(container::create(b, pages, 0))?;
                fill(r, 0xbbbb)?;
                r
            } else {
                ResId::NONE
            };
            ok(container_box::send(a, c, bx, 0, mode))?;
            let got = ok(container_box::receive(
                b,
                container_box::Receive::new(bx, mine, mode).waiting(1_000_000),
            ))?
            .id;
            ensure!(
                holds(got, tag)?,
                "{mode:?} {pages} pages: the receiver does not see the sender's data"
            );
            match mode {
                M::Share => {
                    fill(got, 0x7777)?;
                    ensure!(holds(c, 0x7777)?, "SHARE: a later write is not seen by the sender");
                }
                M::Move => ensure!(
                    container::in_process(c).is_err(),
                    "MOVE: the sender still has the container"
                ),
                M::Swap => {
                    ensure!(container::stats().bytes_copied == copied, "SWAP copied bytes");
                    ensure!(!holds(c, tag)?, "SWAP: the sender kept its data");
                }
                M::Copy => ensure!(holds(c, tag)?, "COPY: the sender lost its data"),
            }
            for id in [c, got] {
                if container::in_process(id).is_ok() {
                    resource::container::destroy(id).map_err(|e| format!("{e:?}"))?;
                }
            }
        }
        ok(mediator::delete(a, bx))?;
    }
    ensure!(container::stats().bytes_copied > before_copied, "COPY copied nothing");
    end(a);
    end(b);
    Ok(())
}

pub fn move_takes_the_mapping_away() -> TestResult {
    // A user program that sends its container by MOVE and then touches it
    // must be killed by the page fault.
    let pid = resource::proc::spawn::spawn("cttouch", &[], &SpawnOptions::DEFAULT, KERNEL_PID)
        .map_err(|e| format!("{e:?}"))?;
    let status = proc::wait(KERNEL_PID, pid);
    ensure!(
        status == Ok(abi::KILLED_STATUS),
        "touching a moved container ended with {status:?}"
    );
    Ok(())
}

pub fn push_steal_and_exchange() -> TestResult {
    let (a, b, stranger) = (live()?, live()?, live()?);
    ok(proc::get(b).ok_or("gone")?.grant_peer(a))?;
    let new = |pid: u64, tag: u64| -> Result<ResId, String> {
        let c = ok(container::create(pid, 4, 0))?;
        fill(c, tag)?;
        Ok(c)
    };
    for mode in [M::Copy, M::Share, M::Move] {
        let c = new(a, 0x100)?;
        let pushed = ok(container::push(a, c, b, 0, mode))?;
        ensure!(
            container::in_process(pushed).map(|x| x.0) == Ok(b) && holds(pushed, 0x100)?,
            "push {mode:?} failed"
        );
        let t = new(b, 0x200)?;
        let stolen = ok(container::steal(a, t, b, 0, mode))?;
        ensure!(
            container::in_process(stolen).map(|x| x.0) == Ok(a) && holds(stolen, 0x200)?,
            "steal {mode:?} failed"
        );
        ensure!(
            (mode == M::Move) == container::in_process(t).is_err(),
            "steal {mode:?}: the target's container"
        );
    }
    let mine = new(a, 0x300)?;
    let theirs = new(b, 0x400)?;
    let copied = container::stats().bytes_copied;
    ok(container::exchange(a, mine, b, theirs))?;
    ensure!(
        holds(mine, 0x400)? && holds(theirs, 0x300)?,
        "exchange did not swap the contents"
    );
    ensure!(container::stats().bytes_copied == copied, "exchange copied bytes");
    // Rights: a stranger may do none of it, and nothing of the target changes.
    let regions = resource::counts();
    let s = new(stranger, 0x500)?;
    let after_new = resource::counts();
    let denied = [
        ("push", container::push(stranger, s, b, 0, M::Copy).err()),
        ("steal", container::steal(stranger, theirs, b, 0, M::Move).err()),
        ("exchange", container::exchange(stranger, s, b, theirs).err()),
    ];
    for (o, e) in denied {
        ensure!(e == Some(Error::Denied), "a {o} by a stranger was allowed");
    }
    ensure!(holds(theirs, 0x300)?, "a denied operation changed the target");
    ensure!(
        resource::counts() == after_new && after_new != regions,
        "a denied operation changed the resources"
    );
    for pid in [a, b, stranger] {
        end(pid);
    }
    Ok(())
}

pub fn box_rights_are_checked() -> TestResult {
    let (a, stranger) = (live()?, live()?);
    let bx = ok(container_box::create(a, 1, 2, 1, 4, 0))?;
    let c = ok(container::create(stranger, 1, 0))?;
    let census = container_box::census(bx, 1);
    ensure!(
        container_box::send(stranger, c, bx, 0, M::Swap).err() == Some(Error::Denied),
        "send allowed"
    );
    ensure!(
        container_box::receive(stranger, container_box::Receive::new(bx, c, M::Swap)).err() == Some(Error::Denied),
        "receive allowed"
    );
    ensure!(
        mediator::delete(stranger, bx).err() == Some(Error::Denied),
        "a stranger deleted the box"
    );
    ensure!(
        container_box::census(bx, 1) == census && container::in_process(c).is_ok(),
        "a denied operation changed something"
    );
    ok(container_box::grant(a, bx, stranger, abi::BOX_SEND))?;
    ok(container_box::send(stranger, c, bx, 0, M::Swap))?;
    // Nothing to receive from an empty queue: the timeout ends the wait.
    ok(container_box::receive(
        a,
        container_box::Receive::new(bx, ResId::NONE, M::Move),
    ))?;
    ensure!(
        container_box::receive(
            a,
            container_box::Receive::new(bx, ResId::NONE, M::Move).waiting(2_000_000)
        )
        .is_err(),
        "a receive from an empty box succeeded"
    );
    ok(mediator::delete(a, bx))?;
    end(a);
    end(stranger);
    Ok(())
}

pub fn empty_containers_follow_the_bounds() -> TestResult {
    let (a, b) = (live()?, live()?);
    let bx = ok(container_box::create(a, 2, 3, 2, 4, 0))?;
    ok(container_box::grant(a, bx, b, abi::BOX_RECEIVE))?;
    ensure!(
        container_box::census(bx, 2) == Some((3, 0)),
        "initial empties: {:?}",
        container_box::census(bx, 2)
    );
    let c = ok(container::create(a, 2, 0))?;
    let r = ok(container::create(b, 2, 0))?;
    for i in 0..5 {
        ok(container_box::send(a, c, bx, 0, M::Swap))?;
        let (e, f) = container_box::census(bx, 2).ok_or("no box")?;
        ensure!(e >= 2 && f == i + 1, "after send {i}: {e} empty, {f} filled");
    }
    for i in 0..5 {
        ok(container_box::receive(b, container_box::Receive::new(bx, r, M::Swap)))?;
        let (e, _) = container_box::census(bx, 2).ok_or("no box")?;
        ensure!(e <= 4, "after receive {i}: {e} empty containers, upper bound 4");
    }
    let live_containers = resource::of(resource::Kind::Container).count();
    ok(mediator::delete(a, bx))?;
    ensure!(
        resource::of(resource::Kind::Container).count() < live_containers,
        "deleting the box kept its containers"
    );
    end(a);
    end(b);
    Ok(())
}

pub fn concurrent_swap_traffic_on_several_cpus() -> TestResult {
    let cpus = kcore::cpu::online_count() as u64;
    let o = |cpu: u64| SpawnOptions {
        cpu: cpu % cpus,
        ..SpawnOptions::DEFAULT
    };
    // ctpingpong makes the box, grants everyone, and runs 2 senders and 2
    // receivers on different CPUs; it exits 0 if every container arrived whole.
    let pid = resource::proc::spawn::spawn("ctpingpong", b"200\0", &o(0), KERNEL_PID).map_err(|e| format!("{e:?}"))?;
    let status = proc::wait(KERNEL_PID, pid);
    ensure!(status == Ok(0), "ctpingpong ended with {status:?}");
    Ok(())
}

pub fn ica_moves_without_copying() -> TestResult {
    let (a, b) = (live()?, live()?);
    ok(proc::get(b).ok_or("gone")?.grant_peer(abi::ANY_PID))?;
    let ica = ok(container::create_ica(a, 8))?;
    let frames_before = frames_of(ica)?;
    ensure!(
        frames_before.windows(2).all(|w| w[1] == w[0] + PAGE_SIZE),
        "ICA pages are not contiguous"
    );
    fill(ica, 0x1ca)?;
    let (_, _, old_base, _) = container::in_process(ica).map_err(|e| format!("{e:?}"))?;
    let copied = container::stats().bytes_copied;
    let new_base = ok(container::move_ica(a, ica, b, 0))?;
    ensure!(
        container::in_process(ica).map(|x| (x.0, x.2)) == Ok((b, new_base)),
        "the ICA is not in the target"
    );
    ensure!(
        frames_of(ica)? == frames_before && holds(ica, 0x1ca)?,
        "the ICA's pages changed"
    );
    ensure!(container::stats().bytes_copied == copied, "moving the ICA copied bytes");
    let root_a = proc::get(a).ok_or("gone")?.root();
    ensure!(
        kcore::mm::paging::translate(root_a, old_base).is_none(),
        "the sender still maps the ICA"
    );
    // Only the owner moves it, and only to a process that accepts it.
    ensure!(
        container::move_ica(a, ica, a, 0).err() == Some(Error::Denied),
        "a non-owner moved the ICA"
    );
    end(a);
    end(b);
    Ok(())
}

/// The system call's way (`invoke_for` with the calling process at
/// hand, which keeps its last target): the same errors as the general way,
/// one-page ICAs lose their sender's mapping, the records follow, and a
/// kept target that ended is refused.
pub fn ica_move_by_the_system_call_path() -> TestResult {
    let (a, b) = (live()?, live()?);
    let (pa, pb) = (proc::get(a).ok_or("gone")?, proc::get(b).ok_or("gone")?);
    ok(pb.grant_peer(abi::ANY_PID))?;
    let ica = ok(container::create_ica(a, 1))?;
    let ica2 = ok(container::create_ica(a, 1))?;
    fill(ica, 0x5ca11)?;
    let (_, link, old_base, _) = container::in_process(ica).map_err(|e| format!("{e:?}"))?;
    ensure!(
        move_for(&pa, ica, u64::MAX - 1) == Err(Error::NotFound),
        "a move to no process"
    );
    ensure!(
        move_for(&pa, ica, a) == Err(Error::Invalid),
        "a move to the owner itself"
    );
    ensure!(
        move_for(&pb, ica, a) == Err(Error::Denied),
        "a move of another process's ICA"
    );
    ensure!(
        move_for(&pa, ResId::NONE, b) == Err(Error::Invalid),
        "a move of no container"
    );
    // Twice to the same target: the second through the kept reference.
    let base = move_for(&pa, ica, b).map_err(|e| format!("{e:?}"))?;
    let base2 = move_for(&pa, ica2, b).map_err(|e| format!("{e:?}"))?;
    ensure!(base != base2, "two ICAs at one address");
    ensure!(
        kcore::mm::paging::translate(pa.root(), old_base).is_none(),
        "the sender still maps the ICA"
    );
    let frame = frames_of(ica)?[0];
    ensure!(
        kcore::mm::paging::translate(pb.root(), base).map(|(f, _)| f) == Some(frame),
        "the target does not map the ICA"
    );
    ensure!(holds(ica, 0x5ca11)?, "the ICA's content changed");
    let (l, c) = (info(link)?, info(ica)?);
    ensure!(
        l.owner == b && l.value == base && l.links[0] == pb.space_id().raw(),
        "the attachment's record did not follow the move"
    );
    let r = info(ResId::from_raw(c.links[0]))?;
    ensure!(
        r.owner == b && r.links[0] == pb.space_id().raw() && r.links[1] == link.raw(),
        "the region's record did not follow the move"
    );
    // And back again, by the target (now the owner), once `a` accepts it.
    ensure!(
        move_for(&pb, ica, a) == Err(Error::Denied),
        "a move to a process that did not grant it"
    );
    ok(pa.grant_peer(b))?;
    move_for(&pb, ica, a).map_err(|e| format!("{e:?}"))?;
    ensure!(
        container::in_process(ica).map(|x| x.0) == Ok(a) && holds(ica, 0x5ca11)?,
        "the ICA did not come back"
    );
    // A kept target that has ended is refused, and nothing is lost.
    end(b);
    ensure!(
        move_for(&pa, ica, b) == Err(Error::NotFound),
        "a move to an ended process"
    );
    ensure!(
        container::in_process(ica).map(|x| x.0) == Ok(a) && holds(ica, 0x5ca11)?,
        "a refused move changed the ICA"
    );
    end(a);
    Ok(())
}

/// A container holds its attachment and region: their records are the
/// kernel's (no process deletes them), they say where the container is
/// now (read through it), and they go with the container when the process
/// that has it ends, leaving nothing behind (not even its space held by
/// the process that moved the container to it).
pub fn container_records_are_held() -> TestResult {
    // The counts below include what the pool keeps of the two processes:
    // a reduce pass in CPU 0's idle time (while this waits) would take
    // their pooled spaces apart and change them.
    let settings = resource::pool::settings();
    resource::pool::set(resource::pool::Settings {
        reduce: false,
        ..settings.clone()
    });
    let held = records_held_with_their_container();
    resource::pool::set(settings);
    held
}

fn records_held_with_their_container() -> TestResult {
    let (a, b) = (live()?, live()?);
    ok(proc::get(b).ok_or("gone")?.grant_peer(abi::ANY_PID))?;
    kcore::computation::reap_all();
    let before = resource::counts();
    let ica = ok(container::create_ica(a, 1))?;
    let c = info(ica)?;
    let (region, link) = (ResId::from_raw(c.links[0]), ResId::from_raw(c.links[1]));
    for id in [link, region] {
        ensure!(
            mediator::delete(a, id).err() == Some(Error::Denied),
            "the process deleted its container's {id:?}"
        );
    }
    ensure!(
        mediator::delete(KERNEL_PID, link).err() == Some(Error::Busy),
        "the kernel deleted a held attachment without its container"
    );
    let (pa, pb) = (proc::get(a).ok_or("gone")?, proc::get(b).ok_or("gone")?);
    let l = info(link)?;
    ensure!(
        l.owner == a && l.links[0] == pa.space_id().raw() && l.links[2] == ica.raw(),
        "the attachment's record does not say where the container is"
    );
    let base = move_for(&pa, ica, b).map_err(|e| format!("{e:?}"))?;
    let (l, r) = (info(link)?, info(region)?);
    ensure!(
        l.owner == b && l.value == base && l.links[0] == pb.space_id().raw(),
        "the attachment's record did not follow the move"
    );
    ensure!(
        r.owner == b && r.links == [pb.space_id().raw(), link.raw(), ica.raw()],
        "the region's record did not follow the move"
    );
    let b_space = pb.space_id();
    drop((pa, pb));
    // The holder ending takes the container and its records with it, and
    // its space is free to go although the sender still knows the holder.
    end(b);
    kcore::computation::reap_all();
    ensure!(
        info(ica).is_err() && info(link).is_err() && info(region).is_err(),
        "the container or its records outlived their process"
    );
    if let Ok(s) = resource::vspace::get(resource::KERNEL, b_space) {
        ensure!(
            alloc::sync::Arc::strong_count(&s) == 2,
            "the ended holder's space is still held ({} references)",
            alloc::sync::Arc::strong_count(&s)
        );
    }
    end(a);
    kcore::computation::reap_all();
    // The processes' own parts go to the pool: only the container's kinds
    // are compared.
    let held = |c: [(resource::Kind, usize); resource::Kind::ALL.len()]| {
        c.into_iter()
            .filter(|(k, _)| {
                matches!(
                    k,
                    resource::Kind::Container | resource::Kind::VirtualRegion | resource::Kind::VirtualUserSpace
                )
            })
            .collect::<Vec<_>>()
    };
    let (before, after) = (held(before), held(resource::counts()));
    ensure!(after == before, "{before:?} before, {after:?} after");
    Ok(())
}

/// ICA moves racing with exits on several CPUs (`icastorm`): workers move
/// ICAs to the parent and to each other while the parent kills them one
/// by one. Every container ends with its holder: none stays behind.
pub fn ica_moves_race_with_exits() -> TestResult {
    kcore::computation::reap_all();
    let before = resource::of(resource::Kind::Container).count();
    let args = [b"4\0".as_slice(), b"4000\0"].concat();
    let pid = resource::proc::spawn::spawn("icastorm", &args, &SpawnOptions::DEFAULT, KERNEL_PID)
        .map_err(|e| format!("{e:?}"))?;
    let status = proc::wait(KERNEL_PID, pid).map_err(|e| format!("{e:?}"))?;
    ensure!(status == 0, "icastorm exited with {status:#x}");
    kcore::computation::reap_all();
    ensure!(
        resource::of(resource::Kind::Container).count() == before,
        "{before} containers before, {} after",
        resource::of(resource::Kind::Container).count()
    );
    Ok(())
}

pub fn container_ipc_leaks_nothing() -> TestResult {
    let round = || -> TestResult {
        every_mode_carries_data_through_a_box()?;
        push_steal_and_exchange()?;
        empty_containers_follow_the_bounds()?;
        resource::pool::flush();
        Ok(())
    };
    round()?;
    kcore::computation::reap_all();
    let before = (resource::counts(), frames::stats().free);
    round()?;
    kcore::computation::reap_all();
    let after = (resource::counts(), frames::stats().free);
    ensure!(after == before, "{before:?} before, {after:?} after");
    let _ = PAGE_SIZE;
    Ok(())
}

/// Containers pushed into a process that never made resources itself are
/// still its own and go when it ends (they used to outlive it, and every
/// later container operation paid for the dead ones).
pub fn containers_of_ended_processes_are_released() -> TestResult {
    let before = resource::of(resource::Kind::Container).count();
    let pid = resource::proc::spawn::spawn("ctbench", b"short\0", &SpawnOptions::DEFAULT, KERNEL_PID)
        .map_err(|e| format!("{e:?}"))?;
    let status = proc::wait(KERNEL_PID, pid).map_err(|e| format!("{e:?}"))?;
    ensure!(status == 0, "ctbench exited with {status:#x}");
    ensure!(
        resource::of(resource::Kind::Container).count() == before,
        "{} containers before, {} after",
        before,
        resource::of(resource::Kind::Container).count()
    );
    Ok(())
}

/// The box queues' ring: first in, first out across growth and
/// wrap-around, with insertion at the front and removal in the middle
/// (the model is a plain vector).
pub fn container_fifo_keeps_order() -> TestResult {
    use resource::fifo::Fifo;
    let mut q = Fifo::new(0u64);
    let mut model: Vec<u64> = Vec::new();
    let mut next = 1u64;
    ensure!(q.front().is_none() && q.pop_front().is_none(), "a new queue is empty");
    ensure!(q.remove(0).is_none(), "removal past the end");
    for round in 0..200u64 {
        // A varying mix, so that the ring wraps and grows at odd places.
        for _ in 0..(round % 7) {
            q.try_reserve(1).map_err(|_| "reserve")?;
            q.push_back(next);
            model.push(next);
            next += 1;
        }
        if round % 5 == 0 {
            q.push_front(next);
            model.insert(0, next);
            next += 1;
        }
        if round % 11 == 3 && !model.is_empty() {
            let i = (round as usize * 7) % model.len();
            ensure!(q.remove(i) == Some(model.remove(i)), "remove({i}) in round {round}");
        }
        for _ in 0..(round % 4) {
            let want = (!model.is_empty()).then(|| model.remove(0));
            ensure!(q.front() == want, "front in round {round}");
            ensure!(q.pop_front() == want, "pop in round {round}");
        }
        ensure!(q.len() == model.len(), "length in round {round}");
        ensure!(q.iter().eq(model.iter().copied()), "order in round {round}");
    }
    ensure!(!model.is_empty(), "the mix left items to check");
    Ok(())
}
