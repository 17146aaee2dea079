//! process_vm_readv and process_vm_writev (`caller_vm_copy`): bytes
//! between the memory of a Linux process waiting in its call and another
//! Linux process's, straight from frame to frame (one copy).
//!
//! The kernel knows nothing of Linux's credentials: the personality's
//! shared server decides who may reach whom (ptrace's real-id rule), and
//! the kernel lets a holder name only processes it serves
//! (`supervise::serves_process`): the waiting caller through the call it
//! holds, the target by its pid. A supervisor serves its own process
//! alone and a Linux process makes no kernel call of this kind, so only
//! the shared server, the supervisors' parent, can join two spaces.
//!
//! Each piece (never across a page of either side) is paged in, then
//! copied under both spaces' locks after `memory_of` found them still
//! the two processes' memory: a target that ends, unmaps or faults on
//! another CPU meanwhile makes the copy stop short at that piece, never
//! reach a frame it no longer holds.

use crate::process::{self as proc, Process};
use crate::supervise;
use abi::Error;
use kcore::uaccess::UserRange;

const PAGE: u64 = 4096;

/// `caller_vm_copy`, for `holder`: checks that it serves both processes,
/// then `copy`.
pub fn caller_vm_copy(
    holder: &Process,
    rid: u64,
    target: u64,
    (local, remote, len): (u64, u64, u64),
    to_target: bool,
) -> Result<u64, Error> {
    if len > abi::linux::VM_COPY_MAX {
        return Err(Error::Invalid);
    }
    let caller = supervise::waiting(holder, rid)?;
    let t = proc::get(target).ok_or(Error::NotFound)?;
    if !supervise::serves_process(holder.pid(), &t) {
        return Err(Error::Denied);
    }
    if t.has_exited() {
        return Err(Error::NotFound);
    }
    Ok(copy((caller.pid(), local), (target, remote), len as usize, to_target))
}

/// `linux_process`: the live process `supervisor` supervises as Linux
/// pid `linux_pid`, if `holder` serves it. One look at every process: the
/// shared server asks only for a forked child that has not told it its
/// Tessera pid yet.
pub fn linux_process(holder: &Process, supervisor: u64, linux_pid: u64) -> Result<u64, Error> {
    for pid in proc::pids()? {
        let Some(p) = proc::get(pid) else { continue };
        let named =
            matches!(p.route(), proc::Route::Linux { supervisor: s, pid: l } if s == supervisor && l == linux_pid);
        if named && !p.has_exited() && supervise::serves_process(holder.pid(), &p) {
            return Ok(pid);
        }
    }
    Err(Error::NotFound)
}

/// Copies up to `len` bytes between `mine` (pid, address) and `other`'s
/// memory, into `other` if `to_other`: returns how many were copied
/// before the first piece that could not be (an address outside user
/// space, a page unmapped or without the access, a process gone).
pub fn copy(mine: (u64, u64), other: (u64, u64), len: usize, to_other: bool) -> u64 {
    let mut done = 0usize;
    while done < len {
        let (l, r) = (mine.1.wrapping_add(done as u64), other.1.wrapping_add(done as u64));
        let n = ((PAGE - (l % PAGE).max(r % PAGE)) as usize).min(len - done);
        if piece((mine.0, l), (other.0, r), n, to_other).is_err() {
            break;
        }
        done += n;
    }
    done as u64
}

/// One piece of `copy`, inside one page on each side.
fn piece(mine: (u64, u64), other: (u64, u64), n: usize, to_other: bool) -> Result<(), Error> {
    let (l, r) = (UserRange::new(mine.1, n)?, UserRange::new(other.1, n)?);
    proc::page_in_range(mine.0, mine.1, n)?;
    proc::page_in_range(other.0, other.1, n)?;
    let (from, to) = if to_other {
        ((mine.0, l), (other.0, r))
    } else {
        ((other.0, r), (mine.0, l))
    };
    if from.0 != to.0 {
        return proc::copy_between(from, to, n);
    }
    // A process reaching its own memory (pid as its own target): one
    // space, through a small buffer, a second copy.
    let mut buf = [0u8; 256];
    let mut done = 0;
    while done < n {
        let k = (n - done).min(buf.len());
        proc::read_user_of(from.0, from.1.part(done, k)?, &mut buf[..k])?;
        proc::write_user_of(to.0, to.1.part(done, k)?, &buf[..k])?;
        done += k;
    }
    Ok(())
}
