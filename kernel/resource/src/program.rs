//! Program (Tender's プログラム): the entry point and the loadable segments
//! (text, data, BSS sizes and addresses) of an executable plate, made once
//! and shared by every process that runs it. Pooled per plate (pool kind 4).

use super::mediator::{Need, invoke, only};
use super::{Entry, Kind, ResId, ResTable, Resource, table};
use crate::proc::program::Program;
use abi::{Error, ResInfo, ResOp, SegmentInfo};
use alloc::sync::Arc;
use kcore::sync::IrqMutex;

static TABLE: IrqMutex<ResTable<Arc<Program>>> = IrqMutex::new(table(Kind::Program));

/// Makes the program of an executable plate (`res_create(Program, plate)`).
pub fn create(caller: u64, plate: ResId) -> Result<ResId, Error> {
    invoke(
        caller,
        ResOp::CreateProgram,
        only(plate, Need::Live(Kind::Plate)),
        || {
            let (data, name) = super::plate::get(plate)?;
            let base = name.rsplit('/').next().unwrap_or(&name);
            let mut short = alloc::string::String::new();
            short.try_reserve_exact(base.len()).map_err(|_| Error::NoMemory)?;
            short.push_str(base);
            let pager = super::plate::pager_of(plate);
            let program = crate::proc::program::parse(data, plate, short, pager)?;
            let extra = core::mem::size_of::<Program>() + program.segments.len() * 48 + program.name.len();
            let charge = super::charge(caller, super::cost::<Arc<Program>>(extra as u64))?;
            let program = kcore::mm::heap::try_arc(program).map_err(|_| Error::NoMemory)?;
            super::insert_charged(&mut TABLE.lock(), caller, charge, program)
        },
    )
}

/// Frees the pages of programs' files the kernel caches that no region
/// maps (`PagedFile::drop_unmapped`): memory running short
/// (`pool::reclaim`). A later fault reads them again. Returns how many
/// pages went.
pub fn drop_page_caches() -> usize {
    TABLE
        .lock()
        .iter()
        .filter_map(|(_, e)| e.value.pager.as_ref())
        .map(|file| file.drop_unmapped())
        .sum()
}

/// Describes segment `index` of a program (`program_segment`).
pub fn segment(caller: u64, program: ResId, index: usize) -> Result<SegmentInfo, Error> {
    invoke(
        caller,
        ResOp::ProgramSegment,
        only(program, Need::Live(Kind::Program)),
        || {
            let prog = get(program)?;
            let s = prog.segments.get(index).ok_or(Error::NotFound)?;
            Ok(SegmentInfo {
                vaddr: s.vaddr,
                memsz: s.memsz,
                filesz: s.filesz,
                prot: abi::prot::READ
                    | if s.writable { abi::prot::WRITE } else { 0 }
                    | if s.executable { abi::prot::EXEC } else { 0 },
            })
        },
    )
}

pub fn get(id: ResId) -> Result<Arc<Program>, Error> {
    TABLE.lock().get(id).map(|e| e.value.clone()).map_err(super::id_error)
}

/// Programs are used by anyone (a process of another's program shares it).
pub struct Programs;

impl Resource for Programs {
    table_methods!(TABLE);

    /// Deletes a program no process uses (the table's is the only reference).
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        super::remove_unused(&mut TABLE.lock(), id, caller, |p| Arc::strong_count(p) > 1).map(drop)
    }

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |p| (0, p.entry, [p.plate, ResId::NONE, ResId::NONE]))
    }

    fn set_owner(&self, id: ResId, owner: u64) {
        super::give(&mut TABLE.lock(), id, owner);
    }
}

pub fn list(f: &mut dyn FnMut(ResId, &Entry<Arc<Program>>)) {
    for (id, e) in TABLE.lock().iter() {
        f(id, e);
    }
}
