//! Container (Tender's コンテナ, seed 004): memory of N pages, handed over
//! or shared between processes. Its memory is a virtual region; while it
//! belongs to a process the region is attached to the process's space (a
//! virtual user space), and while it waits in a container box the region is
//! detached and held here. Direct operations between processes: push,
//! steal (each COPY, SHARE or MOVE) and exchange (SWAP of physical pages);
//! the box operations are in `container_box.rs`.

use super::mediator::{NO_ID, NO_IDS, Need, invoke, invoke_then, only};
use super::vspace::{self, At, SpaceRef};
use super::{KERNEL, Kind, ResId, ResTable, Resource, table};
use abi::{ContainerMode, ContainerStats, Error, ResInfo, ResOp};
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::clock;
use kcore::mm::quota::Charge;
use kcore::sync::{IrqMutex, IrqMutexGuard};
use kcore::vm::region::{Kind as RegionKind, Region};

pub enum Place {
    /// Attached to process `pid`'s space by the attachment `link`, which
    /// lies in `slot` of the space's list. The space and the slot are kept
    /// here so that an operation finds both with the container, without
    /// looking the process or the attachment up. The attachment and the
    /// region are held by the container (owned by the kernel); this is the
    /// one record of where they are, so a move rewrites nothing else.
    InProcess {
        pid: u64,
        link: ResId,
        slot: usize,
        base: u64,
        space: SpaceRef,
        /// The space's resource id (for queries of the attachment).
        space_id: ResId,
    },
    /// Waiting in a box; the region is held here, detached.
    InBox {
        bx: ResId,
        region: Region,
    },
    Moving,
}

pub struct Container {
    pub pages: usize,
    /// The region resource that holds the memory while attached.
    pub region: ResId,
    pub place: Place,
}

static TABLE: IrqMutex<ResTable<Container>> = IrqMutex::new(table(Kind::Container));

/// The container table, for an operation that must see a container and its
/// box at once (`container_box`'s SWAP path). Lock order: this table before
/// the box table; nothing takes them the other way round.
pub fn lock() -> IrqMutexGuard<'static, ResTable<Container>> {
    TABLE.lock()
}

// ---- cost breakdown (seed 004 figs 5-7) ----

pub static STATS: [AtomicU64; 12] = [const { AtomicU64::new(0) }; 12];
pub const CREATE: usize = 0;
pub const CREATES: usize = 1;
pub const DELETE: usize = 2;
pub const DELETES: usize = 3;
pub const EXCHANGE: usize = 4;
pub const EXCHANGES: usize = 5;
pub const COPY: usize = 6;
pub const ATTACH: usize = 7;
pub const DETACH: usize = 8;
pub const QUEUE: usize = 9;
pub const PAGES_EXCHANGED: usize = 10;
pub const BYTES_COPIED: usize = 11;

/// Runs `f`, adding its cycles to counter `what`.
pub fn timed<R>(what: usize, f: impl FnOnce() -> R) -> R {
    let t0 = clock::cycles();
    let r = f();
    STATS[what].fetch_add(clock::cycles() - t0, Ordering::Relaxed);
    r
}

pub fn stats() -> ContainerStats {
    let s = |i: usize| STATS[i].load(Ordering::Relaxed);
    ContainerStats {
        create_cycles: s(CREATE),
        creates: s(CREATES),
        delete_cycles: s(DELETE),
        deletes: s(DELETES),
        exchange_cycles: s(EXCHANGE),
        exchanges: s(EXCHANGES),
        copy_cycles: s(COPY),
        attach_cycles: s(ATTACH),
        detach_cycles: s(DETACH),
        queue_cycles: s(QUEUE),
        pages_exchanged: s(PAGES_EXCHANGED),
        bytes_copied: s(BYTES_COPIED),
    }
}

// ---- making and attaching ----

/// Largest container (4 MiB).
pub const MAX_PAGES: u64 = 1024;

/// New zeroed, fully present memory of `pages` (a region outside any
/// space), in blocks of 2 MiB when it is whole blocks: a container that
/// big is then mapped, and exchanged, one entry per block.
pub fn new_memory(pages: usize) -> Result<Region, Error> {
    timed(CREATE, || {
        STATS[CREATES].fetch_add(1, Ordering::Relaxed);
        Region::zeroed(RegionKind::Data, pages).map_err(|_| Error::NoMemory)
    })
}

/// Gives process `pid` container `id` (an entry of `t`, the table, held
/// locked by the caller): its memory attached at `addr` (0: wherever
/// there is room), its place and owner recorded. The one way a process is
/// given a container. It happens under the table's lock, after the
/// process said it takes resources, that is, it has not begun to end
/// (`Process::accept_resource`): its end's release of its containers,
/// which takes this lock, then either finds this one or refuses it here
/// (teardown is a state). Without room the memory comes back whole.
fn give(t: &mut ResTable<Container>, id: ResId, pid: u64, memory: Region, addr: u64) -> Result<u64, (Error, Region)> {
    timed(ATTACH, || {
        let Some(p) = ipc::process::get(pid) else {
            return Err((Error::NotFound, memory));
        };
        let space = match p.space() {
            Some(s) if p.accept_resource() => s,
            _ => return Err((Error::NotFound, memory)),
        };
        // The container's own charge covers its memory wherever it goes.
        let (region, link, slot, base) = vspace::attach_memory(p.space_id(), memory, at(addr, &p), id, KERNEL)?;
        if let Ok(e) = t.get_mut(id) {
            e.owner = pid;
            e.value.region = region;
            e.value.place = Place::InProcess {
                pid,
                link,
                slot,
                base,
                space,
                space_id: p.space_id(),
            };
        }
        Ok(base)
    })
}

/// Where a container goes in process `p`: at `addr`, or (0) wherever
/// there is room.
#[inline(always)]
fn at(addr: u64, p: &ipc::process::Process) -> At<'_> {
    if addr != 0 { At::Address(addr) } else { p.free_place() }
}

/// Detaches a container's memory (attached by `link` to `space`, in slot
/// `slot` if it is still there) from its process: returns the region.
fn detach(link: ResId, slot: usize, space: &SpaceRef) -> Result<Region, Error> {
    timed(DETACH, || vspace::take_held(link, space, slot))
}

/// What a container of `pages` costs in kernel memory: its record, its
/// list of frames, and its region's and attachment's records.
pub const fn cost(pages: usize) -> u64 {
    super::cost::<Container>(pages as u64 * 8 + 512)
}

/// A container's cost, charged to process `pid` (the one that made it).
pub fn charge(pid: u64, pages: usize) -> Result<Charge, Error> {
    super::charge(pid, cost(pages))
}

/// A new container of `memory` given to process `owner` at `addr` (0:
/// where there is room). The container comes first, so that its
/// attachment can name it; without room the memory comes back.
pub fn create_attached(owner: u64, memory: Region, addr: u64, charge: Charge) -> Result<ResId, (Error, Region)> {
    let mut t = TABLE.lock();
    let c = Container {
        pages: memory.pages(),
        region: ResId::NONE,
        place: Place::Moving,
    };
    let id = match super::insert_charged(&mut t, owner, charge, c) {
        Ok(id) => id,
        Err(e) => return Err((e, memory)),
    };
    match give(&mut t, id, owner, memory, addr) {
        Ok(_) => Ok(id),
        Err(failed) => {
            let _ = t.remove(id);
            Err(failed)
        }
    }
}

/// A process that receives a container (created for it, pushed, moved to
/// it) owns a resource it did not make itself: its exit must find it.
fn owned_by(pid: u64) {
    if pid != KERNEL {
        super::mediator::note_maker(pid);
    }
}

/// A new container of `pages` zeroed pages attached to the caller at
/// `addr` (0: where there is room) (`container_create`).
pub fn create(caller: u64, pages: u64, addr: u64) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreateContainer, NO_IDS, || {
        if pages == 0 || pages > MAX_PAGES {
            return Err(Error::Invalid);
        }
        let charge = charge(caller, pages as usize)?;
        let memory = new_memory(pages as usize)?;
        create_attached(caller, memory, addr, charge).map_err(|(e, _)| e)
    })
}

/// An ICA (AnT): a container of `pages` physically contiguous pages
/// attached to the caller (`ica_create`).
pub fn create_ica(caller: u64, pages: u64) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreateIca, NO_IDS, || {
        if pages == 0 || pages > MAX_PAGES {
            return Err(Error::Invalid);
        }
        let charge = charge(caller, pages as usize)?;
        let memory = timed(CREATE, || {
            Region::contiguous(RegionKind::Data, pages as usize).map_err(|_| Error::NoMemory)
        })?;
        create_attached(caller, memory, 0, charge).map_err(|(e, _)| e)
    })
}

/// Moves (re-attaches) a container from its process to `target` at `addr`
/// (0: where there is room) without copying (AnT's ICA move): the sender
/// loses access (its entries are cleared and shot down) and the target
/// gets the same frames. Gives the new address.
pub fn move_ica(caller: u64, id: ResId, target: u64, addr: u64) -> Result<u64, Error> {
    mediated_move(caller, id, || {
        let to_p = ipc::process::get(target).ok_or(Error::NotFound)?;
        x86_64::instructions::interrupts::without_interrupts(|| moving(caller, id, &to_p, addr))
    })
}

/// `move_ica` for process `me` itself (`ica_move`, inlined into the
/// dispatcher): the target comes from `me`'s reference to its last one
/// when it is the same process (pids are never reused, so the pid
/// identifies it; one that has begun to end is refused by the move).
#[inline(always)]
pub fn move_for(me: &ipc::process::Process, id: ResId, target: u64, addr: u64) -> Result<u64, Error> {
    mediated_move(me.pid(), id, || move_from(me, id, target, addr))
}

/// The mediator's part of a move, whose cycles are also the move's share of
/// the containers' cost breakdown (seed 004).
#[inline(always)]
fn mediated_move(caller: u64, id: ResId, work: impl FnOnce() -> Result<u64, Error>) -> Result<u64, Error> {
    let ids = only(id, Need::OfKind(Kind::Container));
    invoke_then(caller, ResOp::MoveIca, ids, work, |cycles| {
        STATS[ATTACH].fetch_add(cycles, Ordering::Relaxed);
    })
}

/// The move for process `me` itself: one call with everything inside it
/// inlined (the one closure, the move given its target, is called once
/// from an `#[inline(always)]` method, and is inlined with it).
#[inline(never)]
fn move_from(me: &ipc::process::Process, id: ResId, target: u64, addr: u64) -> Result<u64, Error> {
    // The first lock (the kept target's) turns interrupts off (its guard
    // turns them back on); the rest of the move's locks are taken as they are.
    me.with_ica_target(target, |to_p| moving(me.pid(), id, to_p, addr))
}

/// The move itself, to process `to_p`. Interrupts are off, taken once for
/// the whole of it: the locks on the way then neither save nor restore the
/// flags each.
#[inline(always)]
fn moving(caller: u64, id: ResId, to_p: &ipc::process::Process, addr: u64) -> Result<u64, Error> {
    may_touch_process(caller, to_p)?;
    let target = to_p.pid();
    // The target's space while it has one (it gives it up as it ends).
    let to = to_p.space_irqs_off().ok_or(Error::NotFound)?;
    // One hold of the container table for the look-up, the move and the
    // new place (the table before the spaces, as on the SWAP path), so the
    // container cannot change between them and is looked up once.
    let base = {
        let mut t = TABLE.lock_irqs_off();
        let e = t.get_mut(id).map_err(super::id_error)?;
        let pages = e.value.pages;
        let Place::InProcess {
            pid,
            link,
            slot,
            base,
            space,
            space_id,
        } = &mut e.value.place
        else {
            return Err(Error::Busy);
        };
        if *pid != caller && caller != KERNEL {
            return Err(Error::Denied);
        }
        if target == *pid || alloc::sync::Arc::ptr_eq(space, &to) {
            return Err(Error::Invalid);
        }
        // The target will own a resource it did not make: its exit must
        // find it. Marked before looking whether it has begun to end (see
        // `Process::accept_resource`): its release, which takes this
        // table's lock, then finds the container, or the move is refused.
        if !to_p.accept_resource() {
            return Err(Error::NotFound);
        }
        // The place is updated where it lies (same variant, new fields):
        // the one record of where the memory is (see `Place::InProcess`).
        (*base, *slot) = move_attachment(space, &to, to_p, (*link, *slot), pages, addr)?;
        *pid = target;
        *space = to;
        *space_id = to_p.space_id();
        e.owner = target;
        *base
    };
    Ok(base)
}

/// Moves attachment `link` (of `pages`, in `slot`) from space `from` to
/// space `to` of process `to_p`, at `addr` or wherever there is room;
/// returns its address and slot there. Interrupts are off.
#[inline(always)]
fn move_attachment(
    from: &SpaceRef,
    to: &SpaceRef,
    to_p: &ipc::process::Process,
    (link, slot): (ResId, usize),
    pages: usize,
    addr: u64,
) -> Result<(u64, usize), Error> {
    let len = pages as u64 * kcore::mm::layout::PAGE_SIZE;
    // Two spaces: locked in address order, so that two moves in opposite
    // directions cannot deadlock.
    let from_first = alloc::sync::Arc::as_ptr(from) < alloc::sync::Arc::as_ptr(to);
    let (first, second) = if from_first { (from, to) } else { (to, from) };
    let mut g1 = first.lock_irqs_off();
    let mut g2 = second.lock_irqs_off();
    let (src, dst) = if from_first {
        (&mut *g1, &mut *g2)
    } else {
        (&mut *g2, &mut *g1)
    };
    // A free place found here is known to be free: the move need not
    // look again.
    let (base, free) = dst.place(at(addr, to_p), len).ok_or(Error::NoMemory)?;
    let slot = src.move_to(link, slot, dst, base, free).map_err(|_| Error::Invalid)?;
    Ok((base, slot))
}

/// A container that waits in box `bx`, holding `memory`, its cost held
/// by `charge`.
pub fn create_in_box(owner: u64, bx: ResId, memory: Region, charge: Charge) -> Result<ResId, Error> {
    let pages = memory.pages();
    owned_by(owner);
    let c = Container {
        pages,
        region: ResId::NONE,
        place: Place::InBox { bx, region: memory },
    };
    super::insert_charged(&mut TABLE.lock(), owner, charge, c)
}

/// (pid, link, base, pages) of a container attached to a process.
pub fn in_process(id: ResId) -> Result<(u64, ResId, u64, usize), Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    match e.value.place {
        Place::InProcess { pid, link, base, .. } => Ok((pid, link, base, e.value.pages)),
        _ => Err(Error::Busy),
    }
}

/// Takes the memory of a container waiting in a box out of it (the
/// container is then Moving until `place_in_process` or deletion).
pub fn take_box_memory(id: ResId) -> Result<Region, Error> {
    let mut t = TABLE.lock();
    let e = t.get_mut(id).map_err(super::id_error)?;
    match core::mem::replace(&mut e.value.place, Place::Moving) {
        Place::InBox { region, .. } => Ok(region),
        other => {
            e.value.place = other;
            Err(Error::Busy)
        }
    }
}

pub fn put_box_memory(id: ResId, bx: ResId, region: Region) {
    if let Ok(e) = TABLE.lock().get_mut(id) {
        e.value.place = Place::InBox { bx, region };
    }
}

/// Runs `f` on the memory of a container waiting in a box.
pub fn with_box_memory<R>(id: ResId, f: impl FnOnce(&mut Region) -> R) -> Result<R, Error> {
    let mut t = TABLE.lock();
    let e = t.get_mut(id).map_err(super::id_error)?;
    match &mut e.value.place {
        Place::InBox { region, .. } => Ok(f(region)),
        _ => Err(Error::Busy),
    }
}

/// Gives a container (its memory, taken out of a box) to process `pid`
/// at `addr` (0: where there is room); without room the memory comes
/// back, for the box to keep.
pub fn place_in_process(id: ResId, pid: u64, memory: Region, addr: u64) -> Result<u64, (Error, Region)> {
    give(&mut TABLE.lock(), id, pid, memory, addr)
}

/// Deletes a container (its memory too) wherever it is.
pub fn destroy(id: ResId) -> Result<(), Error> {
    let c = TABLE.lock().remove(id).map_err(super::id_error)?.value;
    timed(DELETE, || {
        STATS[DELETES].fetch_add(1, Ordering::Relaxed);
        match c.place {
            // Its memory goes with it: taken out of the space and freed
            // here, its region's entry gone with the attachment's.
            Place::InProcess { link, slot, space, .. } => drop(vspace::take_held(link, &space, slot)),
            Place::InBox { region, .. } => drop(region),
            Place::Moving => {}
        }
    });
    Ok(())
}

/// The memory of a process's container (attachment `link`, looked for in
/// slot `slot` first), copied (COPY) or shared (SHARE).
/// Inlined, as `outgoing`: a region is a large value, and each call it
/// came back through copied it whole once more.
#[inline(always)]
fn derived(pid: u64, (link, slot): (ResId, usize), mode: ContainerMode) -> Result<Region, Error> {
    let p = ipc::process::get(pid).ok_or(Error::NotFound)?;
    let space = p.space().ok_or(Error::NotFound)?;
    let mut s = space.lock();
    let a = s.attachment_mut(link, slot).ok_or(Error::NotFound)?;
    match mode {
        ContainerMode::Copy => timed(COPY, || {
            STATS[BYTES_COPIED].fetch_add(a.region.size(), Ordering::Relaxed);
            a.region.duplicate().map_err(|_| Error::NoMemory)
        }),
        ContainerMode::Share => a.region.share().map_err(|_| Error::NoMemory),
        _ => Err(Error::Invalid),
    }
}

/// The memory a container carries away from its process in `mode`, with
/// what pays for the container it becomes: a copy or a shared alias,
/// charged to `caller`, or (MOVE) the container's own memory, detached,
/// with its own charge (the same cost, already paid: a move charges and
/// gives back nothing).
#[inline(always)]
pub fn outgoing(caller: u64, id: ResId, mode: ContainerMode) -> Result<(Region, Charge), Error> {
    match mode {
        ContainerMode::Copy | ContainerMode::Share => {
            // Where it lies, its slot too: a process may hold hundreds.
            let (pid, link, slot, pages) = {
                let t = TABLE.lock();
                let e = t.get(id).map_err(super::id_error)?;
                match e.value.place {
                    Place::InProcess { pid, link, slot, .. } => (pid, link, slot, e.value.pages),
                    _ => return Err(Error::Busy),
                }
            };
            let charge = charge(caller, pages)?;
            Ok((derived(pid, (link, slot), mode)?, charge))
        }
        ContainerMode::Move => {
            // One look at the container for where it lies.
            let (link, slot, space) = {
                let t = TABLE.lock();
                let e = t.get(id).map_err(super::id_error)?;
                match &e.value.place {
                    Place::InProcess { link, slot, space, .. } => (*link, *slot, space.clone()),
                    _ => return Err(Error::Busy),
                }
            };
            let memory = detach(link, slot, &space)?;
            let gone = TABLE.lock().remove(id).map_err(super::id_error)?;
            Ok((memory, gone.charge))
        }
        ContainerMode::Swap => {
            in_process(id)?;
            Err(Error::Invalid)
        }
    }
}

/// Exchanges the physical pages of a process's container with `memory`
/// (outside any space). Nothing is copied; only page-table entries change.
pub fn exchange_with_memory(id: ResId, memory: &mut Region) -> Result<(), Error> {
    let (link, pages, space) = {
        let t = TABLE.lock();
        let e = t.get(id).map_err(super::id_error)?;
        match &e.value.place {
            Place::InProcess { link, slot, space, .. } => ((*link, *slot), e.value.pages, space.clone()),
            _ => return Err(Error::Busy),
        }
    };
    if memory.pages() != pages {
        return Err(Error::Invalid);
    }
    exchange_in(&space, link, memory)
}

/// The exchange itself, counted and timed, once the container's space and
/// attachment are known.
pub fn exchange_in(space: &SpaceRef, link: (ResId, usize), memory: &mut Region) -> Result<(), Error> {
    timed(EXCHANGE, || exchange_untimed(space, link, memory))
}

/// `exchange_in` for a caller that reads the clock around it anyway (the
/// SWAP fast paths) and adds the time to `EXCHANGE` itself. Inlined
/// there, with the space's part: a call and its saved registers are a
/// tenth of a one-page exchange.
#[inline(always)]
pub fn exchange_untimed(space: &SpaceRef, (link, slot): (ResId, usize), memory: &mut Region) -> Result<(), Error> {
    STATS[EXCHANGES].fetch_add(1, Ordering::Relaxed);
    STATS[PAGES_EXCHANGED].fetch_add(memory.pages() as u64, Ordering::Relaxed);
    space
        .lock()
        .exchange_with(link, slot, memory)
        .map_err(|_| Error::Invalid)
}

// ---- direct operations between processes ----

/// May `caller` push into, steal from or exchange with `target`? Its
/// parent may; others only after the target granted them (`peer_grant`).
pub fn may_touch(caller: u64, target: u64) -> Result<(), Error> {
    if caller == KERNEL || caller == target {
        return Ok(());
    }
    may_touch_process(caller, &*ipc::process::get(target).ok_or(Error::NotFound)?)
}

/// `may_touch` for a target already looked up.
#[inline(always)]
fn may_touch_process(caller: u64, p: &ipc::process::Process) -> Result<(), Error> {
    // The parent first: it needs no lock.
    if caller == KERNEL || caller == p.pid() || p.is_child_of(caller) {
        return Ok(());
    }
    may_touch_peer(caller, p)
}

#[cold]
fn may_touch_peer(caller: u64, p: &ipc::process::Process) -> Result<(), Error> {
    if p.may_push_from(caller) {
        Ok(())
    } else {
        Err(Error::Denied)
    }
}

/// Push: the caller's container goes (COPY/SHARE/MOVE) into `target`'s
/// space at `addr` (0: where there is room); gives the container there
/// (`container_push`).
pub fn push(caller: u64, id: ResId, target: u64, addr: u64, mode: ContainerMode) -> Result<ResId, Error> {
    invoke(caller, ResOp::Push, only(id, Need::OfKind(Kind::Container)), || {
        let (pid, ..) = in_process(id)?;
        if pid != caller && caller != KERNEL {
            return Err(Error::Denied);
        }
        hand_over(caller, id, target, mode, target, addr)
    })
}

/// Steal: `target`'s container comes (COPY/SHARE/MOVE) into the caller's
/// space at `addr` (0: where there is room) (`container_steal`).
pub fn steal(caller: u64, id: ResId, target: u64, addr: u64, mode: ContainerMode) -> Result<ResId, Error> {
    invoke(caller, ResOp::Steal, only(id, Need::OfKind(Kind::Container)), || {
        let (pid, ..) = in_process(id)?;
        if pid != target {
            return Err(Error::Invalid);
        }
        hand_over(caller, id, target, mode, caller, addr)
    })
}

/// Container `id` goes (COPY/SHARE/MOVE) from its process to process `to`
/// at `addr`, if `caller` may touch `target`. A move that cannot land puts
/// the container back where it was, as a new container of its process.
fn hand_over(caller: u64, id: ResId, target: u64, mode: ContainerMode, to: u64, addr: u64) -> Result<ResId, Error> {
    may_touch(caller, target)?;
    let (from, _, base, _) = in_process(id)?;
    let (memory, charge) = outgoing(caller, id, mode)?;
    create_attached(to, memory, addr, charge).map_err(|(e, memory)| {
        if mode == ContainerMode::Move {
            let _ = create_attached(from, memory, base, Charge::NONE);
        }
        e
    })
}

/// Exchange: the physical pages behind the caller's `mine` and `target`'s
/// `theirs` change places; both stay where they are attached
/// (`container_exchange`).
pub fn exchange(caller: u64, mine: ResId, target: u64, theirs: ResId) -> Result<(), Error> {
    let ids = [
        (mine, Need::OfKind(Kind::Container)),
        (theirs, Need::OfKind(Kind::Container)),
        NO_ID,
    ];
    invoke(caller, ResOp::Exchange, ids, || {
        exchange_pages(caller, mine, target, theirs)
    })
}

fn exchange_pages(caller: u64, mine: ResId, target: u64, theirs: ResId) -> Result<(), Error> {
    let (p1, l1, _, n1) = in_process(mine)?;
    let (p2, l2, _, n2) = in_process(theirs)?;
    if p1 != caller && caller != KERNEL {
        return Err(Error::Denied);
    }
    if p2 != target {
        return Err(Error::Invalid);
    }
    may_touch(caller, target)?;
    if n1 != n2 {
        return Err(Error::Invalid);
    }
    let s1 = ipc::process::get(p1).and_then(|p| p.space()).ok_or(Error::NotFound)?;
    let s2 = ipc::process::get(p2).and_then(|p| p.space()).ok_or(Error::NotFound)?;
    timed(EXCHANGE, || {
        STATS[EXCHANGES].fetch_add(1, Ordering::Relaxed);
        STATS[PAGES_EXCHANGED].fetch_add(n1 as u64, Ordering::Relaxed);
        if alloc::sync::Arc::ptr_eq(&s1, &s2) {
            return s1.lock().exchange_within(l1, l2).map_err(|_| Error::Invalid);
        }
        // Two spaces: lock them in address order, so two exchanges in
        // opposite directions cannot deadlock.
        let (first, second) = if (alloc::sync::Arc::as_ptr(&s1) as usize) < (alloc::sync::Arc::as_ptr(&s2) as usize) {
            (&s1, &s2)
        } else {
            (&s2, &s1)
        };
        let mut g1 = first.lock();
        let mut g2 = second.lock();
        let (a, b) = if alloc::sync::Arc::ptr_eq(first, &s1) {
            (&mut *g1, &mut *g2)
        } else {
            (&mut *g2, &mut *g1)
        };
        a.exchange_between(l1, b, l2).map_err(|_| Error::Invalid)
    })
}

/// Where a container's memory is: its owner, space, attachment, address.
pub struct Whereabouts {
    pub owner: u64,
    pub space: ResId,
    pub link: ResId,
    pub base: u64,
}

/// Where container `id` lies, if it is attached to a process (for the
/// records of the attachment and region it holds).
pub fn whereabouts(id: ResId) -> Option<Whereabouts> {
    let t = TABLE.lock();
    let e = t.get(id).ok()?;
    match &e.value.place {
        Place::InProcess {
            link, base, space_id, ..
        } => Some(Whereabouts {
            owner: e.owner,
            space: *space_id,
            link: *link,
            base: *base,
        }),
        _ => None,
    }
}

pub struct Containers;

impl Resource for Containers {
    /// A container is changed by the process it is attached to (one in a
    /// box belongs to the box).
    fn check(&self, caller: u64, id: ResId, change: bool) -> Result<(), Error> {
        let t = TABLE.lock();
        let e = t.get(id).map_err(super::id_error)?;
        match e.value.place {
            _ if !change || caller == KERNEL => Ok(()),
            Place::InProcess { pid, .. } if pid == caller => Ok(()),
            _ => Err(Error::Denied),
        }
    }

    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        let (pid, ..) = in_process(id)?;
        if caller != KERNEL && caller != pid {
            return Err(Error::Denied);
        }
        destroy(id)
    }

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |c| {
            let (addr, links) = match &c.place {
                Place::InProcess { base, link, .. } => (*base, [c.region, *link, ResId::NONE]),
                Place::InBox { bx, .. } => (0, [ResId::NONE, ResId::NONE, *bx]),
                Place::Moving => (0, [ResId::NONE; 3]),
            };
            (c.pages as u64 * 4096, addr, links)
        })
    }

    fn count(&self) -> usize {
        TABLE.lock().len()
    }

    fn table_bytes(&self) -> usize {
        crate::reserved_bytes(&TABLE.lock())
    }

    /// The containers attached to `pid` (those in boxes are the boxes').
    fn next_owned_by(&self, pid: u64, from: u32) -> Option<ResId> {
        TABLE.lock().find_from(
            from,
            |e| matches!(e.value.place, Place::InProcess { pid: p, .. } if p == pid),
        )
    }

    fn release_owned_by(&self, pid: u64) {
        super::each_from(
            |from| self.next_owned_by(pid, from),
            |id| {
                let _ = destroy(id);
            },
        );
    }
}
