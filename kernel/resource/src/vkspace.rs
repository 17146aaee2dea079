//! Virtual kernel space (Tender's 仮想カーネル空間): a virtual region attached
//! in the kernel, reachable by kernel code only. Its use today is the 4 KiB
//! work area (ワーク領域) that carries a new process's name and arguments
//! (pool kind 1). Kernel spaces are one page, reached through the direct
//! map; larger ones come with the IPC layer.

use super::vregion::{self, Place};
use super::{Kind, ResId, ResTable, table};
use abi::{Error, ResInfo};
use alloc::vec::Vec;
use kcore::mm::layout::PAGE_SIZE;
use kcore::sync::IrqMutex;
use kcore::vm::region::Region;

pub struct KernelLink {
    region_id: ResId,
    region: Region,
    /// Bytes of the page in use.
    len: usize,
}

static TABLE: IrqMutex<ResTable<KernelLink>> = IrqMutex::new(table(Kind::VirtualKernelSpace));

pub fn create(caller: u64, region_id: ResId) -> Result<ResId, Error> {
    let mut region = vregion::take(caller, region_id)?;
    if region.pages() != 1 {
        vregion::put_back(region_id, region);
        return Err(Error::Invalid);
    }
    if region.populate(0).is_err() {
        vregion::put_back(region_id, region);
        return Err(Error::NoMemory);
    }
    let link = KernelLink {
        region_id,
        region,
        len: 0,
    };
    match TABLE.lock().insert(super::Entry {
        owner: caller,
        value: link,
    }) {
        Ok(id) => {
            vregion::placed(region_id, Place::InKernel { link: id });
            Ok(id)
        }
        Err((e, entry)) => {
            vregion::put_back(region_id, entry.value.region);
            Err(super::id_error(e))
        }
    }
}

pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    let mut t = TABLE.lock();
    super::owned(&t, id, caller)?;
    let link = t.remove(id).map_err(super::id_error)?.value;
    drop(t);
    vregion::put_back(link.region_id, link.region);
    Ok(())
}

pub fn check(caller: u64, id: ResId) -> Result<(), Error> {
    super::owned(&TABLE.lock(), id, caller).map(|_| ())
}

/// Stores `parts` one after another in the work area.
pub fn write(caller: u64, id: ResId, parts: &[&[u8]]) -> Result<(), Error> {
    let mut t = TABLE.lock();
    let e = super::owned_mut(&mut t, id, caller)?;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    if total > PAGE_SIZE as usize {
        return Err(Error::Invalid);
    }
    let mut at = 0;
    for p in parts {
        // The page is present (populated at creation) and `total` fits.
        if !e.value.region.write_at(at, p) {
            return Err(Error::Invalid);
        }
        at += p.len();
    }
    e.value.len = total;
    Ok(())
}

/// Copies the work area's content out.
pub fn read(id: ResId) -> Result<Vec<u8>, Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    let mut v = Vec::new();
    v.try_reserve_exact(e.value.len).map_err(|_| Error::NoMemory)?;
    v.resize(e.value.len, 0);
    if !e.value.region.read_at(0, &mut v) {
        return Err(Error::Invalid);
    }
    Ok(v)
}

pub fn set_owner(id: ResId, owner: u64) {
    super::give(&mut TABLE.lock(), id, owner);
}

pub fn query(id: ResId) -> Result<ResInfo, Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    Ok(super::info(
        id,
        e.owner,
        PAGE_SIZE,
        e.value.len as u64,
        [e.value.region_id, ResId::NONE, ResId::NONE],
    ))
}

pub fn count() -> usize {
    TABLE.lock().len()
}

/// The region behind a kernel space (to delete both).
pub fn region_of(id: ResId) -> Option<ResId> {
    TABLE.lock().get(id).ok().map(|e| e.value.region_id)
}

pub fn release_owned_by(pid: u64) {
    let ids = super::ids_owned_by(&TABLE.lock(), pid);
    for id in ids {
        let _ = delete(super::KERNEL, id);
    }
}
