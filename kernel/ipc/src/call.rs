//! The call object: one rendezvous (seed 003) or one request (AnT's
//! 処理依頼, seed 002) while it travels. It is made when a caller calls or
//! requests, queued at a server's port, accepted by the server, perhaps
//! passed on to further servers (a multi-stage request keeps one call
//! object and stacks the servers it passed, as AnT's control ICA stacks
//! its request information), completed once, and collected by its caller
//! or delivered to its requester's result queue or ring. Then it is
//! recycled: each process keeps its last one as a spare, the others go to
//! a shared free list, and in the steady state a call allocates nothing.

use crate::process::{self as proc, Process};
use crate::{batch, request};
use abi::Error;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kcore::computation::Computation;
use kcore::handoff::OnceBuf;
use kcore::mm::quota::{Account, Charge};
use kcore::sync::IrqMutex;
use kcore::uaccess::UserRange;
use kcore::unique::{UniqueArc, UniqueSlot};

/// Inline message bytes delivered by `acc`.
pub const INLINE: usize = 64;

/// Rendezvous completed, and their copies (for the inspector and benchmarks).
pub static CALLS: AtomicU64 = AtomicU64::new(0);
pub static BYTES_COPIED: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Queued at a server's port, or held by a server.
    Open,
    /// Finished with a status (reply length, or a negated error).
    Done(u64),
}

pub struct Call {
    pub id: u64,
    pub(crate) caller: u64,
    /// The server it was sent to first.
    pub(crate) server: u64,
    /// The entry it is for (changes when the call is forwarded).
    pub(crate) entry: AtomicU64,
    /// Where the message and the reply are, and in whose memory.
    pub(crate) msg_owner: u64,
    /// The message, checked when the call was made.
    pub(crate) msg: UserRange,
    /// The message's length as the server holding the call sees it: less
    /// than `msg.len()` by what servers it passed through consumed at its end
    /// (their routing information, popped as they forwarded it). Its first
    /// bytes, and so `inline`, stay as they were.
    pub(crate) shown: AtomicU64,
    pub(crate) reply_owner: u64,
    /// The reply buffer, checked when the call was made.
    pub(crate) reply: UserRange,
    pub(crate) inline: [u8; INLINE],
    /// A short reply kept in the call until the caller copies it into its
    /// own memory: that copy goes through the caller's own page tables,
    /// and no reply can reach the memory of a caller that has gone. The
    /// server that ends the call fills it from its own memory (a copy that
    /// may fault a page in, so it is outside the lock) before completing
    /// it; the caller reads it once it has seen the call done.
    pub(crate) kept: OnceBuf<INLINE>,
    /// A Linux system call passed on by its supervisor with a message of
    /// its own (`supervise::pass`): that message is in `kept` (a Linux
    /// call has no reply to keep) and `acc` shows it instead of `inline`.
    pub(crate) relayed: AtomicBool,
    /// What changes while the call travels, under one lock: every step
    /// (accept, pass on, complete, collect) takes it once.
    pub(crate) progress: IrqMutex<Progress>,
    /// Where the result goes when it is done.
    pub(crate) completion: Completion,
    /// The request's flags (`abi::CONTROL_DIRECT_RETURN`) and the
    /// requester's label (ring requests).
    pub(crate) flags: u64,
    pub(crate) tag: u64,
    /// Member of an `ncallsync` batch: the batch counts it when done.
    pub(crate) batch: Option<Arc<batch::Batch>>,
    /// A request's (nobody waits for it): its requester's charge, which
    /// it keeps alive for as long as it lives, its requester's end and
    /// exit included (a blocking call is paid for by its caller's
    /// reserve, `PROCESS_RESERVE`).
    pub(crate) paid_by: Option<Arc<RequestCharge>>,
    /// A pager's call for a page (`pager.rs`): the frame its reply fills
    /// (instead of a reply buffer), where in the page and how many bytes
    /// at most. The caller takes it back once the call is done (or it was
    /// killed meanwhile): a reply after that finds no frame.
    pub(crate) page: IrqMutex<Option<PageSlot>>,
    /// Whether `page` may hold a slot: replies look here first, so that
    /// every other call's reply takes no lock for it.
    pub(crate) to_page: AtomicBool,
    /// The computation that made it, for a Linux process's call to its
    /// supervisor (set there alone: no other path pays for it), so that
    /// the supervisor reaches that computation's registers.
    pub(crate) thread: Option<alloc::sync::Weak<Computation>>,
}

/// The frame of a pager's call, and the part of it the pager fills.
pub(crate) struct PageSlot {
    pub(crate) frame: kcore::vm::region::PageFrame,
    pub(crate) at: u32,
    pub(crate) len: u32,
    /// How far from `at` replies have written.
    pub(crate) written: u32,
}

/// What one call object costs in kernel memory: the object with its
/// reference counts, a few stacked servers, and its place in a queue.
pub const CALL_COST: u64 = (core::mem::size_of::<Call>() + 16 + 4 * 8 + 16) as u64;

/// What the call objects of a process's blocking calls cost, charged to
/// it once when it is made: its first computation has at most one
/// blocking call, or one batch of `MAX_BATCH` members, in flight or kept
/// as its spares at a time; each further computation (a Linux thread)
/// pays for its own call with its cost (`resource::computation::
/// THREAD_COST`). The one-call path charges nothing.
pub const PROCESS_RESERVE: u64 = (1 + abi::MAX_BATCH) * CALL_COST + core::mem::size_of::<batch::Batch>() as u64 + 16;

/// Requests paid for at a time: their charge grows by this many calls
/// when the calls in flight outnumber those paid for, and shrinks by as
/// many when two chunks more than are in flight are paid for.
pub const REQUEST_CHUNK: u64 = 16;

/// The call objects of a process's requests (results fetched or put into
/// its ring; not waited for), charged to it: as many as are in flight,
/// rounded up to a chunk, with a chunk to spare before it shrinks (so
/// that a steady stream charges and releases nothing). A request's call
/// object holds a reference, so the reference count is how many are in
/// flight; one whose result is delivered lets go (`recycle`).
pub struct RequestCharge {
    charge: IrqMutex<Charge>,
    /// Calls the charge pays for.
    paid: AtomicU64,
}

impl RequestCharge {
    /// Nothing paid yet, on `account`.
    pub fn on(account: &Arc<Account>) -> RequestCharge {
        RequestCharge {
            charge: IrqMutex::new(Charge::on(Some(account))),
            paid: AtomicU64::new(0),
        }
    }

    /// Bytes charged so far.
    pub fn bytes(&self) -> u64 {
        self.charge.lock().bytes()
    }
}

/// `r`, a reference to a request charge for one more request, paid for
/// (in chunks: a request usually finds it paid); Limit if the requester's
/// account cannot take another chunk.
pub(crate) fn pay_request(r: Arc<RequestCharge>) -> Result<Arc<RequestCharge>, Error> {
    // The port's reference, this one, and one per call in flight.
    let in_flight = Arc::strong_count(&r) as u64 - 1;
    if in_flight > r.paid.load(Ordering::Relaxed) {
        let mut c = r.charge.lock();
        let paid = r.paid.load(Ordering::Relaxed);
        if in_flight > paid {
            let more = REQUEST_CHUNK.max(in_flight - paid);
            c.grow(more * CALL_COST).map_err(|_| Error::Limit)?;
            r.paid.store(paid + more, Ordering::Relaxed);
        }
    }
    Ok(r)
}

/// A request's call object lets go of its requester's charge `r` (its
/// result delivered): a chunk goes back if two more than the calls still
/// in flight are paid for. Cheap: a reference count read, and the lock
/// only for a chunk.
fn release_request(r: Arc<RequestCharge>) {
    // The port's reference (while its process lives), this one, one per
    // call still in flight.
    let in_flight = (Arc::strong_count(&r) as u64).saturating_sub(2);
    if r.paid.load(Ordering::Relaxed) >= in_flight + 2 * REQUEST_CHUNK {
        let mut c = r.charge.lock();
        let paid = r.paid.load(Ordering::Relaxed);
        if paid >= in_flight + 2 * REQUEST_CHUNK {
            c.shrink(REQUEST_CHUNK * CALL_COST);
            r.paid.store(paid - REQUEST_CHUNK, Ordering::Relaxed);
        }
    }
}

/// `c`, a call object just made for a request, now paid for by `by`.
pub(crate) fn paid_by(mut c: Arc<Call>, by: Arc<RequestCharge>) -> Arc<Call> {
    if let Some(m) = Arc::get_mut(&mut c) {
        m.paid_by = Some(by);
    }
    c
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
/// result goes back. A call object is made from it.
pub(crate) struct Request {
    pub(crate) entry: u64,
    /// Whose memory holds the message (the caller's own, or that of the
    /// caller of a call it passes on by reference).
    pub(crate) msg_owner: u64,
    pub(crate) msg: UserRange,
    pub(crate) reply: UserRange,
    pub(crate) completion: Completion,
    pub(crate) flags: u64,
    pub(crate) tag: u64,
}

impl Request {
    pub(crate) fn new(entry: u64, owner: u64, msg: UserRange, reply: UserRange, completion: Completion) -> Request {
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
    pub(crate) fn of(caller: u64, c: &abi::Control, completion: Completion) -> Result<Request, Error> {
        let msg = UserRange::new(c.msg, c.msg_len as usize)?;
        let reply = UserRange::new(c.reply, c.reply_cap as usize)?;
        Ok(Request {
            flags: c.flags & !abi::ACC_KERNEL_FLAGS,
            tag: c.tag,
            ..Request::new(c.entry, caller, msg, reply, completion)
        })
    }
}

pub(crate) struct Progress {
    pub(crate) state: State,
    /// Servers the request passed through (AnT's stacked request information).
    pub(crate) hops: Vec<u64>,
    /// How many bytes of the call's kept reply the caller has not taken.
    pub(crate) kept: usize,
    /// The caller blocked until the call is done (set and taken under this
    /// lock, with `state`: no wake-up can fall between check and block).
    pub(crate) waiter: Option<Arc<Computation>>,
}

impl Progress {
    /// The first servers the call passed through (AnT's stacked request
    /// information, as a control block carries it) and how many it passed.
    pub(crate) fn path(&self) -> ([u64; 4], u64) {
        let mut path = [0; 4];
        for (to, h) in path.iter_mut().zip(self.hops.iter()) {
            *to = *h;
        }
        (path, self.hops.len() as u64)
    }

    /// The status of a finished call and how many bytes of its kept reply
    /// are now the collector's to copy to the caller (once the lock is
    /// dropped: the kept reply is not written again).
    #[inline(always)]
    pub(crate) fn collect(&mut self) -> Option<(u64, usize)> {
        let State::Done(status) = self.state else { return None };
        Some((status, core::mem::take(&mut self.kept)))
    }
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// A new call's identifier (the `rid` servers name it by).
#[inline(always)]
pub(crate) fn next_id() -> u64 {
    NEXT_CALL.fetch_add(1, Ordering::Relaxed)
}

/// Makes a call object for `caller` to `server`. `message` is (pid, addr,
/// len) of where the message lies: the caller's own memory, or the
/// message of a call the caller holds (a reference passed on). A blocking
/// call object is `spare`, or comes from the free list when there is one.
pub(crate) fn make_call(caller: u64, server: u64, r: Request, spare: Option<Arc<Call>>) -> Result<Arc<Call>, Error> {
    let mut c = match spare.or_else(|| FREE_CALLS.lock().pop()) {
        Some(c) => c,
        None => fresh()?.into_arc(),
    };
    let m = Arc::get_mut(&mut c).expect("a call object nobody else holds");
    m.fill(caller, server, &r);
    m.batch = None;
    let n = r.msg.len().min(INLINE);
    if n > 0 {
        proc::read_user_of(r.msg_owner, r.msg, &mut m.inline[..n])?;
    }
    Ok(c)
}

/// A call the kernel makes on behalf of process `caller` (a Linux
/// process's to its supervisor, a fault's to a pager) with `message`
/// inline, no buffers in any process's memory, and request `flags`;
/// from the caller's spare call object when it has one.
pub(crate) fn on_behalf_of(
    caller: &Process,
    server: u64,
    entry: u64,
    flags: u64,
    message: &[u8],
) -> Result<Arc<Call>, Error> {
    let r = Request {
        flags,
        ..Request::new(
            entry,
            caller.pid(),
            UserRange::EMPTY,
            UserRange::EMPTY,
            Completion::Wait,
        )
    };
    let mut c = make_call(
        caller.pid(),
        server,
        r,
        caller.port.spare.take().map(UniqueArc::into_arc),
    )?;
    let n = message.len().min(INLINE);
    let m = Arc::get_mut(&mut c).expect("a call object nobody else holds");
    m.inline[..n].copy_from_slice(&message[..n]);
    *m.shown.get_mut() = n as u64;
    Ok(c)
}

/// A call object nobody has used (what `Call::fill` does not set), or
/// NoMemory when the heap has no room for one (`heap::room_for`).
#[cold]
fn fresh() -> Result<UniqueArc<Call>, Error> {
    // An Arc's block: two counters, then the value.
    if !kcore::mm::heap::room_for(core::alloc::Layout::new::<(usize, usize, Call)>()) {
        return Err(Error::NoMemory);
    }
    Ok(UniqueArc::new(Call {
        id: 0,
        caller: 0,
        server: 0,
        entry: AtomicU64::new(0),
        msg_owner: 0,
        msg: UserRange::EMPTY,
        shown: AtomicU64::new(0),
        reply_owner: 0,
        reply: UserRange::EMPTY,
        inline: [0; INLINE],
        kept: OnceBuf::new(),
        relayed: AtomicBool::new(false),
        progress: IrqMutex::new(Progress {
            state: State::Open,
            hops: Vec::new(),
            kept: 0,
            waiter: None,
        }),
        completion: Completion::Wait,
        flags: 0,
        tag: 0,
        batch: None,
        paid_by: None,
        page: IrqMutex::new(None),
        to_page: AtomicBool::new(false),
        thread: None,
    }))
}

/// A call object for a batch's member (which has no spare of its own
/// left): one from the free list, or a new one.
pub(crate) fn free_call() -> Result<UniqueArc<Call>, Error> {
    // The free list keeps only objects nobody else holds.
    FREE_CALLS
        .lock()
        .pop()
        .and_then(|c| UniqueArc::try_from_arc(c).ok())
        .map_or_else(fresh, Ok)
}

impl Call {
    /// Readies a call object nobody else holds for a new call of `caller`
    /// to `server`, as request `r` describes it: open, on no path yet,
    /// nothing kept. Its batch stays as it was (a batch's pool fills its
    /// members in place; any other call object is in no batch). Its
    /// message is read in by whoever fills it (from where it lies).
    #[inline(always)]
    pub(crate) fn fill(&mut self, caller: u64, server: u64, r: &Request) {
        self.refill(server, r.entry, r.msg, r.reply, r.flags, r.tag);
        self.caller = caller;
        self.msg_owner = r.msg_owner;
        self.reply_owner = caller;
        self.progress.get_mut().waiter = None;
        *self.relayed.get_mut() = false;
        self.completion = r.completion;
    }

    /// What `fill` sets but the caller's own: the call to `server`, its
    /// buffers and a new identifier; open, on no path, nothing kept, no
    /// page to fill.
    #[inline(always)]
    pub(crate) fn refill(&mut self, server: u64, entry: u64, msg: UserRange, reply: UserRange, flags: u64, tag: u64) {
        self.progress.get_mut().kept = 0;
        *self.page.get_mut() = None;
        *self.to_page.get_mut() = false;
        self.refill_member(server, entry, msg, reply, flags, tag);
    }

    /// `refill` for a member of a batch pool (`batch::Pool`), filled in
    /// place for each batch: the caller's own fields were set when it
    /// joined the pool (the pool's process is its caller, whose memory
    /// holds message and reply, and who waits for it), and nobody else
    /// changes them; what this does not reset stays as `refill` left it
    /// then (no pager gives a member a page, and collecting a member takes
    /// all of its kept reply).
    #[inline(always)]
    pub(crate) fn refill_member(
        &mut self,
        server: u64,
        entry: u64,
        msg: UserRange,
        reply: UserRange,
        flags: u64,
        tag: u64,
    ) {
        self.id = next_id();
        self.server = server;
        *self.entry.get_mut() = entry;
        self.msg = msg;
        *self.shown.get_mut() = msg.len() as u64;
        self.reply = reply;
        let p = self.progress.get_mut();
        p.state = State::Open;
        p.hops.clear();
        self.kept.empty();
        self.flags = flags;
        self.tag = tag;
    }

    /// Server `pid`, which accepted the call, joins its path. Interrupts
    /// are off.
    #[inline(always)]
    pub(crate) fn accepted_by(&self, pid: u64) {
        self.progress.lock_irqs_off().hops.push(pid);
    }

    /// Readies the call to be queued again, for `entry` of the next server
    /// (a forward). It stays open: nothing of its progress changes.
    pub(crate) fn pass_to(&self, entry: u64) {
        self.entry.store(entry, Ordering::Relaxed);
    }

    /// Completes the call: the one way a call ends, whoever ends it (its
    /// server's reply or error, a pass-on or delivery that failed, a port
    /// that closed, a batch member that could not be sent). Under the
    /// call's lock it becomes done with `status` (a length, or a negated
    /// error) and `kept`, a short reply its caller copies into its own
    /// memory when it collects the result; the caller waiting in the call
    /// is taken out of its slot. Then the result goes where `completion`
    /// says: for a waiting caller, a batch counts its member and releases
    /// its own caller once the last is back; a request's result goes to
    /// its requester's result queue or ring. The completer's reference
    /// goes here, before anybody runs: a caller finds its call object free
    /// for its next call. Returns the computation released, not yet woken:
    /// the completer wakes it, or hands it the CPU when it blocks itself
    /// (a server's `endr_acc`). Inlined: a server's loop completes a call
    /// on every step, and the usual call (a caller waiting, alone) needs
    /// only the first lines.
    #[must_use]
    #[inline(always)]
    pub(crate) fn complete(self: Arc<Self>, status: u64, kept: usize) -> Option<Arc<Computation>> {
        self.complete_with(status, kept, false)
    }

    /// `complete` with interrupts off (a server's loop step): its locks
    /// are taken without saving and restoring the flags.
    #[must_use]
    #[inline(always)]
    pub(crate) fn complete_irqs_off(self: Arc<Self>, status: u64, kept: usize) -> Option<Arc<Computation>> {
        self.complete_with(status, kept, true)
    }

    #[must_use]
    #[inline(always)]
    fn complete_with(self: Arc<Self>, status: u64, kept: usize, irqs_off: bool) -> Option<Arc<Computation>> {
        let caller = {
            let mut p = if irqs_off {
                self.progress.lock_irqs_off()
            } else {
                self.progress.lock()
            };
            p.state = State::Done(status);
            p.kept = kept;
            p.waiter.take()
        };
        CALLS.fetch_add(1, Ordering::Relaxed);
        crate::procnet::communicated();
        if self.completion != Completion::Wait {
            // Requests nobody waits for (never members of a batch:
            // `ncallsync` waits for its members).
            request::deliver_result(self);
            return caller;
        }
        match &self.batch {
            Some(b) => b.member_back(caller, irqs_off),
            None => caller,
        }
    }

    /// The first `n` bytes of the kept reply (a collector's, once it has
    /// seen the call done).
    #[inline(always)]
    pub(crate) fn kept_reply(&self, n: usize) -> &[u8] {
        // No reply kept (an empty one, the commonest): nothing to look up.
        if n == 0 {
            return &[];
        }
        self.kept.get().map_or(&[], |b| &b[..n.min(b.len())])
    }

    /// `wait_done` for a call whose status is a value of its own (a Linux
    /// system call's return value, which may be a negated errno): the
    /// status as it is, None if the caller was killed meanwhile. Nothing is
    /// kept to copy: such calls have no reply buffer.
    pub(crate) fn wait_raw(&self, partner: Option<Arc<Computation>>) -> Option<u64> {
        self.wait_collect(partner).map(|(status, _)| status)
    }

    /// Waits until the call is done (handing the CPU to `partner` if it can
    /// run here): its status and how many bytes of its kept reply are the
    /// caller's to copy; None if the caller was killed meanwhile.
    #[inline(always)]
    fn wait_collect(&self, partner: Option<Arc<Computation>>) -> Option<(u64, usize)> {
        let mut got = (0, 0);
        let ok = sched::wait_in_slot(
            &self.progress,
            partner,
            |p| match p.collect() {
                Some(g) => {
                    got = g;
                    true
                }
                None => false,
            },
            |p| &mut p.waiter,
        );
        ok.then_some(got)
    }

    /// Waits until the call is done, handing the CPU to `partner` (the
    /// server just given the call) if it can run here; copies a kept reply
    /// into the caller's memory and returns the call's status.
    pub(crate) fn wait_done(&self, partner: Option<Arc<Computation>>) -> Result<u64, Error> {
        let (status, n) = self.wait_collect(partner).ok_or(Error::Denied)?;
        Error::decode(deliver_reply(self, status, self.kept_reply(n)))
    }
}

/// `deliver_reply` for a caller that runs this itself: a copy within the
/// current space, into the reply buffer checked when the call was made.
#[inline(always)]
pub(crate) fn reply_here(to: UserRange, status: u64, buf: &[u8]) -> u64 {
    if buf.is_empty() {
        return status;
    }
    copied(to.write(buf), status, buf.len())
}

/// Copies a reply collected from a finished call into its caller's reply
/// buffer (from the caller itself: its own memory); a buffer the caller
/// cannot write turns the status into that error.
pub(crate) fn deliver_reply(c: &Call, status: u64, buf: &[u8]) -> u64 {
    if buf.is_empty() {
        return status;
    }
    copied(proc::write_user_of(c.reply_owner, c.reply, buf), status, buf.len())
}

/// A call's status once `n` bytes of its reply were copied with result
/// `r`: a buffer the caller cannot write turns it into that error.
#[inline(always)]
fn copied(r: Result<(), Error>, status: u64, n: usize) -> u64 {
    match r {
        Ok(()) => {
            BYTES_COPIED.fetch_add(n as u64, Ordering::Relaxed);
            status
        }
        Err(e) => e.as_ret(),
    }
}

/// Call objects nobody holds any more, kept for the next calls: in the
/// steady state a call allocates nothing (an allocation and a free cost
/// more than the rest of a call's bookkeeping).
pub(crate) static FREE_CALLS: IrqMutex<Vec<Arc<Call>>> = IrqMutex::new(Vec::new());
const FREE_CALLS_MAX: usize = 128;

/// Gives a finished call back to the free list, if nobody else holds it;
/// a request's lets go of its requester's charge.
pub(crate) fn recycle(mut c: Arc<Call>) {
    if let Some(m) = Arc::get_mut(&mut c)
        && let Some(by) = m.paid_by.take()
    {
        release_request(by);
    }
    recycle_into(&mut FREE_CALLS.lock(), c);
}

/// `recycle`, with the free list already locked (a batch's members go back
/// under one lock).
pub(crate) fn recycle_into(free: &mut Vec<Arc<Call>>, mut c: Arc<Call>) {
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
pub(crate) fn has_room<T>(v: &mut Vec<T>) -> bool {
    v.len() < v.capacity() || v.try_reserve(1).is_ok()
}

/// Frees the kept call objects (leak checks measure the heap without them).
pub fn flush_free_calls() {
    let free = core::mem::take(&mut *FREE_CALLS.lock());
    drop(free);
}

/// The call object of a process's last finished call, for its next call:
/// taken and given back with one atomic exchange each, where the shared
/// free list costs a lock each way.
pub(crate) struct Spare(UniqueSlot<Call>);

impl Spare {
    pub(crate) const fn new() -> Spare {
        Spare(UniqueSlot::new())
    }

    /// The spare call object, if there is one.
    #[inline(always)]
    pub(crate) fn take(&self) -> Option<UniqueArc<Call>> {
        self.0.take()
    }

    /// Keeps finished call `c` as the spare (if nobody else holds it); one
    /// that was there already goes to the shared free list.
    #[inline(always)]
    pub(crate) fn keep(&self, c: Arc<Call>) {
        let Ok(mut m) = UniqueArc::try_from_arc(c) else { return };
        m.batch = None;
        self.park(m);
    }

    /// `keep` for a call object known to belong to no batch (the fast
    /// path's own, once it is done).
    #[inline(always)]
    pub(crate) fn park(&self, c: UniqueArc<Call>) {
        if let Some(old) = self.0.put(c) {
            recycle(old.into_arc());
        }
    }
}
