//! The program heap: a first-fit allocator over one large anonymous region,
//! reserved at the first allocation. Anonymous memory is paged in at first
//! touch, so reserving much costs only the pages actually used. A large
//! block (a program file read whole, a converter's output) is anonymous
//! memory of its own, given back when freed, so that the arena's size
//! limits only the small ones.
//!
//! Small blocks come from lists of free blocks by size class in front of
//! the first-fit allocator: a server allocates and frees the same few
//! sizes for every request it serves, and the first-fit allocator's walk
//! of its list of holes, at every allocation and every free, grows with
//! how fragmented its arena is (a supervisor's fork and exec spent a third
//! of their instructions there). A freed small block waits in its class's
//! list for the next allocation of that class; the lists only ever hold
//! blocks the program has used at once before.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use linked_list_allocator::Heap as FirstFit;

const ARENA: u64 = 64 << 20;
/// Blocks of this size or more get memory of their own.
const LARGE: usize = 1 << 20;
const PAGE: usize = 4096;
/// Size classes of `GRAIN` bytes up to `SMALL`, aligned to `GRAIN`.
const GRAIN: usize = 16;
const SMALL: usize = 1024;
const CLASSES: usize = SMALL / GRAIN;

struct Inner {
    first_fit: FirstFit,
    /// The first free block of each class (0: none); each free block's
    /// first word is the address of the next.
    free: [usize; CLASSES],
}

struct Heap {
    inner: spin::Mutex<Inner>,
}

/// The size class of `layout` if it is a small one.
fn class_of(layout: Layout) -> Option<usize> {
    (layout.size() <= SMALL && layout.align() <= GRAIN).then(|| layout.size().max(1).div_ceil(GRAIN) - 1)
}

// SAFETY: all state is behind the allocator's own lock.
unsafe impl GlobalAlloc for Heap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // A small block of a class with a free one is the common case: it
        // stays a leaf that saves no registers, the rest is out of line.
        if let Some(c) = class_of(layout) {
            let mut h = self.inner.lock();
            let block = h.free[c];
            if block != 0 {
                // SAFETY: a free block of this class, at least a word and
                // aligned to GRAIN, holds the next one's address.
                h.free[c] = unsafe { *(block as *const usize) };
                return block as *mut u8;
            }
            // A small block is its class's whole size, so that any block
            // of the class serves any later allocation of it.
            return first_fit(h, (c + 1) * GRAIN, GRAIN);
        }
        self.alloc_other(layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(c) = class_of(layout)
            && !ptr.is_null()
        {
            let mut h = self.inner.lock();
            // SAFETY: allocated by `alloc` as a block of class `c` (at
            // least GRAIN bytes, aligned to GRAIN), no longer used.
            unsafe { *(ptr as *mut usize) = h.free[c] };
            h.free[c] = ptr as usize;
            return;
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { self.dealloc_slow(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A small block is its class's whole size: a size of the same
        // class fits where it is (a vector growing by a few elements).
        if let (Some(c), Ok(new)) = (class_of(layout), Layout::from_size_align(new_size, layout.align()))
            && class_of(new) == Some(c)
        {
            return ptr;
        }
        // SAFETY: the caller's promise, passed on; the new block is at
        // least as large as the bytes copied into it.
        unsafe {
            let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

impl Heap {
    /// A block too big for a class: memory of its own if large, else from
    /// the first-fit allocator.
    #[cold]
    #[inline(never)]
    fn alloc_other(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE && layout.align() <= PAGE {
            let prot = abi::prot::READ | abi::prot::WRITE;
            return crate::sys::map(layout.size() as u64, prot).map_or(core::ptr::null_mut(), |a| a as *mut u8);
        }
        first_fit(self.inner.lock(), layout.size(), layout.align())
    }

    /// # Safety
    /// `ptr` was allocated by `alloc_other` with `layout` (not a small one)
    /// and is no longer used.
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_slow(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= LARGE && layout.align() <= PAGE {
            let _ = crate::sys::unmap(ptr as u64, layout.size() as u64);
            return;
        }
        let Some(p) = NonNull::new(ptr) else {
            return;
        };
        // SAFETY: allocated by `alloc` with this layout.
        unsafe { self.inner.lock().first_fit.deallocate(p, layout) }
    }
}

/// `size` bytes aligned to `align` from the first-fit allocator, its arena
/// reserved at the first call.
#[cold]
#[inline(never)]
fn first_fit(mut h: spin::MutexGuard<'_, Inner>, size: usize, align: usize) -> *mut u8 {
    let Ok(layout) = Layout::from_size_align(size, align) else {
        return core::ptr::null_mut();
    };
    if h.first_fit.size() == 0 {
        let Ok(base) = crate::sys::map(ARENA, abi::prot::READ | abi::prot::WRITE) else {
            return core::ptr::null_mut();
        };
        // SAFETY: the region was just mapped for the heap alone.
        unsafe { h.first_fit.init(base as *mut u8, ARENA as usize) };
    }
    h.first_fit
        .allocate_first_fit(layout)
        .map_or(core::ptr::null_mut(), |p| p.as_ptr())
}

#[global_allocator]
static HEAP: Heap = Heap {
    inner: spin::Mutex::new(Inner {
        first_fit: FirstFit::empty(),
        free: [0; CLASSES],
    }),
};
