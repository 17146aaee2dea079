//! Supervisors (seed 003's 監督プロセス): a Linux process's system calls,
//! faults and attention stops are rendezvous the kernel makes on its behalf
//! with its supervisor, whose call it waits in with its registers in its
//! frame (`to_supervisor`). While it waits, and only then, its supervisor
//! may read and write its memory and registers, make calls whose message
//! or reply buffer is the process's memory, and end its system call with a
//! return value. Every such operation names the held call (`rid`) and is
//! refused unless the call's caller is a process this supervisor serves.

use crate::call::{self, Call, Completion, INLINE, Request};
use crate::port::{self, wake};
use crate::process::{self as proc, Process, Route};
use crate::rendezvous;
use abi::Error;
use abi::linux::{CallFor, MSG_IN_CALLER, REPLY_IN_CALLER, Regs};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::uaccess::UserRange;
use kcore::unique::UniqueArc;

/// A rendezvous of Linux process `caller` with its supervisor, on `entry`
/// (`abi::linux::entry`), carrying `message` inline (at most 64 bytes).
/// Returns the value the supervisor ended it with, raw (a Linux return
/// value, which may be a negated errno); Err if there is no supervisor to
/// serve it any more.
pub fn to_supervisor(caller: &Process, supervisor: u64, entry: u64, message: &[u8]) -> Result<u64, Error> {
    let s = port::cached_target(caller, supervisor)?;
    let r = Request::new(
        entry,
        caller.pid(),
        UserRange::EMPTY,
        UserRange::EMPTY,
        Completion::Wait,
    );
    let mut c = call::make_call(
        caller.pid(),
        supervisor,
        r,
        caller.port.spare.take().map(UniqueArc::into_arc),
    )?;
    let n = message.len().min(INLINE);
    let m = Arc::get_mut(&mut c).expect("a call object nobody else holds");
    m.inline[..n].copy_from_slice(&message[..n]);
    *m.shown.get_mut() = n as u64;
    let partner = port::deliver(&s, c.clone())?;
    let status = c.wait_raw(partner);
    let gone = s.port.closed.load(Ordering::Acquire);
    caller.port.spare.keep(c);
    match status {
        Some(v) if !gone => Ok(v),
        _ => Err(Error::NotFound),
    }
}

/// Call `rid` held by `supervisor`, if its caller is a process it serves:
/// the call and the caller.
fn served(supervisor: &Process, rid: u64) -> Result<(Arc<Call>, Arc<Process>), Error> {
    let c = port::held(supervisor, rid)?;
    let p = proc::get(c.caller).ok_or(Error::NotFound)?;
    match p.route() {
        Route::Linux { supervisor: s, .. } if s == supervisor.pid() => Ok((c, p)),
        _ => Err(Error::Denied),
    }
}

/// The process waiting in call `rid`, which `supervisor` holds and serves.
pub fn waiting(supervisor: &Process, rid: u64) -> Result<Arc<Process>, Error> {
    served(supervisor, rid).map(|(_, p)| p)
}

/// `caller_read`: `to.len()` bytes of the waiting process's memory at
/// `addr` into the supervisor's `to`.
pub fn read(supervisor: &Process, rid: u64, addr: u64, to: UserRange) -> Result<u64, Error> {
    let (c, _) = served(supervisor, rid)?;
    let from = UserRange::new(addr, to.len())?;
    rendezvous::copy_between_processes((c.caller, from), (supervisor.pid(), to))?;
    Ok(to.len() as u64)
}

/// `caller_write`: the supervisor's `from` into the waiting process's
/// memory at `addr`.
pub fn write(supervisor: &Process, rid: u64, addr: u64, from: UserRange) -> Result<u64, Error> {
    let (c, _) = served(supervisor, rid)?;
    let to = UserRange::new(addr, from.len())?;
    rendezvous::copy_between_processes((supervisor.pid(), from), (c.caller, to))?;
    Ok(from.len() as u64)
}

/// Runs `f` on the waiting process's frame.
fn with_frame<R>(supervisor: &Process, rid: u64, f: impl FnOnce(&mut TrapFrame, u64) -> R) -> Result<R, Error> {
    let (_, p) = served(supervisor, rid)?;
    let comp = p.computation().ok_or(Error::NotFound)?;
    let fs = comp.fs_base();
    comp.with_waiting_frame(|frame| f(frame, fs)).ok_or(Error::Busy)
}

/// `caller_regs`: the waiting process's user registers.
pub fn regs(supervisor: &Process, rid: u64) -> Result<Regs, Error> {
    with_frame(supervisor, rid, |f, fs_base| Regs {
        general: f.regs,
        rip: f.rip,
        rflags: f.rflags,
        rsp: f.rsp,
        fs_base,
    })
}

/// `caller_set_regs`: sets them; an instruction or stack pointer outside
/// user space or a thread pointer that is not canonical is refused, and
/// RFLAGS keeps only what user mode may change.
pub fn set_regs(supervisor: &Process, rid: u64, r: &Regs) -> Result<(), Error> {
    if !user_address(r.rip) || !user_address(r.rsp) || !kcore::vm::is_canonical(r.fs_base) {
        return Err(Error::Invalid);
    }
    let (_, p) = served(supervisor, rid)?;
    let comp = p.computation().ok_or(Error::NotFound)?;
    comp.with_waiting_frame(|f| set_frame(f, r)).ok_or(Error::Busy)?;
    comp.set_fs_base(r.fs_base);
    Ok(())
}

fn user_address(a: u64) -> bool {
    a < kcore::vm::USER_END
}

/// The flags user mode may set: the arithmetic ones, TF, DF, OF, AC, ID.
const USER_FLAGS: u64 = 0x0025_4dd5;

/// Puts registers `r` (checked) into a frame: IF stays on, IOPL 0.
pub fn set_frame(f: &mut TrapFrame, r: &Regs) {
    f.regs = r.general;
    f.rip = r.rip;
    f.rsp = r.rsp;
    f.rflags = (r.rflags & USER_FLAGS) | 0x202;
}

/// `caller_return`: ends the waiting process's call with `value`, which
/// its system call returns.
pub fn finish(supervisor: &Process, rid: u64, value: u64) -> Result<(), Error> {
    served(supervisor, rid)?;
    let c = port::release(supervisor, rid)?;
    wake(rendezvous::answer(supervisor, c, value, 0));
    Ok(())
}

/// `call_for`: a call of the supervisor's to `server` whose message or
/// reply buffer (as `req.flags` say) is the waiting process's memory: the
/// server copies straight between it and its own. Returns the reply's
/// length.
pub fn call_for(supervisor: &Process, req: &CallFor) -> Result<u64, Error> {
    let (c, _) = served(supervisor, req.rid)?;
    if req.flags & !(MSG_IN_CALLER | REPLY_IN_CALLER) != 0 {
        return Err(Error::Invalid);
    }
    let msg = UserRange::new(req.msg_addr, req.msg_len as usize)?;
    let reply = UserRange::new(req.reply_addr, req.reply_len as usize)?;
    let own = supervisor.pid();
    let msg_owner = if req.flags & MSG_IN_CALLER != 0 { c.caller } else { own };
    let reply_owner = if req.flags & REPLY_IN_CALLER != 0 {
        c.caller
    } else {
        own
    };
    rendezvous::call_owned(
        supervisor,
        req.server,
        req.entry,
        (msg_owner, msg),
        (reply_owner, reply),
    )
}
