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
    };
    let comp = Computation::new_user(start).map_err(|_| Error::NoMemory)?;
    let id = super::insert(&mut TABLE.lock(), p.pid(), comp.clone())?;
    p.set_computation(id, &comp);
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
