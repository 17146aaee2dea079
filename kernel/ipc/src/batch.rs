//! AnT's batch requests (一括依頼, seed 002 §3.3-3.4) and the distribution
//! server's primitives. `ncallsync` sends n requests at once, each an
//! ordinary call to its server, and waits once, until all are back: the
//! batch identifier each member carries is the batch's size, and the
//! kernel counts the members as they complete. A distribution server
//! (分散化サーバ) takes a batch's calls with `acc_many` and passes each on
//! to its target with `forward_many` (multi-stage requests with direct
//! return: the targets reply to the original callers). What a batch costs
//! beyond its members' calls is paid once per batch or per run of members
//! for one server, and a batch allocates nothing: what it keeps while it
//! travels lives on the stack.

use crate::call::{self, Call, Completion, INLINE, Request};
use crate::port::{self, wake};
use crate::process::Process;
use crate::rendezvous::{self, answer};
use abi::Error;
use alloc::sync::Arc;
use arrayvec::ArrayVec;
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::computation::Computation;
use kcore::sync::IrqMutex;
use kcore::uaccess::UserRange;
use kcore::unique::{CheckedArc, UniqueArc};

/// An `ncallsync` batch: the batch identifier each member carries is the
/// batch's size; the kernel counts the members that are back and wakes the
/// caller once, when all are.
pub struct Batch {
    /// Members not back yet.
    remaining: AtomicU64,
    /// The batch's caller while it waits (one computation: a slot, not a
    /// queue). Whoever brings the count to 0 takes it out under this lock,
    /// and the caller checks the count and blocks under it: no wake-up is
    /// lost between the two.
    caller: IrqMutex<Option<Arc<Computation>>>,
}

const MAX: usize = abi::MAX_BATCH as usize;

impl Batch {
    fn new(n: usize) -> UniqueArc<Batch> {
        UniqueArc::new(Batch {
            remaining: AtomicU64::new(n as u64),
            caller: IrqMutex::new(None),
        })
    }

    /// Counts a member that completed (`Call::complete`); `caller` is the
    /// computation its call released (nobody, for a batch's members).
    /// Returns who is to run: the batch's caller once the last is back.
    /// `irqs_off`: interrupts are off (the locks need not save the flags).
    #[must_use]
    #[inline(always)]
    pub(crate) fn member_back(&self, caller: Option<Arc<Computation>>, irqs_off: bool) -> Option<Arc<Computation>> {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            return self.all_back(caller, irqs_off);
        }
        caller
    }

    /// The caller of a batch whose last member is back (and `caller`, whom
    /// the member's call had blocked: nobody, for a member). Inlined: every
    /// batch ends here once, on its server's path back to waiting.
    #[must_use]
    #[inline(always)]
    fn all_back(&self, caller: Option<Arc<Computation>>, irqs_off: bool) -> Option<Arc<Computation>> {
        let batch_caller = if irqs_off {
            self.caller.lock_irqs_off().take()
        } else {
            self.caller.lock().take()
        };
        match caller {
            None => batch_caller,
            Some(c) => both_back(batch_caller, c),
        }
    }
}

/// Who runs when a call that released `caller` also ended its batch: the
/// batch's caller, if it waits, and `caller` is woken.
#[cold]
#[inline(never)]
fn both_back(batch_caller: Option<Arc<Computation>>, caller: Arc<Computation>) -> Option<Arc<Computation>> {
    match batch_caller {
        Some(b) => {
            sched::wake(&caller);
            Some(b)
        }
        None => Some(caller),
    }
}

/// A process's batch and the call objects of its members, kept from one
/// `ncallsync` to the next: member i is filled in place in call object i,
/// which already counts in the batch (its `batch` is this one), so that
/// sending a batch takes nothing from the shared free list and counts no
/// reference up and down per member. A call object found to be the pool's
/// alone when its member's result was read is filled for the next batch
/// without looking again. Taken and given back with one atomic
/// exchange (`Port::spare_calls`); only its process takes it. It is kept
/// only after a batch whose members were all back: no call object of it
/// can then count in the batch again (a call completes once).
pub struct Pool {
    batch: Arc<Batch>,
    calls: ArrayVec<CheckedArc<Call>, MAX>,
}

impl Pool {
    fn new() -> UniqueArc<Pool> {
        UniqueArc::new(Pool {
            batch: Batch::new(0).into_arc(),
            calls: ArrayVec::new(),
        })
    }

    /// Call object `i`, its process's alone, for a new member: the one kept
    /// there, or (when there is none yet, or someone still holds the one
    /// kept) one from the free list, which joins the batch. None if no
    /// object can be had (NoMemory) or `i` would leave a gap.
    #[inline(always)]
    fn member(&mut self, i: usize, caller: u64) -> Option<&mut Call> {
        if i == self.calls.len() {
            self.calls.try_push(joined(&self.batch, caller)?.into()).ok()?;
        }
        let c = self.calls.get_mut(i)?;
        if !c.check() {
            *c = joined(&self.batch, caller)?.into();
        }
        c.get_mut()
    }
}

/// A call object from the free list, in `batch`, of `caller`, who waits
/// for it (`Call::refill_member` readies it for each member).
#[cold]
fn joined(batch: &Arc<Batch>, caller: u64) -> Option<UniqueArc<Call>> {
    let mut c = call::free_call().ok()?;
    let mine = Request::new(0, caller, UserRange::EMPTY, UserRange::EMPTY, Completion::Wait);
    c.fill(caller, 0, &mine);
    c.batch = Some(batch.clone());
    Some(c)
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
            flags: c.flags & !abi::ACC_KERNEL_FLAGS,
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

    /// The member's message and reply buffer, checked like system-call
    /// arguments.
    #[inline(always)]
    fn ranges(&self) -> Result<(UserRange, UserRange), Error> {
        let msg = UserRange::new(self.msg.0, self.msg.1 as usize)?;
        Ok((msg, UserRange::new(self.reply.0, self.reply.1 as usize)?))
    }
}

/// `ncallsync`: sends every member of the batch at once and waits, once,
/// until all are back. Member `i` is `member(i)`; its outcome goes to
/// `result(i, status, call)`, in order (`call` is None for a member that
/// could not be made). A member that cannot be sent (bad buffer, unknown
/// server or entry, no call object to be had) fails alone, with its error
/// as status. Returns the first failed member's error, if any. Servers
/// need no change: each member is an ordinary call to them. Inlined into
/// its callers: one frame for the system call and the batch.
#[inline(always)]
pub fn ncallsync_with(
    caller: &Process,
    n: usize,
    mut member: impl FnMut(usize) -> Result<Member, Error>,
    mut result: impl FnMut(usize, u64, Option<&Call>) -> Result<(), Error>,
) -> Result<(), Error> {
    if n == 0 || n > MAX {
        return Err(Error::Invalid);
    }
    // A batch allocates nothing: its Batch and its members' call objects
    // are the process's pool, filled in place; what it keeps while it
    // travels is on the stack.
    let pid = caller.pid();
    let mut pool = caller.port.spare_calls.take().unwrap_or_else(Pool::new);
    // Nothing of the batch is sent yet: nobody else counts it now.
    pool.batch.remaining.store(n as u64, Ordering::Relaxed);
    // The members made (bit i: member i), and the statuses of the others
    // in order.
    let mut made = 0u64;
    let mut early = ArrayVec::<u64, MAX>::new();
    let mut first = (u64::MAX, u64::MAX);
    // The bits in which some member's server, and entry, differ from the
    // first one's: none when every member is for one server (and one
    // entry: the hand-over then looks at one entry).
    let (mut other_server, mut other_entry) = (0u64, 0u64);
    for i in 0..n {
        let m = member(i)?;
        let filled = match pool.member(i, pid) {
            None => Err(Error::NoMemory),
            Some(c) => m.ranges().and_then(|(msg, reply)| {
                c.refill_member(m.server, m.entry, msg, reply, m.flags, m.tag);
                let len = msg.len().min(INLINE);
                // The caller's own memory: this is its system call.
                msg.read(&mut c.inline[..len])
            }),
        };
        match filled {
            Ok(()) => {
                made |= 1 << i;
                if i == 0 {
                    first = (m.server, m.entry);
                }
                other_server |= m.server ^ first.0;
                other_entry |= m.entry ^ first.1;
            }
            Err(err) => {
                pool.batch.remaining.fetch_sub(1, Ordering::AcqRel);
                early.push(err.as_ret());
            }
        }
    }
    let all = u64::MAX >> (64 - n);
    // The common case goes as a call's fast path does: every member for
    // the server this process called last, waiting on this CPU.
    let Pool { batch, calls, .. } = &mut *pool;
    let handed = other_server == 0 && made == all && hand_run(caller, batch, &mut calls[..n], other_entry == 0);
    let partner = if handed {
        None
    } else {
        let made_calls = n.min(calls.len());
        deliver(caller, &mut calls[..made_calls], made)
    };
    let batch = &pool.batch;
    // Back from a hand-over with every member done, the last one's server
    // took the caller out of the slot: nothing to wait for.
    let ok = (handed && batch.remaining.load(Ordering::Acquire) == 0)
        || sched::wait_in_slot(
            &batch.caller,
            partner,
            |_| batch.remaining.load(Ordering::Acquire) == 0,
            |w| w,
        );
    if !ok {
        // Members still out count in this batch: it is not kept.
        return Err(Error::Denied);
    }
    let mut failed = None;
    if made == all {
        // Every member was sent (the usual batch): no early status to
        // interleave.
        for i in 0..n {
            let c = &mut pool.calls[i];
            let status = member_status(c);
            result(i, status, Some(&**c))?;
            if let Err(e) = Error::decode(status) {
                failed.get_or_insert(e);
            }
        }
        drop(caller.port.spare_calls.put(pool));
        return failed.map_or(Ok(()), Err);
    }
    // (Indexed, not iterated: an iterator would move the whole array.)
    let mut next_early = 0;
    for i in 0..n {
        let (status, call) = if made & (1 << i) != 0 {
            let c = &mut pool.calls[i];
            (member_status(c), Some(&**c))
        } else {
            next_early += 1;
            let status = early.get(next_early - 1).copied();
            (status.unwrap_or(Error::Invalid.as_ret()), None)
        };
        result(i, status, call)?;
        if let Err(e) = Error::decode(status) {
            failed.get_or_insert(e);
        }
    }
    drop(caller.port.spare_calls.put(pool));
    failed.map_or(Ok(()), Err)
}

/// Delivers the members of a batch (`members`, those made marked in `made`)
/// to their servers, each run of members for one server with one
/// look-up of it and one hold of its queue's lock. Members that cannot be
/// delivered are back at once with the error. Returns the first server
/// that may run on this CPU, to be given it directly when the caller
/// blocks; the others are woken.
fn deliver(caller: &Process, members: &mut [CheckedArc<Call>], made: u64) -> Option<Arc<Computation>> {
    let mut calls = ArrayVec::<Option<Arc<Call>>, MAX>::new();
    calls.extend(
        members
            .iter_mut()
            .enumerate()
            .map(|(i, c)| (made & (1 << i) != 0).then(|| c.share().clone())),
    );
    let mut servers = ArrayVec::<u64, MAX>::new();
    servers.extend(calls.iter().map(|c| c.as_ref().map_or(0, |c| c.server)));
    let mut partner = None;
    for r in runs(calls.len(), |i| servers[i]) {
        let server = servers[r.start];
        let run = &mut calls[r];
        let (sent, _, refused) = match port::cached_target(caller, server) {
            Ok(s) => port::deliver_run(&s, run, true),
            Err(e) => (Err(e), 0, 0),
        };
        // The batch keeps its own reference to each member.
        let fail = |c: &Arc<Call>, err: Error| wake(c.clone().complete(err.as_ret(), 0));
        match sent {
            Ok(Some(s)) if partner.is_none() && sched::may_run_here(&s) => partner = Some(s),
            Ok(server) => wake(server),
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
    partner
}

/// Hands a batch whose members (`run`, all made) are for one server to it
/// as `call_fast` hands a call: when the server is the one this process
/// called last, takes every member's entry, waits for calls on this CPU
/// with none queued, and has room to hold one more, the first member is
/// accepted on its behalf and the others queued, all under one hold of its
/// locks; the caller blocks in the batch's slot and gives the server its
/// CPU at once, without a pass through the scheduler. Returns whether it
/// did (the caller has run again since); if not, nothing changed and the
/// general path delivers the batch.
#[inline(always)]
fn hand_run(caller: &Process, batch: &Batch, run: &mut [CheckedArc<Call>], one_entry: bool) -> bool {
    use x86_64::instructions::interrupts;
    if run.is_empty() {
        return false;
    }
    let were_enabled = interrupts::are_enabled();
    interrupts::disable();
    let handed = hand_locked(caller, batch, run, one_entry);
    if were_enabled {
        interrupts::enable();
    }
    handed
}

/// `hand_run` with interrupts off.
#[inline(always)]
fn hand_locked(caller: &Process, batch: &Batch, run: &mut [CheckedArc<Call>], one_entry: bool) -> bool {
    use kcore::computation::State as Run;
    let first = &*run[0];
    // Held to the end of the hand-over: it keeps the server alive.
    let last = caller.port.last_server.lock_irqs_off();
    let Some(server) = last.as_deref().filter(|s| s.pid() == first.server) else {
        return false;
    };
    let sp = &server.port;
    // Members for the first one's entry need no second look.
    let entry = first.entry.load(Ordering::Relaxed);
    let taken = |c: &CheckedArc<Call>| {
        let e = c.entry.load(Ordering::Relaxed);
        e == entry || port::check_declared(sp, e).is_ok()
    };
    if port::check_declared(sp, entry).is_err() || !(one_entry || run[1..].iter().all(taken)) {
        return false;
    }
    // (A system call's: this CPU is set up.)
    let Some(me) = sched::current_here() else {
        return false;
    };
    let mut held = sp.held.lock_irqs_off();
    let mut q = sp.queued.lock_irqs_off();
    // Claimed last: once claimed, the server must get the CPU.
    let common = !sp.closed.load(Ordering::Relaxed)
        && q.calls.is_empty()
        && q.handed.is_none()
        && port::in_mask(q.mask, first.entry.load(Ordering::Relaxed))
        && held.len() < held.capacity()
        && (q.calls.capacity() >= run.len() - 1 || q.calls.try_reserve(run.len() - 1).is_ok())
        && q.waiter.as_ref().is_some_and(|w| sched::claim_here(w));
    let Some(partner) = q.waiter.take_if(|_| common) else {
        return false;
    };
    first.accepted_by(server.pid());
    let (first, rest) = run.split_at_mut(1);
    let first = first[0].share();
    q.handed = Some(first.clone());
    // One by one, a push each costs more than one extend of all; for one
    // call, less.
    match rest {
        [one] => q.calls.push_back(one.share().clone()),
        rest => q.calls.extend(rest.iter_mut().map(|c| c.share().clone())),
    }
    drop(q);
    held.push(first.clone());
    drop(held);
    sp.accepted.fetch_add(1, Ordering::Relaxed);
    drop(last);
    {
        // The caller waits in the batch's slot; whoever brings its last
        // member back takes it out and lets it run.
        let mut slot = batch.caller.lock_irqs_off();
        let mut state = me.state.lock_irqs_off();
        *state = Run::Blocked;
        // A kill that came before the line above found nothing to wake:
        // it is seen here, and the caller stays runnable (it finds its
        // batch not done, and leaves through the general wait).
        if caller.is_killed() {
            *state = Run::Running;
        }
        drop(state);
        *slot = Some(me);
    }
    sched::switch_to_claimed(partner);
    true
}

/// The status of a finished member (the reply length, or its error), its
/// kept reply copied into the memory of the caller, who runs this. With
/// the whole batch back, a member's call object is usually the caller's
/// alone (its server let go of it): then its result is read without the
/// lock, and the kept reply goes straight from it into the caller's
/// memory.
#[inline(always)]
fn member_status(c: &mut CheckedArc<Call>) -> u64 {
    let (reply, collected) = match c.get_mut() {
        Some(m) => (m.reply, m.progress.get_mut().collect()),
        None => (c.reply, c.progress.lock().collect()),
    };
    match collected {
        Some((status, n)) => call::reply_here(reply, status, c.kept_reply(n)),
        None => Error::Invalid.as_ret(),
    }
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
    describe: impl FnMut(usize, &port::Accepted) -> Result<(), Error>,
) -> Result<usize, Error> {
    acc_many_handing_to(server, mask, k, None, describe)
}

/// `endr` for every call of `replies`, then `acc_many` (a server's loop
/// for a whole batch in one step): a batch's replies end its members
/// together, and the server takes the next batch whole when it wakes, so
/// a batch costs it one system call, not one per member. The caller the
/// last reply released gets the CPU while the server waits; the others
/// are woken (a batch's members release nobody but the last). A reply
/// that is not in memory, or a call the server does not hold (another's,
/// one ended already, one listed twice), changes nothing and `failed(i,
/// error)` is told.
#[inline(always)]
pub fn endr_many_acc(
    server: &Process,
    replies: &[abi::ReplyEntry],
    mask: u64,
    k: usize,
    mut failed: impl FnMut(usize, Error),
    describe: impl FnMut(usize, &port::Accepted) -> Result<(), Error>,
) -> Result<usize, Error> {
    if k == 0 || k > MAX || replies.len() > MAX {
        return Err(Error::Invalid);
    }
    // One short reply, a server's loop between single calls: it goes as
    // `endr_acc` does (`fastpath::endr_acc_short`), only then taking the
    // calls that are waiting besides.
    if let [r] = replies
        && r.rid != 0
        && crate::fastpath::is_short_endr_acc(r.reply_len, mask)
        && let Ok(from) = UserRange::new(r.reply, r.reply_len as usize)
    {
        return match crate::fastpath::endr_acc_short(server, r.rid, from, mask) {
            Ok(first) => accept_more(server, mask, k, first, describe),
            // Not held: nothing was done; accept as if it was not listed.
            Err(Error::NotFound) => {
                failed(0, Error::NotFound);
                acc_many_handing_to(server, mask, k, None, describe)
            }
            Err(e) => Err(e),
        };
    }
    let mut partner = None;
    for (i, r) in replies.iter().enumerate() {
        let from = match UserRange::new(r.reply, r.reply_len as usize) {
            Ok(from) => from,
            Err(e) => {
                failed(i, e);
                continue;
            }
        };
        let Some(c) = port::take_held(&mut server.port.held.lock(), r.rid) else {
            failed(i, Error::NotFound);
            continue;
        };
        if let Some(released) = rendezvous::end_released(server, c, from).1 {
            wake(partner.replace(released));
        }
    }
    acc_many_handing_to(server, mask, k, partner, describe)
}

/// `acc_many`, handing the CPU to `partner` if the server has to wait.
#[inline(always)]
fn acc_many_handing_to(
    server: &Process,
    mask: u64,
    k: usize,
    partner: Option<Arc<Computation>>,
    describe: impl FnMut(usize, &port::Accepted) -> Result<(), Error>,
) -> Result<usize, Error> {
    if k == 0 || k > MAX {
        wake(partner);
        return Err(Error::Invalid);
    }
    let first = rendezvous::acc_handing_to(server, mask, partner)?;
    accept_more(server, mask, k, first, describe)
}

/// The rest of `acc_many` once `first` is accepted: up to `k - 1` more
/// calls already waiting are accepted with it, and all are described.
#[inline(always)]
fn accept_more(
    server: &Process,
    mask: u64,
    k: usize,
    first: port::Accepted,
    mut describe: impl FnMut(usize, &port::Accepted) -> Result<(), Error>,
) -> Result<usize, Error> {
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
                && let Some(c) = port::take_matching(&mut q.calls, mask)
            {
                more.push(c);
            }
        }
        for c in &more {
            c.accepted_by(server.pid());
        }
        // (A single call, the common case, has nothing more to keep.)
        let kept = more.is_empty() || {
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
                wake(c.complete(Error::NoMemory.as_ret(), 0));
            }
        }
    }
    let got = more.len();
    server.port.accepted.fetch_add(got as u64, Ordering::Relaxed);
    // Drained in place: moving the array out would copy all of it.
    let mut rest = more.drain(..);
    if let Err(e) = describe(0, &first) {
        let _ = rendezvous::fail(server, first.rid(), e);
        fail_all(server, rest, e);
        return Err(e);
    }
    for i in 1..=got {
        let Some(c) = rest.next() else { break };
        let a = port::Accepted::Call(c);
        if let Err(e) = describe(i, &a) {
            let _ = rendezvous::fail(server, a.rid(), e);
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
        let _ = rendezvous::fail(server, c.id, error);
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
            calls.extend(list.iter().map(|f| port::take_held(&mut held, f.rid)));
        }
    }
    let mut refuse = |i: usize, c: Option<Arc<Call>>, e: Error| {
        if let Some(c) = c {
            wake(answer(server, c, e.as_ret(), 0));
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
        let (sent, n, refused) = match port::target(list[i].server) {
            Ok(s) => port::deliver_run(&s, run, false),
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
