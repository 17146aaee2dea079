//! Process (Tender's プロセス) as a resource. The table is the process table
//! of the IPC layer, keyed by pid; a process's identifier is (process, pid),
//! and pids are never reused, so a stale or forged identifier finds
//! nothing. Composing one from its parts is `proc::create`; these are the
//! mediator's operations on it.

use super::mediator::{Need, invoke, only};
use super::{Kind, ResId, Resource};
use crate::proc::Terms;
use abi::{Error, ResInfo, ResOp};
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
    if caller != super::KERNEL && !p.answers_to(caller) {
        return Err(Error::Denied);
    }
    Ok(p)
}

/// Composes a process of a program, a space with the program's regions
/// attached and a work area (`res_create(Process, ..)`); the parts become
/// the process's, and `parent` its parent when the kernel composes it (a
/// process composing one is its parent). It does not run until `start`.
pub fn create(caller: u64, program: ResId, space: ResId, work_area: ResId, terms: Terms) -> Result<ResId, Error> {
    // Every part is the caller's own: the process owns them from now on,
    // and a process composed by a process is taken apart at its end.
    let ids = [
        (program, Need::Owned(Kind::Program)),
        (space, Need::Owned(Kind::VirtualSpace)),
        (work_area, Need::Owned(Kind::VirtualKernelSpace)),
    ];
    invoke(caller, ResOp::CreateProcess, ids, || {
        let p = crate::proc::create(caller, program, space, work_area, terms)?;
        Ok(id_of(p.pid()))
    })
}

/// Lets a composed process run (`process_start`).
pub fn start(caller: u64, process: ResId) -> Result<(), Error> {
    let ids = only(process, Need::Owned(Kind::Process));
    invoke(caller, ResOp::StartProcess, ids, || crate::proc::start(caller, process))
}

/// Processes end by exit or kill, not by deletion.
pub struct Processes;

impl Resource for Processes {
    /// Any process may be named; only the kernel, the process itself and
    /// its parent may change it.
    fn check(&self, caller: u64, id: ResId, change: bool) -> Result<(), Error> {
        if change {
            get(caller, id).map(drop)
        } else {
            proc::get(pid_of(id)?).map(drop).ok_or(Error::NotFound)
        }
    }

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        let p = proc::get(pid_of(id)?).ok_or(Error::NotFound)?;
        let comp = p.computation_id().unwrap_or(ResId::NONE);
        let bytes = p.resident_pages() * 4096;
        Ok(super::info(
            id,
            p.parent(),
            bytes,
            p.pid(),
            [p.program(), p.space_id(), comp],
        ))
    }

    fn delete(&self, _: u64, id: ResId) -> Result<(), Error> {
        self.check(super::KERNEL, id, false)?;
        Err(Error::Denied)
    }

    fn count(&self) -> usize {
        proc::count()
    }
}
