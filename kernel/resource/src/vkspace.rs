//! Virtual kernel space (Tender's 仮想カーネル空間): a virtual region attached
//! in the kernel, reachable by kernel code only. Its use today is the 4 KiB
//! work area (ワーク領域) that carries a new process's name and arguments
//! (pool kind 1). Kernel spaces are one page, reached through the direct
//! map; larger ones come with the IPC layer.

use super::mediator::{Need, invoke, only};
use super::vregion::{self, Place};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
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

/// Attaches a one-page region in the kernel
/// (`res_create(VirtualKernelSpace, region)`).
pub fn create(caller: u64, region: ResId) -> Result<ResId, Error> {
    let ids = only(region, Need::Owned(Kind::VirtualRegion));
    invoke(caller, ResOp::AttachKernel, ids, || attach(caller, region))
}

/// Stores a program's name and its arguments (NUL-separated) in a work
/// area, each string NUL-terminated (`work_area_write`).
pub fn write(caller: u64, area: ResId, name: &[u8], args: &[u8]) -> Result<(), Error> {
    invoke(
        caller,
        ResOp::WriteWorkArea,
        only(area, Need::Owned(Kind::VirtualKernelSpace)),
        || {
            let end: &[u8] = if args.is_empty() || args.ends_with(&[0]) {
                &[]
            } else {
                &[0]
            };
            store(caller, area, &[name, &[0], args, end])
        },
    )
}

fn attach(caller: u64, region_id: ResId) -> Result<ResId, Error> {
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
    let charge = match super::charge(caller, super::cost::<KernelLink>(0)) {
        Ok(c) => c,
        Err(e) => {
            vregion::put_back(region_id, link.region);
            return Err(e);
        }
    };
    match TABLE.lock().insert(super::Entry {
        owner: caller,
        value: link,
        charge,
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

/// Stores `parts` one after another in the work area.
fn store(caller: u64, id: ResId, parts: &[&[u8]]) -> Result<(), Error> {
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

pub struct KernelSpaces;

impl Resource for KernelSpaces {
    table_methods!(TABLE);

    /// Detaches: the region goes back to its entry, detached.
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        let link = super::remove_owned(&mut TABLE.lock(), id, caller)?.value;
        vregion::put_back(link.region_id, link.region);
        Ok(())
    }

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |k| {
            (PAGE_SIZE, k.len as u64, [k.region_id, ResId::NONE, ResId::NONE])
        })
    }

    /// Hands the kernel space, and its region, to `owner`.
    fn set_owner(&self, id: ResId, owner: u64) {
        super::give(&mut TABLE.lock(), id, owner);
        if let Some(r) = region_of(id) {
            super::of(Kind::VirtualRegion).set_owner(r, owner);
        }
    }
}

/// The region behind a kernel space (to delete both).
pub fn region_of(id: ResId) -> Option<ResId> {
    TABLE.lock().get(id).ok().map(|e| e.value.region_id)
}
