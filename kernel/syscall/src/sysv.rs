//! SysV shared memory for the Linux personality: a segment is anonymous
//! memory the personality's shared server keeps mapped in its own space
//! (so it outlives every process attached to it), and `shmat` maps the
//! same frames into a waiting Linux process (`Region::share`). The frames
//! go back when the last region holding them goes: the server's after
//! IPC_RMID, an attached process's at shmdt, munmap, exec or its end.
//! How many attachments a segment has is how many regions share its
//! frames, so fork (which shares MAP_SHARED-like regions) and exit are
//! counted without telling anyone.

use abi::Error;
use abi::linux::{MAP_FIXED, SHM_RDONLY};
use alloc::vec::Vec;
use ipc::process::Process;
use ipc::supervise;
use kcore::mm::layout::PAGE_SIZE;
use kcore::vm::region::Kind as RegionKind;
use kcore::vm::space::At;
use resource::{KERNEL, ResId, mediator, vspace};

/// The caller's own anonymous mapping that starts at `src`: its region's
/// frames, shared into the process waiting in `rid` at `addr` (MAP_FIXED)
/// or wherever there is room; read-only with SHM_RDONLY. A range already
/// in use is Invalid, as Linux's shmat without SHM_REMAP.
pub fn share_into(me: &Process, rid: u64, addr: u64, src: u64, flags: u64) -> Result<u64, Error> {
    let p = supervise::waiting(me, rid)?;
    if flags & MAP_FIXED != 0 && (!addr.is_multiple_of(PAGE_SIZE) || addr == 0) {
        return Err(Error::Invalid);
    }
    let mut memory = {
        let space = me.space().ok_or(Error::NotFound)?;
        let mut s = space.lock();
        let link = s
            .region_at(src)
            .filter(|a| a.base == src && a.region.kind == RegionKind::Heap)
            .map(|a| a.link_id)
            .ok_or(Error::Invalid)?;
        let a = s.attachment_mut(link, 0).ok_or(Error::Invalid)?;
        a.region.share().map_err(|_| Error::NoMemory)?
    };
    if flags & MAP_FIXED != 0 {
        let end = addr.checked_add(memory.size()).ok_or(Error::Invalid)?;
        if end > kcore::vm::USER_END {
            return Err(Error::Invalid);
        }
    }
    memory.writable = flags & SHM_RDONLY == 0;
    memory.fork_shares = true;
    let at = if flags & MAP_FIXED != 0 {
        At::Address(addr)
    } else {
        p.free_place()
    };
    let (region, link, _, base) =
        vspace::attach_memory(p.space_id(), memory, at, ResId::NONE, p.memory_owner()).map_err(|(e, _)| e)?;
    resource::set_owner(link, p.memory_owner());
    resource::set_owner(region, p.memory_owner());
    Ok(base)
}

/// shmdt: the mapping of the process waiting in `rid` that starts at
/// `addr` goes, if it is one whose frames are shared (Invalid otherwise),
/// and with it, as Linux's, every other part of the same segment within
/// the segment's size from there: a partial munmap or mprotect cut the
/// attachment into parts over the same frames (`Region::share_part`),
/// and each part left would count as an attachment for ever. The parts
/// are found in one pass and go from the last to the first, so the first
/// keeps the set (and its identity) alive until the end. Returns how far
/// the parts reached.
pub fn unmap_shared(me: &Process, rid: u64, addr: u64) -> Result<u64, Error> {
    let p = supervise::waiting(me, rid)?;
    let space = p.space().ok_or(Error::NotFound)?;
    let mut parts: Vec<(u64, ResId, ResId, u64)> = Vec::new();
    {
        let s = space.lock();
        let first = s
            .region_at(addr)
            .filter(|a| a.base == addr && a.region.kind == RegionKind::Heap && a.region.sharers() > 0)
            .ok_or(Error::Invalid)?;
        let (set, pages) = first.region.frame_set().ok_or(Error::Invalid)?;
        let end = addr.saturating_add(pages as u64 * PAGE_SIZE);
        let same = |a: &&kcore::vm::space::Attached| {
            a.base >= addr && a.base < end && a.region.frame_set().is_some_and(|(s, _)| s == set)
        };
        // At most one part per page of the segment.
        parts
            .try_reserve_exact(s.regions().filter(same).count())
            .map_err(|_| Error::NoMemory)?;
        parts.extend(
            s.regions()
                .filter(same)
                .map(|a| (a.base, a.link_id, a.region_id, a.end())),
        );
    }
    parts.sort_unstable_by_key(|&(base, ..)| core::cmp::Reverse(base));
    let mut reach = addr;
    for (base, link, region, end) in parts {
        // A part another thread unmapped meanwhile is gone already; the
        // attachment at `addr` itself must go.
        let gone = mediator::delete(KERNEL, link).and_then(|_| mediator::delete(KERNEL, region));
        if base == addr {
            gone?;
        }
        reach = reach.max(end);
    }
    Ok(reach - addr)
}

/// How many other regions map the frames of the caller's mapping at
/// `addr` (a segment's attachments).
pub fn sharers(me: &Process, addr: u64) -> Result<u64, Error> {
    let space = me.space().ok_or(Error::NotFound)?;
    let s = space.lock();
    let a = s.region_at(addr).filter(|a| a.base == addr).ok_or(Error::Invalid)?;
    Ok(a.region.sharers() as u64)
}
