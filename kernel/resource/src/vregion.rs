//! Virtual region (Tender's 仮想領域): whole pages with a backing. While a
//! region is attached (to a space, or in the kernel) the attachment holds
//! the `Region` object and the table records where it is; detaching puts
//! it back. Its identifier stays valid through all of that.

use super::mediator::{NO_ID, NO_IDS, Need, invoke, only};
use super::{Kind, ResId, ResTable, Resource, table};
use crate::proc::program::Program;
use abi::{Error, ResInfo, ResOp};
use kcore::sync::IrqMutex;
use kcore::vm::region::{Backing, Kind as RegionKind, Region};

pub enum Place {
    Detached(Region),
    /// Attached to a virtual space by the attachment `link` (a VirtualUserSpace).
    InSpace {
        space: ResId,
        link: ResId,
    },
    /// Attached in the kernel by `link` (a VirtualKernelSpace).
    InKernel {
        link: ResId,
    },
    /// The memory of `container`, attached wherever the container lies
    /// (its attachment is held by it: see `vspace`).
    InContainer {
        container: ResId,
    },
    /// Being moved by an operation in progress.
    Moving,
}

pub struct RegionEntry {
    pub pages: usize,
    pub place: Place,
}

static TABLE: IrqMutex<ResTable<RegionEntry>> = IrqMutex::new(table(Kind::VirtualRegion));

/// Largest region one call may create (1 GiB).
const MAX_PAGES: u64 = 1 << 18;

/// A detached region of `pages` zero pages
/// (`res_create(VirtualRegion, pages, kind, prot)`).
pub fn create(caller: u64, kind: RegionKind, pages: u64, writable: bool, executable: bool) -> Result<ResId, Error> {
    create_paid(caller, caller, kind, pages, writable, executable)
}

/// A detached region the kernel makes for process `payer` (a Linux
/// mapping): the kernel's to attach, its list of frames charged to
/// `payer`, which caused it (a 1 GiB mapping's list is 2 MiB of kernel
/// heap).
pub fn create_for(payer: u64, kind: RegionKind, pages: u64, writable: bool, executable: bool) -> Result<ResId, Error> {
    create_paid(super::KERNEL, payer, kind, pages, writable, executable)
}

fn create_paid(
    caller: u64,
    payer: u64,
    kind: RegionKind,
    pages: u64,
    writable: bool,
    executable: bool,
) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreateRegion, NO_IDS, || {
        if pages == 0 || pages > MAX_PAGES {
            return Err(Error::Invalid);
        }
        // Its list of frames is 8 bytes a page, made now: charged first.
        let charge = super::charge(payer, super::cost::<RegionEntry>(pages * 8))?;
        let region =
            Region::new(kind, pages as usize, Backing::Zero, writable, executable).map_err(|_| Error::NoMemory)?;
        let entry = RegionEntry {
            pages: pages as usize,
            place: Place::Detached(region),
        };
        super::insert_charged(&mut TABLE.lock(), caller, charge, entry)
    })
}

/// Fills a detached region with segment `segment` of `program` (text or
/// data), every page present now with `populate` (eager loading):
/// Tender's load at creation (`res_load`).
pub fn load(caller: u64, region: ResId, program: ResId, segment: usize, populate: bool) -> Result<(), Error> {
    let ids = [
        (region, Need::Owned(Kind::VirtualRegion)),
        (program, Need::Live(Kind::Program)),
        NO_ID,
    ];
    invoke(caller, ResOp::LoadRegion, ids, || {
        let program = super::program::get(program)?;
        load_segment(caller, region, &program, segment, populate)
    })
}

/// Gives a detached region zero content of `kind` (BSS, stack, heap),
/// every page present now with `populate`.
pub fn clear(caller: u64, region: ResId, kind: RegionKind, writable: bool, populate: bool) -> Result<(), Error> {
    invoke(
        caller,
        ResOp::ClearRegion,
        only(region, Need::Owned(Kind::VirtualRegion)),
        || refill(caller, region, (kind, Backing::Zero, writable, false), populate),
    )
}

pub fn check(id: ResId, caller: u64) -> Result<(), Error> {
    super::owned(&TABLE.lock(), id, caller).map(|_| ())
}

/// Takes a detached region out of its slot for attaching; the slot is
/// marked `Moving` until `placed` or `put_back`.
pub fn take(caller: u64, id: ResId) -> Result<Region, Error> {
    let mut t = TABLE.lock();
    let e = super::owned_mut(&mut t, id, caller)?;
    match core::mem::replace(&mut e.value.place, Place::Moving) {
        Place::Detached(r) => Ok(r),
        other => {
            e.value.place = other;
            Err(Error::Busy)
        }
    }
}

pub fn placed(id: ResId, place: Place) {
    if let Ok(e) = TABLE.lock().get_mut(id) {
        e.value.place = place;
    }
}

pub fn put_back(id: ResId, region: Region) {
    placed(id, Place::Detached(region));
}

/// Runs `f` on a detached region of `caller`.
pub fn with_detached<R>(caller: u64, id: ResId, f: impl FnOnce(&mut Region) -> R) -> Result<R, Error> {
    let mut t = TABLE.lock();
    let e = super::owned_mut(&mut t, id, caller)?;
    match &mut e.value.place {
        Place::Detached(r) => Ok(f(r)),
        _ => Err(Error::Busy),
    }
}

fn load_segment(caller: u64, id: ResId, program: &Program, segment: usize, populate: bool) -> Result<(), Error> {
    let seg = program.segments.get(segment).ok_or(Error::Invalid)?;
    if seg.in_nvm {
        return map_text(caller, id, program, seg, populate);
    }
    let kind = if seg.writable {
        RegionKind::Data
    } else {
        RegionKind::Text
    };
    if seg.paged {
        // Its pages are asked of the pager at faults, or (eager loading)
        // by the composer once the space is whole (`spawn::page_in_all`).
        let source = program.pager.clone().ok_or(Error::BadProgram)?;
        let backing = Backing::Pager {
            source,
            file_at: seg.offset,
            skew: (seg.vaddr & 0xfff) as usize,
            len: seg.filesz,
        };
        return refill(caller, id, (kind, backing, seg.writable, seg.executable), populate);
    }
    let image = program
        .image
        .slice(seg.offset as usize, seg.filesz as usize)
        .ok_or(Error::BadProgram)?;
    let backing = Backing::Image {
        bytes: image,
        offset: (seg.vaddr & 0xfff) as usize,
    };
    refill(caller, id, (kind, backing, seg.writable, seg.executable), populate)
}

/// Maps an OFF2F program's text segment from its NVM text file: the
/// region's pages are the file's pages (its window: the run of whole
/// pages holding the segment), nothing allocated or copied, with
/// `populate` all mapped now (seed 001 fig. 3, step Y, done ahead).
fn map_text(
    caller: u64,
    id: ResId,
    program: &Program,
    seg: &crate::proc::program::Segment,
    populate: bool,
) -> Result<(), Error> {
    const PAGE: u64 = 4096;
    let text = program.nvm.as_ref().ok_or(Error::Invalid)?;
    let skew = seg.vaddr % PAGE;
    let start = seg.offset.checked_sub(skew).ok_or(Error::BadProgram)?;
    let pages = (skew + seg.filesz).div_ceil(PAGE);
    if start % PAGE != 0 || start / PAGE + pages > text.pages as u64 {
        return Err(Error::BadProgram);
    }
    let held: alloc::boxed::Box<dyn core::any::Any + Send + Sync> =
        kcore::mm::heap::try_box(text.hold.clone()).map_err(|_| Error::NoMemory)?;
    let hold: kcore::vm::region::Keep = kcore::mm::heap::try_arc(held).map_err(|_| Error::NoMemory)?;
    with_detached(caller, id, |r| {
        if pages as usize > r.pages() {
            return Err(Error::Invalid);
        }
        r.map_nvm(
            RegionKind::Text,
            text.phys + start,
            pages as usize,
            seg.executable,
            hold,
        );
        if populate {
            r.populate_all().map_err(|_| Error::NoMemory)
        } else {
            Ok(())
        }
    })?
}

/// Gives a detached region new content (kind, backing, writable,
/// executable), its old pages dropped; every page present with `populate`.
fn refill(
    caller: u64,
    id: ResId,
    (kind, backing, writable, executable): (RegionKind, Backing, bool, bool),
    populate: bool,
) -> Result<(), Error> {
    with_detached(caller, id, |r| {
        r.retarget(kind, backing, writable, executable);
        r.reset();
        if populate {
            r.populate_all().map_err(|_| Error::NoMemory)
        } else {
            Ok(())
        }
    })?
}

/// Makes a detached region of `caller`'s, loaded read-only, the holder of
/// a set of frames its shares (`share_joint`) hold jointly, each page
/// filled once for all of them (`Region::into_joint`), `charge` paying for
/// its pages until the last holder goes: a program's text.
pub fn make_joint(caller: u64, id: ResId, charge: kcore::mm::quota::Charge) -> Result<(), Error> {
    with_detached(caller, id, |r| r.into_joint(charge).map_err(|_| Error::Invalid))?
}

/// A new detached region of `caller`'s over the frames detached region
/// `id` holds jointly (`make_joint`): the same pages, filled once for all.
pub fn share_joint(caller: u64, id: ResId) -> Result<ResId, Error> {
    invoke(
        caller,
        ResOp::CreateRegion,
        only(id, Need::Owned(Kind::VirtualRegion)),
        || {
            let region = with_detached(caller, id, |r| {
                if r.frame_set().is_none() || r.writable {
                    return Err(Error::Invalid);
                }
                r.share().map_err(|_| Error::NoMemory)
            })??;
            adopt(caller, region, super::KERNEL).map_err(|(e, _)| e)
        },
    )
}

/// How many other regions share a region's frames, and how many of the
/// pages they share are present (None: it shares none, or is not there).
pub fn joint(id: ResId) -> Option<(usize, usize)> {
    let t = TABLE.lock();
    let r = match &t.get(id).ok()?.value.place {
        Place::Detached(r) => r,
        _ => return None,
    };
    r.frame_set()?;
    Some((r.sharers(), r.joint_pages()))
}

/// The frame set a detached region shares (`Region::frame_set`'s key).
pub fn joint_set(id: ResId) -> Option<usize> {
    match &TABLE.lock().get(id).ok()?.value.place {
        Place::Detached(r) => r.frame_set().map(|(set, _)| set),
        _ => None,
    }
}

/// Owner, resident bytes, pages and [space, attachment, container] of a
/// region; a container's as the container says (its owner, where it is).
fn query(id: ResId) -> Result<ResInfo, Error> {
    let (mut owner, bytes, pages, mut links, held) = {
        let t = TABLE.lock();
        let e = t.get(id).map_err(super::id_error)?;
        let (bytes, links, held) = match &e.value.place {
            Place::Detached(r) => (r.resident_pages() as u64 * 4096, [ResId::NONE; 3], None),
            Place::InSpace { space, link } => (0, [*space, *link, ResId::NONE], None),
            Place::InKernel { link } => (0, [ResId::NONE, *link, ResId::NONE], None),
            Place::InContainer { container } => (0, [ResId::NONE, ResId::NONE, *container], Some(*container)),
            Place::Moving => (0, [ResId::NONE; 3], None),
        };
        (e.owner, bytes, e.value.pages as u64, links, held)
    };
    // Read without this table's lock: the container's comes first in
    // every other order.
    if let Some(c) = held
        && let Some(w) = super::container::whereabouts(c)
    {
        owner = w.owner;
        links[0] = w.space;
        links[1] = w.link;
    }
    Ok(super::info(id, owner, bytes, pages, links))
}

/// What a detached region holds (its kind).
pub fn kind_of(id: ResId) -> Option<RegionKind> {
    match &TABLE.lock().get(id).ok()?.value.place {
        Place::Detached(r) => Some(r.kind),
        _ => None,
    }
}

/// Pages and resident bytes of a detached region (pool statistics).
pub fn size(id: ResId) -> Option<(usize, u64)> {
    let t = TABLE.lock();
    let e = t.get(id).ok()?;
    match &e.value.place {
        Place::Detached(r) => Some((e.value.pages, r.resident_pages() as u64 * 4096)),
        _ => Some((e.value.pages, 0)),
    }
}

/// Whether a detached region maps NVM pages (never pooled by size: it
/// would hold its text file for nothing).
pub fn maps_nvm(id: ResId) -> bool {
    let t = TABLE.lock();
    t.get(id)
        .is_ok_and(|e| matches!(&e.value.place, Place::Detached(r) if r.is_nvm()))
}

pub fn list(f: &mut dyn FnMut(ResId, u64, usize, abi::RegionPlace)) {
    use abi::RegionPlace as P;
    for (id, e) in TABLE.lock().iter() {
        let place = match e.value.place {
            Place::Detached(_) => P::Detached,
            Place::InSpace { .. } => P::InSpace,
            Place::InKernel { .. } => P::InKernel,
            Place::InContainer { .. } => P::InContainer,
            Place::Moving => P::Moving,
        };
        f(id, e.owner, e.value.pages, place);
    }
}

pub struct Regions;

impl Resource for Regions {
    table_methods!(TABLE);

    /// Deletes a detached region and frees its frames.
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        let region = super::remove_unused(&mut TABLE.lock(), id, caller, |r| {
            !matches!(r.place, Place::Detached(_))
        })?;
        drop(region); // frees the frames outside the table lock
        Ok(())
    }

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        query(id)
    }

    /// Hands a region over to another owner (e.g. from a building process
    /// to the process it builds, or to the kernel's pool); a container's
    /// stays the kernel's.
    fn set_owner(&self, id: ResId, owner: u64) {
        let mut t = TABLE.lock();
        if t.get(id)
            .is_ok_and(|e| !matches!(e.value.place, Place::InContainer { .. }))
        {
            super::give(&mut t, id, owner);
        }
    }
}

/// Makes a region resource of a `Region` built elsewhere (container
/// memory, a fork's copy), its list of frames charged to `payer` (the
/// kernel: no one); the region comes back if the table is full or the
/// payer past its limit.
pub fn adopt(owner: u64, region: Region, payer: u64) -> Result<ResId, (Error, Region)> {
    let pages = region.pages();
    let charge = match super::charge(payer, super::cost::<RegionEntry>(pages as u64 * 8)) {
        Ok(c) => c,
        Err(e) => return Err((e, region)),
    };
    let entry = RegionEntry {
        pages,
        place: Place::Detached(region),
    };
    TABLE
        .lock()
        .insert(super::Entry {
            owner,
            value: entry,
            charge,
        })
        .map_err(|(e, entry)| match entry.value.place {
            Place::Detached(r) => (super::id_error(e), r),
            _ => unreachable!("made detached above"),
        })
}

/// `adopt` of memory of `pages` the caller keeps to attach at once: the
/// entry says it is moving (`take` in the same hold of the table, without
/// the memory copied into the table and out again); `placed` says where
/// it went, `forget_moving` removes it if it went nowhere.
pub fn adopt_moving(owner: u64, pages: usize, payer: u64) -> Result<ResId, Error> {
    let charge = super::charge(payer, super::cost::<RegionEntry>(pages as u64 * 8))?;
    let entry = RegionEntry {
        pages,
        place: Place::Moving,
    };
    super::insert_charged(&mut TABLE.lock(), owner, charge, entry)
}

/// Removes the entry `adopt_moving` made, its memory gone nowhere.
pub fn forget_moving(id: ResId) {
    let mut t = TABLE.lock();
    if t.get(id).is_ok_and(|e| matches!(e.value.place, Place::Moving)) {
        let _ = t.remove(id);
    }
}

/// Removes the entry of a container's memory, which the container has
/// taken out of its attachment (`vspace::take_held`): `disown` without
/// the memory put back into the table first.
pub fn forget_held(id: ResId) -> Result<(), Error> {
    let mut t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    if !matches!(e.value.place, Place::InContainer { .. }) {
        return Err(Error::Busy);
    }
    t.remove(id).map(drop).map_err(super::id_error)
}

/// Removes a detached region from the table and hands its `Region` over.
pub fn disown(id: ResId) -> Result<Region, Error> {
    let mut t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    if !matches!(e.value.place, Place::Detached(_)) {
        return Err(Error::Busy);
    }
    match t.remove(id).map_err(super::id_error)?.value.place {
        Place::Detached(r) => Ok(r),
        _ => unreachable!("checked above"),
    }
}
