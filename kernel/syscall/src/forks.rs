//! A Linux process's fork and vfork, as its supervisor asks them: the
//! checks both share (the parent is waiting in a call the caller holds,
//! the child's supervisor is one the caller may hand a process to), then
//! a copy of the parent's space (`spawn::fork`) or the parent's space
//! itself, lent to the child (`spawn::vfork`).

use abi::Error;
use abi::linux::Regs;
use alloc::sync::Arc;
use ipc::process::{self as proc, Process};

/// The process waiting in call `rid`, which `me` serves, and its
/// registers, if `supervisor` may serve its child as Linux pid
/// `linux_pid`: `me` itself, a child of `me`'s, or another the same
/// shared server started (pooled supervisors are its children); and the
/// forking thread's signal mask, which the child starts with.
fn parent_of(me: &Process, rid: u64, supervisor: u64, linux_pid: u64) -> Result<(Arc<Process>, Regs, u64), Error> {
    let (parent, mask) = ipc::supervise::waiting_with_sigmask(me, rid)?;
    let regs = ipc::supervise::regs(me, rid)?;
    let s = proc::get(supervisor).ok_or(Error::NotFound)?;
    let sibling = me.parent() != proc::NO_PARENT && s.is_child_of(me.parent());
    if !(s.pid() == me.pid() || s.is_child_of(me.pid()) || sibling) || s.has_exited() || linux_pid == 0 {
        return Err(Error::Invalid);
    }
    Ok((parent, regs, mask))
}

/// `linux_fork`: a copy of the waiting process.
pub fn linux_fork(me: &Process, rid: u64, supervisor: u64, linux_pid: u64) -> Result<u64, Error> {
    let (parent, regs, mask) = parent_of(me, rid, supervisor, linux_pid)?;
    resource::proc::spawn::fork(&parent, regs, supervisor, linux_pid, mask)
}

/// `linux_vfork`: a child in the waiting process's own space. Only the
/// parent's supervisor lends it (the call it holds names the parent), and
/// only to the child this call makes.
pub fn linux_vfork(me: &Process, rid: u64, supervisor: u64, linux_pid: u64) -> Result<u64, Error> {
    let (parent, regs, mask) = parent_of(me, rid, supervisor, linux_pid)?;
    resource::proc::spawn::vfork(&parent, regs, supervisor, linux_pid, mask)
}
