//! Process (Tender's プロセス) as a resource. The table is the process table
//! of `proc`, keyed by pid; a process's identifier is (process, pid), and
//! pids are never reused, so a stale or forged identifier finds nothing.

use super::{Kind, ResId};
use abi::{Error, ResInfo};
use alloc::sync::Arc;
use ipc::process::{self as proc, Process};

pub fn id_of(pid: u64) -> ResId {
    ResId::new(Kind::Process as u8, pid as u32, 1)
}

fn pid_of(id: ResId) -> Result<u64, Error> {
    if id.kind() != Kind::Process as u8 {
        return Err(Error::Invalid);
    }
    if id.generation() != 1 {
        return Err(Error::NotFound);
    }
    Ok(id.index() as u64)
}

/// The process, if `caller` is the kernel, the process itself or its parent.
pub fn get(caller: u64, id: ResId) -> Result<Arc<Process>, Error> {
    let p = proc::get(pid_of(id)?).ok_or(Error::NotFound)?;
    if caller != super::KERNEL && caller != p.pid && p.parent.load(core::sync::atomic::Ordering::Relaxed) != caller {
        return Err(Error::Denied);
    }
    Ok(p)
}

pub fn query(id: ResId) -> Result<ResInfo, Error> {
    let p = proc::get(pid_of(id)?).ok_or(Error::NotFound)?;
    let comp = p.computation.lock().as_ref().map_or(ResId::NONE, |c| c.0);
    let bytes = p.resident_pages() * 4096;
    Ok(super::info(
        id,
        p.parent.load(core::sync::atomic::Ordering::Relaxed),
        bytes,
        p.pid,
        [p.program, p.space_id, comp],
    ))
}

pub fn count() -> usize {
    proc::count()
}
