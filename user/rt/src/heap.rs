//! The program heap: a first-fit allocator over one large anonymous region,
//! reserved at the first allocation. Anonymous memory is paged in at first
//! touch, so reserving much costs only the pages actually used.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use linked_list_allocator::LockedHeap;

const ARENA: u64 = 64 << 20;

struct Heap {
    inner: LockedHeap,
}

// SAFETY: all state is behind the allocator's own lock.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
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
