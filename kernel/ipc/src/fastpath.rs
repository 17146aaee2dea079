//! The rendezvous fast path, kept apart from the general path as seL4
//! keeps `fastpath.c` apart from `endpoint.c`: the common round trip of
//! seed 003's `call` and a server's `endr`+`acc`, with a short message
//! and reply, between a caller and the server it called last on one CPU.
//! The caller hands the server its call and the CPU without a pass through
//! the scheduler, and the server hands both back. Anything else falls to
//! the general path (`rendezvous.rs`) with nothing changed; the two share
//! the call objects, ports and locks, and a call ends through the same
//! `Call::complete` either way.
//!
//! This path is hand-tuned: what is inlined, the order the locks are
//! taken in and the stretch run with interrupts off are its cost, and the
//! figures of record measure it.

use crate::call::{self, Call, Completion, INLINE, State};
use crate::port::{self, Accepted, check_declared, in_mask};
use crate::process::Process;
use crate::rendezvous::{self, answer_irqs_off, keep_reply};
use abi::Error;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use kcore::uaccess::UserRange;
use kcore::unique::UniqueArc;

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
    let mut spare = my_port.spare.take()?;
    {
        // The spare is this caller's alone: filled in place.
        let m: &mut Call = &mut spare;
        m.id = call::next_id();
        m.caller = caller.pid();
        m.server = server;
        *m.entry.get_mut() = entry;
        m.msg_owner = caller.pid();
        m.msg = msg;
        *m.shown.get_mut() = msg.len() as u64;
        m.reply_owner = caller.pid();
        m.reply = reply;
        m.completion = Completion::Wait;
        m.flags = 0;
        m.tag = 0;
        m.kept.empty();
        *m.relayed.get_mut() = false;
        let p = m.progress.get_mut();
        p.state = State::Open;
        p.kept = 0;
        p.hops.clear();
        if p.hops.capacity() == 0 && p.hops.try_reserve(1).is_err() {
            return give_up(caller, spare.into_arc(), None);
        }
        p.hops.push(server);
        // The caller waits in the call: the waiter slot holds it.
        p.waiter = sched::current_here();
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
        .filter(|s| s.pid() == server)
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
            if caller.is_killed() {
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
            if let Some((status, n)) = m.progress.get_mut().collect() {
                let status = call::reply_here(m.reply, status, m.kept_reply(n));
                my_port.spare.park(mine);
                return Some(status);
            }
            mine.into_arc()
        }
        Err(c) => c,
    };
    let status = c.wait_done(None);
    my_port.spare.keep(c);
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
    caller.port.spare.keep(c);
    None
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
    let Some(c) = port::take_held(&mut sp.held.lock(), rid) else {
        return Err(Error::NotFound);
    };
    let were_enabled = interrupts::are_enabled();
    let caller = if c.completion == Completion::Wait {
        let (status, kept) = keep_reply(&c, reply);
        interrupts::disable();
        answer_irqs_off(server, c, status, kept)
    } else {
        // Anything else goes as `endr` has it (it may copy into the
        // caller's memory through its page tables).
        let caller = rendezvous::end_released(server, c, reply).1;
        interrupts::disable();
        caller
    };
    let r = port::wait_and_accept(server, mask, caller);
    if were_enabled {
        interrupts::enable();
    }
    r
}
