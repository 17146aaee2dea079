//! The program heap: a first-fit allocator over one large anonymous region,
//! reserved at the first allocation. Anonymous memory is paged in at first
//! touch, so reserving much costs only the pages actually used. A large
//! block (a program file read whole, a converter's output) is anonymous
//! memory of its own, given back when freed, so that the arena's size
//! limits only the small ones.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use linked_list_allocator::LockedHeap;

const ARENA: u64 = 64 << 20;
/// Blocks of this size or more get memory of their own.
const LARGE: usize = 1 << 20;
const PAGE: usize = 4096;

struct Heap {
    inner: LockedHeap,
}

// SAFETY: all state is behind the allocator's own lock.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE && layout.align() <= PAGE {
            let prot = abi::prot::READ | abi::prot::WRITE;
            return crate::sys::map(layout.size() as u64, prot).map_or(core::ptr::null_mut(), |a| a as *mut u8);
        }
        let mut h = self.inner.lock();
        if h.size() == 0 {
            let Ok(base) = crate::sys::map(ARENA, abi::prot::READ | abi::prot::WRITE) else {
                return core::ptr::null_mut();
            };
            // SAFETY: the region was just mapped for the heap alone.
            unsafe { h.init(base as *mut u8, ARENA as usize) };
        }
        h.allocate_first_fit(layout)
            .map_or(core::ptr::null_mut(), |p| p.as_ptr())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= LARGE && layout.align() <= PAGE {
            let _ = crate::sys::unmap(ptr as u64, layout.size() as u64);
            return;
        }
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: allocated by `alloc` with this layout.
            unsafe { self.inner.lock().deallocate(p, layout) };
        }
    }
}

#[global_allocator]
static HEAP: Heap = Heap {
    inner: LockedHeap::empty(),
};
