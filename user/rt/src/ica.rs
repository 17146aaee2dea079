//! Memory that travels between processes without being copied, as owned
//! objects: AnT's ICA (physically contiguous pages, which a DMA engine can
//! use as they are) moved from space to space, and a container shared by
//! two processes, read and written only through atomic words.
//!
//! The kernel attaches such memory at an address it chooses; these types
//! are the one place that turns that address into a Rust slice. Each is
//! built only from what the kernel says about the resource (`res_query`:
//! a container this process holds, attached, of this size), and a registry
//! makes sure no two objects of this process ever name the same container,
//! so a slice handed out is the only way to its memory. Moving an ICA away
//! consumes its object; dropping one deletes the container.
//!
//! What the types cannot prevent: a process this one granted (`peer_grant`)
//! may steal the container from under it; the next access then faults and
//! the process dies. Servers grant only the servers they work with.

use crate::sys;
use abi::{Error, ResKind};
use alloc::collections::BTreeSet;
use core::sync::atomic::AtomicU64;
use spin::Mutex;

/// Containers that have an object in this process.
static HELD: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

/// Where container `id` is attached in this process and its size, if this
/// process holds it; registered so that no second object can be made.
fn claim(id: u64) -> Result<(u64, usize), Error> {
    let info = sys::res_query(id)?;
    if info.kind != ResKind::Container as u64 || info.owner != sys::getpid() || info.value == 0 {
        return Err(Error::Denied);
    }
    if info.bytes == 0 || info.bytes > isize::MAX as u64 {
        return Err(Error::Invalid);
    }
    if !HELD.lock().insert(id) {
        return Err(Error::Busy);
    }
    Ok((info.value, info.bytes as usize))
}

fn unclaim(id: u64) {
    HELD.lock().remove(&id);
}

/// An ICA (or any container) this process holds.
pub struct Ica {
    id: u64,
    addr: u64,
    len: usize,
}

impl Ica {
    /// `pages` new physically contiguous pages.
    pub fn create(pages: u64) -> Result<Ica, Error> {
        let id = sys::ica_create(pages)?;
        match claim(id) {
            Ok((addr, len)) => Ok(Ica { id, addr, len }),
            Err(e) => {
                let _ = sys::res_delete(id);
                Err(e)
            }
        }
    }

    /// The object for container `id`, which another process moved to this
    /// one. Fails if this process does not hold it, or has an object for
    /// it already.
    pub fn adopt(id: u64) -> Result<Ica, Error> {
        let (addr, len) = claim(id)?;
        Ok(Ica { id, addr, len })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Where it is attached in this process.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the kernel attached `len` bytes at `addr` to this process
        // (`claim` asked it); they stay attached while this object lives
        // (only moving or deleting the container detaches it, and both
        // consume the object), and no other object names them.
        unsafe { core::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only view.
        unsafe { core::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }

    /// Lets go of the object but not of the pages: for a server that takes
    /// them (a container steal, which this process granted it) and gives
    /// them back; returns the container's id.
    pub fn release(self) -> u64 {
        let id = self.id;
        unclaim(id);
        core::mem::forget(self);
        id
    }

    /// Moves the pages to process `pid` without copying, asking for
    /// address `hint` there (0: anywhere); returns the address they got.
    /// On failure the object comes back with the error.
    pub fn move_to(self, pid: u64, hint: u64) -> Result<u64, (Ica, Error)> {
        match sys::ica_move_to(self.id, pid, hint) {
            Ok(addr) => {
                unclaim(self.id);
                core::mem::forget(self);
                Ok(addr)
            }
            // The address asked for is taken: anywhere will do.
            Err(_) if hint != 0 => self.move_to(pid, 0),
            Err(e) => Err((self, e)),
        }
    }
}

impl Drop for Ica {
    fn drop(&mut self) {
        unclaim(self.id);
        let _ = sys::res_delete(self.id);
    }
}

/// A container whose memory two processes see at once (container SHARE):
/// only ever accessed as atomic words, so neither side can observe a torn
/// or half-ordered write of the other's.
pub struct SharedWords {
    id: u64,
    addr: u64,
    words: usize,
}

impl SharedWords {
    /// `pages` new zeroed pages.
    pub fn create(pages: u64) -> Result<SharedWords, Error> {
        let id = sys::container_create(pages)?;
        match claim(id) {
            Ok((addr, len)) => Ok(SharedWords {
                id,
                addr,
                words: len / 8,
            }),
            Err(e) => {
                let _ = sys::res_delete(id);
                Err(e)
            }
        }
    }

    /// The object for a container another process pushed (SHARE) here.
    pub fn adopt(id: u64) -> Result<SharedWords, Error> {
        let (addr, len) = claim(id)?;
        Ok(SharedWords {
            id,
            addr,
            words: len / 8,
        })
    }

    /// Shares the same pages with process `pid` (which must have granted
    /// this one, `peer_grant`); returns the container's id there.
    pub fn share_with(&self, pid: u64) -> Result<u64, Error> {
        sys::container_push(self.id, pid, abi::ContainerMode::Share)
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: `words * 8` bytes are attached at `addr` (page-aligned)
        // for as long as this object lives (see `Ica::as_slice`); every
        // process that sees them uses them only as atomic words, which may
        // be shared freely.
        unsafe { core::slice::from_raw_parts(self.addr as *const AtomicU64, self.words) }
    }
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        unclaim(self.id);
        let _ = sys::res_delete(self.id);
    }
}
