//! A process's port: where calls for its entries (seed 003's エントリ)
//! arrive and wait to be accepted (AnT's request queue), the server
//! waiting at it in `acc`, and the calls it accepted and holds until it
//! ends them. Delivering a call to a port, waiting at one and accepting
//! are here; so is what a process keeps for its own calls (the server it
//! called last, its spare call object and batch, its result queue and
//! rings). A port closes when its process ends: nothing is delivered any
//! more, and every call queued or held completes with an error.

use crate::batch::Pool;
use crate::call::{self, Call, RequestCharge, Spare};
use crate::process::{self as proc, Process};
use abi::{AccInfo, Error};
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kcore::computation::Computation;
use kcore::mm::quota::{Account, Charge};
use kcore::sync::IrqMutex;
use kcore::uaccess::UserRange;
use kcore::unique::UniqueSlot;
use sched::WaitQueue;

/// Calls waiting to be accepted, and the server blocked in `acc` until
/// one comes (one lock for both: a delivery takes it once).
pub(crate) struct Arrivals {
    pub(crate) calls: VecDeque<Arc<Call>>,
    pub(crate) waiter: Option<Arc<Computation>>,
    /// The entries the waiter waits for (its `acc` mask).
    pub(crate) mask: u64,
    /// A call the fast path accepted on the waiter's behalf (it is in the
    /// server's held calls already): the waiter takes it before anything
    /// queued.
    pub(crate) handed: Option<Arc<Call>>,
    /// Events posted and not yet taken, one bit per entry (a device's
    /// interrupt, seed 003's external interrupt turned into communication).
    /// A bit, not a queued call: posting one allocates nothing, so an
    /// interrupt handler may post, and events on one entry coalesce.
    pub(crate) events: u64,
}

/// What each process holds for IPC.
pub struct Port {
    pub(crate) queued: IrqMutex<Arrivals>,
    /// Set (under `queued`'s lock) when the process ends: nothing is
    /// delivered any more, so no caller can wait for a server that is gone.
    pub(crate) closed: AtomicBool,
    /// Calls this process accepted and has not ended (few: a list).
    pub(crate) held: IrqMutex<Vec<Arc<Call>>>,
    /// The last server this process called: its next call to it needs no
    /// search of the process table. A strong reference (an upgrade of a
    /// weak one costs a call and a compare-and-swap loop on every call);
    /// only this process takes this lock, and it lets go of the server
    /// when it calls another one or ends. A server that has ended is only
    /// its `Process` record then: its space and its calls went at its exit,
    /// and its closed port refuses calls.
    pub(crate) last_server: IrqMutex<Option<Arc<Process>>>,
    /// The call object of this process's last finished call.
    pub(crate) spare: Spare,
    /// Its `ncallsync` batch and its members' call objects, kept from one
    /// batch to the next (no allocation per batch).
    pub(crate) spare_calls: UniqueSlot<Pool>,
    /// Finished non-blocking requests, for `fetch`.
    pub(crate) results: IrqMutex<VecDeque<Arc<Call>>>,
    /// Requests this process sent for `fetch` and has not fetched yet
    /// (queued, in service or finished): at most `MAX_REQUESTS`.
    pub(crate) requests: AtomicU64,
    /// Waiters for a result, in `results` or in the result ring.
    pub results_wait: WaitQueue,
    /// The process's request and result rings, once it asked for them.
    pub rings: IrqMutex<Option<super::rings::RingState>>,
    /// Entries the process serves (bit n = entry n), declared when it
    /// registers a name; 0 = not declared (any entry is delivered).
    pub entries: AtomicU64,
    /// Calls accepted, answered (`endr`/`rv_fail`) and passed on
    /// (`rv_forward`) by this process: the inspector's per-server counters.
    pub accepted: AtomicU64,
    pub answered: AtomicU64,
    pub forwarded: AtomicU64,
    /// What the call objects of its blocking calls cost it, charged once
    /// (`call::PROCESS_RESERVE`).
    _blocking_calls: Charge,
    /// What its requests' call objects cost it (`call::RequestCharge`),
    /// made at its first request (a spawn makes nothing it may not need),
    /// and its account.
    pub(crate) request_charge: spin::Once<Arc<RequestCharge>>,
    account: Arc<Account>,
}

impl Port {
    /// A port whose calls are charged to `account`; Limit if it cannot
    /// take the reserve of a process's blocking calls.
    pub fn new(account: &Arc<Account>) -> Result<Port, Error> {
        let blocking = Charge::new(Some(account), call::PROCESS_RESERVE).map_err(|_| Error::Limit)?;
        Ok(Port {
            _blocking_calls: blocking,
            request_charge: spin::Once::new(),
            account: account.clone(),
            entries: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            answered: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            queued: IrqMutex::new(Arrivals {
                calls: VecDeque::new(),
                waiter: None,
                mask: 0,
                handed: None,
                events: 0,
            }),
            held: IrqMutex::new(Vec::new()),
            last_server: IrqMutex::new(None),
            spare: Spare::new(),
            spare_calls: UniqueSlot::new(),
            closed: AtomicBool::new(false),
            results: IrqMutex::new(VecDeque::new()),
            requests: AtomicU64::new(0),
            results_wait: WaitQueue::new(),
            rings: IrqMutex::new(None),
        })
    }

    /// Bytes charged for its requests' call objects.
    pub fn request_bytes(&self) -> u64 {
        self.request_charge.get().map_or(0, |r| r.bytes())
    }

    /// A reference to its request charge for one more request, paid for
    /// (`call::pay_request`).
    pub(crate) fn pay_request(&self) -> Result<Arc<RequestCharge>, Error> {
        let owner = self.request_charge.try_call_once(|| {
            kcore::mm::heap::try_arc(RequestCharge::on(&self.account)).map_err(|_| Error::NoMemory)
        })?;
        call::pay_request(owner.clone())
    }

    /// Whether it closed (its process ended): nothing is delivered.
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Calls waiting to be accepted, and calls accepted but not yet ended.
    pub fn backlog(&self) -> (usize, usize) {
        (self.queued.lock().calls.len(), self.held.lock().len())
    }
}

/// The process `pid`, whose port takes calls.
pub(crate) fn target(pid: u64) -> Result<Arc<Process>, Error> {
    let p = proc::get(pid).ok_or(Error::NotFound)?;
    if p.port.closed.load(Ordering::Acquire) {
        return Err(Error::NotFound);
    }
    Ok(p)
}

/// `target`, trying the server `caller` called last first.
pub(crate) fn cached_target(caller: &Process, pid: u64) -> Result<Arc<Process>, Error> {
    let last = caller.port.last_server.lock().clone();
    if let Some(p) = last
        && p.pid() == pid
        && !p.port.closed.load(Ordering::Acquire)
    {
        return Ok(p);
    }
    let p = target(pid)?;
    *caller.port.last_server.lock() = Some(p.clone());
    Ok(p)
}

/// A server that declared its entries takes no call for another one.
pub(crate) fn check_entry(server: &Process, entry: u64) -> Result<(), Error> {
    check_declared(&server.port, entry)
}

/// `check_entry` for a server whose port is at hand.
#[inline(always)]
pub(crate) fn check_declared(server: &Port, entry: u64) -> Result<(), Error> {
    let declared = server.entries.load(Ordering::Relaxed);
    if declared != 0 && declared & (1u64 << entry.min(63)) == 0 {
        return Err(Error::NoSys);
    }
    Ok(())
}

/// Puts a call on `server`'s port. Returns the server's computation if it
/// was the one waiting in `acc` (taken off the wait queue, not yet woken:
/// the caller hands it the CPU or wakes it); other waiters are woken.
pub(crate) fn deliver(server: &Process, call: Arc<Call>) -> Result<Option<Arc<Computation>>, Error> {
    let mut q = server.port.queued.lock();
    if server.port.closed.load(Ordering::Relaxed) {
        return Err(Error::NotFound);
    }
    q.calls.try_reserve(1).map_err(|_| Error::NoMemory)?;
    q.calls.push_back(call);
    Ok(q.waiter.take())
}

/// Most requests a process may have sent for `fetch` and not fetched:
/// each holds a call object in the kernel until then.
pub(crate) const MAX_REQUESTS: u64 = 1024;

/// Most calls that wait at one port for which nobody waits (requests):
/// a server that never accepts holds at most this many call objects,
/// whoever sent them and whether or not its senders still live.
pub(crate) const QUEUE_LIMIT: usize = 4096;

/// `deliver` for a call nobody waits for: Busy once `QUEUE_LIMIT` calls
/// wait at the port. (A blocking call is bounded by its waiting caller.)
pub(crate) fn deliver_request(server: &Process, call: Arc<Call>) -> Result<Option<Arc<Computation>>, Error> {
    let mut q = server.port.queued.lock();
    if server.port.closed.load(Ordering::Relaxed) {
        return Err(Error::NotFound);
    }
    if q.calls.len() >= QUEUE_LIMIT {
        return Err(Error::Busy);
    }
    q.calls.try_reserve(1).map_err(|_| Error::NoMemory)?;
    q.calls.push_back(call);
    Ok(q.waiter.take())
}

/// `deliver` for a run of calls to one server, under one hold of its
/// queue's lock. Empty slots are skipped. A call for an entry the server
/// does not serve is left out and stays in `run`: its bit (its index in
/// the run) is set in the mask returned last. With `keep`, the run keeps
/// its references (a batch's caller collects its members from them);
/// without, each call moves onto the queue (no reference counted up and
/// down again) and its slot empties. How many went comes back second.
pub(crate) fn deliver_run(
    server: &Process,
    run: &mut [Option<Arc<Call>>],
    keep: bool,
) -> (Result<Option<Arc<Computation>>, Error>, usize, u64) {
    let mut q = server.port.queued.lock();
    if server.port.closed.load(Ordering::Relaxed) {
        return (Err(Error::NotFound), 0, 0);
    }
    if q.calls.try_reserve(run.len()).is_err() {
        return (Err(Error::NoMemory), 0, 0);
    }
    let (mut refused, mut n) = (0, 0);
    for (k, slot) in run.iter_mut().enumerate() {
        let Some(entry) = slot.as_ref().map(|c| c.entry.load(Ordering::Relaxed)) else {
            continue;
        };
        if check_entry(server, entry).is_err() {
            refused |= 1 << k;
            continue;
        }
        if let Some(c) = if keep { slot.clone() } else { slot.take() } {
            q.calls.push_back(c);
            n += 1;
        }
    }
    (Ok(q.waiter.take()), n, refused)
}

/// Posts an event on `entry` of `server`'s port. Returns the server's
/// computation if it was waiting in `acc` for that entry (taken out of the
/// slot, not yet woken); nothing if the port is closed. Safe in an
/// interrupt handler: it takes one lock and allocates nothing.
pub fn post_event(server: &Process, entry: u64) -> Option<Arc<Computation>> {
    let mut q = server.port.queued.lock();
    if server.port.closed.load(Ordering::Relaxed) {
        return None;
    }
    q.events |= 1u64 << entry.min(61);
    if q.waiter.is_some() && in_mask(q.mask, entry) {
        q.waiter.take()
    } else {
        None
    }
}

/// The events pending on `mask`'s entries, taken.
#[inline(always)]
fn take_events(q: &mut Arrivals, mask: u64) -> u64 {
    let got = q.events & mask & ENTRY_BITS;
    q.events &= !got;
    got
}

/// The bits of an `acc` mask that name entries (the rest are flags).
const ENTRY_BITS: u64 = (1 << 62) - 1;

/// Lets a computation that was taken out of a slot (a server given a call,
/// a caller whose call completed) run again.
#[inline(always)]
pub(crate) fn wake(partner: Option<Arc<Computation>>) {
    if let Some(p) = partner {
        sched::wake(&p);
    }
}

/// Whether call `c` is for an entry in `mask`.
fn matches(mask: u64, c: &Call) -> bool {
    in_mask(mask, c.entry.load(Ordering::Relaxed))
}

/// Whether `entry` is in an `acc` mask (entries from 61 up share bit 61;
/// the bits above are the mask's flags).
#[inline(always)]
pub(crate) fn in_mask(mask: u64, entry: u64) -> bool {
    mask & (1u64 << entry.min(61)) != 0
}

/// The first call in `calls` for an entry in `mask`, taken out. Inlined:
/// the usual answer is the first call, or none; so the first is taken
/// out at once, and put back if it is not for `mask`.
#[inline(always)]
pub(crate) fn take_matching(calls: &mut VecDeque<Arc<Call>>, mask: u64) -> Option<Arc<Call>> {
    let first = calls.pop_front()?;
    if matches(mask, &first) {
        return Some(first);
    }
    take_matching_further(calls, mask, first)
}

#[cold]
#[inline(never)]
fn take_matching_further(calls: &mut VecDeque<Arc<Call>>, mask: u64, first: Arc<Call>) -> Option<Arc<Call>> {
    // Where it was taken from: there is room for it.
    calls.push_front(first);
    let i = calls.iter().position(|c| matches(mask, c))?;
    calls.remove(i)
}

/// How a call reached a waiting server.
enum Arrived {
    /// Accepted on its behalf by the caller's fast path.
    Handed(Arc<Call>),
    /// Queued: to be accepted now.
    Queued(Arc<Call>),
    /// Events on these entries.
    Events(u64),
}

/// `port_wait`, then the call it got accepted (a handed one is already).
/// Interrupts are off.
#[inline(always)]
pub(crate) fn wait_and_accept(
    server: &Process,
    mask: u64,
    partner: Option<Arc<Computation>>,
) -> Result<Accepted, Error> {
    match port_wait(server, mask, partner) {
        Some(Arrived::Handed(c)) => Ok(Accepted::Call(c)),
        Some(Arrived::Queued(c)) => accept(server, c),
        Some(Arrived::Events(bits)) => Ok(Accepted::Events(bits)),
        None => Err(Error::Denied),
    }
}

/// Waits until a call for an entry in `mask` is on `server`'s port and
/// takes it; None if the process was killed meanwhile. If it has to block,
/// the server waits in its port's waiter slot and hands its CPU to
/// `partner` (a caller it has just released); otherwise `partner` is woken.
/// `proc::wait_in_slot` specialised to the port (this is the hot half of
/// every server's loop): check, block and wake-up share the port's lock.
/// Interrupts are off.
#[inline(always)]
fn port_wait(server: &Process, mask: u64, mut partner: Option<Arc<Computation>>) -> Option<Arrived> {
    let Some(me) = sched::with_current(|c| c as *const Computation) else {
        wake(partner);
        return None;
    };
    let sp = &server.port;
    loop {
        let mut q = sp.queued.lock_irqs_off();
        // Woken by someone else than the one who takes the slot (a kill):
        // leave the slot, it is for a blocked waiter only. (Usually empty:
        // whoever woke this waiter took it out.)
        let other = match q.waiter.is_some() {
            false => None,
            true => other_waiter(&mut q.waiter, me),
        };
        let got = match q.handed.take() {
            Some(c) => Some(Arrived::Handed(c)),
            None if q.events & mask != 0 => Some(Arrived::Events(take_events(&mut q, mask))),
            None => take_matching(&mut q.calls, mask).map(Arrived::Queued),
        };
        if got.is_some() || server.is_killed() {
            // The slot is empty here (`other_waiter` took what it held):
            // only another waiter goes back into it.
            if other.is_some() {
                q.waiter = other;
            }
            drop(q);
            wake(partner);
            return got;
        }
        // The slot holds the waiter (the computation running here).
        let Some(cur) = sched::current_here() else {
            q.waiter = other;
            drop(q);
            wake(partner);
            return None;
        };
        *cur.state.lock_irqs_off() = kcore::computation::State::Blocked;
        q.waiter = Some(cur);
        q.mask = mask;
        drop(q);
        // The slot holds one waiter; one that was there already (never so
        // for a process's single computation) is woken to check again.
        wake(other);
        match partner.take() {
            Some(p) if sched::claim_here(&p) => sched::switch_to_claimed(p),
            p => sched::schedule_to(p),
        }
    }
}

/// The computation in a waiter slot, taken out, unless it is `me` (which
/// is dropped: the slot is for a blocked waiter only).
#[cold]
fn other_waiter(slot: &mut Option<Arc<Computation>>, me: *const Computation) -> Option<Arc<Computation>> {
    slot.take().filter(|c| !core::ptr::eq(Arc::as_ptr(c), me))
}

/// Accepts call `c` for `server`: it is now held by it. Interrupts are off.
/// Inlined: a server's loop accepts a call on every step.
#[inline(always)]
pub(crate) fn accept(server: &Process, c: Arc<Call>) -> Result<Accepted, Error> {
    c.accepted_by(server.pid());
    {
        let mut held = server.port.held.lock_irqs_off();
        if !call::has_room(&mut held) {
            drop(held);
            wake(c.complete(Error::NoMemory.as_ret(), 0));
            return Err(Error::NoMemory);
        }
        held.push(c.clone());
    }
    server.port.accepted.fetch_add(1, Ordering::Relaxed);
    Ok(Accepted::Call(c))
}

/// `acc` without waiting: pending events on `mask`'s entries, else the
/// first call queued for one of them, accepted; Busy if there is neither.
pub(crate) fn accept_waiting(server: &Process, mask: u64) -> Result<Accepted, Error> {
    let got = {
        let mut q = server.port.queued.lock();
        match take_events(&mut q, mask) {
            0 => take_matching(&mut q.calls, mask).ok_or(Error::Busy)?,
            bits => return Ok(Accepted::Events(bits)),
        }
    };
    use x86_64::instructions::interrupts;
    let were_enabled = interrupts::are_enabled();
    interrupts::disable();
    let r = accept(server, got);
    if were_enabled {
        interrupts::enable();
    }
    r
}

/// What `acc` got, as its server learns of it: a call just accepted, or
/// the events pending on some of its entries.
pub enum Accepted {
    Call(Arc<Call>),
    Events(u64),
}

impl Accepted {
    /// `AccInfo::flags` as the server will read them.
    pub fn flags(&self) -> u64 {
        match self {
            Accepted::Call(c) => c.flags,
            Accepted::Events(_) => abi::ACC_EVENT,
        }
    }

    /// The call's identifier; 0 for events (there is nothing to end).
    #[inline(always)]
    pub fn rid(&self) -> u64 {
        match self {
            Accepted::Call(c) => c.id,
            Accepted::Events(_) => 0,
        }
    }

    /// Writes the call's description (`abi::AccInfo`) to the server's
    /// memory at `to`: the fixed fields and only as many inline bytes as
    /// the message has. The rest of the server's `inline` keeps what it
    /// held, so nothing of an earlier message in a recycled call object
    /// can reach it, and a short message costs a short copy.
    #[inline(always)]
    pub fn write_to(&self, to: UserRange) -> Result<(), Error> {
        const { assert!(core::mem::offset_of!(AccInfo, inline) == 6 * 8) };
        let c = match self {
            Accepted::Call(c) => c,
            Accepted::Events(bits) => return write_events(*bits, to),
        };
        if c.relayed.load(Ordering::Acquire) {
            return write_relayed(c, to);
        }
        let len = c.shown.load(Ordering::Relaxed);
        let fixed: [u64; 6] = [
            c.id,
            c.caller,
            c.entry.load(Ordering::Relaxed),
            len,
            c.reply.len() as u64,
            c.flags,
        ];
        to.write_words(fixed)?;
        let n = (len as usize).min(call::INLINE);
        if n > 0 {
            to.part(6 * 8, n)?.write(&c.inline[..n])?;
        }
        Ok(())
    }
}

/// The description of a Linux call passed on by its supervisor: its
/// message is the one the supervisor gave it (`supervise::pass`).
#[cold]
fn write_relayed(c: &Call, to: UserRange) -> Result<(), Error> {
    let msg = c.kept.get().unwrap_or(&[]);
    let fixed: [u64; 6] = [
        c.id,
        c.caller,
        c.entry.load(Ordering::Relaxed),
        msg.len() as u64,
        0,
        c.flags,
    ];
    to.write_words(fixed)?;
    if !msg.is_empty() {
        to.part(6 * 8, msg.len())?.write(msg)?;
    }
    Ok(())
}

/// The description of events: rid 0, from the kernel (caller 0), on the
/// lowest entry pending, 8 bytes of message: the pending entries' bits.
#[cold]
fn write_events(bits: u64, to: UserRange) -> Result<(), Error> {
    let fixed: [u64; 6] = [0, 0, bits.trailing_zeros() as u64, 8, 0, abi::ACC_EVENT];
    to.write_words(fixed)?;
    to.part(6 * 8, 8)?.write(&bits.to_le_bytes())
}

/// Call `rid` of those `server` holds.
pub(crate) fn held(server: &Process, rid: u64) -> Result<Arc<Call>, Error> {
    let held = server.port.held.lock();
    held.iter().find(|c| c.id == rid).cloned().ok_or(Error::NotFound)
}

/// Takes call `rid` out of the calls `server` holds.
pub(crate) fn release(server: &Process, rid: u64) -> Result<Arc<Call>, Error> {
    take_held(&mut server.port.held.lock(), rid).ok_or(Error::NotFound)
}

/// Call `rid` taken out of a server's held calls (usually the last one,
/// or the only one: then a pop does).
#[inline(always)]
pub(crate) fn take_held(held: &mut Vec<Arc<Call>>, rid: u64) -> Option<Arc<Call>> {
    if held.last().is_some_and(|c| c.id == rid) {
        return held.pop();
    }
    match held.iter().position(|c| c.id == rid)? {
        i if i + 1 == held.len() => held.pop(),
        i => Some(held.swap_remove(i)),
    }
}

/// Closes the port of a process that ends: calls waiting for it or held by
/// it complete with an error (their callers are released), and what it
/// kept for its own calls goes.
pub fn close(p: &Process) {
    // Taken whole, not copied: a teardown allocates nothing.
    let queued: VecDeque<Arc<Call>> = {
        let mut q = p.port.queued.lock();
        p.port.closed.store(true, Ordering::Release);
        // (A handed call is among the held ones, released below.)
        q.handed = None;
        core::mem::take(&mut q.calls)
    };
    let held: Vec<Arc<Call>> = core::mem::take(&mut *p.port.held.lock());
    for c in queued.into_iter().chain(held) {
        wake(c.complete(Error::NotFound.as_ret(), 0));
    }
    p.port.results.lock().clear();
    let last = p.port.last_server.lock().take();
    drop(last);
    drop(p.port.spare.take());
    drop(p.port.spare_calls.take());
}
