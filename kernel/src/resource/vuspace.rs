//! Virtual user space (Tender's 仮想ユーザ空間): a virtual region attached
//! to a virtual space at a user address. Creating one attaches, deleting
//! it detaches; the region and the space live on independently.

use super::vregion::{self, Place};
use super::{Kind, ResId, ResTable, table, vspace};
use crate::sync::IrqMutex;
use abi::{Error, ResInfo};
use alloc::vec::Vec;

pub struct Link {
    pub space: ResId,
    pub region: ResId,
    pub base: u64,
}

static TABLE: IrqMutex<ResTable<Link>> = IrqMutex::new(table(Kind::VirtualUserSpace));

/// Attaches `region` to `space` at `base`.
pub fn create(caller: u64, space: ResId, region: ResId, base: u64) -> Result<ResId, Error> {
    attach(caller, space, region, base).map(|(link, _)| link)
}

/// `create`, returning also the slot the attachment took in the space
/// (for whoever keeps it, so as to find the attachment in one step).
pub fn attach(caller: u64, space: ResId, region: ResId, base: u64) -> Result<(ResId, usize), Error> {
    let space_ref = vspace::get(caller, space)?;
    vregion::check(region, caller)?;
    let r = vregion::take(caller, region)?;
    let link = match super::insert(&mut TABLE.lock(), caller, Link { space, region, base }) {
        Ok(id) => id,
        Err(e) => {
            vregion::put_back(region, r);
            return Err(e);
        }
    };
    let attached = space_ref.lock().attach(base, r, region, link);
    match attached {
        Ok(slot) => {
            vregion::placed(region, Place::InSpace { space, link });
            Ok((link, slot))
        }
        Err((e, r)) => {
            vregion::put_back(region, r);
            let _ = TABLE.lock().remove(link);
            Err(match e {
                crate::vm::space::SpaceError::OutOfMemory => Error::NoMemory,
                crate::vm::space::SpaceError::BadRange => Error::Invalid,
            })
        }
    }
}

/// Detaches: the region goes back to its table entry, detached.
pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    let (space, region) = {
        let t = TABLE.lock();
        let e = super::owned(&t, id, caller)?;
        (e.value.space, e.value.region)
    };
    let space_ref = vspace::get(super::KERNEL, space)?;
    let attached = space_ref.lock().detach(id);
    if let Some(a) = attached {
        vregion::put_back(region, a.region);
    }
    TABLE.lock().remove(id).map(|_| ()).map_err(super::id_error)
}

/// Detaches everything attached to `space`.
pub fn detach_all(space: ResId) {
    let links: Vec<ResId> = TABLE
        .lock()
        .iter()
        .filter(|(_, e)| e.value.space == space)
        .map(|(id, _)| id)
        .collect();
    for id in links {
        let _ = delete(super::KERNEL, id);
    }
}

/// The attachments of `space`: (link, region) pairs, read from the space
/// itself (its own short list), not by scanning every attachment there is.
pub fn of_space(space: ResId) -> Vec<(ResId, ResId)> {
    vspace::get(super::KERNEL, space)
        .map(|s| s.lock().regions().map(|a| (a.link_id, a.region_id)).collect())
        .unwrap_or_default()
}

/// Records that attachment `id` now lies in `space` at `base` (after a
/// move, which runs with interrupts off).
#[inline(always)]
pub fn relink(id: ResId, space: ResId, base: u64, owner: u64) {
    if let Ok(e) = TABLE.lock_irqs_off().get_mut(id) {
        e.owner = owner;
        e.value.space = space;
        e.value.base = base;
    }
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
        0,
        e.value.base,
        [e.value.space, e.value.region, ResId::NONE],
    ))
}

pub fn count() -> usize {
    TABLE.lock().len()
}

pub fn list(f: &mut dyn FnMut(ResId, u64, &Link)) {
    for (id, e) in TABLE.lock().iter() {
        f(id, e.owner, &e.value);
    }
}

pub fn release_owned_by(pid: u64) {
    let ids = super::ids_owned_by(&TABLE.lock(), pid);
    for id in ids {
        let _ = delete(super::KERNEL, id);
    }
}
