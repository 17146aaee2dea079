//! Virtual space (Tender's 仮想空間) and virtual user space (仮想ユーザ空間),
//! the resource-level home of a space and of what is attached to it.
//!
//! What is where: the mechanism is `kcore::vm::space::VirtualSpace` (the
//! page tables, the attached regions themselves, finding a free place,
//! moving and exchanging pages), with the core's unsafe code. Here are
//! the two kinds' tables: spaces, shared (`SpaceRef`) between their entry
//! and the process running in one, so page faults lock only their own
//! space; and attachments (virtual user spaces), each a region attached
//! to a space at a user address, recording which space and region it
//! joins and who holds it. Creating an attachment attaches, deleting it
//! detaches; the region and the space live on independently.
//!
//! A container's attachment is *held* by the container: it belongs to the
//! kernel, nobody deletes it but the container, and where it lies (space,
//! address, process) is the container's to say. Its record is therefore
//! not rewritten when the container moves to another process (AnT's ICA
//! move, the step a message exchange repeats); a query reads it through
//! the container.

use super::container::Whereabouts;
use super::mediator::{NO_ID, NO_IDS, Need, Outcome, invoke};
use super::vregion::{self, Place};
use super::{KERNEL, Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
use alloc::sync::Arc;
use alloc::vec::Vec;
use kcore::sync::IrqMutex;
use kcore::vm::region::{Backing, Kind as RegionKind, Region};
use kcore::vm::space::{SpaceError, VirtualSpace};

use kcore::vm::space::NO_SLOT;
pub use kcore::vm::space::{At, SpaceRef};

static SPACES: IrqMutex<ResTable<Space>> = IrqMutex::new(table(Kind::VirtualSpace));

/// A space's entry: the space, and what the kernel composed in it.
pub struct Space {
    space: SpaceRef,
    made: Made,
}

/// What the kernel made a space as, while only the kernel has changed it
/// (but for anonymous memory): one word of the entry's, as the
/// composition alone took (a pool filled with spaces is many entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    Other,
    Composed(Composition),
    /// A fork's copy (`copy`) of space `.0` of process `.1`: at its end
    /// it may be kept for that process's next fork (`empty_for_fork`).
    ForkOf(ResId, u64),
}

/// A space the kernel composed for a program (`proc::spawn`), which only
/// the kernel has changed since: the one kind of space the pool keeps,
/// under the plate the program comes from. User code that attaches to
/// it or detaches from it (anything but anonymous memory, which goes at
/// the end) makes it an ordinary space again, for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Composition {
    pub plate: ResId,
    /// The program's attachments (the pool checks that the space holds
    /// exactly these).
    pub attachments: usize,
}

/// A space with nothing attached (`res_create(VirtualSpace)`).
pub fn create(caller: u64) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreateSpace, NO_IDS, || {
        let cost = super::cost::<Space>(core::mem::size_of::<VirtualSpace>() as u64 + 4096);
        let charge = super::charge(caller, cost)?;
        let mut space = VirtualSpace::new().map_err(|_| Error::NoMemory)?;
        // Its maker pays for its page tables too, for its whole life.
        if let Some(account) = charge.account() {
            space.pay_tables(account);
        }
        let entry = Space {
            space: kcore::mm::heap::try_arc(IrqMutex::new(space)).map_err(|_| Error::NoMemory)?,
            made: Made::Other,
        };
        super::insert_charged(&mut SPACES.lock(), caller, charge, entry)
    })
}

/// A fork's copy of space `from` (Tender's copy of a virtual space): a new
/// space of `caller`'s holding what process `owner` has attached there of
/// its own, at the same addresses. Private memory is shared copy-on-write
/// (`VirtualSpace::fork_region`: its frames counted, read-only in both
/// until a write), read-only and MAP_SHARED regions share their frames,
/// and the rest (`Region::forkable` says which: a device's registers,
/// NVM or a pager's pages, frames already shared, memory in blocks) is
/// copied now. Containers held by `owner` and ICAs in flight are not
/// attachments of its own here, so they are not copied. Should `owner`
/// begin to end meanwhile (on another CPU), the copy stops and is taken
/// apart.
pub fn copy(caller: u64, from: ResId, owner: u64) -> Result<ResId, Error> {
    copy_reusing(caller, from, owner, None)
}

/// `copy` into `spare`, if given: an ended fork's copy of the same space
/// for the same process, emptied (`empty_for_fork`) and the kernel's.
/// Its attachments of the address and size of one of the space's own
/// take that one's copy in place (`VirtualSpace::reattach`): no resource
/// made, no page table made or zeroed, and none of it taken apart again
/// at the copy's end. Those it has beyond go.
pub fn copy_reusing(caller: u64, from: ResId, owner: u64, spare: Option<ResId>) -> Result<ResId, Error> {
    invoke(
        caller,
        ResOp::CopySpace,
        super::mediator::only(from, Need::Owned(Kind::VirtualSpace)),
        || {
            let source = get(caller, from)?;
            let spare = match spare {
                Some(s) if fork_of(s) == Some((from, owner)) => Some(s),
                Some(s) => {
                    crate::proc::spawn::destroy_space(s);
                    None
                }
                None => None,
            };
            let space = match spare {
                Some(s) => {
                    prune_spare(&source, s);
                    s
                }
                None => create(caller)?,
            };
            copy_into(&source, from, owner, space, spare.is_some())
                .inspect_err(|_| crate::proc::spawn::destroy_space(space))?;
            // A Linux program's stack grows in the copy as in the original.
            let floor = source.lock().stack_floor();
            if let Ok(copy) = get(caller, space) {
                copy.lock().set_stack_floor(floor);
            }
            if let Ok(e) = SPACES.lock().get_mut(space) {
                e.value.made = Made::ForkOf(from, owner);
            }
            Ok(space)
        },
    )
}

/// Deletes the attachments of `spare` (and their regions) that no
/// attachment of `source` (of its address and size) will take the place
/// of: what is left is only what `copy_into` fills, and nothing of it lies
/// in the way of what it attaches anew.
fn prune_spare(source: &SpaceRef, spare: ResId) {
    let Ok(kept) = get(KERNEL, spare) else { return };
    loop {
        let stray = {
            let s = source.lock();
            let k = kept.lock();
            k.regions()
                .find(|a| {
                    !s.regions()
                        .any(|b| b.base == a.base && b.region.pages() == a.region.pages())
                })
                .map(|a| (a.link_id, a.region_id))
        };
        let Some((link, region)) = stray else { break };
        if super::mediator::delete(KERNEL, link).is_err() {
            break;
        }
        let _ = super::mediator::delete(KERNEL, region);
    }
}

/// The process and space `space` is a fork's copy of, while only the
/// kernel changed it.
pub fn fork_of(space: ResId) -> Option<(ResId, u64)> {
    match SPACES.lock().get(space).map(|e| e.value.made) {
        Ok(Made::ForkOf(from, owner)) => Some((from, owner)),
        _ => None,
    }
}

/// Empties an ended fork's copy (`VirtualSpace::empty_for_reuse`) for its
/// parent's next fork; false if it is no such copy, or in use.
pub fn empty_for_fork(space: ResId) -> bool {
    let Ok(s) = get(KERNEL, space) else { return false };
    if fork_of(space).is_none() || Arc::strong_count(&s) > 2 {
        return false;
    }
    s.lock().empty_for_reuse();
    true
}

fn copy_into(source: &SpaceRef, from: ResId, owner: u64, space: ResId, reuse: bool) -> Result<(), Error> {
    let child = if reuse { Some(get(KERNEL, space)?) } else { None };
    let owned = owned_attachments(source, from, owner)?;
    // The attachments of the copy made or filled here: in a kept copy,
    // the others go at the end.
    let mut made = Vec::new();
    made.try_reserve_exact(owned.len()).map_err(|_| Error::NoMemory)?;
    for (link, mut base) in owned {
        let mut file_end = kcore::vm::region::FileEnd::default();
        let copy = {
            let mut s = source.lock();
            if s.user() != owner {
                return Err(Error::NotFound);
            }
            // Found once, then looked at in its slot.
            let slot = s.slot_of(link, NO_SLOT).unwrap_or(NO_SLOT);
            // Where it is now: a stack region grows down at faults, which
            // its record's address does not follow.
            if let Some(a) = s.attachment_mut(link, slot) {
                base = a.base;
                file_end = a.file_end;
            }
            let wiped = s.attachment_mut(link, slot).and_then(|a| {
                let g = &a.region;
                g.linux.wipe_on_fork().then(|| {
                    let fresh = Region::new(g.kind, g.pages(), Backing::Zero, g.writable, g.executable);
                    fresh.map(|mut r| {
                        (r.no_access, r.linux) = (g.no_access, g.linux);
                        r
                    })
                })
            });
            match wiped.or_else(|| s.fork_region_at(link, slot)) {
                Some(cow) => cow,
                None => {
                    let Some(a) = s.attachment_mut(link, slot) else {
                        continue;
                    };
                    if a.region.writable && !a.region.fork_shares {
                        a.region.duplicate()
                    } else {
                        a.region.share()
                    }
                }
            }
        };
        // A child inherits no locks (Linux clears VM_LOCKED at fork).
        let copy = copy.map(|mut r| {
            r.linux.set_locked(false);
            r
        });
        // In a kept copy, in the place of the emptied attachment there.
        let copy = match (copy, &child) {
            (Ok(r), Some(c)) => {
                let put = c.lock().reattach(base, r);
                match put {
                    Ok((copied, _, emptied)) => {
                        drop(emptied);
                        made.push(copied);
                        if file_end.file != 0 {
                            c.lock().set_file_end_of(copied, file_end);
                        }
                        continue;
                    }
                    Err(r) => Ok(r),
                }
            }
            (copy, _) => copy,
        };
        copy.map_err(|_| Error::NoMemory)
            // The process that forks pays for its child's lists, as for
            // its own (a fork of a 1 GiB mapping copies a 2 MiB list).
            .and_then(|r| attach_memory(space, r, At::Address(base), ResId::NONE, owner).map_err(|(e, _)| e))
            .map(|(_, copied, _, _)| {
                made.push(copied);
                // A Linux file mapping's end goes with it (its pages past the
                // end, a shared one's included, stay unmapped in the copy).
                if file_end.file != 0
                    && let Ok(child) = get(KERNEL, space)
                {
                    child.lock().set_file_end_of(copied, file_end);
                }
            })?;
    }
    // What a kept copy holds that the space's own memory no longer has
    // (it changed during the copy) goes.
    while let Some(c) = &child {
        let stray = c
            .lock()
            .regions()
            .find(|a| !made.contains(&a.link_id))
            .map(|a| (a.link_id, a.region_id));
        let Some((link, region)) = stray else { break };
        super::mediator::delete(KERNEL, link)?;
        let _ = super::mediator::delete(KERNEL, region);
    }
    Ok(())
}

pub fn get(caller: u64, id: ResId) -> Result<SpaceRef, Error> {
    super::owned(&SPACES.lock(), id, caller).map(|e| e.value.space.clone())
}

/// Whether process `pid` owns `space`.
pub fn owned_by(space: ResId, pid: u64) -> bool {
    super::owned(&SPACES.lock(), space, pid).is_ok_and(|e| e.owner == pid)
}

/// Records that the kernel composed `space` for `plate`'s program, with
/// what is attached to it now.
pub fn mark_composed(space: ResId, plate: ResId) {
    let mut t = SPACES.lock();
    if let Ok(e) = t.get_mut(space) {
        let attachments = e.value.space.lock().region_count();
        e.value.made = Made::Composed(Composition { plate, attachments });
    }
}

/// The kernel's composition `space` holds, if only the kernel changed it.
pub fn composition(space: ResId) -> Option<Composition> {
    match SPACES.lock().get(space).map(|e| e.value.made) {
        Ok(Made::Composed(c)) => Some(c),
        _ => None,
    }
}

/// User code changed what `space` holds: it is no composition of the
/// kernel's any more.
fn changed_by_user(space: ResId) {
    if let Ok(e) = SPACES.lock().get_mut(space) {
        e.value.made = Made::Other;
    }
}

/// Memory a space holds: page tables plus resident pages of attached regions.
pub fn bytes(space: &VirtualSpace) -> u64 {
    (space.table_pages() + space.resident_pages()) as u64 * 4096
}

pub fn list(f: &mut dyn FnMut(ResId, u64, usize, u64)) {
    for (id, e) in SPACES.lock().iter() {
        let s = e.value.space.lock();
        f(id, e.owner, s.region_count(), bytes(&s));
    }
}

pub struct Spaces;

impl Resource for Spaces {
    table_methods!(SPACES);

    /// Deletes a space with nothing attached that no process uses.
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        let space = super::remove_unused(&mut SPACES.lock(), id, caller, |s| {
            Arc::strong_count(&s.space) > 1 || s.space.lock().region_count() != 0
        })?;
        drop(space); // frees the page tables outside the table lock
        Ok(())
    }

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&SPACES.lock(), id, |s| {
            let s = s.space.lock();
            (bytes(&s), s.region_count() as u64, [ResId::NONE; 3])
        })
    }

    /// Hands the space, its plain attachments and their regions to `owner`.
    fn set_owner(&self, id: ResId, owner: u64) {
        super::give(&mut SPACES.lock(), id, owner);
        let mut batch = [(ResId::NONE, ResId::NONE); BATCH];
        let mut n = 0;
        loop {
            let k = of_space(id, n, &mut batch);
            for &(link, region) in &batch[..k] {
                Attachments.set_owner(link, owner);
                super::of(Kind::VirtualRegion).set_owner(region, owner);
            }
            if k < BATCH {
                break;
            }
            n += k;
        }
    }

    fn release_owned_by(&self, pid: u64) {
        super::each_from(
            |from| self.next_owned_by(pid, from),
            |id| {
                detach_all(id);
                let _ = self.delete(KERNEL, id);
            },
        );
    }
}

// ---- attachments (virtual user spaces) ----

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

static LINKS: IrqMutex<ResTable<Link>> = IrqMutex::new(table(Kind::VirtualUserSpace));

/// What an attachment holds in its space besides its record (the space's
/// record of it, boxed, and its slot).
const ATTACHED_BYTES: u64 = 160;

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

/// An attachment made: its identifier and where it lies.
#[derive(Debug, Clone, Copy)]
pub struct Attachment {
    pub id: ResId,
    pub base: u64,
}

impl Outcome for Attachment {
    fn made(&self) -> Option<ResId> {
        Some(self.id)
    }
}

/// Attaches a detached region to a space, at an address or at the first
/// free place from a process's hint
/// (`res_create(VirtualUserSpace, space, region, address)`, `map`).
pub fn attach(caller: u64, space: ResId, region: ResId, at: At) -> Result<Attachment, Error> {
    let ids = [
        (space, Need::Owned(Kind::VirtualSpace)),
        (region, Need::Owned(Kind::VirtualRegion)),
        NO_ID,
    ];
    invoke(caller, ResOp::Attach, ids, || {
        let anonymous = vregion::kind_of(region) == Some(RegionKind::Heap);
        let (id, _, base) = attach_as(caller, space, region, at, ResId::NONE)?;
        if caller != KERNEL && !anonymous {
            changed_by_user(space);
        }
        Ok(Attachment { id, base })
    })
}

/// Makes `memory` (built by the kernel) a region of the kernel's, its
/// list of frames charged to process `payer` (`KERNEL`: no one), and
/// attaches it to `space` where `at` says, for `holder` (a container, or
/// `ResId::NONE`). Returns the region, the attachment, its slot in the
/// space and its address; without room, the memory comes back whole.
pub fn attach_memory(
    space: ResId,
    memory: Region,
    at: At,
    holder: ResId,
    payer: u64,
) -> Result<(ResId, ResId, usize, u64), (Error, Region)> {
    // Its entry says it is on its way from the start: the memory goes
    // straight to the space, not into the table and out again.
    let region = match vregion::adopt_moving(KERNEL, memory.pages(), payer) {
        Ok(id) => id,
        Err(e) => return Err((e, memory)),
    };
    match attach_taken(KERNEL, space, region, memory, at, holder) {
        Ok((link, slot, base)) => Ok((region, link, slot, base)),
        Err((e, memory)) => {
            vregion::forget_moving(region);
            Err((e, memory))
        }
    }
}

/// Attaches `region` to `space` where `at` says, for `holder`, which holds
/// the attachment from then on if it is a container.
fn attach_as(caller: u64, space: ResId, region: ResId, at: At, holder: ResId) -> Result<(ResId, usize, u64), Error> {
    let r = vregion::take(caller, region)?;
    attach_taken(caller, space, region, r, at, holder).map_err(|(e, r)| {
        vregion::put_back(region, r);
        e
    })
}

/// `attach_as` of region `region`'s memory `r`, taken out of its entry
/// (which says it is moving) by the caller; without room it comes back.
fn attach_taken(
    caller: u64,
    space: ResId,
    region: ResId,
    r: Region,
    at: At,
    holder: ResId,
) -> Result<(ResId, usize, u64), (Error, Region)> {
    let space_ref = match get(caller, space) {
        Ok(s) => s,
        Err(e) => return Err((e, r)),
    };
    let charge = match super::charge(caller, super::cost::<Link>(ATTACHED_BYTES)) {
        Ok(c) => c,
        Err(e) => return Err((e, r)),
    };
    let record = Link {
        space,
        region,
        base: 0,
        container: holder,
    };
    let link = match super::insert_charged(&mut LINKS.lock(), caller, charge, record) {
        Ok(id) => id,
        Err(e) => return Err((e, r)),
    };
    let attached = space_ref.lock().attach_at(at, r, region, link);
    match attached {
        Ok((base, slot)) => {
            if let Ok(e) = LINKS.lock().get_mut(link) {
                e.value.base = base;
            }
            let place = if holder == ResId::NONE {
                Place::InSpace { space, link }
            } else {
                Place::InContainer { container: holder }
            };
            vregion::placed(region, place);
            Ok((link, slot, base))
        }
        Err((e, r)) => {
            let _ = LINKS.lock().remove(link);
            Err((
                match e {
                    SpaceError::OutOfMemory => Error::NoMemory,
                    SpaceError::OverLimit => Error::Limit,
                    SpaceError::BadRange => Error::Invalid,
                },
                r,
            ))
        }
    }
}

/// Detaches: the region goes back to its table entry, detached. A held
/// attachment goes only with its container (`release_held`).
pub fn detach(caller: u64, id: ResId) -> Result<(), Error> {
    let (space, region) = {
        let t = LINKS.lock();
        let e = super::owned(&t, id, caller)?;
        if e.value.held() {
            return Err(Error::Busy);
        }
        (e.value.space, e.value.region)
    };
    let space_ref = get(KERNEL, space)?;
    let attached = space_ref.lock().detach(id);
    if let Some(r) = attached {
        if caller != KERNEL && r.kind != RegionKind::Heap {
            changed_by_user(space);
        }
        vregion::put_back(region, r);
    }
    LINKS.lock().remove(id).map(drop).map_err(super::id_error)
}

/// Detaches the container's held attachment `id` from `space`, where the
/// container says it lies; its region goes back to its entry, detached.
pub fn release_held(id: ResId, space: &SpaceRef) -> Result<(), Error> {
    let region = {
        let t = LINKS.lock();
        let e = t.get(id).map_err(super::id_error)?;
        if !e.value.held() {
            return Err(Error::Invalid);
        }
        e.value.region
    };
    if let Some(r) = space.lock().detach(id) {
        vregion::put_back(region, r);
    }
    LINKS.lock().remove(id).map(drop).map_err(super::id_error)
}

/// `release_held` of a container's memory, which it takes along (a MOVE,
/// a delete): the attachment's record goes in the same hold of its table
/// as the look at it (`release_held` removes it whether or not the space
/// still has the attachment), the attachment is looked for in slot `hint`
/// first, and the region's entry goes at once instead of being given the
/// memory back only to hand it over and go.
pub fn take_held(id: ResId, space: &SpaceRef, hint: usize) -> Result<Region, Error> {
    let region = {
        let mut t = LINKS.lock();
        let e = t.get(id).map_err(super::id_error)?;
        if !e.value.held() {
            return Err(Error::Invalid);
        }
        let region = e.value.region;
        t.remove(id).map_err(super::id_error)?;
        region
    };
    // Without the attachment the region's entry stays as it is, as
    // `release_held` leaves it.
    let r = space.lock().detach_hinted(id, hint).ok_or(Error::Busy)?;
    if let Err(e) = vregion::forget_held(region) {
        vregion::put_back(region, r);
        return Err(e);
    }
    Ok(r)
}

/// Detaches everything attached to `space` (but what containers hold:
/// they go with their containers).
fn detach_all(space: ResId) {
    super::each_from(
        |from| {
            LINKS
                .lock()
                .find_from(from, |e| e.value.space == space && !e.value.held())
        },
        |id| {
            let _ = detach(KERNEL, id);
        },
    );
}

/// The attachments of `space` from the `n`th on, as many as `out` holds:
/// (link, region), read from the space itself (its own short list), not by
/// scanning every attachment there is; how many. A walk that allocates
/// nothing, for teardown and handing over, a batch per look (a look at
/// one each time found the table, locked the space and counted from the
/// first again, for each of a process's few attachments).
pub fn of_space(space: ResId, n: usize, out: &mut [(ResId, ResId)]) -> usize {
    let Ok(s) = get(KERNEL, space) else {
        return 0;
    };
    let s = s.lock();
    let mut k = 0;
    for (slot, a) in out.iter_mut().zip(s.regions().skip(n)) {
        *slot = (a.link_id, a.region_id);
        k += 1;
    }
    k
}

/// What `of_space` takes at a time: a process's program and stack, its
/// few mappings.
pub const BATCH: usize = 8;

/// The attachments of `space` (the one `source` is) that make process
/// `owner`'s memory: its program's regions (attached by the kernel when
/// it was composed) and the anonymous memory it holds itself; not what
/// containers or devices hold: (attachment, address) pairs. Taken from
/// the space's own attachments, each looked up once in the table of all
/// of them (a walk through that table, every process's attachments, was
/// most of a fork's look at them): an attachment the table places in the
/// space with no place there is one a copy would skip anyway.
pub fn owned_attachments(source: &SpaceRef, space: ResId, owner: u64) -> Result<Vec<(ResId, u64)>, Error> {
    let mut found = Vec::new();
    {
        let s = source.lock();
        found.try_reserve_exact(s.region_count()).map_err(|_| Error::NoMemory)?;
        found.extend(s.regions().map(|a| (a.link_id, a.base)));
    }
    let links = LINKS.lock();
    found.retain(|&(id, _)| {
        links
            .get(id)
            .is_ok_and(|e| (e.owner == owner || e.owner == KERNEL) && e.value.space == space && !e.value.held())
    });
    Ok(found)
}

/// Every attachment with its owner, space and address (a held one's as
/// its container says).
pub fn list_attachments(f: &mut dyn FnMut(ResId, &Link, Whereabouts)) {
    // One at a time, in place: the inspector allocates nothing for it.
    let mut from = 0;
    loop {
        let next = {
            let t = LINKS.lock();
            t.find_from(from, |_| true)
                .and_then(|id| t.get(id).ok().map(|e| (id, e.owner, e.value)))
        };
        let Some((id, owner, l)) = next else { break };
        from = id.index() + 1;
        let w = place_of(id, owner, &l);
        f(id, &l, w);
    }
}

pub struct Attachments;

impl Resource for Attachments {
    table_methods!(LINKS);

    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        detach(caller, id)
    }

    /// Owner, address and [space, region, holding container] of an
    /// attachment; a held one's as its container says.
    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        let (owner, link) = {
            let t = LINKS.lock();
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

    /// Hands a plain attachment to `owner` (a held one stays the kernel's).
    fn set_owner(&self, id: ResId, owner: u64) {
        let mut t = LINKS.lock();
        if t.get(id).is_ok_and(|e| !e.value.held()) {
            super::give(&mut t, id, owner);
        }
    }
}
