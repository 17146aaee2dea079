//! Physical memory (Tender's 実メモリ) as a resource: a run of contiguous
//! frames taken from the frame allocator. Regions take their frames from the
//! same allocator directly; explicit runs are for users that need physical
//! contiguity (AnT's ICA, DMA).

use super::{Kind, ResId, ResTable, table};
use abi::{Error, ResInfo};
use kcore::mm::frames;
use kcore::sync::IrqMutex;

pub struct Run {
    pub base: u64,
    pub pages: usize,
}

impl Drop for Run {
    fn drop(&mut self) {
        frames::free(self.base, self.pages);
    }
}

static TABLE: IrqMutex<ResTable<Run>> = IrqMutex::new(table(Kind::PhysicalMemory));

pub fn create(owner: u64, pages: u64) -> Result<ResId, Error> {
    if pages == 0 || pages > 1 << 18 {
        return Err(Error::Invalid);
    }
    let base = frames::alloc_zeroed(pages as usize).map_err(|_| Error::NoMemory)?;
    let run = Run {
        base,
        pages: pages as usize,
    };
    super::insert(&mut TABLE.lock(), owner, run)
}

pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    let mut t = TABLE.lock();
    super::owned(&t, id, caller)?;
    t.remove(id).map(drop).map_err(super::id_error)
}

pub fn query(id: ResId) -> Result<ResInfo, Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    Ok(super::info(
        id,
        e.owner,
        e.value.pages as u64 * 4096,
        e.value.base,
        [ResId::NONE; 3],
    ))
}

pub fn count() -> usize {
    TABLE.lock().len()
}

/// (id, owner, pages) of every run; where a run is stays the kernel's.
pub fn list(f: &mut dyn FnMut(ResId, u64, usize)) {
    for (id, e) in TABLE.lock().iter() {
        f(id, e.owner, e.value.pages);
    }
}

pub fn release_owned_by(pid: u64) {
    let mut t = TABLE.lock();
    let ids = super::ids_owned_by(&t, pid);
    for id in ids {
        let _ = t.remove(id);
    }
}
