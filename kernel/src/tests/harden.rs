//! Hardening (issue 16): each finding as an attack that must be refused,
//! and the invariants that make its class impossible: only the kernel's
//! own compositions are pooled, nothing is given to a process that is
//! ending, kernel memory a process causes is charged and queues are
//! bounded, memory pressure empties the pool before anyone is refused,
//! box pages never carry another process's data, and a killed driver
//! leaves its device quiet.

use super::{end, live, ok};
use abi::{ContainerMode as M, Error, SpawnOptions};
use alloc::format;
use alloc::string::String;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::{frames, heap};
use resource::pool;
use resource::vspace::{self, At};
use resource::{KERNEL, ResId, container, container_box, vregion};

/// Runs `path` with `args` holding `rights`; its exit status.
fn run_as(path: &str, args: &[&str], rights: u64) -> Result<u64, String> {
    let options = SpawnOptions {
        rights,
        ..SpawnOptions::DEFAULT
    };
    let pid = ok(resource::proc::spawn::spawn(
        path,
        &super::args(args),
        &options,
        KERNEL_PID,
    ))?;
    ok(proc::wait(KERNEL_PID, pid))
}

fn run(path: &str, args: &[&str]) -> Result<u64, String> {
    run_as(path, args, 0)
}

fn run_ok(path: &str, args: &[&str]) -> TestResult {
    let status = run(path, args)?;
    ensure!(status == 0, "{path} {args:?} exited with {status:#x}");
    Ok(())
}

/// Resource use of the whole kernel, for leak checks (the pool and the
/// kernel's caches emptied).
/// Free frames, heap in use apart from the resource tables (a table keeps
/// the room it grew to, as many resources as once lived at once: a high
/// water mark, not a leak), and processes.
fn footprint() -> (usize, usize, usize) {
    pool::flush();
    ipc::rendezvous::flush_free_calls();
    kcore::computation::reap_all();
    // Frames the heap grew by are the kernel's, not a leak: a workload that
    // fills the heap to its margin may leave it a page bigger. So are the
    // page tables of kernel-stack slots and the heap their list of free
    // slots takes: at 4 CPUs a round can have more computations alive at
    // once than any before it.
    let heap = heap::stats();
    (
        frames::stats().free + heap.size / 4096 + kcore::mm::stack::page_tables(),
        heap.used - resource::table_bytes() - kcore::mm::stack::free_list_bytes(),
        proc::count(),
    )
}

fn back(before: (usize, usize, usize), after: (usize, usize, usize)) -> TestResult {
    ensure!(
        after.0 == before.0 && after.2 == before.2 && super::heap_back(before.1, after.1),
        "free frames/heap used/processes {before:?} before, {after:?} after"
    );
    Ok(())
}

/// Runs `work` twice and checks that the second run left nothing behind
/// (the first leaves lasting kernel state that is no leak: tables grown,
/// page tables of kernel stacks).
fn leaves_nothing(work: impl Fn() -> TestResult) -> TestResult {
    work()?;
    let before = footprint();
    work()?;
    back(before, footprint())
}

fn plate(program: &str) -> Result<ResId, String> {
    ok(resource::proc::spawn::find_plate(program))
}

// ---- finding 1: only the kernel's own compositions are pooled ----

/// Where `attack attachown` leaves its own region.
const OWN_REGION: u64 = 0x3000_0000_0000;

pub fn user_built_processes_are_never_pooled() -> TestResult {
    // A process named argcheck, built of the attacker's segments: its
    // space must not become argcheck's pooled space.
    run_ok("attack", &["poison", "argcheck"])?;
    if let Some(space) = pool::take_full(plate("argcheck")?) {
        return Err(format!(
            "a space built by a process was pooled as argcheck's ({space:?})"
        ));
    }
    run_ok("argcheck", &["x", "yy", "zzz"])?;
    // One space cannot be two processes'.
    run_ok("attack", &["ownspace"])?;
    // What a process attached to its own space goes with it, not into the pool.
    run_ok("attack", &["attachown"])?;
    let attack = plate("attack")?;
    while let Some(space) = pool::take_full(attack) {
        let foreign = ok(vspace::get(KERNEL, space))?
            .lock()
            .regions()
            .any(|a| a.base == OWN_REGION);
        let _ = resource::mediator::delete(KERNEL, space);
        ensure!(
            !foreign,
            "a region the process attached itself was pooled with its space"
        );
    }
    run_ok("attack", &["nothing"])?;
    Ok(())
}

// ---- finding 8 ----

pub fn a_process_cannot_plant_a_stale_program() -> TestResult {
    run_ok("attack", &["program"])?;
    // The next process of the program must find it whole.
    run_ok("attack", &["nothing"])?;
    run_ok("attack", &["nothing"])
}

pub fn the_highest_user_page_is_unusable() -> TestResult {
    run_ok("attack", &["top"])?;
    let space = ok(vspace::create(KERNEL))?;
    let region = ok(vregion::create(KERNEL, abi::RegionKind::Text, 1, false, true))?;
    let top = kcore::vm::USER_END - 4096;
    let got = vspace::attach(KERNEL, space, region, At::Address(top)).map(|a| a.id);
    if let Ok(link) = got {
        let _ = resource::mediator::delete(KERNEL, link);
    }
    let _ = resource::mediator::delete(KERNEL, region);
    let _ = resource::mediator::delete(KERNEL, space);
    ensure!(
        got == Err(Error::Invalid),
        "the kernel attached a region in the highest user page: {got:?}"
    );
    Ok(())
}

pub fn resources_are_described_to_their_owners() -> TestResult {
    // Some regions of the kernel's exist: the pool holds a composed space.
    run_ok("tiny", &[])?;
    run_ok("attack", &["query"])
}

/// The Linux personality's shared server serves its requests, which act
/// for whichever Linux process they name, to its own supervisors only
/// (`attack personality` says which it tried). The server and the
/// supervisors it started, orphans once it is killed, are ended here.
pub fn the_personality_serves_its_supervisors_only() -> TestResult {
    let before = ok(proc::pids())?;
    let outcome = run_ok("attack", &["personality"]);
    for pid in ok(proc::pids())? {
        if !before.contains(&pid) && proc::get(pid).is_some_and(|p| p.name() == "linux") {
            end(pid);
        }
    }
    outcome
}

// ---- finding 2: teardown is a state ----

pub fn nothing_is_given_to_an_ending_process() -> TestResult {
    leaves_nothing(give_to_an_ending_process)
}

fn give_to_an_ending_process() -> TestResult {
    let (a, x) = (live()?, live()?);
    let target = proc::get(x).ok_or("sleeper gone")?;
    // From here on x is ending, as it is once its end has begun on its CPU.
    ok(target.grant_peer(a))?;
    let _ = target.mark_ending();
    for mode in [M::Copy, M::Share, M::Move] {
        let c = ok(container::create(a, 4, 0))?;
        let got = container::push(a, c, x, 0, mode);
        ensure!(
            got == Err(Error::NotFound),
            "{mode:?} push into an ending process gave {got:?}"
        );
        if container::in_process(c).is_ok() {
            ok(container::destroy(c))?;
        }
    }
    let ica = ok(container::create_ica(a, 1))?;
    let pa = proc::get(a).ok_or("sleeper gone")?;
    let moved = container::move_for(&pa, ica, x, 0);
    ensure!(
        moved == Err(Error::NotFound),
        "an ICA moved into an ending process: {moved:?}"
    );
    drop((pa, target));
    end(x);
    end(a);
    ensure!(
        resource::counts()
            .iter()
            .any(|&(k, n)| k == resource::Kind::Container && n == 0),
        "containers left behind: {:?}",
        resource::counts()
    );
    Ok(())
}

/// `write_user_of` finds a process's space, and before it locks it the
/// process ends and a new process of the same program is given that very
/// space by the pool (the window is opened there on purpose): the bytes
/// must not land in the new process's memory.
pub fn a_copy_never_reaches_a_reused_space() -> TestResult {
    use core::sync::atomic::{AtomicU64, Ordering};
    static ENDING: AtomicU64 = AtomicU64::new(0);
    static REUSER: AtomicU64 = AtomicU64::new(0);
    fn end_and_reuse() {
        end(ENDING.load(Ordering::SeqCst));
        if let Ok(pid) = live() {
            REUSER.store(pid, Ordering::SeqCst);
        }
    }
    live().map(end)?; // the program's first space goes to the pool
    let x = live()?;
    let space = proc::get(x).and_then(|p| p.space()).ok_or("no space")?;
    ENDING.store(x, Ordering::SeqCst);
    kcore::ktest::open_window(kcore::ktest::Window::OtherSpace, end_and_reuse);
    let at = kcore::vm::USER_STACK_TOP - 4096;
    let range = ok(kcore::uaccess::UserRange::new(at, 8))?;
    let wrote = proc::write_user_of(x, range, &0xbad_c0de_u64.to_le_bytes());
    let y = REUSER.load(Ordering::SeqCst);
    let reused = proc::get(y)
        .and_then(|p| p.space())
        .is_some_and(|s| alloc::sync::Arc::ptr_eq(&s, &space));
    drop(space);
    end(y);
    ensure!(reused, "the window did not see the space reused (pid {y})");
    ensure!(
        wrote == Err(Error::NotFound),
        "a copy for an ended process went into the process reusing its space: {wrote:?}"
    );
    Ok(())
}

// ---- finding 6 ----

/// Writes `tag + i` at the start of each page of container `id`.
fn fill(id: ResId, tag: u64) -> TestResult {
    let (pid, _, base, pages) = ok(container::in_process(id))?;
    let space = proc::get(pid).and_then(|p| p.space()).ok_or("no space")?;
    let mut s = space.lock();
    for i in 0..pages as u64 {
        s.copy_in(base + i * 4096, &(tag + i).to_le_bytes())
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

/// The first word of each page of container `id`.
fn first_words(id: ResId) -> Result<alloc::vec::Vec<u64>, String> {
    let (pid, _, base, pages) = ok(container::in_process(id))?;
    let space = proc::get(pid).and_then(|p| p.space()).ok_or("no space")?;
    let mut s = space.lock();
    (0..pages as u64)
        .map(|i| {
            let mut w = [0u8; 8];
            s.copy_out(base + i * 4096, &mut w).map_err(|e| format!("{e:?}"))?;
            Ok(u64::from_le_bytes(w))
        })
        .collect()
}

/// Whether container `id` holds what `fill(id, tag)` wrote.
fn holds(id: ResId, tag: u64) -> Result<bool, String> {
    Ok(first_words(id)?.iter().zip(tag..).all(|(&w, t)| w == t))
}

fn first_words_zero(id: ResId) -> Result<bool, String> {
    Ok(first_words(id)?.iter().all(|&w| w == 0))
}

fn containers() -> usize {
    resource::counts()
        .iter()
        .find(|(k, _)| *k == resource::Kind::Container)
        .map_or(0, |c| c.1)
}

pub fn a_failed_receive_loses_nothing() -> TestResult {
    leaves_nothing(receive_where_it_cannot_land)
}

fn receive_where_it_cannot_land() -> TestResult {
    let (a, b) = (live()?, live()?);
    let bx = ok(container_box::create(a, 2, 1, 1, 4, 0))?;
    ok(container_box::grant(a, bx, b, abi::BOX_RECEIVE))?;
    // Something of the receiver's already lies where the sends ask to go.
    let occupied = ok(container::create(b, 2, 0))?;
    let (_, _, taken, _) = ok(container::in_process(occupied))?;
    for (n, mode) in [M::Move, M::Share, M::Copy].into_iter().enumerate() {
        let tag = 0x1000 * (n as u64 + 1);
        // The receiver names a place that is taken: refused, and nothing lost.
        let c = ok(container::create(a, 2, 0))?;
        fill(c, tag)?;
        ok(container_box::send(a, c, bx, 0, mode))?;
        let count = containers();
        let failed = container_box::receive(
            b,
            container_box::Receive::new(bx, ResId::NONE, mode)
                .at(taken)
                .waiting(1_000_000),
        );
        ensure!(
            failed.is_err(),
            "{mode:?}: a receive onto a taken place gave {failed:?}"
        );
        ensure!(
            containers() == count,
            "{mode:?}: a failed receive changed the containers ({count} -> {})",
            containers()
        );
        let got = ok(container_box::receive(
            b,
            container_box::Receive::new(bx, ResId::NONE, mode).waiting(1_000_000),
        ))?;
        ensure!(holds(got.id, tag)?, "{mode:?}: the data was lost by the failed receive");
        ok(container::destroy(got.id))?;
        // The sender names a place the receiver cannot use: the receive
        // still succeeds, elsewhere.
        let c2 = ok(container::create(a, 2, 0))?;
        fill(c2, tag + 0x100)?;
        ok(container_box::send(a, c2, bx, taken, mode))?;
        let got = ok(container_box::receive(
            b,
            container_box::Receive::new(bx, ResId::NONE, mode).waiting(1_000_000),
        ))?;
        ensure!(
            holds(got.id, tag + 0x100)?,
            "{mode:?}: a sender's address lost the data"
        );
        ok(container::destroy(got.id))?;
        for id in [c, c2] {
            if container::in_process(id).is_ok() {
                ok(container::destroy(id))?;
            }
        }
    }
    ok(container::destroy(occupied))?;
    ok(resource::mediator::delete(a, bx))?;
    end(a);
    end(b);
    ensure!(containers() == 0, "{} containers left behind", containers());
    Ok(())
}

// ---- finding 10: box pages carry no other process's data ----

/// Pages a SWAP receive leaves in a box that only its owner used go to
/// another process only zeroed once the box is granted to it, unless the
/// box's creator chose `BOX_UNSCRUBBED`.
pub fn a_granted_box_scrubs() -> TestResult {
    let (a, b) = (live()?, live()?);
    let secret = 0x5ec2_e700;
    for (flags, scrubs) in [(0, true), (abi::BOX_UNSCRUBBED, false)] {
        // No refill after a send: the only empty container is the one the
        // owner's receive leaves, holding the owner's former pages.
        let bx = ok(container_box::create(a, 1, 1, 0, 4, flags))?;
        let (mine, r) = (ok(container::create(a, 1, 0))?, ok(container::create(a, 1, 0))?);
        fill(r, secret)?;
        ok(container_box::send(a, mine, bx, 0, M::Swap))?;
        ok(container_box::receive(a, container_box::Receive::new(bx, r, M::Swap)))?;
        ok(container_box::grant(a, bx, b, abi::BOX_SEND | abi::BOX_RECEIVE))?;
        let theirs = ok(container::create(b, 1, 0))?;
        ok(container_box::send(b, theirs, bx, 0, M::Swap))?;
        let got = holds(theirs, secret)?;
        // And what a receive leaves from now on.
        fill(theirs, secret + 1)?;
        ok(container_box::receive(
            b,
            container_box::Receive::new(bx, theirs, M::Swap),
        ))?;
        ok(container_box::send(a, mine, bx, 0, M::Swap))?;
        let later = holds(mine, secret + 1)?;
        for id in [mine, r, theirs] {
            ok(container::destroy(id))?;
        }
        ok(resource::mediator::delete(a, bx))?;
        ensure!(
            got != scrubs && later != scrubs,
            "flags {flags}: another process got the owner's former pages: {got}, a receiver's: {later}"
        );
    }
    end(a);
    end(b);
    Ok(())
}

/// A scrubbing box zeroes in idle time: the pages a receive leaves are
/// dirty until CPU 0 has nothing to run, then clean, and a send then
/// finds zeros without zeroing anything itself.
pub fn a_scrubbing_box_zeroes_in_idle_time() -> TestResult {
    if kcore::cpu::this_cpu().slot() != 0 {
        return Ok(()); // Only CPU 0 runs the idle hook.
    }
    let a = live()?;
    let secret = 0x1d1e_5c2b;
    let bx = ok(container_box::create(a, 2, 1, 0, 4, abi::BOX_SCRUB))?;
    let (mine, r) = (ok(container::create(a, 2, 0))?, ok(container::create(a, 2, 0))?);
    ok(container_box::send(a, mine, bx, 0, M::Swap))?;
    fill(r, secret)?;
    ok(container_box::receive(a, container_box::Receive::new(bx, r, M::Swap)))?;
    let dirty = container_box::dirty(bx, 2);
    // Kernel tests run as CPU 0's idle computation: it idles as the idle
    // loop does, the idle hook included.
    let t0 = kcore::clock::nanos();
    while container_box::dirty(bx, 2) != Some(0) && kcore::clock::nanos() < t0 + 100_000_000 {
        sched::idle_step();
    }
    let slept = kcore::clock::nanos() - t0;
    let after = container_box::dirty(bx, 2);
    let (empties, _) = container_box::census(bx, 2).ok_or("no box")?;
    fill(mine, secret + 1)?;
    ok(container_box::send(a, mine, bx, 0, M::Swap))?;
    let zero = !holds(mine, secret + 1)? && !holds(mine, secret)? && first_words_zero(mine)?;
    for id in [mine, r] {
        ok(container::destroy(id))?;
    }
    ok(resource::mediator::delete(a, bx))?;
    end(a);
    ensure!(
        dirty == Some(1) && after == Some(0) && empties == 1,
        "dirty containers: {dirty:?} after the receive, {after:?} after {slept} ns idle ({empties} empty)"
    );
    ensure!(zero, "the send after idle time did not get zeroed pages");
    Ok(())
}

// ---- finding 3: kernel memory is charged ----

/// Regions of 2^18 pages (2 MiB of frame lists each) until refused: a
/// limit, never a panic, and every byte charged comes back with the
/// resources. The process's account and its creator's see the same.
pub fn kernel_memory_is_charged() -> TestResult {
    run_ok("attack", &["regions"])?;
    let parent = live()?;
    let child = super::live_limited(8 << 20, parent)?;
    let (pp, cp) = (
        proc::get(parent).ok_or("parent gone")?,
        proc::get(child).ok_or("child gone")?,
    );
    let (parent_before, child_before) = (pp.account().used(), cp.account().used());
    ensure!(
        cp.account().limit() == 8 << 20,
        "the child's limit is {}",
        cp.account().limit()
    );
    let mut made = alloc::vec::Vec::new();
    let refused = loop {
        match vregion::create(child, abi::RegionKind::Heap, 1 << 18, true, false) {
            Ok(id) => made.push(id),
            Err(e) => break e,
        }
        if made.len() > 64 {
            break Error::Invalid;
        }
    };
    let (parent_full, child_full) = (pp.account().used(), cp.account().used());
    for &id in &made {
        ok(resource::mediator::delete(child, id))?;
    }
    let (parent_after, child_after) = (pp.account().used(), cp.account().used());
    drop((pp, cp));
    end(child);
    end(parent);
    ensure!(
        refused == Error::Limit && made.len() == 3,
        "8 MiB took {} regions of 2 MiB of records, then {refused:?}",
        made.len()
    );
    let charged = child_full - child_before;
    ensure!(
        (3 * (2 << 20)..8 << 20).contains(&charged),
        "{charged} bytes charged for 3 regions"
    );
    ensure!(
        parent_full - parent_before == charged,
        "the creator saw {} bytes of its child's {charged}",
        parent_full - parent_before
    );
    ensure!(
        (parent_after, child_after) == (parent_before, child_before),
        "the charges did not come back: {parent_before}/{child_before} before, {parent_after}/{child_after} after"
    );
    Ok(())
}

// ---- finding 4: queues are bounded ----

pub fn requests_are_bounded() -> TestResult {
    leaves_nothing(flood_a_port)
}

/// Senders of requests that are never accepted, one after the other: each
/// is refused after its own bound, and the server's queue stops growing
/// at its bound, though the senders have ended.
fn flood_a_port() -> TestResult {
    let server = live()?;
    let pid = format!("{server}");
    for _ in 0..5 {
        run_ok("attack", &["requests", &pid])?;
    }
    let p = proc::get(server).ok_or("sleeper gone")?;
    let (queued, _) = p.port().backlog();
    drop(p);
    end(server);
    ensure!(
        queued == 4096,
        "{queued} calls wait at a port that never accepts (4096 is its bound)"
    );
    Ok(())
}

/// The call objects of requests are charged to their sender, in chunks:
/// a sender with a small limit is refused with Limit long before the
/// bound of its requests, and the charge stays while its calls wait at
/// the server, after the sender has ended, until the server ends too.
pub fn requests_are_charged_to_their_sender() -> TestResult {
    leaves_nothing(charge_requests)
}

fn charge_requests() -> TestResult {
    let server = live()?;
    let (sender, sp) = limited_maker()?;
    let account = sp.account().clone();
    let before = account.used();
    let empty = kcore::uaccess::UserRange::EMPTY;
    let mut sent = 0u64;
    let refused = loop {
        match ipc::request::request(&sp, server, 0, empty, empty) {
            Ok(_) => sent += 1,
            Err(e) => break e,
        }
    };
    let (full, paid) = (account.used(), sp.port().request_bytes());
    drop(sp);
    end(sender);
    let sender_gone = account.used();
    end(server);
    // (An ended process's records go once its computation is reaped.)
    kcore::computation::reap_all();
    let server_gone = account.used();
    ensure!(
        refused == Error::Limit && sent > 0 && sent < 1024,
        "a sender limited to 256 KiB sent {sent} requests, then {refused:?}"
    );
    ensure!(
        paid >= sent * ipc::call::CALL_COST && full - before >= paid,
        "{sent} requests charged {paid} bytes, the account {}",
        full - before
    );
    ensure!(
        sender_gone >= paid,
        "with its {sent} calls still queued, {sender_gone} bytes stayed charged to the ended sender (of {paid})"
    );
    ensure!(
        server_gone == 0,
        "{server_gone} bytes stayed charged once the sender and the server ended"
    );
    Ok(())
}

/// Kernel memory running out: with every frame taken and the heap full
/// to its margin, what a process's system calls would allocate (a call
/// object, a space, a box, a name, a process) is refused with an error,
/// never a panic; once memory is back everything works and nothing leaked.
pub fn exhausted_memory_gives_errors_not_panics() -> TestResult {
    leaves_nothing(exhaust)
}

fn exhaust() -> TestResult {
    use core::alloc::Layout;
    let server = live().map_err(|e| format!("server: {e}"))?;
    let (sender, sp) = limited_maker().map_err(|e| format!("sender: {e}"))?;
    pool::flush();
    ipc::rendezvous::flush_free_calls();
    let mut fill: alloc::vec::Vec<alloc::vec::Vec<u8>> = alloc::vec::Vec::new();
    fill.try_reserve_exact(1 << 16)
        .map_err(|_| "no heap for the list of fillers")?;
    let mut taken = alloc::vec::Vec::new();
    taken
        .try_reserve_exact(frames::stats().free + 4096)
        .map_err(|_| "no heap for the list of frames")?;
    while taken.len() < taken.capacity()
        && let Ok(pa) = frames::alloc(1)
    {
        taken.push(pa);
    }
    for chunk in [64 << 10, 4 << 10, 256, 16] {
        let layout = Layout::from_size_align(chunk, 8).map_err(|_| "layout")?;
        while fill.len() < fill.capacity() && heap::room_for(layout) {
            let mut v = alloc::vec::Vec::new();
            if v.try_reserve_exact(chunk).is_err() {
                break;
            }
            fill.push(v);
        }
    }
    // (The smallest object any of these makes is bigger than the last filler.)
    let room_left = heap::room_for(Layout::from_size_align(16, 8).map_err(|_| "layout")?);
    let empty = kcore::uaccess::UserRange::EMPTY;
    let got = [
        (
            "request",
            ipc::request::request(&sp, server, 0, empty, empty).map(|_| ()),
        ),
        ("space", vspace::create(sender).map(|_| ())),
        ("box", container_box::create(sender, 1, 0, 0, 4, 0).map(|_| ())),
        ("name", ipc::names::register("harden/exhausted", sender)),
        (
            "spawn",
            resource::proc::spawn::spawn("tiny", b"", &SpawnOptions::DEFAULT, KERNEL_PID).map(|_| ()),
        ),
    ];
    drop(fill);
    for pa in taken {
        frames::free(pa, 1);
    }
    ipc::names::forget(sender);
    drop(sp);
    end(sender);
    end(server);
    ensure!(!room_left, "the heap was not full to its margin");
    for (what, r) in got {
        ensure!(
            matches!(r, Err(Error::NoMemory | Error::Limit)),
            "{what} with memory exhausted gave {r:?}"
        );
    }
    run_ok("tiny", &[])
}

/// The name table is bounded by the processes: each holds at most
/// `MAX_PER_PROCESS` names (it once took any number, each a heap string).
pub fn a_process_holds_few_names() -> TestResult {
    let p = live()?;
    let most = ipc::names::MAX_PER_PROCESS;
    let mut got = Ok(());
    let mut made = 0;
    while made <= most {
        got = ipc::names::register(&format!("harden/name{made}"), p);
        if got.is_err() {
            break;
        }
        made += 1;
    }
    end(p);
    ipc::names::forget(p);
    let left = ipc::names::lookup("harden/name0");
    ensure!(
        made == most && got == Err(Error::Limit),
        "a process registered {made} names, then {got:?}"
    );
    ensure!(left == Err(Error::NotFound), "a name outlived its process: {left:?}");
    Ok(())
}

// ---- finding 5: memory running out ----

/// Pools composed spaces of `program` until memory runs out: the error
/// that stopped it (`NoMemory` expected), how many, and the bytes held.
/// The add function's doing (a rule asking for more than memory holds):
/// what ended processes give back stops at `pool::MAX_KEPT`.
fn fill_pool(program: &str) -> Result<(Error, usize, u64), String> {
    let plate = plate(program)?;
    let settings = pool::settings();
    let add = alloc::vec![pool::Rule {
        kind: pool::PoolKind::Full,
        key: plate,
        pages: 0,
        count: 100_000,
    }];
    pool::set(pool::Settings {
        add,
        ..settings.clone()
    });
    let added = pool::add();
    pool::set(settings);
    let pooled = pool::report()[pool::PoolKind::Full as usize].count;
    match added {
        Err(e) => Ok((e, pooled, pool::bytes())),
        Ok(_) => Err(String::from("100000 spaces made without running out")),
    }
}

/// With the pool holding all the memory there is, a spawn still works:
/// the pool gives memory back before anyone is refused.
pub fn the_pool_gives_memory_back_first() -> TestResult {
    let settings = pool::settings();
    pool::set(pool::Settings {
        reduce: false,
        ..settings.clone()
    });
    let filled = fill_pool("sleeper");
    let ran = run("argcheck", &["x", "yy", "zzz"]);
    pool::set(settings);
    pool::flush();
    let (e, pooled, held) = filled?;
    ensure!(
        e == Error::NoMemory && held > 64 << 20,
        "{pooled} spaces pooled ({held} bytes), then {e:?}"
    );
    ensure!(
        ran == Ok(0),
        "with the pool holding {held} bytes, argcheck gave {ran:?}"
    );
    Ok(())
}

/// Spawns `program` pinned to this CPU, where kernel code is not
/// preempted, so that it runs only once the pool holds all memory; its
/// exit status (0: it ran whole).
fn run_with_pool_full(program: &str, args: &[&str], policy: abi::LoadPolicy) -> TestResult {
    let settings = pool::settings();
    pool::set(pool::Settings {
        reduce: false,
        ..settings.clone()
    });
    let options = SpawnOptions {
        policy: policy as u64,
        cpu: kcore::cpu::this_cpu().slot() as u64,
        ..SpawnOptions::DEFAULT
    };
    let pid = resource::proc::spawn::spawn(program, &super::args(args), &options, KERNEL_PID);
    // The pool takes what it can; the frames left over (a few hundred: the
    // heap's margin stops the pool first) are held here, but for the
    // kernel's reserve, so that only the pool has memory to give.
    let mut kept = alloc::vec::Vec::new();
    kept.try_reserve(8192).map_err(|_| "no room for the list of frames")?;
    let filled = fill_pool("sleeper");
    while kept.len() < kept.capacity()
        && let Ok(f) = frames::alloc(1)
    {
        kept.push(f);
    }
    let free = frames::stats().free;
    let status = pid.map_err(|e| format!("{e:?}")).map(|pid| proc::wait(KERNEL_PID, pid));
    for f in kept {
        frames::free(f, 1);
    }
    pool::set(settings);
    pool::flush();
    let (e, pooled, held) = filled?;
    ensure!(
        e == Error::NoMemory && held > 64 << 20 && free <= frames::RESERVE,
        "{pooled} spaces pooled ({held} bytes, {free} frames free), then {e:?}"
    );
    ensure!(
        status == Ok(Ok(0)),
        "with the pool holding {held} bytes, {program} gave {status:?}"
    );
    Ok(())
}

/// The same for demand paging: a process whose pages come by faults runs
/// to its end (its faults have the pool give memory back, not the process
/// killed).
pub fn the_pool_gives_memory_back_to_faults() -> TestResult {
    run_with_pool_full("pa800", &[], abi::LoadPolicy::Demand)
}

/// And for the system calls that make boxes and containers: `ctpingpong`
/// begins with a box of two empty containers.
pub fn the_pool_gives_memory_back_to_containers() -> TestResult {
    run_with_pool_full("ctpingpong", &["3"], abi::LoadPolicy::Eager)
}

/// Processes spawned until memory runs out, then all killed: a clean
/// error, a clean teardown, and the system works as before.
pub fn spawning_until_failure_then_killing_all() -> TestResult {
    let (before, heap_before) = (footprint(), heap::stats().size);
    let (n, refused) = spawn_and_kill(usize::MAX);
    let (after, heap_after) = (footprint(), heap::stats().size);
    ensure!(
        refused == Some(Error::NoMemory) && n > 100,
        "{n} processes spawned, then {refused:?}"
    );
    ensure!(
        after.2 == before.2,
        "{} processes before, {} after {n} were killed",
        before.2,
        after.2
    );
    // The pages the heap grew by stay with it, and so do the page tables
    // made for them (2 MiB to a table) and a few above those (the kernel
    // stacks' tables `footprint` counts); every other frame came back.
    let lost = (before.0 + heap_before / 4096).saturating_sub(after.0 + heap_after / 4096);
    let tables = (heap_after - heap_before).div_ceil(2 << 20) + 8;
    ensure!(
        lost <= tables,
        "{lost} frames did not come back after {n} processes were killed"
    );
    run_ok("argcheck", &["x", "yy", "zzz"])?;
    // The tables grown for them stay grown: half as many again, which
    // grow nothing, must leave nothing at all.
    let again = footprint();
    let (m, refused) = spawn_and_kill(n / 2);
    ensure!(refused.is_none(), "{m} of {} processes, then {refused:?}", n / 2);
    back(again, footprint())
}

/// Spawns sleepers until `most` or an error, then kills them all: how
/// many there were, and the error.
fn spawn_and_kill(most: usize) -> (usize, Option<Error>) {
    let mut pids = alloc::vec::Vec::new();
    let mut refused = None;
    while pids.len() < most.min(100_000) {
        match resource::proc::spawn::spawn("sleeper", b"600000\0", &SpawnOptions::DEFAULT, KERNEL_PID) {
            Ok(pid) => pids.push(pid),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let n = pids.len();
    for &pid in &pids {
        let _ = proc::kill(pid);
    }
    for pid in pids {
        let _ = proc::wait(KERNEL_PID, pid);
    }
    (n, refused)
}

// ---- hostile input: fuzzers on every CPU, killed mid-call ----

/// Fuzzers run at once on every CPU, drawing on each other's identifiers
/// (those of the fuzzers started before them), and half of them are killed
/// in the middle of whatever call they are making: no panic, and after a
/// warm-up round each round leaves nothing behind.
pub fn fuzzers_killed_mid_call_leave_nothing() -> TestResult {
    let mut seed = 0x0dd_ba11_u64;
    let mut round = || -> TestResult {
        let mut pids = alloc::vec::Vec::new();
        for _ in 0..4 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let args = super::args(&["fuzz", "20000", &format!("{}", seed >> 1)]);
            pids.push(ok(resource::proc::spawn::spawn(
                "fuzz",
                &args[5..],
                &SpawnOptions::DEFAULT,
                KERNEL_PID,
            ))?);
        }
        for (i, &pid) in pids.iter().enumerate() {
            if i % 2 == 1 {
                sched::sleep_until(kcore::clock::nanos() + 2_000_000 + (seed % 8) * 1_000_000);
                let _ = proc::kill(pid);
            }
        }
        for (i, &pid) in pids.iter().enumerate() {
            let status = ok(proc::wait(KERNEL_PID, pid))?;
            ensure!(i % 2 == 1 || status == 0, "fuzzer {pid} exited with {status:#x}");
        }
        Ok(())
    };
    round()?;
    let before = footprint();
    round()?;
    round()?;
    back(before, footprint())
}

/// A process with a kernel-memory limit of 256 KiB that sleeps until it
/// is ended: a maker of plates in its name.
fn limited_maker() -> Result<(u64, alloc::sync::Arc<proc::Process>), String> {
    let maker = super::live_limited(256 << 10, KERNEL_PID)?;
    Ok((maker, proc::get(maker).ok_or("sleeper gone")?))
}

/// A plate is kept until a newer version replaces it: its maker pays for
/// it meanwhile, and cannot make more than its limit allows (any process
/// could once fill the heap with them).
pub fn plates_are_charged_to_their_maker() -> TestResult {
    let (maker, p) = limited_maker()?;
    let before = p.account().used();
    let content = alloc::vec![0x5au8; 64 << 10];
    let small = resource::plate::create(maker, "harden/small", 1, &content);
    let charged = p.account().used() - before;
    let mut refused = Ok(ResId::NONE);
    for i in 0..8 {
        refused = resource::plate::create(maker, &format!("harden/big{i}"), 1, &content);
        if refused.is_err() {
            break;
        }
    }
    drop(p);
    end(maker);
    ensure!(small.is_ok(), "a plate within the limit gave {small:?}");
    ensure!(
        charged >= 64 << 10,
        "a plate of 64 KiB charged its maker {charged} bytes"
    );
    ensure!(
        refused == Err(Error::Limit),
        "plates past the maker's limit gave {refused:?}"
    );
    Ok(())
}

/// A region the kernel makes for a process (a Linux mapping,
/// `vregion::create_for`) and a fork's copy of its space are charged to
/// the process that caused them: a 1 GiB region's list of frames (2 MiB)
/// is past a limit of 256 KiB, and what a small one or a copy cost comes
/// back when it goes.
pub fn regions_made_for_a_process_are_charged_to_it() -> TestResult {
    use kcore::vm::region::Kind as RegionKind;
    let (maker, p) = limited_maker()?;
    let before = p.account().used();
    let big = vregion::create_for(maker, RegionKind::Heap, 1 << 18, true, false);
    let small = vregion::create_for(maker, RegionKind::Heap, 16, true, false);
    let charged = p.account().used() - before;
    let deleted = small.map(|id| resource::mediator::delete(KERNEL, id));
    let after_delete = p.account().used();
    let copy = vspace::copy(KERNEL, p.space_id(), maker);
    let copied = p.account().used() - after_delete;
    if let Ok(space) = copy {
        resource::proc::spawn::destroy_space(space);
    }
    let after_copy = p.account().used();
    drop(p);
    end(maker);
    ensure!(big == Err(Error::Limit), "a 1 GiB region past the limit gave {big:?}");
    ensure!(
        small.is_ok() && charged >= 16 * 8,
        "a region of 16 pages gave {small:?} and charged {charged} bytes"
    );
    ensure!(
        deleted == Ok(Ok(())) && after_delete == before,
        "its deletion gave {deleted:?}, {} bytes still charged",
        after_delete - before
    );
    ensure!(
        copy.is_ok() && copied > 0 && after_copy == before,
        "a copy of its space gave {copy:?}, charged {copied} bytes, {} left after",
        after_copy.wrapping_sub(before)
    );
    Ok(())
}

/// A newer version of a plate replaces the older: the older's identifier
/// turns stale, its cost goes back to its maker, and its bytes live on
/// only while something made from them holds them.
pub fn a_replaced_plate_is_freed() -> TestResult {
    let (maker, p) = limited_maker()?;
    let heap_before = heap::stats().used;
    let before = p.account().used();
    let first = resource::plate::create(maker, "harden/versions", 1, &alloc::vec![1u8; 64 << 10]);
    let held = first.and_then(resource::plate::content);
    // Twenty versions of 64 KiB: four would pass the limit if the older
    // ones stayed.
    let mut last = first;
    for tag in 2..22u64 {
        last = resource::plate::create(maker, "harden/versions", tag, &alloc::vec![tag as u8; 64 << 10]);
        if last.is_err() {
            break;
        }
    }
    let charged = p.account().used() - before;
    let stale = first.map(resource::plate::content);
    let current = last.and_then(resource::plate::content);
    drop(p);
    end(maker);
    ensure!(last.is_ok(), "a newer version gave {last:?}");
    ensure!(
        charged < 128 << 10,
        "twenty versions of 64 KiB leave {charged} bytes charged"
    );
    ensure!(
        matches!(stale, Ok(Err(_))),
        "the first version's identifier still reads"
    );
    let held = held.map_err(|e| format!("{e:?}"))?;
    ensure!(
        held.len() == 64 << 10 && held.iter().all(|&b| b == 1),
        "the bytes a holder kept changed"
    );
    ensure!(
        current.is_ok_and(|c| c.iter().all(|&b| b == 21)),
        "the newest version does not read as written"
    );
    drop(held);
    let grown = heap::stats().used.saturating_sub(heap_before);
    ensure!(
        grown < 256 << 10,
        "the heap grew by {grown} bytes for one plate of 64 KiB"
    );
    Ok(())
}

/// A plate is found by name through the one last found (`plate::named`):
/// a newer version, another name or a file of the archive must still be
/// answered as a walk through every plate answers, never with the plate
/// found before.
pub fn plate_lookup_follows_new_versions() -> TestResult {
    use resource::plate;
    let (maker, p) = limited_maker()?;
    let name = "harden/lookup";
    let first = plate::create(maker, name, 1, &[1u8; 64]);
    let found_first = plate::lookup(name);
    let again = plate::create(maker, name, 1, &[]);
    let second = plate::create(maker, name, 2, &[2u8; 64]);
    let found_second = plate::lookup(name);
    let old_tag = plate::create(maker, name, 1, &[]);
    let new_tag = plate::create(maker, name, 2, &[]);
    let other = plate::lookup("harden/lookup-none");
    let archive = plate::lookup("bin/tiny");
    let after_archive = plate::lookup(name);
    drop(p);
    end(maker);
    let first = first.map_err(|e| format!("the first version gave {e:?}"))?;
    let second = second.map_err(|e| format!("the second version gave {e:?}"))?;
    ensure!(
        found_first == Ok(first) && again == Ok(first),
        "the first version looked up: {found_first:?}, asked for again: {again:?}, made {first:?}"
    );
    ensure!(
        second != first && found_second == Ok(second),
        "after a second version ({second:?}) the name finds {found_second:?}"
    );
    ensure!(
        old_tag == Err(Error::NotFound) && new_tag == Ok(second),
        "the replaced version asked for: {old_tag:?}; the new one: {new_tag:?}"
    );
    ensure!(other == Err(Error::NotFound), "a name no plate has finds {other:?}");
    ensure!(
        archive.is_ok() && archive != Ok(second) && after_archive == Ok(second),
        "the archive's bin/tiny: {archive:?}, then the name again: {after_archive:?}"
    );
    Ok(())
}

// ---- the last infallible allocations, and reclaim where locks are held ----

/// Memory running out for a process's allocations: every frame an
/// ordinary allocation may have taken, and the heap filled until it has
/// no room for `layout` beside its margin (`heap::room_for`). What was
/// taken, to give back with `give_back`.
struct Exhausted {
    fill: alloc::vec::Vec<alloc::vec::Vec<u8>>,
    frames: alloc::vec::Vec<u64>,
}

fn exhaust_for(layout: core::alloc::Layout) -> Result<Exhausted, String> {
    use core::alloc::Layout;
    let mut e = Exhausted {
        fill: alloc::vec::Vec::new(),
        frames: alloc::vec::Vec::new(),
    };
    e.fill
        .try_reserve_exact(1 << 16)
        .map_err(|_| "no heap for the list of fillers")?;
    e.frames
        .try_reserve_exact(frames::stats().free + 4096)
        .map_err(|_| "no heap for the list of frames")?;
    while e.frames.len() < e.frames.capacity()
        && let Ok(pa) = frames::alloc(1)
    {
        e.frames.push(pa);
    }
    for chunk in [64 << 10, 4 << 10, 256] {
        let l = Layout::from_size_align(chunk, 8).map_err(|_| "layout")?;
        while e.fill.len() < e.fill.capacity() && heap::room_for(l) {
            let mut v = alloc::vec::Vec::new();
            if v.try_reserve_exact(chunk).is_err() {
                break;
            }
            e.fill.push(v);
        }
    }
    if heap::room_for(layout) {
        give_back(e);
        return Err(String::from("the heap could not be filled"));
    }
    Ok(e)
}

fn give_back(e: Exhausted) {
    drop(e.fill);
    for pa in e.frames {
        frames::free(pa, 1);
    }
}

/// Pooling a resource under a key new to the pool (a region of a size
/// none has) makes a map entry, which has no fallible insert: with no
/// room for it in the heap the pool refuses the resource (its owner then
/// deletes it) instead of taking the heap's margin, or failing.
pub fn a_new_pool_key_needs_room_in_the_heap() -> TestResult {
    pool::flush();
    let pages = 5;
    let r = ok(resource::proc::spawn::new_region(pages))?;
    let e = exhaust_for(core::alloc::Layout::new::<[u64; 256]>())?;
    let kept = pool::put_region(r);
    give_back(e);
    let back = if kept { pool::take_region(pages) } else { Some(r) };
    if let Some(r) = back {
        let _ = resource::mediator::delete(KERNEL, r);
    }
    pool::flush();
    ensure!(
        !kept,
        "with no room in the heap, the pool took a region under a new key"
    );
    // With room, the same is pooled.
    let r = ok(resource::proc::spawn::new_region(pages))?;
    let kept = pool::put_region(r);
    pool::flush();
    ensure!(kept, "with room in the heap, the pool refused a region");
    Ok(())
}

/// Holding an NVM text file counts the holder in a map: with no room in
/// the heap the hold is refused (`NoMemory`), the count unchanged, and no
/// lock is taken twice (a hold dropped under the store's lock took it
/// again: a hang). The test boot's NVM store is fresh: the file is made.
pub fn an_nvm_hold_without_heap_is_refused() -> TestResult {
    let name = "harden-hold";
    ok(resource::nvm::store_own(name, &[0x90; 5000]))?;
    let mut found = None;
    resource::nvm::files(&mut |f| {
        if abi::name_str(&f.name) == name {
            found = Some(f);
        }
    });
    let f = found.ok_or("the file stored is not in the store")?;
    let r = hold_without_heap(name, f.len, f.crc);
    let _ = resource::nvm::delete(KERNEL, name);
    r
}

fn hold_without_heap(name: &str, len: u64, crc: u64) -> TestResult {
    let users = |name: &str| {
        let mut n = u64::MAX;
        resource::nvm::files(&mut |g| {
            if abi::name_str(&g.name) == name {
                n = g.users;
            }
        });
        n
    };
    let before = users(name);
    let e = exhaust_for(core::alloc::Layout::new::<[u64; 256]>())?;
    let held = resource::nvm::open_text(name, len, crc).map(drop);
    give_back(e);
    let after = users(name);
    let again = resource::nvm::open_text(name, len, crc).map(drop);
    ensure!(
        held == Err(Error::NoMemory) && after == before,
        "with no room in the heap, a hold gave {held:?}, users {before} -> {after}"
    );
    ensure!(again.is_ok(), "with room, the hold gave {again:?}");
    Ok(())
}

/// The kernel heap grows with its lock held, where the pool cannot be
/// asked to give memory back: with the pool holding all memory and every
/// frame an ordinary allocation may take gone, the heap still grows for
/// the kernel's own records (into the frames' reserve); an ordinary
/// allocation then fails, has the pool give its memory back
/// (`pool::or_reclaim`), and so the reserve is whole again.
pub fn the_heap_grows_into_a_reserve_the_pool_refills() -> TestResult {
    let settings = pool::settings();
    pool::set(pool::Settings {
        reduce: false,
        ..settings.clone()
    });
    let mut small: alloc::vec::Vec<alloc::vec::Vec<u8>> = alloc::vec::Vec::new();
    let mut taken = alloc::vec::Vec::new();
    let listed = small.try_reserve_exact(1 << 15).is_ok() && taken.try_reserve_exact(1 << 17).is_ok();
    let filled = fill_pool("sleeper");
    while taken.len() < taken.capacity()
        && let Ok(pa) = frames::alloc(1)
    {
        taken.push(pa);
    }
    let left = frames::stats().free;
    // Records of the kernel's own, until the heap had to grow for one.
    let size = heap::stats().size;
    while small.len() < small.capacity() && heap::stats().size == size {
        let mut v = alloc::vec::Vec::new();
        if v.try_reserve_exact(2048).is_err() {
            break;
        }
        small.push(v);
    }
    let grew = heap::stats().size > size;
    let space = pool::or_reclaim(|| vspace::create(KERNEL));
    let refilled = frames::stats().free;
    drop(small);
    for pa in taken {
        frames::free(pa, 1);
    }
    if let Ok(s) = space {
        let _ = resource::mediator::delete(KERNEL, s);
    }
    pool::set(settings);
    pool::flush();
    ensure!(listed, "no heap for the lists");
    let (e, pooled, held) = filled?;
    ensure!(
        e == Error::NoMemory && held > 64 << 20,
        "{pooled} spaces pooled ({held} bytes), then {e:?}"
    );
    ensure!(
        left <= frames::RESERVE && grew,
        "with {left} frames left to the kernel, the heap grew: {grew}"
    );
    ensure!(
        space.is_ok() && refilled >= frames::RESERVE,
        "a space made when frames ran out: {space:?}, and then {refilled} frames free"
    );
    Ok(())
}

/// The pages of a file a pager serves that the kernel caches are charged
/// to whoever asked for the file to be paged, within its limit (past it,
/// a page stays the region's own), and the pool's reclaim frees those no
/// region maps (their charge given back); a mapped page stays until its
/// last mapping goes.
pub fn cached_file_pages_are_charged_and_reclaimed() -> TestResult {
    use kcore::mm::quota::{Account, Charge};
    use kcore::vm::region::{Backing, CACHED_PAGE_COST, PagedFile, PagerRef, Region};
    let account = Account::root(2 * CACHED_PAGE_COST + CACHED_PAGE_COST / 2);
    let file = heap::try_arc(PagedFile::new(
        PagerRef {
            pid: 0,
            object: [1, 2, 3, 4],
        },
        Charge::on(Some(&account)),
    ))
    .map_err(|_| "no heap for the file")?;
    let backing = Backing::Pager {
        source: file.clone(),
        file_at: 0,
        skew: 0,
        len: 3 * 4096,
    };
    let mut r = Region::new(abi::RegionKind::Data, 3, backing, true, false).map_err(|_| "no memory for the region")?;
    let mut supplied = alloc::vec::Vec::new();
    for i in 0..3 {
        let req = r.page_request(i).ok_or("no request for a page of the file")?;
        let pa = frames::alloc(1).map_err(|_| "no frame")?;
        supplied.push(r.supply(i, pa, &req).is_ok());
    }
    let (cached, charged) = (file.cached_pages(), account.used());
    let cow = [r.is_cow(0), r.is_cow(1), r.is_cow(2)];
    // All three mapped: nothing to reclaim.
    let none = file.drop_unmapped();
    // Page 0 written: the region's own copy; once its old mapping is gone,
    // the cached page is unmapped.
    let broke = r.break_cow(0).map(|(_, old)| drop(old)).is_ok();
    let one = file.drop_unmapped();
    let after_one = account.used();
    drop(r);
    let rest = file.drop_unmapped();
    let after_all = (file.cached_pages(), account.used());
    drop(file);
    ensure!(
        supplied == [true, true, true] && cached == 2 && charged == 2 * CACHED_PAGE_COST,
        "3 pages supplied ({supplied:?}) under a limit of 2: {cached} cached, {charged} bytes charged"
    );
    ensure!(
        cow == [true, true, false],
        "the pages past the payer's limit must be the region's own: copy-on-write {cow:?}"
    );
    ensure!(
        none == 0 && broke && one == 1 && after_one == CACHED_PAGE_COST,
        "reclaim freed {none} mapped pages, then {one} once one was copied ({after_one} bytes still charged)"
    );
    ensure!(
        rest == 1 && after_all == (0, 0),
        "with the region gone reclaim freed {rest}, leaving {after_all:?} (pages, bytes charged)"
    );
    Ok(())
}

/// A request's charge goes back as its calls end: 64 requests charged
/// (4 chunks), answered and fetched, leave at most two chunks charged
/// (the one spare that keeps a steady stream from charging and releasing
/// at every call), and nothing once the sender ends.
pub fn request_charges_go_back_per_call() -> TestResult {
    use ipc::call::{CALL_COST, REQUEST_CHUNK};
    let server = live()?;
    let (sender, sp) = limited_maker()?;
    let sv = proc::get(server).ok_or("no server")?;
    let empty = kcore::uaccess::UserRange::EMPTY;
    let mut sent = 0;
    while sent < 64 && ipc::request::request(&sp, server, 0, empty, empty).is_ok() {
        sent += 1;
    }
    let paid = sp.port().request_bytes();
    let mut answered = 0;
    while let Ok(got) = ipc::rendezvous::acc(&sv, 1 | abi::ACC_NOWAIT) {
        if ipc::rendezvous::end_with_len(&sv, got.rid(), 0).is_ok() {
            answered += 1;
        }
    }
    let mut fetched = 0;
    while ipc::request::fetch(&sp, 0).is_ok() {
        fetched += 1;
    }
    let after = sp.port().request_bytes();
    let account = sp.account().clone();
    drop((sp, sv));
    end(sender);
    end(server);
    kcore::computation::reap_all();
    ensure!(
        sent == 64 && answered == 64 && fetched == 64,
        "{sent} requests sent, {answered} answered, {fetched} fetched"
    );
    ensure!(
        paid >= 64 * CALL_COST && after <= 2 * REQUEST_CHUNK * CALL_COST,
        "64 requests charged {paid} bytes; with all answered, {after} stayed charged"
    );
    ensure!(account.used() == 0, "{} bytes charged after the end", account.used());
    Ok(())
}
