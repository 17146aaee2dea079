//! Kernel stacks, each in its own 64 KiB virtual slot with the lowest page
//! left unmapped: running off the end of a stack hits the guard page and is
//! reported (through the double-fault IST stack) instead of silently
//! corrupting whatever lies below.

use super::frames;
use super::layout::{PAGE_SIZE, STACKS_BASE};
use super::paging::{self, MapError, flags};
use crate::sync::IrqMutex;
use alloc::vec::Vec;

const SLOT: u64 = 64 << 10;
/// Pages of a normal kernel stack (16 KiB).
pub const DEFAULT_PAGES: u64 = 4;

/// Stacks of `DEFAULT_PAGES` kept mapped at their end for the next
/// computation (Linux keeps two a CPU): a process's spawn and end each
/// made one and freed one, and the free's unmap and TLB shootdown with the
/// new one's mapping were about 2,500 instructions a computation.
const KEPT_MAX: usize = 8;

struct Slots {
    next: u64,
    free: Vec<u64>,
    /// Slots whose `DEFAULT_PAGES` pages are still mapped, none in use.
    kept: [u64; KEPT_MAX],
    kept_len: usize,
}

static SLOTS: IrqMutex<Slots> = IrqMutex::new(Slots {
    next: 0,
    free: Vec::new(),
    kept: [0; KEPT_MAX],
    kept_len: 0,
});

#[derive(Debug)]
pub struct KernelStack {
    slot: u64,
    pages: u64,
}

impl KernelStack {
    pub fn new(pages: u64) -> Result<KernelStack, MapError> {
        let pages = pages.clamp(1, SLOT / PAGE_SIZE - 1);
        let slot = {
            let mut s = SLOTS.lock();
            if pages == DEFAULT_PAGES && s.kept_len > 0 {
                s.kept_len -= 1;
                return Ok(KernelStack {
                    slot: s.kept[s.kept_len],
                    pages,
                });
            }
            match s.free.pop() {
                Some(slot) => slot,
                None => {
                    s.next += 1;
                    s.next - 1
                }
            }
        };
        let top = STACKS_BASE + (slot + 1) * SLOT;
        let bottom = top - pages * PAGE_SIZE;
        if let Err(e) = paging::map_kernel_pages(bottom, pages, flags::WRITABLE | flags::NO_EXECUTE | flags::GLOBAL) {
            SLOTS.lock().free.push(slot);
            return Err(e);
        }
        Ok(KernelStack { slot, pages })
    }

    /// Initial stack pointer (16-byte aligned).
    pub fn top(&self) -> u64 {
        STACKS_BASE + (self.slot + 1) * SLOT
    }

    /// Hands the stack over for the rest of the kernel's life (per-CPU stacks).
    pub fn leak(self) -> u64 {
        let top = self.top();
        core::mem::forget(self);
        top
    }
}

/// Page tables made so far for the slots' mappings, which stay: one per
/// 2 MiB (32 slots; the area starts on a 2 MiB boundary) of slots ever in
/// use at once. A leak check counts them as the kernel's, not a loss.
pub fn page_tables() -> usize {
    (SLOTS.lock().next as usize).div_ceil(((2 << 20) / SLOT) as usize)
}

/// Heap bytes the list of free slots takes, which keeps the room it grew
/// to (as many stacks as were once freed at once): like `page_tables`, the
/// kernel's, not a loss.
pub fn free_list_bytes() -> usize {
    let capacity = SLOTS.lock().free.capacity();
    core::alloc::Layout::array::<u64>(capacity).map_or(0, super::heap::charged)
}

/// Frees the stacks kept mapped (`KEPT_MAX`), so that no frame is held
/// by a stack nobody uses: called where the kernel is idle or a leak check
/// counts frames, where interrupts may be enabled (a free shoots down the
/// other CPUs' mappings).
pub fn release_kept() {
    loop {
        let slot = {
            let mut s = SLOTS.lock();
            if s.kept_len == 0 {
                return;
            }
            s.kept_len -= 1;
            s.kept[s.kept_len]
        };
        unmap_slot(slot, DEFAULT_PAGES);
    }
}

/// Unmaps and frees the pages of `slot`'s stack, then frees the slot.
fn unmap_slot(slot: u64, pages: u64) {
    let bottom = STACKS_BASE + (slot + 1) * SLOT - pages * PAGE_SIZE;
    paging::with_kernel_root(|root| {
        for i in 0..pages {
            if let Some(pa) = paging::unmap(root, bottom + i * PAGE_SIZE) {
                frames::free(pa, 1);
            }
        }
    });
    super::tlb::shootdown_kernel(bottom, pages);
    SLOTS.lock().free.push(slot);
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        if self.pages == DEFAULT_PAGES {
            let mut s = SLOTS.lock();
            if s.kept_len < KEPT_MAX {
                let at = s.kept_len;
                s.kept[at] = self.slot;
                s.kept_len += 1;
                return;
            }
        }
        unmap_slot(self.slot, self.pages);
    }
}
