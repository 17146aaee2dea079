//! Processes as compositions of resources: composing one (`create`, and
//! `spawn` for the whole of it from a program's name), starting it, and at
//! its end giving its parts back to the pool or deleting them. The process
//! itself, while it lives, is the IPC layer's (`ipc::process`).

pub mod off2f;
pub mod program;
pub mod spawn;

use crate::{ResId, Resource};
use abi::{Error, LoadPolicy};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use ipc::process::{self as p, Process};
use kcore::arch::x86_64::trap::TrapFrame;

pub use ipc::process::{KERNEL_PID, current, get, kill, wait, with_current};

/// The hooks through which the IPC layer's processes reach this one.
pub fn hooks() -> p::Hooks {
    p::Hooks {
        first_entry,
        end: end_resources,
        end_computation,
    }
}

/// One of a process's computations beyond its first ended: its resource
/// goes (the scheduler frees the rest once it is off its CPU).
fn end_computation(id: ResId) {
    let _ = crate::mediator::delete(crate::KERNEL, id);
}

/// First entry of a new process: its arguments go from the work area onto
/// its stack, and the work area goes back.
fn first_entry(p: &Process, frame: &mut TrapFrame) -> bool {
    let forked = p.take_start_regs();
    if let Some(regs) = &forked {
        // A forked Linux process starts where its parent was, with its
        // parent's registers and thread pointer.
        ipc::supervise::set_frame(frame, regs);
        if let Some(c) = sched::current() {
            c.set_fs_base(regs.fs_base);
        }
    }
    let Some(area) = p.take_work_area() else {
        return true;
    };
    if forked.is_some() {
        spawn::release_work_area(area, p.kernel_composed());
        return true;
    }
    let push = |frame: &mut TrapFrame| match p.route() {
        p::Route::Native => spawn::push_arguments(area, frame),
        p::Route::Linux { .. } => spawn::push_linux_stack(area, frame, p.program()),
    };
    // Its stack's pages come by faults of the kernel's own copies, which
    // do not empty the pool (a system call's copy may hold locks); here
    // none is held, so the pool gives memory back and it tries once more.
    let mut r = push(frame);
    if r.is_err() && crate::pool::flush() > 0 {
        r = push(frame);
    }
    spawn::release_work_area(area, p.kernel_composed());
    r.is_ok()
}

/// Gives up a process's resources: its parts go to the pool or are
/// deleted, its computation is deleted, and whatever else it owned goes.
fn end_resources(p: &Process) {
    if let Some((region, link)) = ipc::rings::take(p) {
        let _ = crate::vspace::detach(crate::KERNEL, link);
        let _ = crate::vregion::Regions.delete(crate::KERNEL, region);
    }
    // Its containers first: their memory is attached to its space, which
    // must be bare of them before it goes to the pool or is deleted. The
    // mark comes before the look at what it made, and a move marks it a
    // maker before it looks at the mark (see `Process::accept_resource`):
    // either the move sees the mark and refuses, or this sees the container.
    if p.mark_ending() {
        // A driver's devices before anything: they must stop (no more DMA)
        // before its memory, their DMA buffers among it, is freed.
        crate::device::Devices.release_owned_by(p.pid());
        crate::container::Containers.release_owned_by(p.pid());
    }
    crate::pipe::release_bindings(p.pid());
    spawn::decompose(p);
    if let Some(id) = p.computation_id() {
        let _ = crate::mediator::delete(crate::KERNEL, id);
    }
    // Scanning every table costs time proportional to the resources alive
    // (the pool holds many); most processes never made any of their own.
    if p.made_resources() {
        crate::release_owned_by(p.pid());
    }
}

/// Composes a process (not yet running) from a program, a virtual space
/// with the program's regions attached, and a work area holding its name
/// and arguments. The parts become the new process's.
/// How a process is composed beyond its parts: its loading policy, the
/// pid that may wait for it (the kernel's choice: a process composing one
/// is its parent), where its calls go, and the limit of the kernel memory
/// it may cause (0: its creator's).
pub struct Terms {
    pub policy: LoadPolicy,
    pub parent: u64,
    pub route: p::Route,
    pub kernel_limit: u64,
    /// The space is process `lender`'s, lent to this one: it stays its
    /// lender's resource (a Linux vfork child's, `spawn::vfork`; 0: none).
    pub lender: u64,
}

/// What a process costs its creator in kernel memory while it exists: its
/// records and its computation's kernel stack.
const PROCESS_COST: u64 = (core::mem::size_of::<Process>() + core::mem::size_of::<kcore::computation::Computation>())
    as u64
    + kcore::mm::stack::DEFAULT_PAGES * 4096
    + 1024;

/// The heap a new process's records take.
const PROCESS_RECORDS: usize =
    core::mem::size_of::<Process>() + core::mem::size_of::<kcore::computation::Computation>() + 1024;

pub fn create(
    caller: u64,
    program: ResId,
    space_id: ResId,
    work_area: ResId,
    terms: Terms,
) -> Result<Arc<Process>, Error> {
    // The process's records (its account, port, computation, their
    // counters) have no fallible allocation: the heap's check, for all
    // of them at once.
    let records = core::alloc::Layout::from_size_align(PROCESS_RECORDS, 16).map_err(|_| Error::Invalid)?;
    if !kcore::mm::heap::room_for(records) {
        return Err(Error::NoMemory);
    }
    let prog = crate::program::get(program)?;
    let space = crate::vspace::get(caller, space_id)?;
    let kernel_composed = caller == crate::KERNEL;
    let parent = if kernel_composed { terms.parent } else { caller };
    // Its account is a child of its creator's; the kernel's own processes
    // (init, what the kernel's tests start) get one of their own.
    let (account, cost) = match p::get(parent) {
        Some(creator) => (
            kcore::mm::quota::Account::child(creator.account(), terms.kernel_limit),
            ipc::process::charge(parent, PROCESS_COST)?,
        ),
        None => (
            kcore::mm::quota::Account::root(match terms.kernel_limit {
                0 => p::default_kernel_limit(),
                limit => limit,
            }),
            kcore::mm::quota::Charge::NONE,
        ),
    };
    // Room for the record first: once made, the process holds its space.
    if !kcore::mm::heap::room_for(core::alloc::Layout::new::<(usize, usize, Process)>()) {
        return Err(Error::NoMemory);
    }
    let p = Arc::new(Process::new(p::Parts {
        name: prog.name.clone(),
        parent,
        policy: terms.policy,
        program,
        plate: prog.plate,
        space_id,
        space,
        work_area,
        entry: prog.entry,
        route: terms.route,
        kernel_composed,
        account,
        cost,
        lender: terms.lender,
    })?);
    let pid = p.pid();
    // A program the kernel composed with stays the kernel's (it goes back
    // to the pool, and must be there whole); one a process made is its own.
    let handed: &[ResId] = if terms.lender != 0 {
        &[work_area]
    } else if kernel_composed {
        &[space_id, work_area]
    } else {
        &[program, space_id, work_area]
    };
    for &id in handed {
        crate::set_owner(id, pid);
    }
    p::insert(p.clone());
    Ok(p)
}

/// Lets a composed process run: its computation joins a run queue.
pub fn start(caller: u64, id: ResId) -> Result<(), Error> {
    let p = crate::process::get(caller, id)?;
    let c = p.computation().ok_or(Error::Invalid)?;
    if *c.state.lock() != kcore::computation::State::Runnable
        || c.on_cpu.load(Ordering::Relaxed)
        || c.started.swap(true, Ordering::AcqRel)
    {
        return Err(Error::Busy);
    }
    sched::enqueue(c);
    Ok(())
}

/// Undoes a process that was composed but never ran.
pub fn abandon(pid: u64) {
    if let Some(p) = p::remove(pid) {
        p::end(&p);
    }
}
