//! Supervisors (seed 003's 監督プロセス): a Linux process's system calls,
//! faults and attention stops are rendezvous the kernel makes on its behalf
//! with its supervisor, whose call it waits in with its registers in its
//! frame (`to_supervisor`). While it waits, and only then, its supervisor
//! may read and write its memory and registers, make calls whose message
//! or reply buffer is the process's memory, end its system call with a
//! return value or end the process. A call that must wait (for a pipe, a
//! child, the terminal) the supervisor passes on to the personality's
//! shared server (the supervisor's parent, which started it), which then
//! may do the same to the waiting process. Every such operation names the
//! held call (`rid`) and is refused unless its caller is a Linux process
//! served by the holder: its supervisor, or the supervisor's parent.

use crate::call::{self, Call, INLINE};
use crate::port::{self, wake};
use crate::process::{self as proc, Process, Route};
use crate::rendezvous;
use abi::Error;
use abi::linux::{CallFor, MSG_IN_CALLER, REPLY_IN_CALLER, Regs};
use alloc::sync::{Arc, Weak};
use core::sync::atomic::Ordering;
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::computation::Computation;
use kcore::uaccess::UserRange;

/// How a rendezvous with the supervisor ended without a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The supervisor ended the process (`caller_exit`) with this status.
    Exit(u64),
    /// No supervisor serves it any more, or it was killed meanwhile.
    Gone,
    /// The supervisor ended this computation alone (`caller_exit_thread`).
    Thread,
}

/// A rendezvous of Linux process `caller` with its supervisor, on `entry`
/// (`abi::linux::entry`), carrying `message` inline (at most 64 bytes).
/// Returns the value the supervisor (or the server it passed the call to)
/// ended it with, raw (a Linux return value, which may be a negated
/// errno); else how it ended. The caller exits on an `Ending`, once it
/// holds no reference to anything (`proc::exit_current`).
pub fn to_supervisor(caller: &Process, supervisor: u64, entry: u64, message: &[u8]) -> Result<u64, Ending> {
    let s = port::cached_target(caller, supervisor).map_err(|_| Ending::Gone)?;
    let mut c = call::on_behalf_of(caller, supervisor, entry, abi::ACC_ROUTED, message).map_err(|_| Ending::Gone)?;
    Arc::get_mut(&mut c).expect("a call object nobody else holds").thread =
        sched::current().map(|me| Arc::downgrade(&me));
    let partner = port::deliver(&s, c.clone()).map_err(|_| Ending::Gone)?;
    let status = c.wait_raw(partner);
    let gone = s.port.closed.load(Ordering::Acquire);
    drop(s);
    caller.port.spare.keep(c);
    if let Some(code) = caller.take_exit_request() {
        return Err(Ending::Exit(code));
    }
    if sched::with_current(|me| me.ends_alone.load(Ordering::Acquire)) == Some(true) {
        return Err(Ending::Thread);
    }
    match status {
        Some(v) if !gone && !caller.is_killed() && v != GONE => Ok(v),
        _ => Err(Ending::Gone),
    }
}

/// The status a call completes with when its port closes (its holder
/// ended): never a value a Linux call returns (those are below 2^63 or
/// negated errnos above -4096).
const GONE: u64 = Error::NotFound as u64 | (1 << 62);

/// Whether `holder` serves the Linux process whose supervisor is
/// `supervisor`: it is the supervisor, or the supervisor's parent (the
/// personality's shared server).
fn serves(holder: u64, supervisor: u64) -> bool {
    holder == supervisor || proc::get(supervisor).is_some_and(|s| s.is_child_of(holder))
}

/// Call `rid` held by `supervisor`, if its caller is a process it serves:
/// the call and the caller.
fn served(supervisor: &Process, rid: u64) -> Result<(Arc<Call>, Arc<Process>), Error> {
    let c = port::held(supervisor, rid)?;
    let p = proc::get(c.caller).ok_or(Error::NotFound)?;
    match p.route() {
        Route::Linux { supervisor: s, .. } if serves(supervisor.pid(), s) => Ok((c, p)),
        _ => Err(Error::Denied),
    }
}

/// Whether process `pid` is a Linux process `holder` serves (`serves`).
pub fn serves_process(holder: u64, p: &Process) -> bool {
    matches!(p.route(), Route::Linux { supervisor, .. } if serves(holder, supervisor))
}

/// `linux_set_ppid`: process `target`, which `holder` serves (its
/// supervisor, or the personality's shared server, the supervisors'
/// parent), is Linux process `linux_pid` and has parent `ppid` from now
/// on (0: not known, getppid goes to the supervisor again). The Linux pid
/// must be the target's own, so that a number the personality has given
/// to another process since cannot reach it.
pub fn set_ppid(holder: &Process, target: u64, linux_pid: u64, ppid: u64) -> Result<u64, Error> {
    if ppid > abi::linux::PID_MAX {
        return Err(Error::Invalid);
    }
    let p = proc::get(target).ok_or(Error::NotFound)?;
    match p.route() {
        Route::Linux { supervisor, pid } if serves(holder.pid(), supervisor) => {
            if pid != linux_pid || p.has_exited() {
                return Err(Error::NotFound);
            }
            p.set_linux_ppid(ppid);
            Ok(0)
        }
        _ => Err(Error::Denied),
    }
}

/// `linux_sigmask`: operation `op` (`abi::linux::sigmask`) on thread
/// `tid` of Linux process `target`, which `holder` serves.
pub fn sigmask(holder: &Process, op: u64, target: u64, tid: u64, value: u64) -> Result<u64, Error> {
    use abi::linux::sigmask as sm;
    let p = proc::get(target).ok_or(Error::NotFound)?;
    let Route::Linux { supervisor, pid } = p.route() else {
        return Err(Error::Denied);
    };
    if !serves(holder.pid(), supervisor) {
        return Err(Error::Denied);
    }
    let thread = || {
        let label = if tid == pid { 0 } else { tid };
        p.computation_labelled(label).ok_or(Error::NotFound)
    };
    // The news is taken before the mask is read: a change made after the
    // read leaves it set for the thread's next rendezvous.
    let read = |c: &Computation| {
        c.sigmask_news.store(false, Ordering::SeqCst);
        c.sigmask.load(Ordering::SeqCst)
    };
    match op {
        sm::GET => Ok(read(&*thread()?)),
        sm::SET => {
            let c = thread()?;
            c.sigmask_news.store(false, Ordering::SeqCst);
            c.sigmask.store(value & !sm::UNBLOCKABLE, Ordering::SeqCst);
            Ok(0)
        }
        sm::PENDING => {
            p.set_linux_sig_pending(value);
            match tid {
                0 => Ok(0),
                _ => Ok(read(&*thread()?)),
            }
        }
        _ => Err(Error::Invalid),
    }
}

/// The process waiting in call `rid`, which `supervisor` holds and
/// serves, and the signal mask of its thread in the call (a fork's child
/// and a new thread start with it).
pub fn waiting_with_sigmask(supervisor: &Process, rid: u64) -> Result<(Arc<Process>, u64), Error> {
    let (p, t) = waiting_thread(supervisor, rid)?;
    Ok((p, t.sigmask.load(Ordering::SeqCst)))
}

/// The process waiting in call `rid`, which `supervisor` holds and serves.
pub fn waiting(supervisor: &Process, rid: u64) -> Result<Arc<Process>, Error> {
    served(supervisor, rid).map(|(_, p)| p)
}

/// `caller_read`: `to.len()` bytes of the waiting process's memory at
/// `addr` into the supervisor's `to`.
pub fn read(supervisor: &Process, rid: u64, addr: u64, to: UserRange) -> Result<u64, Error> {
    let (c, p) = served(supervisor, rid)?;
    read_from(supervisor, (&c, &p), addr, to)?;
    Ok(to.len() as u64)
}

/// `caller_read_many`: `read` of each range of `list` in turn, the call
/// looked up once; how many were read before the first that could not be
/// (its bytes and those after it are not read). The list is checked
/// whole before anything is read: at least one range, at most
/// `MAX_BATCH`, at most `MAX_COPY` bytes in all (so a call's work is
/// bounded as a `caller_read`'s is).
pub fn read_many(supervisor: &Process, rid: u64, list: &[abi::ReadEntry]) -> Result<u64, Error> {
    if list.is_empty() || list.len() > abi::MAX_BATCH as usize {
        return Err(Error::Invalid);
    }
    let total = list.iter().try_fold(0u64, |t, r| t.checked_add(r.len));
    if total.is_none_or(|t| t > abi::MAX_COPY as u64) {
        return Err(Error::Invalid);
    }
    let (c, p) = served(supervisor, rid)?;
    // Found once for all the ranges, not at each (the copy checks at
    // each piece that they are still the two processes' memory).
    let spaces = (
        p.space().ok_or(Error::NotFound)?,
        supervisor.space().ok_or(Error::NotFound)?,
    );
    for (i, r) in list.iter().enumerate() {
        let read = UserRange::new(r.buf, r.len as usize).and_then(|to| {
            let from = UserRange::new(r.addr, to.len())?;
            proc::page_in_range_of(&p, r.addr, to.len())?;
            rendezvous::copy_between_spaces((&spaces.0, &spaces.1), (c.caller, from), (supervisor.pid(), to))?;
            crate::procnet::by_reference(to.len());
            Ok(())
        });
        if read.is_err() {
            return Ok(i as u64);
        }
    }
    Ok(list.len() as u64)
}

/// `to.len()` bytes at `addr` of process `p`, waiting in call `c`, into
/// the supervisor's `to`.
fn read_from(supervisor: &Process, (c, p): (&Call, &Process), addr: u64, to: UserRange) -> Result<(), Error> {
    let from = UserRange::new(addr, to.len())?;
    proc::page_in_range_of(p, addr, to.len())?;
    rendezvous::copy_between_processes((c.caller, from), (supervisor.pid(), to))?;
    crate::procnet::by_reference(to.len());
    Ok(())
}

/// `caller_write`: the supervisor's `from` into the waiting process's
/// memory at `addr`.
pub fn write(supervisor: &Process, rid: u64, addr: u64, from: UserRange) -> Result<u64, Error> {
    let (c, p) = served(supervisor, rid)?;
    let to = UserRange::new(addr, from.len())?;
    proc::page_in_range_of(&p, addr, from.len())?;
    rendezvous::copy_between_processes((supervisor.pid(), from), (c.caller, to))?;
    crate::procnet::by_reference(from.len());
    Ok(from.len() as u64)
}

/// The computation that made call `c` (a Linux process's call to its
/// supervisor), while it lives.
fn thread_of(c: &Call) -> Result<Arc<Computation>, Error> {
    c.thread.as_ref().and_then(Weak::upgrade).ok_or(Error::NotFound)
}

/// The waiting computation of call `rid`, which `supervisor` holds and serves.
pub fn waiting_thread(supervisor: &Process, rid: u64) -> Result<(Arc<Process>, Arc<Computation>), Error> {
    let (c, p) = served(supervisor, rid)?;
    Ok((p, thread_of(&c)?))
}

/// Runs `f` on the waiting computation's frame.
fn with_frame<R>(supervisor: &Process, rid: u64, f: impl FnOnce(&mut TrapFrame, u64) -> R) -> Result<R, Error> {
    let (_, comp) = waiting_thread(supervisor, rid)?;
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
    set_regs_of(supervisor, rid, r).map(|_| ())
}

/// `set_regs`, giving the computation whose registers they are.
fn set_regs_of(supervisor: &Process, rid: u64, r: &Regs) -> Result<Arc<Computation>, Error> {
    if !user_address(r.rip) || !user_address(r.rsp) || !kcore::vm::is_canonical(r.fs_base) {
        return Err(Error::Invalid);
    }
    let (_, comp) = waiting_thread(supervisor, rid)?;
    comp.with_waiting_frame(|f| set_frame(f, r)).ok_or(Error::Busy)?;
    comp.set_fs_base(r.fs_base);
    Ok(comp)
}

/// `caller_set_signal_regs`: `set_regs`, and the waiting thread's mask.
pub fn set_signal_regs(supervisor: &Process, rid: u64, r: &Regs, mask: u64) -> Result<(), Error> {
    let comp = set_regs_of(supervisor, rid, r)?;
    comp.sigmask_news.store(false, Ordering::SeqCst);
    comp.sigmask
        .store(mask & !abi::linux::sigmask::UNBLOCKABLE, Ordering::SeqCst);
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

/// `caller_return_acc`: `finish`, then `acc` for `mask`, the process given
/// the CPU directly if the supervisor has to wait (its loop in one step).
pub fn finish_acc(supervisor: &Process, rid: u64, value: u64, mask: u64) -> Result<port::Accepted, Error> {
    served(supervisor, rid)?;
    let c = port::release(supervisor, rid)?;
    let partner = rendezvous::answer(supervisor, c, value, 0);
    rendezvous::acc_handing_to(supervisor, mask, partner)
}

/// `caller_fpu` (`set`: None) and `caller_set_fpu`: the waiting process's
/// saved FPU state, read into `out` or replaced by `set`.
pub fn fpu(holder: &Process, rid: u64, out: Option<&mut [u8; 512]>, set: Option<&[u8; 512]>) -> Result<(), Error> {
    let (_, comp) = waiting_thread(holder, rid)?;
    comp.with_waiting_fpu(|area| {
        if let Some(o) = out {
            o.copy_from_slice(area);
        }
        if let Some(new) = set {
            area.copy_from_slice(new);
            // MXCSR (bytes 24..28) with a reserved bit set would fault
            // fxrstor in the kernel: only its defined bits are kept.
            let mxcsr = u32::from_le_bytes([area[24], area[25], area[26], area[27]]) & 0xffff;
            area[24..28].copy_from_slice(&mxcsr.to_le_bytes());
        }
    })
    .ok_or(Error::Busy)
}

/// `caller_exit`: the waiting process ends with `status`, quietly (its
/// supervisor reports what the Linux personality shows).
pub fn exit(supervisor: &Process, rid: u64, status: u64) -> Result<(), Error> {
    let (_, p) = served(supervisor, rid)?;
    p.request_exit(status);
    let c = port::release(supervisor, rid)?;
    wake(rendezvous::answer(supervisor, c, 0, 0));
    Ok(())
}

/// `caller_exit_thread`: the computation waiting in call `rid` ends
/// alone; its process goes on with its others (the supervisor ends the
/// last with `caller_exit`).
pub fn exit_thread(supervisor: &Process, rid: u64) -> Result<(), Error> {
    let (_, comp) = waiting_thread(supervisor, rid)?;
    comp.ends_alone.store(true, Ordering::Release);
    let c = port::release(supervisor, rid)?;
    wake(rendezvous::answer(supervisor, c, 0, 0));
    Ok(())
}

/// `linux_pass`: call `rid` goes on to `server`'s `entry` with `msg` (in
/// the holder's memory, at most 64 bytes) as its message; the server must
/// serve the process too (its supervisor or the supervisor's parent).
pub fn pass(holder: &Process, rid: u64, server: u64, entry: u64, msg: UserRange) -> Result<(), Error> {
    let (c, p) = served(holder, rid)?;
    if msg.len() > INLINE || !serves_process(server, &p) || entry >= 61 {
        return Err(Error::Invalid);
    }
    let next = port::target(server)?;
    port::check_entry(&next, entry)?;
    // The new message first (a Linux call keeps no reply: its buffer is
    // free), then the call leaves the holder.
    c.kept.fill_from_user(msg)?;
    c.relayed.store(true, Ordering::Release);
    drop(c);
    let c = port::release(holder, rid)?;
    c.pass_to(entry);
    match port::deliver(&next, c.clone()) {
        Ok(partner) => {
            holder.port.forwarded.fetch_add(1, Ordering::Relaxed);
            wake(partner);
            Ok(())
        }
        Err(e) => {
            wake(c.complete(GONE, 0));
            Err(e)
        }
    }
}

/// `call_for`: a call of the supervisor's to `server` whose message or
/// reply buffer (as `req.flags` say) is the waiting process's memory: the
/// server copies straight between it and its own. Returns the reply's
/// length.
pub fn call_for(supervisor: &Process, req: &CallFor) -> Result<u64, Error> {
    let (c, p) = served(supervisor, req.rid)?;
    if req.flags & !(MSG_IN_CALLER | REPLY_IN_CALLER) != 0 {
        return Err(Error::Invalid);
    }
    let msg = UserRange::new(req.msg_addr, req.msg_len as usize)?;
    let reply = UserRange::new(req.reply_addr, req.reply_len as usize)?;
    let own = supervisor.pid();
    // The server copies with the waiting process's space locked: pages
    // still in a file come first, asked by the supervisor.
    if req.flags & MSG_IN_CALLER != 0 {
        proc::page_in_range_of(&p, msg.addr(), msg.len())?;
    }
    if req.flags & REPLY_IN_CALLER != 0 {
        proc::page_in_range_of(&p, reply.addr(), reply.len())?;
    }
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
