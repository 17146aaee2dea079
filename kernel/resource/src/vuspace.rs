//! Virtual user space (Tender's 仮想ユーザ空間): a virtual region attached
//! to a virtual space at a user address. Creating one attaches, deleting
//! it detaches; the region and the space live on independently.
//!
//! A container's attachment is *held* by the container: it belongs to the
//! kernel, nobody deletes it but the container, and where it lies (space,
//! address, process) is the container's to say. Its record is therefore
//! not rewritten when the container moves to another process (AnT's ICA
//! move, the step a message exchange repeats); a query reads it through
//! the container.

use super::container::Whereabouts;
use super::vregion::{self, Place};
use super::{Kind, ResId, ResTable, table, vspace};
use abi::{Error, ResInfo};
use alloc::vec::Vec;
use kcore::sync::IrqMutex;

#[derive(Clone, Copy)]
pub struct Link {
    /// The space (and `base` the address) it was attached at; for a held
    /// attachment, where it was first attached (`place_of` says where it
    /// is now).
    pub space: ResId,
    pub region: ResId,
    pub base: u64,
    /// The container that holds it, or `ResId::NONE`.
    pub container: ResId,
}

impl Link {
    fn held(&self) -> bool {
        self.container != ResId::NONE
    }
}

/// Where attachment `id` (of `owner`) lies: its record's own fields, or
/// for a held one what its container says (read without this table's lock
/// held: the container's comes first in every other order).
fn place_of(id: ResId, owner: u64, l: &Link) -> Whereabouts {
    if l.held()
        && let Some(w) = super::container::whereabouts(l.container)
    {
        return w;
    }
    Whereabouts {
        owner,
        space: l.space,
        link: id,
        base: l.base,
    }
}

static TABLE: IrqMutex<ResTable<Link>> = IrqMutex::new(table(Kind::VirtualUserSpace));

/// Attaches `region` to `space` at `base`.
pub fn create(caller: u64, space: ResId, region: ResId, base: u64) -> Result<ResId, Error> {
    attach(caller, space, region, base).map(|(link, _)| link)
}

/// `create`, returning also the slot the attachment took in the space
/// (for whoever keeps it, so as to find the attachment in one step).
pub fn attach(caller: u64, space: ResId, region: ResId, base: u64) -> Result<(ResId, usize), Error> {
    attach_as(caller, space, region, base, ResId::NONE)
}

/// Attaches the kernel's `region` (a container's memory) to `space` at
/// `base` for `container`, which holds the attachment from then on.
pub fn attach_held(container: ResId, space: ResId, region: ResId, base: u64) -> Result<(ResId, usize), Error> {
    attach_as(super::KERNEL, space, region, base, container)
}

fn attach_as(caller: u64, space: ResId, region: ResId, base: u64, container: ResId) -> Result<(ResId, usize), Error> {
    let space_ref = vspace::get(caller, space)?;
    vregion::check(region, caller)?;
    let r = vregion::take(caller, region)?;
    let record = Link {
        space,
        region,
        base,
        container,
    };
    let link = match super::insert(&mut TABLE.lock(), caller, record) {
        Ok(id) => id,
        Err(e) => {
            vregion::put_back(region, r);
            return Err(e);
        }
    };
    let attached = space_ref.lock().attach(base, r, region, link);
    match attached {
        Ok(slot) => {
            let place = if container == ResId::NONE {
                Place::InSpace { space, link }
            } else {
                Place::InContainer { container }
            };
            vregion::placed(region, place);
            Ok((link, slot))
        }
        Err((e, r)) => {
            vregion::put_back(region, r);
            let _ = TABLE.lock().remove(link);
            Err(match e {
                kcore::vm::space::SpaceError::OutOfMemory => Error::NoMemory,
                kcore::vm::space::SpaceError::BadRange => Error::Invalid,
            })
        }
    }
}

/// Detaches: the region goes back to its table entry, detached. A held
/// attachment goes only with its container (`release_held`).
pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    let (space, region) = {
        let t = TABLE.lock();
        let e = super::owned(&t, id, caller)?;
        if e.value.held() {
            return Err(Error::Busy);
        }
        (e.value.space, e.value.region)
    };
    let space_ref = vspace::get(super::KERNEL, space)?;
    let attached = space_ref.lock().detach(id);
    if let Some(a) = attached {
        vregion::put_back(region, a.region);
    }
    TABLE.lock().remove(id).map(|_| ()).map_err(super::id_error)
}

/// Detaches the container's held attachment `id` from `space`, where the
/// container says it lies; its region goes back to its entry, detached.
pub fn release_held(id: ResId, space: &vspace::SpaceRef) -> Result<(), Error> {
    let region = {
        let t = TABLE.lock();
        let e = t.get(id).map_err(super::id_error)?;
        if !e.value.held() {
            return Err(Error::Invalid);
        }
        e.value.region
    };
    if let Some(a) = space.lock().detach(id) {
        vregion::put_back(region, a.region);
    }
    TABLE.lock().remove(id).map(|_| ()).map_err(super::id_error)
}

/// Detaches everything attached to `space` (but what containers hold:
/// they go with their containers).
pub fn detach_all(space: ResId) {
    let links: Vec<ResId> = TABLE
        .lock()
        .iter()
        .filter(|(_, e)| e.value.space == space && !e.value.held())
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

/// Hands a plain attachment to `owner` (a held one stays the kernel's).
pub fn set_owner(id: ResId, owner: u64) {
    let mut t = TABLE.lock();
    if t.get(id).is_ok_and(|e| !e.value.held()) {
        super::give(&mut t, id, owner);
    }
}

/// Owner, address and [space, region, holding container] of an
/// attachment; a held one's as its container says.
pub fn query(id: ResId) -> Result<ResInfo, Error> {
    let (owner, link) = {
        let t = TABLE.lock();
        let e = t.get(id).map_err(super::id_error)?;
        (e.owner, e.value)
    };
    let w = place_of(id, owner, &link);
    Ok(super::info(
        id,
        w.owner,
        0,
        w.base,
        [w.space, link.region, link.container],
    ))
}

pub fn count() -> usize {
    TABLE.lock().len()
}

/// Every attachment with its owner, space and address (a held one's as
/// its container says).
pub fn list(f: &mut dyn FnMut(ResId, &Link, Whereabouts)) {
    let all: Vec<(ResId, u64, Link)> = TABLE.lock().iter().map(|(id, e)| (id, e.owner, e.value)).collect();
    for (id, owner, l) in all {
        let w = place_of(id, owner, &l);
        f(id, &l, w);
    }
}

pub fn release_owned_by(pid: u64) {
    let ids = super::ids_owned_by(&TABLE.lock(), pid);
    for id in ids {
        let _ = delete(super::KERNEL, id);
    }
}
