//! Virtual space (Tender's 仮想空間): one address-translation table. The
//! object is shared (`SpaceRef`) between this table and the process running
//! in it, so page faults lock only their own space.

use super::{Kind, ResId, ResTable, table};
use abi::{Error, ResInfo};
use alloc::sync::Arc;
use kcore::sync::IrqMutex;
use kcore::vm::space::VirtualSpace;

pub use kcore::vm::space::SpaceRef;

static TABLE: IrqMutex<ResTable<SpaceRef>> = IrqMutex::new(table(Kind::VirtualSpace));

pub fn create(owner: u64) -> Result<ResId, Error> {
    let space = VirtualSpace::new().map_err(|_| Error::NoMemory)?;
    super::insert(&mut TABLE.lock(), owner, Arc::new(IrqMutex::new(space)))
}

pub fn get(caller: u64, id: ResId) -> Result<SpaceRef, Error> {
    super::owned(&TABLE.lock(), id, caller).map(|e| e.value.clone())
}

/// Deletes a space with nothing attached that no process uses.
pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    let space = {
        let mut t = TABLE.lock();
        let e = super::owned(&t, id, caller)?;
        if Arc::strong_count(&e.value) > 1 || e.value.lock().region_count() != 0 {
            return Err(Error::Busy);
        }
        t.remove(id).map_err(super::id_error)?
    };
    drop(space); // frees the page tables outside the table lock
    Ok(())
}

/// Memory a space holds: page tables plus resident pages of attached regions.
pub fn bytes(space: &VirtualSpace) -> u64 {
    (space.table_pages() + space.resident_pages()) as u64 * 4096
}

pub fn query(id: ResId) -> Result<ResInfo, Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    let s = e.value.lock();
    Ok(super::info(
        id,
        e.owner,
        bytes(&s),
        s.region_count() as u64,
        [ResId::NONE; 3],
    ))
}

pub fn count() -> usize {
    TABLE.lock().len()
}

pub fn list(f: &mut dyn FnMut(ResId, u64, usize, u64)) {
    for (id, e) in TABLE.lock().iter() {
        let s = e.value.lock();
        f(id, e.owner, s.region_count(), bytes(&s));
    }
}

pub fn set_owner(id: ResId, owner: u64) {
    super::give(&mut TABLE.lock(), id, owner);
}

pub fn release_owned_by(pid: u64) {
    let ids = super::ids_owned_by(&TABLE.lock(), pid);
    for id in ids {
        super::vuspace::detach_all(id);
        let _ = delete(super::KERNEL, id);
    }
}
