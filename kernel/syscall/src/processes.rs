//! Process system calls: spawning, killing and placing processes, what
//! they report about themselves, and their anonymous memory (`map`,
//! `unmap`).

use crate::{MAX_TEXT, system};
use abi::{Error, call};
use core::sync::atomic::Ordering;
use ipc::process as proc;
use kcore::{cpu, uaccess};
use resource::{mediator, vregion, vspace};

pub fn sys_spawn(me: &proc::Process, a: call::Spawn) -> Result<u64, Error> {
    let path = uaccess::read_text(a.path, MAX_TEXT)?;
    let args = uaccess::read_arg_bytes(a.args, MAX_TEXT)?;
    let options = uaccess::read_in_or(a.options, abi::SpawnOptions::DEFAULT)?;
    // A process passes on only rights it holds.
    if !me.holds_rights(options.rights) {
        return Err(Error::Denied);
    }
    resource::proc::spawn::spawn(&path, &args, &options, me.pid())
}

pub fn sys_kill(me: &proc::Process, a: call::Kill) -> Result<u64, Error> {
    let target = proc::get(a.pid).ok_or(Error::NotFound)?;
    // A process ends itself and its children; the holder of the system
    // right any process (the administrator ends a hung server, which its
    // keeper then starts again).
    if !target.answers_to(me.pid()) {
        system(me)?;
    }
    proc::kill_by(a.pid, me.pid()).map(|_| 0)
}

pub fn sys_set_affinity(me: &proc::Process, a: call::SetAffinity) -> Result<u64, Error> {
    let pid = if a.pid == 0 { me.pid() } else { a.pid };
    let target = proc::get(pid).ok_or(Error::NotFound)?;
    // A process places itself and its children; the holder of the system
    // right places any process (the shell moves the servers init started).
    if !target.answers_to(me.pid()) {
        system(me)?;
    }
    let cpu = match a.cpu {
        abi::ANY_CPU => kcore::computation::ANY_CPU,
        c if (c as usize) < cpu::online_count() => c as usize,
        _ => return Err(Error::Invalid),
    };
    let comp = target.computation().ok_or(Error::NotFound)?;
    comp.affinity.store(cpu, Ordering::Relaxed);
    drop(comp);
    drop(target);
    if pid == me.pid() && cpu != kcore::computation::ANY_CPU && cpu != cpu::this_cpu().index {
        // Move now: give up the CPU; the next enqueue honours the pin.
        sched::schedule();
    }
    Ok(0)
}

pub fn sys_proc_info(me: &proc::Process, a: call::ProcInfo) -> Result<u64, Error> {
    let pid = if a.pid == 0 { me.pid() } else { a.pid };
    let info = proc_info(pid)?;
    uaccess::write_out(a.out, &info)?;
    Ok(0)
}

/// Only the state: `proc_info` counts the resident pages of every region,
/// which for a server's heap arena is tens of thousands of instructions,
/// and whether a process lives is asked at every fork (pooled supervisors).
pub fn sys_proc_state(me: &proc::Process, a: call::ProcState) -> Result<u64, Error> {
    let pid = if a.pid == 0 { me.pid() } else { a.pid };
    let p = proc::get(pid).ok_or(Error::NotFound)?;
    Ok(state_of(&p, p.computation().as_deref()))
}

/// A process's state as `ProcInfo::state` gives it.
fn state_of(p: &proc::Process, comp: Option<&kcore::computation::Computation>) -> u64 {
    if p.exit_status().is_some() {
        return abi::state::EXITED;
    }
    match comp.map(|c| (c, *c.state.lock())) {
        Some((_, kcore::computation::State::Running)) => abi::state::RUNNING,
        Some((_, kcore::computation::State::Runnable)) => abi::state::RUNNABLE,
        Some((c, kcore::computation::State::Blocked)) if p.waits_for_calls(c) => abi::state::WAITING,
        Some((_, kcore::computation::State::Blocked)) => abi::state::BLOCKED,
        Some((_, kcore::computation::State::Dead)) | None => abi::state::EXITED,
    }
}

pub fn sys_proc_list(a: call::ProcList) -> Result<u64, Error> {
    let out = uaccess::UserRange::of_list(a.out)?;
    let pids = proc::pids()?;
    let n = pids.len().min(a.out.count as usize);
    uaccess::write_list(out.addr(), &pids[..n])?;
    Ok(pids.len() as u64)
}

/// `wait`, then what the child was at its end (the out record is written
/// once before the wait, so that a bad buffer loses no exit status).
pub fn sys_wait_info(me: &proc::Process, a: call::WaitInfo) -> Result<u64, Error> {
    let p = proc::get(a.pid).ok_or(Error::NotFound)?;
    uaccess::write_out(a.out, &abi::ProcInfo::default())?;
    let status = proc::wait(me.pid(), a.pid)?;
    uaccess::write_out(a.out, &info_of(&p))?;
    Ok(status)
}

fn proc_info(pid: u64) -> Result<abi::ProcInfo, Error> {
    Ok(info_of(&*proc::get(pid).ok_or(Error::NotFound)?))
}

fn info_of(p: &proc::Process) -> abi::ProcInfo {
    let comp = p.computation();
    let exit = p.exit_status();
    let mut info = abi::ProcInfo {
        pid: p.pid(),
        parent: p.parent(),
        policy: p.policy() as u64,
        faults: p.faults(),
        resident_pages: p.resident_pages(),
        exit_status: exit.unwrap_or(0),
        kernel_bytes: p.account().used(),
        kernel_limit: p.account().limit(),
        ..abi::ProcInfo::default()
    };
    info.state = state_of(p, comp.as_deref());
    if let Some(c) = comp {
        info.cpu = c.last_cpu.load(Ordering::Relaxed) as u64;
        let aff = c.affinity.load(Ordering::Relaxed);
        info.affinity = if aff == kcore::computation::ANY_CPU {
            abi::ANY_CPU
        } else {
            aff as u64
        };
        info.cpu_ns = kcore::clock::cycles_to_ns(sched::cycles_of(&c));
    }
    let n = p.name().len().min(info.name.len());
    info.name[..n].copy_from_slice(&p.name().as_bytes()[..n]);
    info
}

/// Anonymous memory: a region created and attached through the mediator
/// at the first free place, paged in at first touch.
pub fn map_anonymous(me: &proc::Process, len: u64, prot: u64) -> Result<u64, Error> {
    use kcore::mm::layout::PAGE_SIZE;
    if len == 0 || len > (1 << 36) || prot & !(abi::prot::READ | abi::prot::WRITE | abi::prot::EXEC) != 0 {
        return Err(Error::Invalid);
    }
    let (writable, executable) = (prot & abi::prot::WRITE != 0, prot & abi::prot::EXEC != 0);
    let pages = len.div_ceil(PAGE_SIZE);
    let region = vregion::create(me.pid(), abi::RegionKind::Heap, pages, writable, executable)?;
    match vspace::attach(me.pid(), me.space_id(), region, me.free_place()) {
        Ok(a) => Ok(a.base),
        Err(e) => {
            let _ = mediator::delete(me.pid(), region);
            Err(e)
        }
    }
}

pub fn sys_unmap(me: &proc::Process, a: call::Unmap) -> Result<u64, Error> {
    let space = me.space().ok_or(Error::Denied)?;
    let found = space
        .lock()
        .region_at(a.addr)
        .filter(|r| r.base == a.addr && r.region.kind == kcore::vm::region::Kind::Heap)
        .map(|r| (r.link_id, r.region_id));
    let (link, region) = found.ok_or(Error::Invalid)?;
    mediator::delete(me.pid(), link)?;
    mediator::delete(me.pid(), region)?;
    Ok(0)
}
