//! Container box (Tender's コンテナボックス, seed 004): holds containers
//! between processes. Per container size it keeps a queue of filled
//! containers (sent, waiting for a receiver) and a queue of empty ones
//! (for SWAP sends): an initial number is made with the box, more when a
//! send leaves fewer than the lower bound, and receives that leave more than
//! the upper bound delete the excess; deleting the box deletes them all.
//!
//! Send and receive each take a mode: COPY (a copy travels), SHARE (an
//! alias of the same frames travels), MOVE (the container itself travels)
//! and SWAP (the physical pages are exchanged with a box container: no byte
//! is copied and the cost does not grow with size beyond the PTE rewrites).
//!
//! Design decision the paper leaves open: an empty container that a SWAP
//! receive puts back holds the receiver's former pages, which a later SWAP
//! sender receives in exchange. A box scrubs (zeroes such pages, at the
//! cost of a write of every page, so nothing passes from a receiver to a
//! later sender) when its creator asks (`BOX_SCRUB`) and from the moment
//! it is granted to another process, unless its creator chose otherwise
//! (`BOX_UNSCRUBBED`): a box only its owner uses carries nothing between
//! processes, and keeps SWAP's flat cost. A scrubbing box zeroes in idle
//! time: a receive queues the pages it leaves as *dirty*, CPU 0 zeroes
//! dirty containers when it has nothing to run (`scrub_on_idle`), and a
//! SWAP send takes a clean one first, zeroing a dirty one itself only when
//! no clean one is left, so the sender never sees the receiver's data.

use super::container::{self, Container, Place, QUEUE, timed};
use super::fifo::Fifo;
use super::mediator::{NO_ID, NO_IDS, Need, Outcome, invoke, only};
use super::vspace::SpaceRef;
use super::{KERNEL, Kind, ResId, ResTable, Resource, table};
use abi::{BOX_RECEIVE, BOX_SCRUB, BOX_SEND, BOX_UNSCRUBBED, ContainerMode, Error, ResInfo, ResOp};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};
use ipc::process::WaitQueue;
use kcore::mm::quota::Charge;
use kcore::sync::IrqMutex;
use kcore::vm::region::Region;

struct Queues {
    /// Empty containers whose pages are zero (or whose box never scrubs).
    empty: Fifo<ResId>,
    /// Empty containers of a scrubbing box still holding a receiver's
    /// former pages: zeroed in idle time, or by the send that takes one.
    dirty: Fifo<ResId>,
    /// (container, requested attach address of the sender)
    filled: Fifo<(ResId, u64)>,
}

impl Default for Queues {
    fn default() -> Self {
        Queues {
            empty: Fifo::new(ResId::NONE),
            dirty: Fifo::new(ResId::NONE),
            filled: Fifo::new((ResId::NONE, 0)),
        }
    }
}

impl Queues {
    fn empties(&self) -> usize {
        self.empty.len() + self.dirty.len()
    }

    /// Queues `c`, an empty container whose pages a receiver left, if the
    /// class is under `upper`: dirty in a scrubbing box. False: delete it.
    fn give_back(&mut self, c: ResId, upper: usize, scrub: bool) -> bool {
        let under = self.empties() < upper;
        let q = if scrub { &mut self.dirty } else { &mut self.empty };
        let keep = under && q.try_reserve(1).is_ok();
        if keep {
            q.push_back(c);
            if scrub {
                DIRTY.fetch_add(1, Ordering::Relaxed);
            }
        }
        keep
    }

    /// An empty container for a SWAP send, clean ones first; true if it is
    /// dirty (the taker zeroes it before the exchange). Not taken off its
    /// queue: `taken` does that once the exchange is done.
    fn first_empty(&self) -> Option<(ResId, bool)> {
        match self.empty.front() {
            Some(c) => Some((c, false)),
            None => self.dirty.front().map(|c| (c, true)),
        }
    }

    fn taken(&mut self, dirty: bool) {
        if dirty {
            self.dirty.pop_front();
            DIRTY.fetch_sub(1, Ordering::Relaxed);
        } else {
            self.empty.pop_front();
        }
    }
}

/// Dirty containers in all boxes: idle time has work while it is not 0.
static DIRTY: AtomicUsize = AtomicUsize::new(0);

/// The size classes of a box, sorted by size. A box nearly always has one
/// or two, and every SWAP send and receive looks its class up: a sorted
/// vector searched by halving does that in a few instructions where a tree
/// map took some thirty.
#[derive(Default)]
struct Classes(Vec<(usize, Queues)>);

impl Classes {
    fn find(&self, pages: usize) -> Result<usize, usize> {
        self.0.binary_search_by_key(&pages, |c| c.0)
    }
    fn get(&self, pages: &usize) -> Option<&Queues> {
        self.find(*pages).ok().map(|i| &self.0[i].1)
    }
    fn get_mut(&mut self, pages: &usize) -> Option<&mut Queues> {
        self.find(*pages).ok().map(|i| &mut self.0[i].1)
    }
    /// The class of `pages`, made (empty) if there is none.
    fn entry(&mut self, pages: usize) -> &mut Queues {
        let i = match self.find(pages) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (pages, Queues::default()));
                i
            }
        };
        &mut self.0[i].1
    }
    fn iter_mut(&mut self) -> impl Iterator<Item = (&usize, &mut Queues)> {
        self.0.iter_mut().map(|(p, q)| (&*p, q))
    }
    fn values(&self) -> impl Iterator<Item = &Queues> {
        self.0.iter().map(|c| &c.1)
    }
    fn into_values(self) -> impl Iterator<Item = Queues> {
        self.0.into_iter().map(|c| c.1)
    }
}

pub struct ContainerBox {
    classes: Classes,
    lower: usize,
    upper: usize,
    scrub: bool,
    /// Its creator chose never to scrub (`BOX_UNSCRUBBED`).
    unscrubbed: bool,
    /// (pid or ANY_PID, rights)
    grants: Vec<(u64, u64)>,
    /// Receivers waiting for a container.
    waiters: Arc<WaitQueue>,
    /// How many receivers are between finding nothing and being woken: a
    /// send wakes the queue only when there are some.
    waiting: usize,
}

static TABLE: IrqMutex<ResTable<ContainerBox>> = IrqMutex::new(table(Kind::ContainerBox));

fn allowed(e: &super::Entry<ContainerBox>, caller: u64, right: u64) -> bool {
    caller == KERNEL
        || e.owner == caller
        || e.value
            .grants
            .iter()
            .any(|&(p, r)| (p == caller || p == abi::ANY_PID) && r & right != 0)
}

/// A box whose size class `pages` starts with `initial` empty containers,
/// made again up to `lower`, deleted above `upper`; `flags`: `BOX_SCRUB`,
/// `BOX_UNSCRUBBED` or 0 (`box_create`).
pub fn create(caller: u64, pages: u64, initial: u64, lower: u64, upper: u64, flags: u64) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreateBox, NO_IDS, || {
        make(caller, pages, initial, lower, upper, flags)
    })
}

/// Lets process `pid` (or `ANY_PID`) send to or receive from the box
/// (`rights`: `BOX_SEND`, `BOX_RECEIVE`) (`box_grant`).
pub fn grant(caller: u64, bx: ResId, pid: u64, rights: u64) -> Result<(), Error> {
    invoke(
        caller,
        ResOp::GrantBox,
        only(bx, Need::Owned(Kind::ContainerBox)),
        || {
            // Its pages may now go from one process to another: it scrubs
            // from now on, and the empty containers its owner's receives
            // left unscrubbed are zeroed before the grant lets anyone else
            // have them, with both tables held (container table first) so
            // that no send takes one half-zeroed.
            let mut ct = container::lock();
            let mut t = TABLE.lock();
            let e = super::owned_mut(&mut t, bx, caller)?;
            if pid != caller && !e.value.unscrubbed && !e.value.scrub {
                for (_, q) in e.value.classes.iter_mut() {
                    for c in q.empty.iter() {
                        if let Ok(Place::InBox { region, .. }) = ct.get_mut(c).map(|e| &mut e.value.place) {
                            region.reset();
                        }
                    }
                }
                e.value.scrub = true;
            }
            drop(ct);
            e.value.grants.try_reserve(1).map_err(|_| Error::NoMemory)?;
            e.value.grants.push((pid, rights & (BOX_SEND | BOX_RECEIVE)));
            Ok(())
        },
    )
}

/// Send (seed 004 table 2): the caller's container `id` goes into box `bx`
/// in `mode`, to be attached at `addr` by a receiver that names none
/// (`container_send`). The box's right and the container's owner are
/// checked with the box and the container in hand.
#[inline(always)]
pub fn send(caller: u64, id: ResId, bx: ResId, addr: u64, mode: ContainerMode) -> Result<Sent, Error> {
    let ids = [
        (bx, Need::OfKind(Kind::ContainerBox)),
        (id, Need::OfKind(Kind::Container)),
        NO_ID,
    ];
    invoke(caller, ResOp::Send, ids, || {
        let (id, size) = send_now(caller, id, bx, addr, mode)?;
        Ok(Sent { id, size })
    })
}

/// What a send put in the box: the container there and its size in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    pub id: ResId,
    pub size: u64,
}

impl Outcome for Sent {}

/// Receive (seed 004 table 3) from box `bx`: `id` is `ResId::NONE` for
/// the first container waiting, or a given one; for SWAP it is the
/// caller's own container, whose pages are exchanged with the first
/// waiting container of its size. Waits up to `timeout_ns`
/// (`container_receive`).
#[inline(always)]
pub fn receive(caller: u64, r: Receive) -> Result<Received, Error> {
    let Receive { id, bx, mode, .. } = r;
    let named = id != ResId::NONE || mode == ContainerMode::Swap;
    let ids = [
        (bx, Need::OfKind(Kind::ContainerBox)),
        if named {
            (id, Need::OfKind(Kind::Container))
        } else {
            NO_ID
        },
        NO_ID,
    ];
    invoke(caller, ResOp::Receive, ids, || receive_now(caller, r))
}

/// What a receive asks for: `id` (or `ResId::NONE`) from box `bx`,
/// attached at `addr` (0: anywhere), in `mode`, waiting up to `timeout_ns`.
#[derive(Debug, Clone, Copy)]
pub struct Receive {
    pub id: ResId,
    pub bx: ResId,
    pub addr: u64,
    pub mode: ContainerMode,
    pub timeout_ns: u64,
}

impl Receive {
    /// The first container waiting in `bx` (or, for SWAP, the exchange of
    /// `id`, the caller's own), attached anywhere, without waiting.
    pub fn new(bx: ResId, id: ResId, mode: ContainerMode) -> Receive {
        Receive {
            id,
            bx,
            addr: 0,
            mode,
            timeout_ns: 0,
        }
    }

    /// Attached at `addr`.
    pub fn at(self, addr: u64) -> Receive {
        Receive { addr, ..self }
    }

    /// Waiting up to `timeout_ns` for a container to arrive.
    pub fn waiting(self, timeout_ns: u64) -> Receive {
        Receive { timeout_ns, ..self }
    }
}

/// What a receive gave: the container, where it is attached in the
/// receiver's space, and its size in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    pub id: ResId,
    pub addr: u64,
    pub size: u64,
}

impl Received {
    fn new(id: ResId, addr: u64, pages: usize) -> Received {
        Received {
            id,
            addr,
            size: pages as u64 * 4096,
        }
    }
}

impl Outcome for Received {}

fn make(owner: u64, pages: u64, initial: u64, lower: u64, upper: u64, flags: u64) -> Result<ResId, Error> {
    if flags == BOX_SCRUB | BOX_UNSCRUBBED {
        return Err(Error::Invalid);
    }
    if pages == 0 || pages > container::MAX_PAGES || initial > 256 || lower > upper || upper > 256 {
        return Err(Error::Invalid);
    }
    // Its owner pays for its record and its queues (of at most `upper`
    // empty containers, and of filled ones bounded by its senders' own
    // containers, each charged).
    let charge = super::charge(owner, super::cost::<ContainerBox>(512 + upper * 16))?;
    let waiters = kcore::mm::heap::try_arc(WaitQueue::new()).map_err(|_| Error::NoMemory)?;
    let bx = super::insert_charged(
        &mut TABLE.lock(),
        owner,
        charge,
        ContainerBox {
            classes: Classes::default(),
            lower: lower as usize,
            upper: upper as usize,
            scrub: flags & BOX_SCRUB != 0,
            unscrubbed: flags & BOX_UNSCRUBBED != 0,
            grants: Vec::new(),
            waiters,
            waiting: 0,
        },
    )?;
    if let Err(e) = fill_empties(bx, pages as usize, initial as usize) {
        let _ = Boxes.delete(KERNEL, bx);
        return Err(e);
    }
    Ok(bx)
}

/// Makes empty containers of `pages` until the class has `want`.
fn fill_empties(bx: ResId, pages: usize, want: usize) -> Result<(), Error> {
    loop {
        let have = TABLE
            .lock()
            .get(bx)
            .map_err(super::id_error)?
            .value
            .classes
            .get(&pages)
            .map_or(0, Queues::empties);
        if have >= want {
            return Ok(());
        }
        // The box's owner set the bounds: it pays for its empty containers.
        let owner = TABLE.lock().get(bx).map_err(super::id_error)?.owner;
        let charge = container::charge(owner, pages).or_else(|e| match e {
            Error::NotFound => Ok(Charge::NONE),
            e => Err(e),
        })?;
        let memory = container::new_memory(pages)?;
        let c = container::create_in_box(KERNEL, bx, memory, charge)?;
        let mut t = TABLE.lock();
        match t.get_mut(bx) {
            Ok(e) => e.value.classes.entry(pages).empty.push_back(c),
            Err(e) => {
                drop(t);
                let _ = container::destroy(c);
                return Err(super::id_error(e));
            }
        }
    }
}

fn check(caller: u64, bx: ResId, right: u64) -> Result<(), Error> {
    let t = TABLE.lock();
    let e = t.get(bx).map_err(super::id_error)?;
    if allowed(e, caller, right) {
        Ok(())
    } else {
        Err(Error::Denied)
    }
}

/// `send`: returns the container now in the box and its size.
fn send_now(caller: u64, id: ResId, bx: ResId, addr: u64, mode: ContainerMode) -> Result<(ResId, u64), Error> {
    if mode == ContainerMode::Swap
        && let Some(done) = send_swap(caller, id, bx, addr)
    {
        return done;
    }
    check(caller, bx, BOX_SEND)?;
    let (pid, _, _, pages) = container::in_process(id)?;
    if pid != caller && caller != KERNEL {
        return Err(Error::Denied);
    }
    let boxed = match mode {
        ContainerMode::Swap => {
            // An empty container of the same size takes the data by exchange.
            let empty = timed(QUEUE, || {
                let mut t = TABLE.lock();
                let e = t.get_mut(bx).map_err(super::id_error)?;
                let q = e.value.classes.get_mut(&pages);
                Ok::<_, Error>(q.and_then(|q| {
                    let first = q.first_empty();
                    first.inspect(|&(_, dirty)| q.taken(dirty))
                }))
            })?;
            let empty = match empty {
                Some((c, dirty)) => {
                    // Off the queues, it is this send's alone: zeroed here.
                    if dirty {
                        container::with_box_memory(c, |m| m.reset())?;
                    }
                    c
                }
                None => {
                    let charge = container::charge(caller, pages)?;
                    container::create_in_box(KERNEL, bx, container::new_memory(pages)?, charge)?
                }
            };
            let mut memory = container::take_box_memory(empty)?;
            let r = container::exchange_with_memory(id, &mut memory);
            container::put_box_memory(empty, bx, memory);
            if let Err(e) = r {
                let _ = container::destroy(empty);
                return Err(e);
            }
            empty
        }
        _ => {
            let (memory, charge) = container::outgoing(caller, id, mode)?;
            container::create_in_box(KERNEL, bx, memory, charge)?
        }
    };
    let (waiters, lower) = timed(QUEUE, || {
        let mut t = TABLE.lock();
        let e = t.get_mut(bx).map_err(super::id_error)?;
        let q = e.value.classes.entry(pages);
        q.filled.try_reserve(1).map_err(|_| Error::NoMemory)?;
        q.filled.push_back((boxed, addr));
        Ok::<_, Error>((waiters_to_wake(&e.value), e.value.lower))
    })?;
    if let Some(w) = waiters {
        w.wake_all();
    }
    // A SWAP send that left too few empty containers makes more now.
    if mode == ContainerMode::Swap {
        fill_empties(bx, pages, lower)?;
    }
    Ok((boxed, pages as u64 * 4096))
}

/// The waiters of a box, if some receiver may be asleep on it.
fn waiters_to_wake(b: &ContainerBox) -> Option<Arc<WaitQueue>> {
    (b.waiting > 0).then(|| b.waiters.clone())
}

/// SWAP send when the box has an empty container of the size at hand (the
/// usual case), in one critical section (`swap_section`): the sender's
/// space is locked inside it for the exchange itself, so the empty
/// container's memory is exchanged where it lies, never moved out and
/// back. `None` leaves the work to the slow path (no empty container: one
/// is made there).
fn send_swap(caller: u64, id: ResId, bx: ResId, addr: u64) -> Option<Result<(ResId, u64), Error>> {
    let done = swap_section(caller, id, bx, BOX_SEND, |ct, b, (link, pages, space, _)| {
        let q = b.classes.get_mut(&pages)?;
        let (empty, dirty) = q.first_empty()?;
        // Room first: once the pages are exchanged nothing may fail.
        if q.filled.try_reserve(1).is_err() {
            return Some(Err(Error::NoMemory));
        }
        let Ok(Place::InBox { region, .. }) = ct.get_mut(empty).map(|e| &mut e.value.place) else {
            return None;
        };
        if dirty {
            region.reset();
        }
        let (t1, t2) = match exchange(&space, link, region) {
            Ok(times) => times,
            Err(e) => return Some(Err(e)),
        };
        q.taken(dirty);
        q.filled.push_back((empty, addr));
        let short = q.empties() < b.lower;
        Some(Ok(((empty, pages, short, b.lower, waiters_to_wake(b)), t1, t2)))
    });
    let (empty, pages, short, lower, waiters) = match done? {
        Ok(sent) => sent,
        Err(e) => return Some(Err(e)),
    };
    if let Some(w) = waiters {
        w.wake_all();
    }
    if short && let Err(e) = fill_empties(bx, pages, lower) {
        return Some(Err(e));
    }
    Some(Ok((empty, pages as u64 * 4096)))
}

/// SWAP receive when a filled container of the size is already waiting,
/// in one critical section as `send_swap`: the box container's memory is
/// exchanged where it lies, and the container goes back to the empty
/// queue (or is deleted above the upper bound). `None` when nothing is
/// there yet: the slow path waits.
fn receive_swap(caller: u64, id: ResId, bx: ResId) -> Option<Result<Received, Error>> {
    let done = swap_section(caller, id, bx, BOX_RECEIVE, |ct, b, (link, pages, space, base)| {
        let q = b.classes.get_mut(&pages)?;
        let (boxed, _) = q.filled.front()?;
        let Ok(Place::InBox { region, .. }) = ct.get_mut(boxed).map(|e| &mut e.value.place) else {
            return Some(Err(Error::Busy));
        };
        let (t1, t2) = match exchange(&space, link, region) {
            Ok(times) => times,
            Err(e) => return Some(Err(e)),
        };
        // The receiver's former pages go to a later sender: dirty in a
        // scrubbing box, zeroed before anyone gets them.
        q.filled.pop_front();
        let keep = q.give_back(boxed, b.upper, b.scrub);
        Some(Ok(((boxed, keep, base, pages), t1, t2)))
    });
    let (boxed, keep, base, pages) = match done? {
        Ok(received) => received,
        Err(e) => return Some(Err(e)),
    };
    if !keep {
        let _ = container::destroy(boxed);
    }
    Some(Ok(Received::new(id, base, pages)))
}

/// A SWAP's critical section, the same for send and receive: both tables
/// are locked (container table first, the order everywhere both are held)
/// while box `bx`, on which `caller` must have `right`, and container
/// `id`, attached to `caller`'s space, are looked up once each; `work`
/// then exchanges the pages (`exchange`) and returns its outcome with the
/// cycles at the exchange's start and end, or `None` for the slow path.
/// The queue's share of the cost is the rest, up to the tables' release.
#[inline(always)]
fn swap_section<R>(
    caller: u64,
    id: ResId,
    bx: ResId,
    right: u64,
    work: impl FnOnce(&mut ResTable<Container>, &mut ContainerBox, Attached) -> Option<Result<(R, u64, u64), Error>>,
) -> Option<Result<R, Error>> {
    let t0 = kcore::clock::cycles();
    let mut ct = container::lock();
    // Interrupts are off from the first lock on, and come back with its
    // release after this one's: the second need not save and restore them.
    let mut bt = TABLE.lock_irqs_off();
    let b = match bt.get_mut(bx) {
        Ok(b) if allowed(b, caller, right) => &mut b.value,
        Ok(_) => return Some(Err(Error::Denied)),
        Err(e) => return Some(Err(super::id_error(e))),
    };
    let parts = match attached(&ct, id, caller) {
        Ok(a) => a,
        Err(e) => return Some(Err(e)),
    };
    let (r, t1, t2) = match work(&mut ct, b, parts)? {
        Ok(done) => done,
        Err(e) => return Some(Err(e)),
    };
    drop(bt);
    drop(ct);
    container::STATS[QUEUE].fetch_add(t1 - t0 + kcore::clock::cycles() - t2, Ordering::Relaxed);
    Some(Ok(r))
}

/// A SWAP's exchange of the pages of attachment `link` in `space` with
/// those of a box container, `region`, counted as the containers'
/// exchange: returns the cycles at its start and end.
#[inline(always)]
fn exchange(space: &SpaceRef, link: (ResId, usize), region: &mut Region) -> Result<(u64, u64), Error> {
    let t1 = kcore::clock::cycles();
    let r = container::exchange_untimed(space, link, region);
    let t2 = kcore::clock::cycles();
    container::STATS[container::EXCHANGE].fetch_add(t2 - t1, Ordering::Relaxed);
    r.map(|()| (t1, t2))
}

/// ((link, slot), pages, space, base) of a container attached to a space.
type Attached = ((ResId, usize), usize, SpaceRef, u64);

/// The `Attached` parts of container `id`, attached to `caller`'s space.
fn attached(ct: &ResTable<Container>, id: ResId, caller: u64) -> Result<Attached, Error> {
    let c = ct.get(id).map_err(super::id_error)?;
    match &c.value.place {
        Place::InProcess {
            pid,
            link,
            slot,
            space,
            base,
            ..
        } if *pid == caller || caller == KERNEL => Ok(((*link, *slot), c.value.pages, space.clone(), *base)),
        Place::InProcess { .. } => Err(Error::Denied),
        _ => Err(Error::Busy),
    }
}

/// `receive` itself, once the mediator has checked the identifiers.
fn receive_now(caller: u64, r: Receive) -> Result<Received, Error> {
    let Receive {
        id,
        bx,
        addr,
        mode,
        timeout_ns,
    } = r;
    if mode == ContainerMode::Swap
        && let Some(done) = receive_swap(caller, id, bx)
    {
        return done;
    }
    check(caller, bx, BOX_RECEIVE)?;
    let swap_pages = if mode == ContainerMode::Swap {
        let (pid, _, _, pages) = container::in_process(id)?;
        if pid != caller && caller != KERNEL {
            return Err(Error::Denied);
        }
        Some(pages)
    } else {
        None
    };
    let waiters = {
        let mut t = TABLE.lock();
        let b = &mut t.get_mut(bx).map_err(super::id_error)?.value;
        // Counted before looking, so that a send after the look wakes us.
        b.waiting += 1;
        b.waiters.clone()
    };
    let deadline = kcore::clock::nanos().saturating_add(timeout_ns);
    let mut taken: Option<(ResId, u64, usize)> = None;
    let arrived = waiters.wait_until_deadline(deadline, || {
        taken = timed(QUEUE, || take_filled(bx, id, swap_pages));
        taken.is_some()
    });
    if let Ok(b) = TABLE.lock().get_mut(bx) {
        b.value.waiting = b.value.waiting.saturating_sub(1);
    }
    let Some((boxed, sender_addr, pages)) = taken else {
        return Err(if arrived { Error::NotFound } else { Error::Busy });
    };
    match mode {
        ContainerMode::Swap => {
            let mut memory = container::take_box_memory(boxed)?;
            let r = container::exchange_with_memory(id, &mut memory);
            container::put_box_memory(boxed, bx, memory);
            if let Err(e) = r {
                // Put it back at the head: the data is not lost.
                requeue_front(bx, pages, boxed, sender_addr);
                return Err(e);
            }
            give_back_empty(bx, pages, boxed)?;
            let (_, _, base, _) = container::in_process(id)?;
            Ok(Received::new(id, base, pages))
        }
        ContainerMode::Move | ContainerMode::Share => {
            // The container itself (or the alias it carries) is attached;
            // if it cannot be, it goes back to the head of its queue.
            let memory = container::take_box_memory(boxed)?;
            match place(
                addr,
                sender_addr,
                |at, m| container::place_in_process(boxed, caller, m, at),
                memory,
            ) {
                Ok(base) => Ok(Received::new(boxed, base, pages)),
                Err((e, memory)) => {
                    container::put_box_memory(boxed, bx, memory);
                    requeue_front(bx, pages, boxed, sender_addr);
                    Err(e)
                }
            }
        }
        ContainerMode::Copy => {
            // A copy is given as a new container (the receiver's cost); the
            // original becomes an empty one, or waits again at the head of
            // its queue if the copy cannot be placed.
            let copied = container::charge(caller, pages).and_then(|charge| {
                let copy = container::with_box_memory(boxed, |m| m.duplicate())?.map_err(|_| Error::NoMemory)?;
                let c = container::create_in_box(caller, bx, copy, charge)?;
                Ok((c, container::take_box_memory(c)?))
            });
            let (c, memory) = match copied {
                Ok(made) => made,
                Err(e) => {
                    requeue_front(bx, pages, boxed, sender_addr);
                    return Err(e);
                }
            };
            match place(
                addr,
                sender_addr,
                |at, m| container::place_in_process(c, caller, m, at),
                memory,
            ) {
                Ok(base) => {
                    give_back_empty(bx, pages, boxed)?;
                    Ok(Received::new(c, base, pages))
                }
                Err((e, memory)) => {
                    container::put_box_memory(c, bx, memory);
                    let _ = container::destroy(c);
                    requeue_front(bx, pages, boxed, sender_addr);
                    Err(e)
                }
            }
        }
    }
}

/// Places received memory with `put` where the receiver asked (`addr`),
/// else where the sender asked, falling back to a free place: a sender's
/// address the receiver cannot use must not make the receive fail.
fn place<T>(
    addr: u64,
    sender_addr: u64,
    put: impl Fn(u64, Region) -> Result<T, (Error, Region)>,
    memory: Region,
) -> Result<T, (Error, Region)> {
    if addr != 0 || sender_addr == 0 {
        return put(addr, memory);
    }
    match put(sender_addr, memory) {
        Err((Error::Invalid, memory)) => put(0, memory),
        done => done,
    }
}

/// Takes a filled container: the first (id 0), a given one, or for SWAP
/// the first of `swap_pages`.
fn take_filled(bx: ResId, id: ResId, swap_pages: Option<usize>) -> Option<(ResId, u64, usize)> {
    let mut t = TABLE.lock();
    let e = t.get_mut(bx).ok()?;
    for (&pages, q) in e.value.classes.iter_mut() {
        if swap_pages.is_some_and(|p| p != pages) {
            continue;
        }
        let pos = if swap_pages.is_some() || id == ResId::NONE {
            (!q.filled.is_empty()).then_some(0)
        } else {
            q.filled.iter().position(|f| f.0 == id)
        };
        if let Some(i) = pos {
            let (c, addr) = q.filled.remove(i)?;
            return Some((c, addr, pages));
        }
    }
    None
}

fn requeue_front(bx: ResId, pages: usize, c: ResId, addr: u64) {
    let waiters = TABLE.lock().get_mut(bx).ok().and_then(|e| {
        e.value.classes.entry(pages).filled.push_front((c, addr));
        waiters_to_wake(&e.value)
    });
    if let Some(w) = waiters {
        w.wake_all();
    }
}

/// A box container whose data was taken becomes an empty one (dirty in a
/// scrubbing box), or is deleted if the class already has more than the
/// upper bound.
fn give_back_empty(bx: ResId, pages: usize, c: ResId) -> Result<(), Error> {
    let keep = {
        let mut t = TABLE.lock();
        let e = t.get_mut(bx).map_err(super::id_error)?;
        let (upper, scrub) = (e.value.upper, e.value.scrub);
        e.value.classes.entry(pages).give_back(c, upper, scrub)
    };
    if keep { Ok(()) } else { container::destroy(c) }
}

/// Idle time's share of scrubbing (CPU 0, nothing to run): zeroes dirty
/// containers, oldest first, until none is left or about 256 KiB are
/// done, so that a wake-up waits for little. Each is taken off its queue,
/// zeroed with no lock held, and queued clean; if its box went meanwhile,
/// it is deleted.
pub fn scrub_on_idle() {
    const BUDGET_PAGES: usize = 64;
    let mut done = 0;
    while done < BUDGET_PAGES && DIRTY.load(Ordering::Relaxed) > 0 {
        let Some((bx, pages, c)) = take_dirty() else {
            return;
        };
        let Ok(mut memory) = container::take_box_memory(c) else {
            continue;
        };
        memory.reset();
        container::put_box_memory(c, bx, memory);
        let queued = TABLE.lock().get_mut(bx).is_ok_and(|e| {
            let q = e.value.classes.entry(pages);
            q.empty.try_reserve(1).is_ok() && {
                q.empty.push_back(c);
                true
            }
        });
        if !queued {
            let _ = container::destroy(c);
        }
        done += pages;
    }
}

/// The oldest dirty container of some box, off its queue.
fn take_dirty() -> Option<(ResId, usize, ResId)> {
    let mut t = TABLE.lock();
    for (bx, e) in t.iter_mut() {
        for (&pages, q) in e.value.classes.iter_mut() {
            if let Some(c) = q.dirty.pop_front() {
                DIRTY.fetch_sub(1, Ordering::Relaxed);
                return Some((bx, pages, c));
            }
        }
    }
    None
}

/// (empty, filled) containers of a size class, for tests and the inspector.
pub fn census(bx: ResId, pages: usize) -> Option<(usize, usize)> {
    let t = TABLE.lock();
    let e = t.get(bx).ok()?;
    Some(
        e.value
            .classes
            .get(&pages)
            .map_or((0, 0), |q| (q.empties(), q.filled.len())),
    )
}

/// Dirty containers of a size class (see `Queues::dirty`), for tests.
pub fn dirty(bx: ResId, pages: usize) -> Option<usize> {
    let t = TABLE.lock();
    let e = t.get(bx).ok()?;
    Some(e.value.classes.get(&pages).map_or(0, |q| q.dirty.len()))
}

pub struct Boxes;

impl Resource for Boxes {
    table_methods!(TABLE);

    /// Deletes the box and every container in it.
    fn delete(&self, caller: u64, bx: ResId) -> Result<(), Error> {
        let b = super::remove_owned(&mut TABLE.lock(), bx, caller)?.value;
        for q in b.classes.into_values() {
            DIRTY.fetch_sub(q.dirty.len(), Ordering::Relaxed);
            for c in q.empty.iter().chain(q.dirty.iter()).chain(q.filled.iter().map(|f| f.0)) {
                let _ = container::destroy(c);
            }
        }
        b.waiters.wake_all();
        Ok(())
    }

    fn query(&self, bx: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), bx, |b| {
            let n: usize = b.classes.values().map(|q| q.empties() + q.filled.len()).sum();
            (0, n as u64, [ResId::NONE; 3])
        })
    }
}
