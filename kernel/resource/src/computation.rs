//! Computation (Tender's 演算) as a resource: a process runs by holding one.
//! The table holds a reference; the scheduler holds others while it runs.

use super::mediator::{Need, invoke, only};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
use alloc::sync::Arc;
use kcore::computation::{ANY_CPU, Computation, UserStart};
use kcore::owner::Owner;
use kcore::sync::IrqMutex;
use kcore::vm::USER_STACK_TOP;

static TABLE: IrqMutex<ResTable<Arc<Computation>>> = IrqMutex::new(table(Kind::Computation));

/// A computation for `process`, starting at its program's entry point, on
/// `cpu` or any (`res_create(Computation, process, cpu)`).
pub fn create(caller: u64, process: ResId, cpu: u64) -> Result<ResId, Error> {
    let ids = only(process, Need::Owned(Kind::Process));
    invoke(caller, ResOp::CreateComputation, ids, || make(caller, process, cpu))
}

fn make(caller: u64, process: ResId, cpu: u64) -> Result<ResId, Error> {
    let p = super::process::get(caller, process)?;
    if p.has_computation() {
        return Err(Error::Busy);
    }
    let affinity = match cpu {
        abi::ANY_CPU => ANY_CPU,
        c if (c as usize) < kcore::cpu::online_count() => c as usize,
        _ => return Err(Error::Invalid),
    };
    let start = UserStart {
        owner: Owner::new(&ipc::process::OWNER, p.clone()),
        user: p.user_space(),
        killed: p.kill_mark(),
        rip: p.entry(),
        rsp: USER_STACK_TOP,
        rdi: 0,
        rsi: 0,
        affinity,
        full_frame: matches!(p.route(), ipc::process::Route::Linux { .. }),
        regs: None,
        fs_base: 0,
    };
    let comp = Computation::new_user(start).map_err(|_| Error::NoMemory)?;
    comp.sigmask
        .store(p.linux_start_sigmask(), core::sync::atomic::Ordering::Relaxed);
    let id = super::insert(&mut TABLE.lock(), p.pid(), comp.clone())?;
    p.set_computation(id, &comp);
    Ok(id)
}

/// What a computation beyond a process's first costs the process's
/// account while it lives: its record, its kernel stack, a call object
/// (its calls to the supervisor) and its place in the lists.
pub const THREAD_COST: u64 =
    core::mem::size_of::<Computation>() as u64 + kcore::mm::stack::DEFAULT_PAGES * 4096 + ipc::call::CALL_COST + 256;

/// A computation beyond the first for process `p` (a Linux thread: Linux
/// tid `tid`), starting with registers `regs` and thread pointer
/// `fs_base`, its clear-tid word `clear_word`, signal mask `sigmask`;
/// started. Charged to the
/// process: `Limit` when its account is full, `NoMemory` when the kernel
/// is; `NotFound` once the process is ending.
pub fn create_thread(
    p: &Arc<ipc::process::Process>,
    regs: &abi::linux::Regs,
    tid: u64,
    clear_word: u64,
    sigmask: u64,
) -> Result<ResId, Error> {
    let record = core::alloc::Layout::from_size_align(THREAD_COST as usize, 16).map_err(|_| Error::Invalid)?;
    if !kcore::mm::heap::room_for(record) {
        return Err(Error::NoMemory);
    }
    let charge = kcore::mm::quota::Charge::on_own(p.account().clone(), THREAD_COST).map_err(|_| Error::Limit)?;
    let start = UserStart {
        owner: Owner::new(&ipc::process::OWNER, p.clone()),
        user: p.user_space(),
        killed: p.kill_mark(),
        rip: regs.rip,
        rsp: regs.rsp,
        rdi: 0,
        rsi: 0,
        affinity: ANY_CPU,
        full_frame: true,
        regs: Some(regs.general),
        fs_base: regs.fs_base,
    };
    let comp = Computation::new_user(start).map_err(|e| match e {
        kcore::mm::paging::MapError::NotCanonical => Error::Invalid,
        _ => Error::NoMemory,
    })?;
    comp.label.store(tid, core::sync::atomic::Ordering::Relaxed);
    comp.clear_word.store(clear_word, core::sync::atomic::Ordering::Relaxed);
    comp.sigmask.store(sigmask, core::sync::atomic::Ordering::Relaxed);
    let id = super::insert(&mut TABLE.lock(), p.pid(), comp.clone())?;
    let added = p.add_thread(ipc::process::Thread {
        id,
        comp: comp.clone(),
        charge,
    });
    if let Err(e) = added {
        let _ = super::mediator::delete(super::KERNEL, id);
        return Err(e);
    }
    comp.started.store(true, core::sync::atomic::Ordering::Release);
    sched::enqueue(comp);
    Ok(id)
}

pub struct Computations;

impl Resource for Computations {
    // Deleting drops the table's reference (the scheduler frees the rest
    // when the computation has finished running).
    table_methods!(TABLE, delete);

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |c| {
            let pid = c.owner(&ipc::process::OWNER).map_or(0, |p| p.pid());
            (kcore::mm::stack::DEFAULT_PAGES * 4096, pid, [ResId::NONE; 3])
        })
    }
}
