//! Physical memory (Tender's 実メモリ) as a resource: a run of contiguous
//! frames taken from the frame allocator. Regions take their frames from the
//! same allocator directly; explicit runs are for users that need physical
//! contiguity (AnT's ICA, DMA).

use super::mediator::{NO_IDS, invoke};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
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

/// A run of `pages` contiguous zeroed frames
/// (`res_create(PhysicalMemory, pages)`).
pub fn create(caller: u64, pages: u64) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreatePhysical, NO_IDS, || {
        if pages == 0 || pages > 1 << 18 {
            return Err(Error::Invalid);
        }
        let charge = super::charge(caller, super::cost::<Run>(0))?;
        let base = frames::alloc_zeroed(pages as usize).map_err(|_| Error::NoMemory)?;
        let run = Run {
            base,
            pages: pages as usize,
        };
        super::insert_charged(&mut TABLE.lock(), caller, charge, run)
    })
}

pub struct Runs;

impl Resource for Runs {
    table_methods!(TABLE, delete);

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |r| (r.pages as u64 * 4096, r.base, [ResId::NONE; 3]))
    }
}

/// (id, owner, pages) of every run; where a run is stays the kernel's.
pub fn list(f: &mut dyn FnMut(ResId, u64, usize)) {
    for (id, e) in TABLE.lock().iter() {
        f(id, e.owner, e.value.pages);
    }
}
