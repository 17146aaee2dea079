//! The program heap: one large anonymous region, reserved at the first
//! allocation. Anonymous memory is paged in at first touch, so reserving
//! much costs only the pages actually used. A large block (a program file
//! read whole, a converter's output) is anonymous memory of its own, given
//! back when freed, so that the arena's size limits only the small ones.
//!
//! Servers allocate and free many small blocks per request (a message's
//! vectors, a path, a decoded record). A first-fit list walks every free
//! hole before the one that fits, and the holes multiply with the requests
//! served: in a supervisor a fork and exec spent thousands of instructions
//! there. So blocks of up to `SMALL_MAX` bytes come from size classes
//! (powers of two): a freed block goes on its class's list and is the next
//! one handed out, in a few instructions. A class's memory is carved from
//! chunks the first-fit heap gives, and is never given back to it: the
//! arena holds at most what each class needed at its peak.

use core::alloc::{GlobalAlloc, Layout};
use linked_list_allocator::Heap as FirstFit;
use spin::Mutex;

const ARENA: u64 = 64 << 20;
/// Blocks of this size or more get memory of their own.
const LARGE: usize = 1 << 20;
const PAGE: usize = 4096;
/// The smallest class: room for the free list's link, and the alignment
/// every smaller request gets anyway.
const SMALL_MIN_SHIFT: u32 = 4;
/// Blocks up to this size come from a class (its size a power of two).
const SMALL_MAX: usize = PAGE;
const CLASSES: usize = (SMALL_MAX.trailing_zeros() - SMALL_MIN_SHIFT + 1) as usize;
/// What a class takes from the first-fit heap at a time: a few pages, so
/// that a class used once costs little.
const CHUNK: usize = 4 * PAGE;

struct State {
    first_fit: FirstFit,
    /// Per class: the first free block (0: none); each free block holds the
    /// address of the next.
    free: [usize; CLASSES],
    /// Per class: the part of its last chunk not handed out yet.
    next: [usize; CLASSES],
    end: [usize; CLASSES],
}

/// The class of a block of `layout`, if it is small. A block of class `c`
/// is `16 << c` bytes at an address that is a multiple of its size (chunks
/// are page-aligned and carved in steps of the size), so any alignment up
/// to its size is met.
#[inline(always)]
fn class(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(1 << SMALL_MIN_SHIFT);
    if size > SMALL_MAX {
        return None;
    }
    Some((size.next_power_of_two().trailing_zeros() - SMALL_MIN_SHIFT) as usize)
}

impl State {
    fn ready(&mut self) -> bool {
        if self.first_fit.size() == 0 {
            let Ok(base) = crate::sys::map(ARENA, abi::prot::READ | abi::prot::WRITE) else {
                return false;
            };
            // SAFETY: the region was just mapped for the heap alone.
            unsafe { self.first_fit.init(base as *mut u8, ARENA as usize) };
        }
        true
    }

    fn alloc_small(&mut self, c: usize) -> *mut u8 {
        let head = self.free[c];
        if head != 0 {
            // SAFETY: a free block of this class, owned by the heap, whose
            // first word is the link written by `free_small`.
            self.free[c] = unsafe { (head as *const usize).read() };
            return head as *mut u8;
        }
        let size = 1usize << (c as u32 + SMALL_MIN_SHIFT);
        if self.next[c] == self.end[c] {
            if !self.ready() {
                return core::ptr::null_mut();
            }
            let Ok(chunk) = Layout::from_size_align(CHUNK, PAGE) else {
                return core::ptr::null_mut();
            };
            let Ok(p) = self.first_fit.allocate_first_fit(chunk) else {
                return core::ptr::null_mut();
            };
            self.next[c] = p.as_ptr() as usize;
            self.end[c] = self.next[c] + CHUNK;
        }
        let p = self.next[c];
        self.next[c] += size;
        p as *mut u8
    }

    fn free_small(&mut self, c: usize, ptr: *mut u8) {
        // SAFETY: the block was handed out by `alloc_small` for this class
        // and is the heap's again: its first word holds the link.
        unsafe { (ptr as *mut usize).write(self.free[c]) };
        self.free[c] = ptr as usize;
    }
}

struct Heap {
    state: Mutex<State>,
}

// SAFETY: all state is behind the one lock.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(c) = class(layout) {
            return self.state.lock().alloc_small(c);
        }
        if layout.size() >= LARGE && layout.align() <= PAGE {
            let prot = abi::prot::READ | abi::prot::WRITE;
            return crate::sys::map(layout.size() as u64, prot).map_or(core::ptr::null_mut(), |a| a as *mut u8);
        }
        let mut s = self.state.lock();
        if !s.ready() {
            return core::ptr::null_mut();
        }
        s.first_fit
            .allocate_first_fit(layout)
            .map_or(core::ptr::null_mut(), |p| p.as_ptr())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr.is_null() {
            return;
        }
        if let Some(c) = class(layout) {
            self.state.lock().free_small(c, ptr);
            return;
        }
        if layout.size() >= LARGE && layout.align() <= PAGE {
            let _ = crate::sys::unmap(ptr as u64, layout.size() as u64);
            return;
        }
        if let Some(p) = core::ptr::NonNull::new(ptr) {
            // SAFETY: allocated by `alloc` with this layout, from the
            // first-fit heap (neither small nor large).
            unsafe { self.state.lock().first_fit.deallocate(p, layout) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A block that stays in its class stays where it is: a vector that
        // grows a little, or shrinks, copies nothing.
        if let (Some(c), Ok(new)) = (class(layout), Layout::from_size_align(new_size, layout.align()))
            && class(new) == Some(c)
        {
            return ptr;
        }
        let Ok(new) = Layout::from_size_align(new_size, layout.align()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: as `GlobalAlloc::realloc`'s default: a new block, the
        // bytes both hold copied, the old one freed.
        unsafe {
            let p = self.alloc(new);
            if !p.is_null() {
                core::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            p
        }
    }
}

#[global_allocator]
static HEAP: Heap = Heap {
    state: Mutex::new(State {
        first_fit: FirstFit::empty(),
        free: [0; CLASSES],
        next: [0; CLASSES],
        end: [0; CLASSES],
    }),
};
