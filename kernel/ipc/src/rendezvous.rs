//! Rendezvous (seed 003): `call(server, entry, message)` stops the caller
//! until the server has accepted (`acc`) and ended (`endr`) the rendezvous.
//! `acc` gives the server the message's first 64 bytes inline and a
//! reference (`rid`) through which it reads the rest (`rv_read`) straight
//! from the caller's memory and writes the reply (`rv_write`, `endr`)
//! straight into it: data crosses once, from the first caller to whichever
//! server needs it. A server may `call` another one naming its own `rid` as
//! the message (nested rendezvous: the next server reads the original
//! caller's data directly), or `forward` the request to it, which then
//! replies directly to the original caller (AnT's multi-stage request with
//! direct return, seed 002).
//!
//! AnT's non-blocking requests use the same objects: `request` queues a
//! call without waiting; its completion goes to the requester's result
//! queue, from which `fetch` takes it; `callsync` is request + wait.
//!
//! A server that ends releases every call it held with an error; a caller
//! that ends leaves its calls orphaned, and the server's later operations
//! on them fail cleanly. Every copy goes through the other process's page
//! tables with bounds fixed at call time, so a server cannot reach beyond
//! what the caller passed.

use crate::process::{self as proc, Process};
use abi::{AccInfo, Error};
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arrayvec::ArrayVec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kcore::computation::Computation;
use kcore::sync::IrqMutex;
use kcore::uaccess::UserRange;
use kcore::unique::{UniqueArc, UniqueSlot};
use sched::WaitQueue;

/// Inline message bytes delivered by `acc`.
pub const INLINE: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Queued at a server's port, or held by a server.
    Open,
    /// Finished with a status (reply length, or a negated error).
    Done(u64),
}

pub struct Call {
    pub id: u64,
    caller: u64,
    /// The server it was sent to first.
    server: u64,
    /// The entry it is for (changes when the call is forwarded).
    entry: AtomicU64,
    /// Where the message and the reply are, and in whose memory.
    msg_owner: u64,
    /// The message, checked when the call was made.
    msg: UserRange,
    /// The message's length as the server holding the call sees it: less
    /// than `msg.len()` by what servers it passed through consumed at its end
    /// (their routing information, popped as they forwarded it). Its first
    /// bytes, and so `inline`, stay as they were.
    shown: AtomicU64,
    reply_owner: u64,
    /// The reply buffer, checked when the call was made.
    reply: UserRange,
    inline: [u8; INLINE],
    /// What changes while the call travels, under one lock: every step
    /// (accept, pass on, finish, collect) takes it once.
    progress: IrqMutex<Progress>,
    /// Where the result goes when it is done.
    completion: Completion,
    /// The request's flags (`abi::CONTROL_DIRECT_RETURN`) and the
    /// requester's label (ring requests).
    flags: u64,
    tag: u64,
    /// Member of an `ncallsync` batch: the batch counts it when done.
    batch: Option<Arc<Batch>>,
}

impl Call {
    /// Server `pid`, which accepted the call, joins its path. Interrupts
    /// are off.
    #[inline(always)]
    fn accepted_by(&self, pid: u64) {
        self.progress.lock_irqs_off().hops.push(pid);
    }

    /// Readies the call to be queued again, for `entry` of the next server
    /// (a forward). It stays open: nothing of its progress changes.
    fn pass_to(&self, entry: u64) {
        self.entry.store(entry, Ordering::Relaxed);
    }
}

struct Progress {
    state: State,
    /// Servers the request passed through (AnT's stacked request information).
    hops: Vec<u64>,
    /// How many bytes of `reply` are a reply the caller has not taken.
    kept: usize,
    /// A short reply kept in the call until the caller copies it into its
    /// own memory: that copy goes through the caller's own page tables,
    /// and no reply can reach the memory of a caller that has gone. The
    /// server reads it from its own memory first (which may fault a page
    /// in) and puts it here when it ends the call, under this lock.
    reply: [u8; INLINE],
    /// The caller blocked until the call is done (set and taken under this
    /// lock, with `state`: no wake-up can fall between check and block).
    waiter: Option<Arc<Computation>>,
}

impl Progress {
    /// The first servers the call passed through (AnT's stacked request
    /// information, as a control block carries it) and how many it passed.
    fn path(&self) -> ([u64; 4], u64) {
        let mut path = [0; 4];
        for (to, h) in path.iter_mut().zip(self.hops.iter()) {
            *to = *h;
        }
        (path, self.hops.len() as u64)
    }

    /// The status of a finished call; its kept reply is taken into `out`
    /// (the collector copies it to the caller once the lock is dropped),
    /// and the length of that reply.
    #[inline(always)]
    fn collect(&mut self, out: &mut [u8; INLINE]) -> Option<(u64, usize)> {
        let State::Done(status) = self.state else { return None };
        let n = core::mem::take(&mut self.kept);
        out[..n].copy_from_slice(&self.reply[..n]);
        Some((status, n))
    }

    /// The status of a finished call and its kept reply, for a collector
    /// that holds the call alone (no copy out first).
    #[inline(always)]
    fn take_done(&mut self) -> Option<(u64, &[u8])> {
        let State::Done(status) = self.state else { return None };
        let n = core::mem::take(&mut self.kept);
        Some((status, &self.reply[..n]))
    }
}

/// `deliver_reply` for a caller that runs this itself: a copy within the
/// current space, into the reply buffer checked when the call was made.
#[inline(always)]
fn reply_here(to: UserRange, status: u64, buf: &[u8]) -> u64 {
    if buf.is_empty() {
        return status;
    }
    match to.write(buf) {
        Ok(()) => {
            BYTES_COPIED.fetch_add(buf.len() as u64, Ordering::Relaxed);
            status
        }
        Err(e) => e.as_ret(),
    }
}

/// Copies a reply collected from a finished call into its caller's reply
/// buffer (from the caller itself: its own memory); a buffer the caller
/// cannot write turns the status into that error.
fn deliver_reply(c: &Call, status: u64, buf: &[u8]) -> u64 {
    if buf.is_empty() {
        return status;
    }
    match proc::write_user_of(c.reply_owner, c.reply, buf) {
        Ok(()) => {
            BYTES_COPIED.fetch_add(buf.len() as u64, Ordering::Relaxed);
            status
        }
        Err(e) => e.as_ret(),
    }
}

/// Where a finished call's result goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// A caller waiting for it (`call`, batch members).
    Wait,
    /// The requester's result queue, for `fetch`.
    Fetch,
    /// The requester's result ring (`rings`).
    Ring,
}

/// What a request is: where its message and reply buffer are, and how its
/// result goes back.
struct Request {
    entry: u64,
    /// Whose memory holds the message (the caller's own, or that of the
    /// caller of a call it passes on by reference).
    msg_owner: u64,
    msg: UserRange,
    reply: UserRange,
    completion: Completion,
    flags: u64,
    tag: u64,
}

impl Request {
    fn new(entry: u64, owner: u64, msg: UserRange, reply: UserRange, completion: Completion) -> Request {
        Request {
            entry,
            msg_owner: owner,
            msg,
            reply,
            completion,
            flags: 0,
            tag: 0,
        }
    }

    /// The request control block `c` describes, from the caller's memory;
    /// its buffers are checked like system-call arguments.
    fn of(caller: u64, c: &abi::Control, completion: Completion) -> Result<Request, Error> {
        let msg = UserRange::new(c.msg, c.msg_len as usize)?;
        let reply = UserRange::new(c.reply, c.reply_cap as usize)?;
        Ok(Request {
            flags: c.flags,
            tag: c.tag,
            ..Request::new(c.entry, caller, msg, reply, completion)
        })
    }
}

/// A finished call as its requester sees it: a control block with both
/// halves filled in (`batch` is the size of the batch it belonged to). A
/// kept reply goes into the requester's memory now (the requester runs
/// this, except for ring completions, which keep none).
fn result_of(c: &Call, batch: u64) -> abi::Control {
    let mut kept = [0; INLINE];
    let (collected, (path, hops)) = {
        let mut p = c.progress.lock();
        (p.collect(&mut kept), p.path())
    };
    let status = match collected {
        Some((s, n)) => deliver_reply(c, s, &kept[..n]),
        None => Error::Invalid.as_ret(),
    };
    abi::Control {
        server: c.server,
        entry: c.entry.load(Ordering::Relaxed),
        msg: c.msg.addr(),
        msg_len: c.msg.len() as u64,
        reply: c.reply.addr(),
        reply_cap: c.reply.len() as u64,
        flags: c.flags,
        tag: c.tag,
        id: c.id,
        status,
        batch,
        hops,
        path,
    }
}

/// An `ncallsync` batch (seed 002 §3.3-3.4): the batch identifier each
/// member carries is the batch's size; the kernel counts the members that
/// are back and wakes the caller once, when all are.
pub struct Batch {
    /// Members not back yet.
    remaining: AtomicU64,
    /// The batch's caller while it waits (one computation: a slot, not a
    /// queue). Whoever brings the count to 0 takes it out under this lock,
    /// and the caller checks the count and blocks under it: no wake-up is
    /// lost between the two.
    caller: IrqMutex<Option<Arc<Computation>>>,
}

impl Batch {
    fn new(n: usize) -> Arc<Batch> {
        Arc::new(Batch {
            remaining: AtomicU64::new(n as u64),
            caller: IrqMutex::new(None),
        })
    }
}

/// What each process holds for IPC.
/// Calls waiting to be accepted, and the server blocked in `acc` until
/// one comes (one lock for both: a delivery takes it once).
struct Arrivals {
    calls: VecDeque<Arc<Call>>,
    waiter: Option<Arc<Computation>>,
    /// The entries the waiter waits for (its `acc` mask).
    mask: u64,
    /// A call the fast path accepted on the waiter's behalf (it is in the
    /// server's held calls already): the waiter takes it before anything
    /// queued.
    handed: Option<Arc<Call>>,
}

pub struct Port {
    queued: IrqMutex<Arrivals>,
    /// Set (under `queued`'s lock) when the process ends: nothing is
    /// delivered any more, so no caller can wait for a server that is gone.
    closed: AtomicBool,
    /// Calls this process accepted and has not ended (few: a list).
    held: IrqMutex<Vec<Arc<Call>>>,
    /// The last server this process called: its next call to it needs no
    /// search of the process table. A strong reference (an upgrade of a
    /// weak one costs a call and a compare-and-swap loop on every call);
    /// only this process takes this lock, and it lets go of the server
    /// when it calls another one or ends. A server that has ended is only
    /// its `Process` record then: its space and its calls went at its exit,
    /// and its closed port refuses calls.
    last_server: IrqMutex<Option<Arc<Process>>>,
    /// The call object of this process's last finished call (a strong
    /// reference from `Arc::into_raw`, or null), for its next call: taken
    /// and given back with one atomic exchange each, where the shared free
    /// list costs a lock each way.
    spare: UniqueSlot<Call>,
    /// The batch object of this process's last `ncallsync` once all its
    /// members were done with it, for its next one (no allocation per
    /// batch). Only this process takes it.
    spare_batch: IrqMutex<Option<Arc<Batch>>>,
    /// Finished non-blocking requests, for `fetch`.
    results: IrqMutex<VecDeque<Arc<Call>>>,
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
}

impl Port {
    pub const fn new() -> Port {
        Port {
            entries: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            answered: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            queued: IrqMutex::new(Arrivals {
                calls: VecDeque::new(),
                waiter: None,
                mask: 0,
                handed: None,
            }),
            held: IrqMutex::new(Vec::new()),
            last_server: IrqMutex::new(None),
            spare: UniqueSlot::new(),
            spare_batch: IrqMutex::new(None),
            closed: AtomicBool::new(false),
            results: IrqMutex::new(VecDeque::new()),
            results_wait: WaitQueue::new(),
            rings: IrqMutex::new(None),
        }
    }
}

impl Port {
    /// Calls waiting to be accepted, and calls accepted but not yet ended.
    pub fn backlog(&self) -> (usize, usize) {
        (self.queued.lock().calls.len(), self.held.lock().len())
    }
}

impl Port {
    /// The spare call object, if there is one.
    #[inline(always)]
    fn take_spare(&self) -> Option<UniqueArc<Call>> {
        self.spare.take()
    }

    /// Keeps finished call `c` as the spare (if nobody else holds it); one
    /// that was there already goes to the shared free list.
    #[inline(always)]
    fn keep_spare(&self, c: Arc<Call>) {
        let Ok(mut m) = UniqueArc::try_from_arc(c) else { return };
        m.batch = None;
        self.park_spare(m);
    }

    /// `keep_spare` for a call object known to belong to no batch (the
    /// fast path's own, once it is done).
    #[inline(always)]
    fn park_spare(&self, c: UniqueArc<Call>) {
        if let Some(old) = self.spare.put(c) {
            recycle(old.into_arc());
        }
    }
}

impl Default for Port {
    fn default() -> Self {
        Self::new()
    }
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// Call objects nobody holds any more, kept for the next calls: in the
/// steady state a call allocates nothing (an allocation and a free cost
/// more than the rest of a call's bookkeeping).
static FREE_CALLS: IrqMutex<Vec<Arc<Call>>> = IrqMutex::new(Vec::new());
const FREE_CALLS_MAX: usize = 128;

/// Gives a finished call back to the free list, if nobody else holds it.
fn recycle(c: Arc<Call>) {
    recycle_into(&mut FREE_CALLS.lock(), c);
}

/// `recycle`, with the free list already locked (a batch's members go back
/// under one lock).
fn recycle_into(free: &mut Vec<Arc<Call>>, mut c: Arc<Call>) {
    let Some(m) = Arc::get_mut(&mut c) else { return };
    // Its batch need not live on in the free list.
    m.batch = None;
    if free.len() < FREE_CALLS_MAX && has_room(free) {
        free.push(c);
    }
}

/// Whether `v` can take one more element, growing it if it must (and
/// can). Inlined: usually it has room, and asking costs a comparison.
#[inline(always)]
fn has_room<T>(v: &mut Vec<T>) -> bool {
    v.len() < v.capacity() || v.try_reserve(1).is_ok()
}

/// Frees the kept call objects (leak checks measure the heap without them).
pub fn flush_free_calls() {
    let free = core::mem::take(&mut *FREE_CALLS.lock());
    drop(free);
}
/// Rendezvous completed, and their copies (for the inspector and benchmarks).
pub static CALLS: AtomicU64 = AtomicU64::new(0);
pub static BYTES_COPIED: AtomicU64 = AtomicU64::new(0);

fn target(pid: u64) -> Result<Arc<Process>, Error> {
    let p = proc::get(pid).ok_or(Error::NotFound)?;
    if p.port.closed.load(Ordering::Acquire) {
        return Err(Error::NotFound);
    }
    Ok(p)
}

/// `target`, trying the server `caller` called last first.
fn cached_target(caller: &Process, pid: u64) -> Result<Arc<Process>, Error> {
    let last = caller.port.last_server.lock().clone();
    if let Some(p) = last
        && p.pid == pid
        && !p.port.closed.load(Ordering::Acquire)
    {
        return Ok(p);
    }
    let p = target(pid)?;
    *caller.port.last_server.lock() = Some(p.clone());
    Ok(p)
}

/// A server that declared its entries takes no call for another one.
fn check_entry(server: &Process, entry: u64) -> Result<(), Error> {
    check_declared(&server.port, entry)
}

/// `check_entry` for a server whose port is at hand.
#[inline(always)]
fn check_declared(server: &Port, entry: u64) -> Result<(), Error> {
    let declared = server.entries.load(Ordering::Relaxed);
    if declared != 0 && declared & (1u64 << entry.min(63)) == 0 {
        return Err(Error::NoSys);
    }
    Ok(())
}

/// Copies between the memory of two processes through the kernel:
/// `from` (pid, range) into `to` (pid, range), as many bytes as the
/// shorter range has.
fn cross_copy(from: (u64, UserRange), to: (u64, UserRange)) -> Result<(), Error> {
    let len = from.1.len().min(to.1.len());
    if len == 0 {
        return Ok(());
    }
    if len <= INLINE {
        // A short message needs no large buffer to clear first.
        copy_through(from, to, len, &mut [0u8; INLINE])?;
    } else {
        copy_through(from, to, len, &mut [0u8; 512])?;
    }
    BYTES_COPIED.fetch_add(len as u64, Ordering::Relaxed);
    Ok(())
}

/// `cross_copy` of `len` bytes in pieces of `buf`'s size.
fn copy_through(from: (u64, UserRange), to: (u64, UserRange), len: usize, buf: &mut [u8]) -> Result<(), Error> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(buf.len());
        proc::read_user_of(from.0, from.1.part(done, n)?, &mut buf[..n])?;
        proc::write_user_of(to.0, to.1.part(done, n)?, &buf[..n])?;
        done += n;
    }
    Ok(())
}

/// Makes a call object for `caller` to `server`. `message` is (pid, addr,
/// len) of where the message lies: the caller's own memory, or the
/// message of a call the caller holds (a reference passed on). A blocking
/// call object is `spare`, or comes from the free list when there is one.
fn make_call(caller: u64, server: u64, r: Request, spare: Option<Arc<Call>>) -> Result<Arc<Call>, Error> {
    make_call_in(caller, server, r, spare, None)
}

/// `make_call` for a member of `batch`.
#[inline(always)]
fn make_call_in(
    caller: u64,
    server: u64,
    r: Request,
    spare: Option<Arc<Call>>,
    batch: Option<&Arc<Batch>>,
) -> Result<Arc<Call>, Error> {
    let id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
    let free = spare.or_else(|| FREE_CALLS.lock().pop());
    let mut c = match free {
        Some(c) => c,
        None => Arc::new(Call {
            id,
            caller,
            server,
            entry: AtomicU64::new(r.entry),
            msg_owner: r.msg_owner,
            msg: r.msg,
            shown: AtomicU64::new(r.msg.len() as u64),
            reply_owner: caller,
            reply: r.reply,
            inline: [0; INLINE],
            progress: IrqMutex::new(Progress {
                state: State::Open,
                hops: Vec::new(),
                kept: 0,
                reply: [0; INLINE],
                waiter: None,
            }),
            completion: r.completion,
            flags: r.flags,
            tag: r.tag,
            batch: None,
        }),
    };
    let m = Arc::get_mut(&mut c).expect("a call object nobody else holds");
    m.id = id;
    m.caller = caller;
    m.server = server;
    *m.entry.get_mut() = r.entry;
    m.msg_owner = r.msg_owner;
    m.msg = r.msg;
    *m.shown.get_mut() = r.msg.len() as u64;
    m.reply_owner = caller;
    m.reply = r.reply;
    let p = m.progress.get_mut();
    p.state = State::Open;
    p.hops.clear();
    p.kept = 0;
    p.waiter = None;
    m.completion = r.completion;
    m.flags = r.flags;
    m.tag = r.tag;
    m.batch = batch.cloned();
    let n = r.msg.len().min(INLINE);
    if n > 0 {
        proc::read_user_of(r.msg_owner, r.msg, &mut m.inline[..n])?;
    }
    Ok(c)
}

/// Puts a call on `server`'s port. Returns the server's computation if it
/// was the one waiting in `acc` (taken off the wait queue, not yet woken:
/// the caller hands it the CPU or wakes it); other waiters are woken.
fn deliver(server: &Process, call: Arc<Call>) -> Result<Option<Arc<Computation>>, Error> {
    let mut q = server.port.queued.lock();
    if server.port.closed.load(Ordering::Relaxed) {
        return Err(Error::NotFound);
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
fn deliver_run(
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

/// The runs of equal keys in `0..n` (`key(i)` for index i), as index
/// ranges: a batch's calls for one server usually come together, and
/// each run is queued with one look-up of its server and one hold of its
/// queue's lock.
fn runs(n: usize, key: impl Fn(usize) -> u64) -> impl Iterator<Item = core::ops::Range<usize>> {
    let mut i = 0;
    core::iter::from_fn(move || {
        if i >= n {
            return None;
        }
        let (start, k) = (i, key(i));
        while i < n && key(i) == k {
            i += 1;
        }
        Some(start..i)
    })
}

#[inline(always)]
fn wake(partner: Option<Arc<Computation>>) {
    if let Some(p) = partner {
        sched::wake(&p);
    }
}

/// Waits until `call` is done, handing the CPU to `partner` (the server
/// just given the call) if it can run here; copies a kept reply into the
/// caller's memory and returns the call's status.
fn wait_done(call: &Call, partner: Option<Arc<Computation>>) -> Result<u64, Error> {
    let mut got = (0, 0);
    let mut kept = [0; INLINE];
    let ok = sched::wait_in_slot(
        &call.progress,
        partner,
        |p| match p.collect(&mut kept) {
            Some(g) => {
                got = g;
                true
            }
            None => false,
        },
        |p| &mut p.waiter,
    );
    if !ok {
        return Err(Error::Denied);
    }
    Error::decode(deliver_reply(call, got.0, &kept[..got.1]))
}

/// `call`: blocks until the server ends the rendezvous; returns the reply
/// length (or the server's error). `msg_ref` names a call the caller holds
/// whose message is passed on instead of the caller's own memory.
/// The general path: the system call tries `call_fast` first (see
/// `syscall::ipc::sys_call_raw`).
pub fn call(
    caller: &Process,
    server: u64,
    entry: u64,
    msg: UserRange,
    reply: UserRange,
    msg_ref: u64,
) -> Result<u64, Error> {
    let (owner, range) = if msg_ref != 0 {
        held_message(caller, msg_ref)?
    } else {
        (caller.pid, msg)
    };
    let (status, c) = call_with(
        caller,
        server,
        Request::new(entry, owner, range, reply, Completion::Wait),
    )?;
    caller.port.keep_spare(c);
    status
}

/// The common case of `call`, on the lines of seL4's IPC fast path: a
/// short message (it fits the call object) to the server this caller
/// called last, which waits for calls of this entry with none queued and
/// may run on this CPU. The call object is the caller's spare, filled in
/// place; it is accepted on the server's behalf (the server finds it held
/// already, and only has to describe it to itself); the server is claimed
/// under its port's lock and gets the CPU at once, without a pass through
/// the scheduler. Returns None, having changed nothing (the spare is kept
/// again), when the case is not the common one: the general path then does
/// the call and reports any error.
///
/// The result is the raw status (a length, or a negated error), as the
/// system call returns it.
#[inline(always)]
pub fn call_fast(caller: &Process, server: u64, entry: u64, msg: UserRange, reply: UserRange) -> Option<u64> {
    use x86_64::instructions::interrupts;
    if msg.len() > INLINE {
        return None;
    }
    let my_port = &caller.port;
    let mut spare = my_port.take_spare()?;
    {
        // The spare is this caller's alone: filled in place.
        let m: &mut Call = &mut spare;
        m.id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        m.caller = caller.pid;
        m.server = server;
        *m.entry.get_mut() = entry;
        m.msg_owner = caller.pid;
        m.msg = msg;
        *m.shown.get_mut() = msg.len() as u64;
        m.reply_owner = caller.pid;
        m.reply = reply;
        m.completion = Completion::Wait;
        m.flags = 0;
        m.tag = 0;
        let p = m.progress.get_mut();
        p.state = State::Open;
        p.kept = 0;
        p.hops.clear();
        if p.hops.capacity() == 0 && p.hops.try_reserve(1).is_err() {
            return give_up(caller, spare.into_arc(), None);
        }
        p.hops.push(server);
        // The caller waits in the call: the waiter slot holds it.
        p.waiter = sched::current();
        let n = msg.len();
        // Copied with interrupts still on: the page may have to be faulted in.
        if n > 0 && msg.read(&mut m.inline[..n]).is_err() {
            return give_up(caller, spare.into_arc(), None);
        }
    }
    let c = spare.into_arc();
    let were_enabled = interrupts::are_enabled();
    interrupts::disable();
    // Held to the end of the hand-over: it keeps the server alive.
    let last = my_port.last_server.lock_irqs_off();
    let Some((_, sp)) = last
        .as_deref()
        .filter(|s| s.pid == server)
        .map(|s| (s, &s.port))
        .filter(|(_, sp)| check_declared(sp, entry).is_ok())
    else {
        drop(last);
        return give_up(caller, c, Some(were_enabled));
    };
    let mut held = sp.held.lock_irqs_off();
    let mut q = sp.queued.lock_irqs_off();
    // Claimed last: once claimed, the server must get the CPU.
    let common = !sp.closed.load(Ordering::Relaxed)
        && q.calls.is_empty()
        && q.handed.is_none()
        && in_mask(q.mask, entry)
        && held.len() < held.capacity()
        && match q.waiter.as_ref() {
            Some(w) => sched::claim_here(w),
            None => false,
        };
    let partner = if common { q.waiter.take() } else { None };
    let Some(partner) = partner else {
        drop(q);
        drop(held);
        drop(last);
        return give_up(caller, c, Some(were_enabled));
    };
    q.handed = Some(c.clone());
    drop(q);
    held.push(c.clone());
    drop(held);
    sp.accepted.fetch_add(1, Ordering::Relaxed);
    drop(last);
    {
        use kcore::computation::State as Run;
        sched::with_current(|me| {
            let mut state = me.state.lock_irqs_off();
            *state = Run::Blocked;
            // A kill that came before the line above found nothing to wake:
            // it is seen here, and the caller stays runnable (after the
            // server has had the CPU it then finds its call not done, and
            // leaves).
            if caller.killed.load(Ordering::Acquire) {
                *state = Run::Running;
            }
        });
    }
    sched::switch_to_claimed(partner);
    if were_enabled {
        interrupts::enable();
    }
    // Normally back because the server ended the call and let go of it:
    // the call object is this caller's alone again, so its result is read
    // without a lock, and the kept reply goes straight from it into the
    // caller's memory.
    let c = match UniqueArc::try_from_arc(c) {
        Ok(mut mine) => {
            let m: &mut Call = &mut mine;
            if let Some((status, kept)) = m.progress.get_mut().take_done() {
                let status = reply_here(m.reply, status, kept);
                my_port.park_spare(mine);
                return Some(status);
            }
            mine.into_arc()
        }
        Err(c) => c,
    };
    let status = wait_done(&c, None);
    my_port.keep_spare(c);
    Some(status.unwrap_or_else(Error::as_ret))
}

/// Leaves the fast path with nothing changed: the spare back, the waiter
/// reference dropped, interrupts as they were (if they were turned off).
#[cold]
#[inline(never)]
fn give_up(caller: &Process, mut c: Arc<Call>, were_enabled: Option<bool>) -> Option<u64> {
    if were_enabled == Some(true) {
        x86_64::instructions::interrupts::enable();
    }
    if let Some(m) = Arc::get_mut(&mut c) {
        m.progress.get_mut().waiter = None;
    }
    caller.port.keep_spare(c);
    None
}

/// Sends `r` to `server` and waits for the end of the rendezvous; returns
/// its status and the finished call.
fn call_with(caller: &Process, server: u64, r: Request) -> Result<(Result<u64, Error>, Arc<Call>), Error> {
    let s = cached_target(caller, server)?;
    check_entry(&s, r.entry)?;
    let c = make_call(caller.pid, server, r, caller.port.take_spare().map(UniqueArc::into_arc))?;
    let partner = deliver(&s, c.clone())?;
    drop(s);
    let status = wait_done(&c, partner);
    Ok((status, c))
}

/// The request a control block describes, for a caller that waits for it.
fn waited_request(caller: &Process, c: &abi::Control) -> Result<Request, Error> {
    Request::of(caller.pid, c, Completion::Wait)
}

/// AnT's callsync with a control block: one request, waited for, with the
/// rendezvous's direct switch. Returns the block with its result half
/// filled in (a request that could not be sent carries its error).
pub fn callsync(caller: &Process, c: &abi::Control) -> abi::Control {
    let sent = waited_request(caller, c).and_then(|r| call_with(caller, c.server, r));
    match sent {
        Ok((_, call)) => {
            let result = result_of(&call, 1);
            caller.port.keep_spare(call);
            result
        }
        Err(e) => abi::Control {
            status: e.as_ret(),
            batch: 1,
            ..*c
        },
    }
}

/// The message range of a call `holder` holds (for passing it on).
fn held_message(holder: &Process, rid: u64) -> Result<(u64, UserRange), Error> {
    let c = held(holder, rid)?;
    Ok((c.msg_owner, c.msg.part(0, c.shown.load(Ordering::Relaxed) as usize)?))
}

/// `acc`: waits for a call on one of the entries in `mask` (bit n = entry n;
/// entries ≥ 63 match bit 63). Returns the call's description.
pub fn acc(server: &Process, mask: u64) -> Result<Accepted, Error> {
    acc_handing_to(server, mask, None)
}

/// `acc`, handing the CPU to `partner` (a caller just released) if the
/// server has to wait.
fn acc_handing_to(server: &Process, mask: u64, partner: Option<Arc<Computation>>) -> Result<Accepted, Error> {
    use x86_64::instructions::interrupts;
    let nowait = mask & abi::ACC_NOWAIT != 0;
    let mask = mask & !abi::ACC_NOWAIT;
    if nowait {
        let got = take_matching(&mut server.port.queued.lock().calls, mask);
        wake(partner);
        let c = got.ok_or(Error::Busy)?;
        let were_enabled = interrupts::are_enabled();
        interrupts::disable();
        let r = accept(server, c);
        if were_enabled {
            interrupts::enable();
        }
        return r;
    }
    // Waiting and accepting run with interrupts off: every lock on the way
    // is then taken without saving the flags, and a switch needs them off.
    let were_enabled = interrupts::are_enabled();
    interrupts::disable();
    let r = wait_and_accept(server, mask, partner);
    if were_enabled {
        interrupts::enable();
    }
    r
}

/// `acc` for up to `k` calls (AnT's batch, on the server's side): waits as
/// `acc` does for the first (not at all with `ACC_NOWAIT`), then takes the
/// further calls for `mask` that are already waiting, up to `k` in all,
/// under one hold of the port's lock, and accepts them under one hold of
/// the held list's lock. `describe(i, call)` tells the server of call `i`
/// (in the order they arrived). A call it cannot be told of (a fault
/// writing into its memory) is ended with that error for its caller, and
/// so is every call after it: a server never holds a call it does not
/// know. Returns how many calls the server now holds.
pub fn acc_many(
    server: &Process,
    mask: u64,
    k: usize,
    mut describe: impl FnMut(usize, &Accepted) -> Result<(), Error>,
) -> Result<usize, Error> {
    const MAX: usize = abi::MAX_BATCH as usize;
    if k == 0 || k > MAX {
        return Err(Error::Invalid);
    }
    let first = acc_handing_to(server, mask, None)?;
    // On the stack: accepting a batch allocates nothing, and costs only as
    // much as it has calls.
    let mut more = ArrayVec::<Arc<Call>, MAX>::new();
    if k > 1 {
        use x86_64::instructions::interrupts;
        let mask = mask & !abi::ACC_NOWAIT;
        // Interrupts off once for the batch: every lock below is then taken
        // without saving and restoring the flags.
        let were_enabled = interrupts::are_enabled();
        interrupts::disable();
        {
            let mut q = server.port.queued.lock_irqs_off();
            while more.len() < k - 1
                && let Some(c) = take_matching(&mut q.calls, mask)
            {
                more.push(c);
            }
        }
        for c in &more {
            c.accepted_by(server.pid);
        }
        let kept = {
            let mut held = server.port.held.lock_irqs_off();
            let room = held.try_reserve(more.len()).is_ok();
            if room {
                for c in &more {
                    held.push(c.clone());
                }
            }
            room
        };
        if were_enabled {
            interrupts::enable();
        }
        if !kept {
            for c in more.drain(..) {
                wake(finish(&c, Error::NoMemory.as_ret()));
            }
        }
    }
    let got = more.len();
    server.port.accepted.fetch_add(got as u64, Ordering::Relaxed);
    let mut rest = more.into_iter();
    if let Err(e) = describe(0, &first) {
        let _ = fail(server, first.rid(), e);
        fail_all(server, rest, e);
        return Err(e);
    }
    for i in 1..=got {
        let Some(c) = rest.next() else { break };
        let a = Accepted(c);
        if let Err(e) = describe(i, &a) {
            let _ = fail(server, a.rid(), e);
            fail_all(server, rest, e);
            return Err(e);
        }
    }
    Ok(1 + got)
}

/// Ends every call of `calls` that `server` holds with `error`.
#[cold]
fn fail_all(server: &Process, calls: impl Iterator<Item = Arc<Call>>, error: Error) {
    for c in calls {
        let _ = fail(server, c.id, error);
    }
}

/// `port_wait`, then the call it got accepted (a handed one is already).
/// Interrupts are off.
#[inline(always)]
fn wait_and_accept(server: &Process, mask: u64, partner: Option<Arc<Computation>>) -> Result<Accepted, Error> {
    match port_wait(server, mask, partner) {
        Some(Arrived::Handed(c)) => Ok(Accepted(c)),
        Some(Arrived::Queued(c)) => accept(server, c),
        None => Err(Error::Denied),
    }
}

/// Whether call `c` is for an entry in `mask`.
fn matches(mask: u64, c: &Call) -> bool {
    in_mask(mask, c.entry.load(Ordering::Relaxed))
}

/// Whether `entry` is in an `acc` mask (entries from 61 up share bit 61;
/// the bits above are the mask's flags).
#[inline(always)]
fn in_mask(mask: u64, entry: u64) -> bool {
    mask & (1u64 << entry.min(61)) != 0
}

/// The first call in `calls` for an entry in `mask`, taken out. Inlined:
/// the usual answer is the first call, or none; so the first is taken
/// out at once, and put back if it is not for `mask`.
#[inline(always)]
fn take_matching(calls: &mut VecDeque<Arc<Call>>, mask: u64) -> Option<Arc<Call>> {
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
            None => take_matching(&mut q.calls, mask).map(Arrived::Queued),
        };
        if got.is_some() || server.killed.load(Ordering::Acquire) {
            q.waiter = other;
            drop(q);
            wake(partner);
            return got;
        }
        // The slot holds the waiter (the computation running here).
        let Some(cur) = sched::current() else {
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
fn accept(server: &Process, c: Arc<Call>) -> Result<Accepted, Error> {
    c.accepted_by(server.pid);
    {
        let mut held = server.port.held.lock_irqs_off();
        if !has_room(&mut held) {
            drop(held);
            wake(finish(&c, Error::NoMemory.as_ret()));
            return Err(Error::NoMemory);
        }
        held.push(c.clone());
    }
    server.port.accepted.fetch_add(1, Ordering::Relaxed);
    Ok(Accepted(c))
}

/// A call just accepted, as its server learns of it.
pub struct Accepted(Arc<Call>);

impl Accepted {
    #[inline(always)]
    pub fn rid(&self) -> u64 {
        self.0.id
    }

    /// Writes the call's description (`abi::AccInfo`) to the server's
    /// memory at `to`: the fixed fields and only as many inline bytes as
    /// the message has. The rest of the server's `inline` keeps what it
    /// held, so nothing of an earlier message in a recycled call object
    /// can reach it, and a short message costs a short copy.
    #[inline(always)]
    pub fn write_to(&self, to: UserRange) -> Result<(), Error> {
        const { assert!(core::mem::offset_of!(AccInfo, inline) == 6 * 8) };
        let c = &self.0;
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
        let n = (len as usize).min(INLINE);
        if n > 0 {
            to.part(6 * 8, n)?.write(&c.inline[..n])?;
        }
        Ok(())
    }
}

fn held(server: &Process, rid: u64) -> Result<Arc<Call>, Error> {
    let held = server.port.held.lock();
    held.iter().find(|c| c.id == rid).cloned().ok_or(Error::NotFound)
}

/// Takes call `rid` out of the calls `server` holds.
fn release(server: &Process, rid: u64) -> Result<Arc<Call>, Error> {
    take_held(&mut server.port.held.lock(), rid).ok_or(Error::NotFound)
}

/// Call `rid` taken out of a server's held calls (usually the last one,
/// or the only one: then a pop does).
#[inline(always)]
fn take_held(held: &mut Vec<Arc<Call>>, rid: u64) -> Option<Arc<Call>> {
    match held.iter().position(|c| c.id == rid)? {
        i if i + 1 == held.len() => held.pop(),
        i => Some(held.swap_remove(i)),
    }
}

/// `rv_read`: copies message bytes `offset..offset + to.len()` of call
/// `rid` into the server's memory at `to`. Only the message the caller
/// passed is reachable.
pub fn read(server: &Process, rid: u64, offset: u64, to: UserRange) -> Result<u64, Error> {
    let c = held(server, rid)?;
    let shown = c.msg.prefix(c.shown.load(Ordering::Relaxed) as usize);
    let from = usize::try_from(offset).map_err(|_| Error::Invalid)?;
    cross_copy((c.msg_owner, shown.part(from, to.len())?), (server.pid, to))?;
    Ok(to.len() as u64)
}

/// `rv_write`: copies the server's memory at `from` into the reply buffer
/// of call `rid`, at `offset`.
pub fn write(server: &Process, rid: u64, offset: u64, from: UserRange) -> Result<u64, Error> {
    let c = held(server, rid)?;
    let at = usize::try_from(offset).map_err(|_| Error::Invalid)?;
    cross_copy((server.pid, from), (c.reply_owner, c.reply.part(at, from.len())?))?;
    Ok(from.len() as u64)
}

/// Finishes a call with a status. Returns its blocked caller (or, for the
/// last member of a batch, the batch's caller), taken off its wait queue
/// but not yet woken (see `deliver`).
#[must_use]
fn finish(c: &Arc<Call>, status: u64) -> Option<Arc<Computation>> {
    finish_with(c, status, &Kept::new())
}

/// `finish`, with the first `kept` bytes of the call's kept reply for the
/// caller to copy into its reply buffer when it collects the result.
/// Inlined: a server's loop finishes a call on every step, and the usual
/// call (a caller waiting, alone) needs only the first lines.
#[must_use]
#[inline(always)]
fn finish_with(c: &Arc<Call>, status: u64, kept: &Kept) -> Option<Arc<Computation>> {
    let caller = {
        let mut p = c.progress.lock();
        p.state = State::Done(status);
        p.kept = kept.len();
        p.reply[..kept.len()].copy_from_slice(kept);
        p.waiter.take()
    };
    CALLS.fetch_add(1, Ordering::Relaxed);
    if c.completion != Completion::Wait {
        return finish_further(c, caller);
    }
    // A member of a batch is counted; the batch's caller goes once the
    // last is back.
    match &c.batch {
        Some(b) if b.remaining.fetch_sub(1, Ordering::AcqRel) == 1 => all_back(b, caller),
        _ => caller,
    }
}

/// The caller of a batch whose last member is back (and `caller`, whom
/// the member's call had blocked: nobody, for a batch's members).
#[must_use]
#[cold]
#[inline(never)]
fn all_back(b: &Batch, caller: Option<Arc<Computation>>) -> Option<Arc<Computation>> {
    let batch_caller = b.caller.lock().take();
    match (batch_caller, caller) {
        (Some(b), Some(c)) => {
            sched::wake(&c);
            Some(b)
        }
        (b, c) => b.or(c),
    }
}

/// The rest of `finish_with`: the results of requests nobody waits for
/// (they are never members of a batch: `ncallsync` waits for its members).
#[must_use]
#[inline(never)]
fn finish_further(c: &Arc<Call>, caller: Option<Arc<Computation>>) -> Option<Arc<Computation>> {
    if c.completion == Completion::Ring {
        super::rings::complete(c.caller, &result_of(c, 1));
    }
    if c.completion == Completion::Fetch
        && let Some(p) = proc::get(c.caller)
    {
        {
            let mut r = p.port.results.lock();
            if r.try_reserve(1).is_ok() {
                r.push_back(c.clone());
            }
        }
        p.port.results_wait.wake_all();
    }
    caller
}

/// Ends call `rid`: copies the reply (`len` bytes at `from` in the server)
/// into the caller's reply buffer. Returns the bytes replied and the caller
/// to let go.
fn end(server: &Process, rid: u64, from: UserRange) -> Result<(u64, Option<Arc<Computation>>), Error> {
    let c = release(server, rid)?;
    let r = end_released(server, &c, from);
    // `c` goes before the caller runs, so that it finds its call object
    // free for its next call.
    done_with(c);
    Ok(r)
}

/// Lets go of a finished call. A waiting caller takes its call object back
/// itself; a request whose result went to a ring has nobody else holding
/// it, and its object goes back to the free list instead of the heap (a
/// distribution server makes one such request per call it fans out).
#[inline(always)]
fn done_with(c: Arc<Call>) {
    if c.completion == Completion::Ring {
        recycle(c);
    }
}

/// A short reply read from the server's memory, on its way into the call
/// (`finish_with` puts it there under the call's lock).
type Kept = ArrayVec<u8, INLINE>;

/// Reads as much of reply `from` (in the current space) as call `c`'s
/// caller's reply buffer takes into `kept`; returns the status for the
/// caller. The reply is short (`INLINE` bytes at most).
#[inline(always)]
fn keep_reply(c: &Call, from: UserRange, kept: &mut Kept) -> u64 {
    let from = from.prefix(c.reply.len());
    match from.read_append(kept) {
        Ok(()) => from.len() as u64,
        Err(e) => e.as_ret(),
    }
}

/// `end`, for call `c` already taken out of the server's held calls.
fn end_released(server: &Process, c: &Arc<Call>, from: UserRange) -> (u64, Option<Arc<Computation>>) {
    let n = (from.len() as u64).min(c.reply.len() as u64);
    if n <= INLINE as u64 && c.completion == Completion::Wait {
        // A short reply to a waiting caller is kept in the call: the caller
        // copies it into its own memory when it resumes, through its own
        // page tables instead of a walk of them from here.
        let mut kept = Kept::new();
        let status = keep_reply(c, from, &mut kept);
        server.port.answered.fetch_add(1, Ordering::Relaxed);
        return (n, finish_with(c, status, &kept));
    }
    let status = match cross_copy((server.pid, from), (c.reply_owner, c.reply)) {
        Ok(()) => n,
        Err(e) => e.as_ret(),
    };
    // Counted before the caller is let go, so that whoever it tells sees it.
    server.port.answered.fetch_add(1, Ordering::Relaxed);
    (n, finish(c, status))
}

/// `endr`: copies the reply into the caller's reply buffer and releases the
/// caller with the reply length.
pub fn endr(server: &Process, rid: u64, from: UserRange) -> Result<u64, Error> {
    let (n, caller) = end(server, rid, from)?;
    wake(caller);
    Ok(n)
}

/// `endr` then `acc` in one step (a server's loop): ends call `rid` (if not
/// 0) and waits for the next call, giving the CPU straight to the released
/// caller while it waits. If ending `rid` fails (it is not a call the
/// server holds), nothing is accepted and that error is returned.
pub fn endr_acc(server: &Process, rid: u64, reply: UserRange, mask: u64) -> Result<Accepted, Error> {
    if rid == 0 {
        return acc_handing_to(server, mask, None);
    }
    if is_short_endr_acc(reply.len() as u64, mask) {
        return endr_acc_short(server, rid, reply, mask);
    }
    let caller = end(server, rid, reply)?.1;
    acc_handing_to(server, mask, caller)
}

/// Whether `endr_acc_short` does an `endr_acc` (of a call, not 0).
#[inline(always)]
pub fn is_short_endr_acc(len: u64, mask: u64) -> bool {
    len <= INLINE as u64 && mask & abi::ACC_NOWAIT == 0
}

/// `endr_acc` with a short reply, the step of a server's loop. The reply is
/// read straight into the call, with interrupts on (its page may have to
/// be faulted in); ending the call and waiting for the next one then run
/// in one stretch with interrupts off, and the released caller gets the
/// CPU if the server has to wait.
#[inline(always)]
pub fn endr_acc_short(server: &Process, rid: u64, reply: UserRange, mask: u64) -> Result<Accepted, Error> {
    use x86_64::instructions::interrupts;
    let sp = &server.port;
    let Some(c) = take_held(&mut sp.held.lock(), rid) else {
        return Err(Error::NotFound);
    };
    let were_enabled = interrupts::are_enabled();
    let caller = if c.completion == Completion::Wait {
        let mut kept = Kept::new();
        let status = keep_reply(&c, reply, &mut kept);
        interrupts::disable();
        sp.answered.fetch_add(1, Ordering::Relaxed);
        finish_with(&c, status, &kept)
    } else {
        // Anything else goes as `end` has it (it may copy into the
        // caller's memory through its page tables).
        let caller = end_released(server, &c, reply).1;
        interrupts::disable();
        caller
    };
    // Before the caller runs: it finds its call object free for its next call.
    done_with(c);
    let r = wait_and_accept(server, mask, caller);
    if were_enabled {
        interrupts::enable();
    }
    r
}

/// Ends call `rid` with an error for its caller.
pub fn fail(server: &Process, rid: u64, error: Error) -> Result<u64, Error> {
    let c = release(server, rid)?;
    server.port.answered.fetch_add(1, Ordering::Relaxed);
    wake(finish(&c, error.as_ret()));
    Ok(0)
}

/// `forward`: hands call `rid` on to `next` (entry `entry`), which will
/// reply to the original caller directly (multi-stage request with direct
/// return): the same call object travels on, its stack of hops growing.
pub fn forward(server: &Process, rid: u64, next: u64, entry: u64) -> Result<u64, Error> {
    wake(pass_on(server, rid, next, entry)?);
    Ok(0)
}

/// `forward`, then `acc`: a relay's loop in one step, giving the CPU to the
/// next server while the relay waits for its next call.
pub fn forward_acc(server: &Process, rid: u64, next: u64, entry: u64, mask: u64) -> Result<Accepted, Error> {
    let partner = pass_on(server, rid, next, entry)?;
    acc_handing_to(server, mask, partner)
}

/// Hands call `rid` on to `next`; returns the next server's computation if
/// it was waiting (not yet woken, as `deliver` says).
fn pass_on(server: &Process, rid: u64, next: u64, entry: u64) -> Result<Option<Arc<Computation>>, Error> {
    let n = target(next)?;
    check_entry(&n, entry)?;
    let c = release(server, rid)?;
    c.pass_to(entry);
    match deliver(&n, c.clone()) {
        Ok(partner) => {
            server.port.forwarded.fetch_add(1, Ordering::Relaxed);
            Ok(partner)
        }
        Err(e) => {
            wake(finish(&c, e.as_ret()));
            Err(e)
        }
    }
}

/// `forward` for a run of calls (a distribution server's batch): call
/// `list[i].rid` goes on to `list[i].server`, whose entry `list[i].entry`
/// sees the message without its last `list[i].trim` bytes, and replies to
/// the original caller directly. The calls leave the held list under one
/// hold of its lock; each run of them for one server is queued with one
/// look-up of that server and one hold of its queue's lock. A call that
/// cannot be passed on (not held, trim longer than its message, no such
/// server or entry) is ended with that error for its caller, and
/// `failed(i, error)` is told. Returns how many were passed on.
pub fn forward_many(
    server: &Process,
    list: &[abi::ForwardEntry],
    mut failed: impl FnMut(usize, Error),
) -> Result<usize, Error> {
    const MAX: usize = abi::MAX_BATCH as usize;
    let k = list.len();
    if k == 0 || k > MAX {
        return Err(Error::Invalid);
    }
    // On the stack, as long as the list.
    let mut calls = ArrayVec::<Option<Arc<Call>>, MAX>::new();
    {
        let mut held = server.port.held.lock();
        // A batch usually passes its calls on in the order it accepted
        // them, and holds no others: then they leave the held list in one
        // piece.
        let in_order = held.len() >= k && held.iter().zip(list).all(|(c, f)| c.id == f.rid);
        if in_order {
            calls.extend(held.drain(..k).map(Some));
        } else {
            calls.extend(list.iter().map(|f| take_held(&mut held, f.rid)));
        }
    }
    let mut refuse = |i: usize, c: Option<Arc<Call>>, e: Error| {
        if let Some(c) = c {
            server.port.answered.fetch_add(1, Ordering::Relaxed);
            wake(finish(&c, e.as_ret()));
        }
        failed(i, e);
    };
    for (i, f) in list.iter().enumerate() {
        let Some(c) = &calls[i] else {
            refuse(i, None, Error::NotFound);
            continue;
        };
        // Only the holder trims, and it holds the call: nobody else
        // changes `shown` between the check and the store.
        let shown = c.shown.load(Ordering::Relaxed);
        if f.trim > shown {
            refuse(i, calls[i].take(), Error::Invalid);
            continue;
        }
        c.shown.store(shown - f.trim, Ordering::Relaxed);
        c.pass_to(f.entry);
    }
    let mut passed = 0;
    for r in runs(k, |i| list[i].server) {
        let i = r.start;
        let run = &mut calls[r];
        let (sent, n, refused) = match target(list[i].server) {
            Ok(s) => deliver_run(&s, run, false),
            Err(e) => (Err(e), 0, 0),
        };
        passed += n;
        match sent {
            Ok(partner) => wake(partner),
            Err(e) => refused_all(run, e, i, &mut refuse),
        }
        // Whatever is left of the run was refused by its server.
        for (j, c) in run.iter_mut().enumerate() {
            if refused & (1 << j) != 0 {
                refuse(i + j, c.take(), Error::NoSys);
            }
        }
    }
    server.port.forwarded.fetch_add(passed as u64, Ordering::Relaxed);
    Ok(passed)
}

/// Every call of a run that could not be delivered is ended with `e`;
/// `first` is the run's index in its batch.
fn refused_all(
    run: &mut [Option<Arc<Call>>],
    e: Error,
    first: usize,
    refuse: &mut impl FnMut(usize, Option<Arc<Call>>, Error),
) {
    for (j, c) in run.iter_mut().enumerate() {
        if let Some(c) = c.take() {
            refuse(first + j, Some(c), e);
        }
    }
}

/// `request`: a non-blocking call; returns its id at once. The result goes
/// to the requester's result queue (`fetch`).
pub fn request(caller: &Process, server: u64, entry: u64, msg: UserRange, reply: UserRange) -> Result<u64, Error> {
    let s = target(server)?;
    check_entry(&s, entry)?;
    let c = make_call(
        caller.pid,
        server,
        Request::new(entry, caller.pid, msg, reply, Completion::Fetch),
        None,
    )?;
    let id = c.id;
    wake(deliver(&s, c)?);
    Ok(id)
}

/// A request from a control block of the caller's request ring: sent
/// without waiting; its result goes to the caller's result ring.
pub fn request_to_ring(caller: &Process, c: &abi::Control) -> Result<(), Error> {
    let r = Request::of(caller.pid, c, Completion::Ring)?;
    let s = target(c.server)?;
    check_entry(&s, c.entry)?;
    let call = make_call(caller.pid, c.server, r, None)?;
    wake(deliver(&s, call)?);
    Ok(())
}

/// One member of an `ncallsync` batch: a control block's request half.
#[derive(Clone, Copy)]
pub struct Member {
    pub server: u64,
    pub entry: u64,
    /// The message and the reply buffer, not checked yet (`request` checks
    /// them).
    pub msg: (u64, u64),
    pub reply: (u64, u64),
    pub flags: u64,
    pub tag: u64,
}

impl Member {
    pub fn of(c: &abi::Control) -> Member {
        Member {
            server: c.server,
            entry: c.entry,
            msg: (c.msg, c.msg_len),
            reply: (c.reply, c.reply_cap),
            flags: c.flags,
            tag: c.tag,
        }
    }

    /// The member as a control block with its result half: `status`, the
    /// batch's size, and what the call object `c` (if it was made) says
    /// of its path.
    pub fn control(&self, status: u64, batch: u64, c: Option<&Call>) -> abi::Control {
        let (id, (path, hops)) = match c {
            Some(c) => (c.id, c.progress.lock().path()),
            None => (0, ([0; 4], 0)),
        };
        abi::Control {
            server: self.server,
            entry: c.map_or(self.entry, |c| c.entry.load(Ordering::Relaxed)),
            msg: self.msg.0,
            msg_len: self.msg.1,
            reply: self.reply.0,
            reply_cap: self.reply.1,
            flags: self.flags,
            tag: self.tag,
            id,
            status,
            batch,
            hops,
            path,
        }
    }

    /// The call the member asks for, from `caller`, who waits for it; its
    /// buffers are checked like system-call arguments.
    #[inline(always)]
    fn request(&self, caller: u64) -> Result<Request, Error> {
        let msg = UserRange::new(self.msg.0, self.msg.1 as usize)?;
        let reply = UserRange::new(self.reply.0, self.reply.1 as usize)?;
        Ok(Request {
            flags: self.flags,
            tag: self.tag,
            ..Request::new(self.entry, caller, msg, reply, Completion::Wait)
        })
    }
}

/// The status of a finished member (the reply length, or its error), its
/// kept reply copied into the memory of the caller, who runs this. With
/// the whole batch back, a member's call object is usually the caller's
/// alone (its server let go of it): then its result is read without the
/// lock, and the kept reply goes straight from it into the caller's memory.
#[inline(always)]
fn member_status(c: &mut Arc<Call>) -> u64 {
    if let Some(m) = Arc::get_mut(c) {
        return match m.progress.get_mut().take_done() {
            Some((status, kept)) => reply_here(m.reply, status, kept),
            None => Error::Invalid.as_ret(),
        };
    }
    let mut kept = [0; INLINE];
    let collected = c.progress.lock().collect(&mut kept);
    match collected {
        Some((s, n)) => reply_here(c.reply, s, &kept[..n]),
        None => Error::Invalid.as_ret(),
    }
}

/// `ncallsync`: sends every member of the batch at once and waits, once,
/// until all are back. Member `i` is `member(i)`; its outcome goes to
/// `result(i, status, call)`, in order (`call` is None for a member that
/// could not be made). A member that cannot be sent (bad buffer, unknown
/// server or entry) fails alone, with its error as status. Returns the
/// first failed member's error, if any. Servers need no change: each
/// member is an ordinary call to them.
pub fn ncallsync_with(
    caller: &Process,
    n: usize,
    mut member: impl FnMut(usize) -> Result<Member, Error>,
    mut result: impl FnMut(usize, u64, Option<&Call>) -> Result<(), Error>,
) -> Result<(), Error> {
    const MAX: usize = abi::MAX_BATCH as usize;
    if n == 0 || n > MAX {
        return Err(Error::Invalid);
    }
    // The process's spare from its last batch (nobody else holds it), or
    // a new one.
    let spare = caller.port.spare_batch.lock().take();
    let mut batch = spare
        .and_then(|mut b| {
            *Arc::get_mut(&mut b)?.remaining.get_mut() = n as u64;
            Some(b)
        })
        .unwrap_or_else(|| Batch::new(n));
    // On the stack, as long as the batch: a batch allocates nothing (its
    // Batch is the process's spare from its last one). The call objects
    // come from the free list under one hold of its lock.
    let mut spares = ArrayVec::<Arc<Call>, MAX>::new();
    {
        let mut free = FREE_CALLS.lock();
        while spares.len() < n
            && let Some(c) = free.pop()
        {
            spares.push(c);
        }
    }
    let mut calls = ArrayVec::<Option<Arc<Call>>, MAX>::new();
    let mut servers = ArrayVec::<u64, MAX>::new();
    // The status of members that could not even be made (0 for the others).
    let mut failed_early = ArrayVec::<u64, MAX>::new();
    let mut partner = None;
    for i in 0..n {
        let m = member(i)?;
        let made = match m.request(caller.pid) {
            Ok(r) => make_call_in(caller.pid, m.server, r, spares.pop(), Some(&batch)),
            Err(e) => Err(e),
        };
        let (call, server, early) = match made {
            Ok(c) => (Some(c), m.server, 0),
            Err(err) => {
                batch.remaining.fetch_sub(1, Ordering::AcqRel);
                (None, 0, err.as_ret())
            }
        };
        calls.push(call);
        servers.push(server);
        failed_early.push(early);
    }
    for r in runs(n, |i| servers[i]) {
        let server = servers[r.start];
        let run = &mut calls[r];
        let (sent, _, refused) = match cached_target(caller, server) {
            Ok(s) => deliver_run(&s, run, true),
            Err(e) => (Err(e), 0, 0),
        };
        let fail = |c: &Arc<Call>, err: Error| wake(finish(c, err.as_ret()));
        match sent {
            // The first server that may run on this CPU gets it directly
            // when the caller blocks; the others are woken now.
            Ok(Some(s)) if partner.is_none() && sched::may_run_here(&s) => partner = Some(s),
            Ok(server) => wake(server),
            // These members are back at once, with the error.
            Err(err) => run.iter().flatten().for_each(|c| fail(c, err)),
        }
        for (k, c) in run.iter().enumerate() {
            if let Some(c) = c
                && refused & (1 << k) != 0
            {
                fail(c, Error::NoSys);
            }
        }
    }
    let ok = sched::wait_in_slot(
        &batch.caller,
        partner,
        |_| batch.remaining.load(Ordering::Acquire) == 0,
        |w| w,
    );
    if !ok {
        return Err(Error::Denied);
    }
    let mut failed = None;
    for i in 0..n {
        let status = calls[i].as_mut().map_or(failed_early[i], member_status);
        result(i, status, calls[i].as_deref())?;
        if let Err(e) = Error::decode(status) {
            failed.get_or_insert(e);
        }
    }
    {
        let mut free = FREE_CALLS.lock();
        for c in calls.drain(..).flatten() {
            recycle_into(&mut free, c);
        }
    }
    // Its members gave their references back with their call objects.
    if Arc::get_mut(&mut batch).is_some() {
        *caller.port.spare_batch.lock() = Some(batch);
    }
    failed.map_or(Ok(()), Err)
}

/// `fetch`: waits up to `timeout_ns` for a finished request; returns (id, status).
pub fn fetch(caller: &Process, timeout_ns: u64) -> Result<(u64, u64), Error> {
    let deadline = kcore::clock::nanos().saturating_add(timeout_ns);
    let mut got = None;
    caller.port.results_wait.wait_until_deadline(deadline, || {
        got = caller.port.results.lock().pop_front();
        got.is_some()
    });
    let c = got.ok_or(Error::Busy)?;
    let status = match c.progress.lock().state {
        State::Done(s) => s,
        _ => Error::Invalid.as_ret(),
    };
    let id = c.id;
    recycle(c);
    Ok((id, status))
}

/// Called when a process ends: calls waiting for it or held by it fail
/// (their callers are released with an error); its name goes.
pub fn on_exit(p: &Process) {
    super::names::forget(p.pid);
    let queued: Vec<Arc<Call>> = {
        let mut q = p.port.queued.lock();
        p.port.closed.store(true, Ordering::Release);
        // (A handed call is among the held ones, released below.)
        q.handed = None;
        q.calls.drain(..).collect()
    };
    let held: Vec<Arc<Call>> = core::mem::take(&mut *p.port.held.lock());
    for c in queued.into_iter().chain(held) {
        wake(finish(&c, Error::NotFound.as_ret()));
    }
    p.port.results.lock().clear();
    let last = p.port.last_server.lock().take();
    drop(last);
    drop(p.port.take_spare());
    drop(p.port.spare_batch.lock().take());
}
