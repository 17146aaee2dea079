//! Program (Tender's プログラム): the entry point and the loadable segments
//! (text, data, BSS sizes and addresses) of an executable plate, made once
//! and shared by every process that runs it. Pooled per plate (pool kind 4).

use super::{Entry, Kind, ResId, ResTable, table};
use crate::proc::program::Program;
use abi::{Error, ResInfo};
use alloc::sync::Arc;
use kcore::sync::IrqMutex;

static TABLE: IrqMutex<ResTable<Arc<Program>>> = IrqMutex::new(table(Kind::Program));

pub fn create(owner: u64, plate: ResId) -> Result<ResId, Error> {
    let (data, name) = super::plate::get(plate)?;
    let short = alloc::string::String::from(name.rsplit('/').next().unwrap_or(&name));
    let program = crate::proc::program::parse(data, plate, short)?;
    super::insert(&mut TABLE.lock(), owner, Arc::new(program))
}

pub fn get(id: ResId) -> Result<Arc<Program>, Error> {
    TABLE.lock().get(id).map(|e| e.value.clone()).map_err(super::id_error)
}

pub fn check(id: ResId) -> Result<(), Error> {
    TABLE.lock().check(id).map_err(super::id_error)
}

/// Deletes a program no process uses (the table's is the only reference).
pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    let mut t = TABLE.lock();
    let e = super::owned(&t, id, caller)?;
    if Arc::strong_count(&e.value) > 1 {
        return Err(Error::Busy);
    }
    t.remove(id).map(|_| ()).map_err(super::id_error)
}

pub fn query(id: ResId) -> Result<ResInfo, Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    Ok(super::info(
        id,
        e.owner,
        0,
        e.value.entry,
        [e.value.plate, ResId::NONE, ResId::NONE],
    ))
}

pub fn count() -> usize {
    TABLE.lock().len()
}

pub fn list(f: &mut dyn FnMut(ResId, &Entry<Arc<Program>>)) {
    for (id, e) in TABLE.lock().iter() {
        f(id, e);
    }
}

pub fn set_owner(id: ResId, owner: u64) {
    super::give(&mut TABLE.lock(), id, owner);
}

pub fn release_owned_by(pid: u64) {
    let ids = super::ids_owned_by(&TABLE.lock(), pid);
    for id in ids {
        let _ = delete(super::KERNEL, id);
    }
}
