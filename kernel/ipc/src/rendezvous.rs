//! Rendezvous (seed 003), the general path: `call(server, entry, message)`
//! stops the caller until the server has accepted (`acc`) and ended
//! (`endr`) the rendezvous. `acc` gives the server the message's first 64
//! bytes inline and a reference (`rid`) through which it reads the rest
//! (`rv_read`) straight from the caller's memory and writes the reply
//! (`rv_write`, `endr`) straight into it: data crosses once, from the first
//! caller to whichever server needs it. A server may `call` another one
//! naming its own `rid` as the message (nested rendezvous: the next server
//! reads the original caller's data directly), or `forward` the request to
//! it, which then replies directly to the original caller (AnT's
//! multi-stage request with direct return, seed 002).
//!
//! The common round trip takes the fast path (`fastpath.rs`) instead; this
//! path takes everything, and shares its objects and locks.
//!
//! A server that ends releases every call it held with an error; a caller
//! that ends leaves its calls orphaned, and the server's later operations
//! on them fail cleanly. Every copy goes through the other process's page
//! tables with bounds fixed at call time, so a server cannot reach beyond
//! what the caller passed.

use crate::call::{self, Call, Completion, INLINE, Request};
use crate::port::{self, Accepted, check_entry, wake};
use crate::process::{self as proc, Process};
use abi::Error;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use kcore::computation::Computation;
use kcore::uaccess::UserRange;
use kcore::unique::UniqueArc;
use kcore::vm::space::SpaceRef;

// The inspector and the tests read these here.
pub use crate::call::{BYTES_COPIED, CALLS, flush_free_calls};

/// `call`: blocks until the server ends the rendezvous; returns the reply
/// length (or the server's error). `msg_ref` names a call the caller holds
/// whose message is passed on instead of the caller's own memory.
/// The general path: the system call tries `call_fast` first (see
/// `syscall::rendezvous::sys_call_raw`).
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
        (caller.pid(), msg)
    };
    let (status, c) = call_with(
        caller,
        server,
        Request::new(entry, owner, range, reply, Completion::Wait),
    )?;
    caller.port.spare.keep(c);
    status
}

/// Sends `r` to `server` and waits for the end of the rendezvous; returns
/// its status and the finished call.
pub(crate) fn call_with(caller: &Process, server: u64, r: Request) -> Result<(Result<u64, Error>, Arc<Call>), Error> {
    let s = port::cached_target(caller, server)?;
    check_entry(&s, r.entry)?;
    let c = call::make_call(
        caller.pid(),
        server,
        r,
        caller.port.spare.take().map(UniqueArc::into_arc),
    )?;
    let partner = port::deliver(&s, c.clone())?;
    drop(s);
    let status = c.wait_done(partner);
    Ok((status, c))
}

/// The message range of a call `holder` holds (for passing it on).
fn held_message(holder: &Process, rid: u64) -> Result<(u64, UserRange), Error> {
    let c = port::held(holder, rid)?;
    Ok((c.msg_owner, c.msg.part(0, c.shown.load(Ordering::Relaxed) as usize)?))
}

/// `acc`: waits for a call on one of the entries in `mask` (bit n = entry n;
/// entries ≥ 63 match bit 63). Returns the call's description.
pub fn acc(server: &Process, mask: u64) -> Result<Accepted, Error> {
    acc_handing_to(server, mask, None)
}

/// `acc`, handing the CPU to `partner` (a caller just released) if the
/// server has to wait.
pub(crate) fn acc_handing_to(
    server: &Process,
    mask: u64,
    partner: Option<Arc<Computation>>,
) -> Result<Accepted, Error> {
    use x86_64::instructions::interrupts;
    let nowait = mask & abi::ACC_NOWAIT != 0;
    let mask = mask & !abi::ACC_NOWAIT;
    if nowait {
        let r = port::accept_waiting(server, mask);
        wake(partner);
        return r;
    }
    // Waiting and accepting run with interrupts off: every lock on the way
    // is then taken without saving the flags, and a switch needs them off.
    let were_enabled = interrupts::are_enabled();
    interrupts::disable();
    let r = port::wait_and_accept(server, mask, partner);
    if were_enabled {
        interrupts::enable();
    }
    r
}

/// A call of `caller`'s whose message and reply buffer may lie in another
/// process's memory: (owner, range) each (a supervisor's call on behalf of
/// the Linux process waiting in its call, `supervise::call_for`).
pub(crate) fn call_owned(
    caller: &Process,
    server: u64,
    entry: u64,
    msg: (u64, UserRange),
    reply: (u64, UserRange),
) -> Result<u64, Error> {
    let s = port::cached_target(caller, server)?;
    check_entry(&s, entry)?;
    let mut c = call::make_call(
        caller.pid(),
        server,
        Request::new(entry, msg.0, msg.1, reply.1, Completion::Wait),
        caller.port.spare.take().map(UniqueArc::into_arc),
    )?;
    Arc::get_mut(&mut c)
        .expect("a call object nobody else holds")
        .reply_owner = reply.0;
    let partner = port::deliver(&s, c.clone())?;
    drop(s);
    let status = c.wait_done(partner);
    caller.port.spare.keep(c);
    status
}

/// `cross_copy`, for the supervisors' operations on the process waiting in
/// their call.
pub(crate) fn copy_between_processes(from: (u64, UserRange), to: (u64, UserRange)) -> Result<(), Error> {
    cross_copy(from, to)
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
        // A short message goes through a small buffer: one side is the
        // current process's own memory, copied without a page-table walk.
        copy_through(from, to, len, &mut [0u8; INLINE])?;
    } else if from.0 == to.0 {
        // Within one process (a server reading its own call): rare.
        copy_through(from, to, len, &mut [0u8; 512])?;
    } else {
        proc::copy_between(from, to, len)?;
    }
    BYTES_COPIED.fetch_add(len as u64, Ordering::Relaxed);
    Ok(())
}

/// `copy_between_processes` with the two processes' spaces (`from`'s,
/// `to`'s) found by the caller, for several copies between the same two.
pub(crate) fn copy_between_spaces(
    spaces: (&SpaceRef, &SpaceRef),
    from: (u64, UserRange),
    to: (u64, UserRange),
) -> Result<(), Error> {
    let len = from.1.len().min(to.1.len());
    if len <= INLINE || from.0 == to.0 {
        return cross_copy(from, to);
    }
    proc::copy_between_spaces(spaces, from, to, len)?;
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

/// `rv_read`: copies message bytes `offset..offset + to.len()` of call
/// `rid` into the server's memory at `to`. Only the message the caller
/// passed is reachable.
pub fn read(server: &Process, rid: u64, offset: u64, to: UserRange) -> Result<u64, Error> {
    let c = port::held(server, rid)?;
    let shown = c.msg.prefix(c.shown.load(Ordering::Relaxed) as usize);
    let from = usize::try_from(offset).map_err(|_| Error::Invalid)?;
    cross_copy((c.msg_owner, shown.part(from, to.len())?), (server.pid(), to))?;
    if c.msg_owner != c.caller {
        crate::procnet::by_reference(to.len());
    }
    Ok(to.len() as u64)
}

/// `rv_write`: copies the server's memory at `from` into the reply buffer
/// of call `rid`, at `offset`.
pub fn write(server: &Process, rid: u64, offset: u64, from: UserRange) -> Result<u64, Error> {
    let c = port::held(server, rid)?;
    let at = usize::try_from(offset).map_err(|_| Error::Invalid)?;
    if let Some(r) = crate::pager::write(&c, at, from) {
        return r;
    }
    cross_copy((server.pid(), from), (c.reply_owner, c.reply.part(at, from.len())?))?;
    if c.reply_owner != c.caller {
        crate::procnet::by_reference(from.len());
    }
    Ok(from.len() as u64)
}

/// Keeps as much of reply `from` (in the current space) in call `c` as
/// its caller's reply buffer takes; returns the status for the caller and
/// how many bytes were kept. The server running this ends `c` and holds
/// it alone, and the reply is short (`INLINE` bytes at most).
#[inline(always)]
pub(crate) fn keep_reply(c: &Call, from: UserRange) -> (u64, usize) {
    if let Some(r) = crate::pager::write(c, 0, from) {
        // A pager's answer: into the page, nothing kept.
        return (r.unwrap_or_else(|e| e.as_ret()), 0);
    }
    let from = from.prefix(c.reply.len());
    match c.kept.fill_from_user(from) {
        Ok(n) => (n as u64, n),
        Err(e) => (e.as_ret(), 0),
    }
}

/// that whoever it tells sees it.
#[must_use]
#[inline(always)]
pub(crate) fn answer(server: &Process, c: Arc<Call>, status: u64, kept: usize) -> Option<Arc<Computation>> {
    server.port.answered.fetch_add(1, Ordering::Relaxed);
    c.complete(status, kept)
}

/// `answer` with interrupts off (`Call::complete_irqs_off`).
#[must_use]
#[inline(always)]
pub(crate) fn answer_irqs_off(server: &Process, c: Arc<Call>, status: u64, kept: usize) -> Option<Arc<Computation>> {
    server.port.answered.fetch_add(1, Ordering::Relaxed);
    c.complete_irqs_off(status, kept)
}

/// Ends call `rid`: copies the reply (`len` bytes at `from` in the server)
/// into the caller's reply buffer. Returns the bytes replied and the caller
/// to let go.
fn end(server: &Process, rid: u64, from: UserRange) -> Result<(u64, Option<Arc<Computation>>), Error> {
    let c = port::release(server, rid)?;
    Ok(end_released(server, c, from))
}

/// `endr_len`: ends call `rid` with status `len`, copying nothing: the
/// reply went into the caller's buffer in pieces (`rv_write`, or by the
/// servers the call was passed to by reference) and `len` says how much of
/// it there is, at most the buffer's room.
pub fn end_with_len(server: &Process, rid: u64, len: u64) -> Result<u64, Error> {
    let held = port::held(server, rid)?;
    let room = crate::pager::room(&held).unwrap_or(held.reply.len());
    drop(held);
    if len > room as u64 {
        return Err(Error::Invalid);
    }
    let c = port::release(server, rid)?;
    wake(answer(server, c, len, 0));
    Ok(0)
}

/// `end`, for call `c` already taken out of the server's held calls.
pub(crate) fn end_released(server: &Process, c: Arc<Call>, from: UserRange) -> (u64, Option<Arc<Computation>>) {
    if let Some(r) = crate::pager::write(&c, 0, from) {
        let status = r.unwrap_or_else(|e| e.as_ret());
        return (r.unwrap_or(0), answer(server, c, status, 0));
    }
    let n = (from.len() as u64).min(c.reply.len() as u64);
    if n <= INLINE as u64 && c.completion == Completion::Wait {
        // A short reply to a waiting caller is kept in the call: the caller
        // copies it into its own memory when it resumes, through its own
        // page tables instead of a walk of them from here.
        let (status, kept) = keep_reply(&c, from);
        return (n, answer(server, c, status, kept));
    }
    let status = match cross_copy((server.pid(), from), (c.reply_owner, c.reply)) {
        Ok(()) if c.reply_owner != c.caller => {
            crate::procnet::by_reference(n as usize);
            n
        }
        Ok(()) => n,
        Err(e) => e.as_ret(),
    };
    (n, answer(server, c, status, 0))
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
/// server holds), nothing is accepted and that error is returned. A short
/// reply takes the fast path (`fastpath::endr_acc_short`) from the system
/// call.
pub fn endr_acc(server: &Process, rid: u64, reply: UserRange, mask: u64) -> Result<Accepted, Error> {
    if rid == 0 {
        return acc_handing_to(server, mask, None);
    }
    let caller = end(server, rid, reply)?.1;
    acc_handing_to(server, mask, caller)
}

/// Ends call `rid` with an error for its caller.
pub fn fail(server: &Process, rid: u64, error: Error) -> Result<u64, Error> {
    let c = port::release(server, rid)?;
    wake(answer(server, c, error.as_ret(), 0));
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
    let n = port::target(next)?;
    check_entry(&n, entry)?;
    let c = port::release(server, rid)?;
    c.pass_to(entry);
    match port::deliver(&n, c.clone()) {
        Ok(partner) => {
            server.port.forwarded.fetch_add(1, Ordering::Relaxed);
            Ok(partner)
        }
        Err(e) => {
            wake(c.complete(e.as_ret(), 0));
            Err(e)
        }
    }
}
