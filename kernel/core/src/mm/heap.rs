//! The kernel heap: the `talc` allocator (bucketed free lists: allocation
//! and release cost does not grow with fragmentation, unlike a first-fit
//! list) over a virtual range that grows by mapping fresh frames when it
//! runs out. Allocation failure is reported as a null pointer; kernel code
//! that can meet exhaustion uses the fallible APIs (`try_reserve`, ...).
//!
//! What has no fallible API (an `Arc`, a `Box`) is made on a system call's
//! path only after `room_for` said yes: that asks for the object's size
//! plus a margin, growing the heap if it must, and refuses once even
//! growth cannot give both. The margin is what the infallible allocations
//! of the kernel itself (and those of other CPUs between a check and its
//! allocation) live on when memory has run out: a process meets NoMemory
//! before the kernel meets a failed allocation.
//!
//! Allocations of `large::LARGE_MIN` bytes or more do not live here but in
//! pages of their own (`large.rs`), which go back to the frame allocator
//! when freed: the heap itself never shrinks.
//!
//! In front of talc, small blocks freed wait in a list per size class for
//! the next allocation of their class (a process's creation and end, a
//! call's record: the same few sizes again and again), a pop where talc's
//! bins cost about a hundred instructions a block each way. The lists are
//! bounded (`KEEP_BYTES`), count as free in the statistics (not in
//! `room_for`, which stays on the safe side), and a block past the bound
//! goes back to talc.

use super::large;
use super::layout::{HEAP_BASE, HEAP_MAX, PAGE_SIZE};
use super::paging::{self, flags};
use crate::sync::IrqMutex;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use talc::{ErrOnOom, Span, Talc};

struct KernelHeap {
    talc: Talc<ErrOnOom>,
    /// The part of the heap range handed to talc so far.
    span: Span,
    mapped: u64,
    /// The first free block of each size class (0: none); a free block's
    /// first word is the next one's address.
    free: [usize; CLASSES],
    /// Bytes and blocks the class lists hold.
    kept_bytes: usize,
    kept_blocks: usize,
    /// Allocations since boot, the class lists' included.
    allocations: u64,
}

/// Size classes of `GRAIN` bytes up to `SMALL`, aligned to `GRAIN`.
const GRAIN: usize = 16;
const SMALL: usize = 512;
const CLASSES: usize = SMALL / GRAIN;
/// The most the class lists keep: beyond it a freed block goes to talc.
const KEEP_BYTES: usize = 64 << 10;

/// The size class of `layout` if it is a small one.
#[inline(always)]
fn class_of(layout: Layout) -> Option<usize> {
    (layout.size() <= SMALL && layout.align() <= GRAIN).then(|| layout.size().max(1).div_ceil(GRAIN) - 1)
}

/// The layout talc gives a block of class `c`: the class's whole size, so
/// that any block of the class serves any allocation of it.
#[inline(always)]
fn class_layout(c: usize) -> Layout {
    // SAFETY: GRAIN is a power of two and the size a small multiple of it.
    unsafe { Layout::from_size_align_unchecked((c + 1) * GRAIN, GRAIN) }
}

// SAFETY: the heap's memory and bookkeeping are the kernel's, reached only
// with the HEAP lock held.
unsafe impl Send for KernelHeap {}

static HEAP: IrqMutex<KernelHeap> = IrqMutex::new(KernelHeap {
    talc: Talc::new(ErrOnOom),
    span: Span::empty(),
    mapped: 0,
    free: [0; CLASSES],
    kept_bytes: 0,
    kept_blocks: 0,
    allocations: 0,
});

/// Heap growth step: large enough that growth is rare, small enough that
/// the heap stays a small part of a 512 MiB machine.
const GROW_STEP: u64 = 1 << 20;

/// Free heap that checked allocations leave to the kernel's own.
const MARGIN: usize = 256 << 10;

/// Whether an allocation of `layout` fits in the heap with `MARGIN` to
/// spare (growing it if needed).
pub fn room_for(layout: Layout) -> bool {
    if large::takes(layout) {
        // Its own frames, with the heap's margin kept in frames too; and
        // the heap's margin itself.
        return large::room_for(layout.size(), MARGIN as u64 / PAGE_SIZE) && room_for(Layout::new::<u8>());
    }
    let need = layout.size() + layout.align() + MARGIN;
    let mut h = HEAP.lock();
    let free = h.talc.get_counters().available_bytes;
    // Growth for a process's allocation leaves the frames' reserve alone:
    // refused, the system call has the pool give memory back and tries
    // again (`pool::or_reclaim`).
    free >= need || (grow(&mut h, (need - free) as u64, false) && h.talc.get_counters().available_bytes >= need)
}

/// The heap cannot hold `T` beside its margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoRoom;

/// `Arc::new(value)`, or NoRoom (see `room_for`): an `Arc` a process's
/// system call makes.
pub fn try_arc<T>(value: T) -> Result<alloc::sync::Arc<T>, NoRoom> {
    // An Arc's block: two counters, then the value.
    let layout = Layout::new::<(usize, usize, T)>();
    if room_for(layout) {
        Ok(alloc::sync::Arc::new(value))
    } else {
        Err(NoRoom)
    }
}

/// `Box::new(value)`, or NoRoom (see `room_for`).
pub fn try_box<T>(value: T) -> Result<alloc::boxed::Box<T>, NoRoom> {
    if room_for(Layout::new::<T>()) {
        Ok(alloc::boxed::Box::new(value))
    } else {
        Err(NoRoom)
    }
}

/// The bytes `stats().used` counts for one allocation of `layout`: a
/// large one takes whole pages.
pub fn charged(layout: Layout) -> usize {
    if large::takes(layout) {
        (large::pages_of(layout.size()) * PAGE_SIZE) as usize
    } else {
        layout.size()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct HeapStats {
    /// Bytes mapped for the kernel's allocations: the heap's range, the
    /// large allocations' pages (in use, or freed and not yet unmapped)
    /// and the page tables of their range.
    pub size: usize,
    /// Bytes in use (large allocations in whole pages).
    pub used: usize,
    /// Allocations since boot.
    pub allocations: u64,
    /// Small allocations alive now: with `used`, tells a leak of one
    /// object from a table that grew.
    pub live: usize,
    /// The large allocations' part (`large.rs`).
    pub large: large::LargeStats,
}

fn span(len: u64) -> Span {
    Span::new(HEAP_BASE as *mut u8, (HEAP_BASE + len) as *mut u8)
}

pub fn init() -> Result<(), paging::MapError> {
    let mut h = HEAP.lock();
    let pages = GROW_STEP / PAGE_SIZE;
    paging::map_kernel_pages(HEAP_BASE, pages, flags::WRITABLE | flags::NO_EXECUTE | flags::GLOBAL)?;
    // SAFETY: the range was just mapped for the heap and nothing else uses it.
    h.span = unsafe { h.talc.claim(span(GROW_STEP)) }.map_err(|_| paging::MapError::OutOfMemory)?;
    h.mapped = GROW_STEP;
    Ok(())
}

/// Grows the heap by a whole step if the frames are there, else by only
/// what `at_least` needs: near the end of memory a step cannot be had
/// when a few pages still can, and a failed allocation of the kernel's is
/// an error on a system call's path but a panic elsewhere. Only that last
/// resort may take the frames' reserve (`frames::Reserve::All`), and only
/// if `reserve` says so: the heap's lock is held here, so the pool cannot
/// be asked to give memory back; an ordinary allocation's failure asks
/// it, which refills the reserve.
fn grow(h: &mut KernelHeap, at_least: u64, reserve: bool) -> bool {
    let pages = at_least.next_multiple_of(PAGE_SIZE);
    grow_by(h, at_least.next_multiple_of(GROW_STEP))
        || grow_by(h, pages)
        || (reserve && super::frames::with_reserve(super::frames::Reserve::All, || grow_by(h, pages)))
}

/// The largest allocation whose growth may take the frames' reserve: the
/// kernel's own records and nodes are smaller; anything larger is a
/// list a process asked for, which fails cleanly.
const RESERVE_ALLOCATION: usize = PAGE_SIZE as usize;

fn grow_by(h: &mut KernelHeap, by: u64) -> bool {
    if h.mapped + by > HEAP_MAX {
        return false;
    }
    let pages = by / PAGE_SIZE;
    let flags = flags::WRITABLE | flags::NO_EXECUTE | flags::GLOBAL;
    if paging::map_kernel_pages(HEAP_BASE + h.mapped, pages, flags).is_err() {
        return false;
    }
    h.mapped += by;
    let old = h.span;
    // SAFETY: the new pages directly follow the heap's current end.
    h.span = unsafe { h.talc.extend(old, span(h.mapped)) };
    true
}

pub fn stats() -> HeapStats {
    let l = large::stats();
    let h = HEAP.lock();
    HeapStats {
        size: (h.mapped + (l.mapped + l.tables) * PAGE_SIZE) as usize,
        used: h.talc.get_counters().allocated_bytes - h.kept_bytes + (l.live * PAGE_SIZE) as usize,
        allocations: h.allocations + l.allocations,
        live: h.talc.get_counters().allocation_count - h.kept_blocks,
        large: l,
    }
}

struct Allocator;

// SAFETY: all heap state is behind one interrupt-safe lock.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if large::takes(layout) {
            return large::alloc(layout.size());
        }
        let class = class_of(layout);
        let mut h = HEAP.lock();
        h.allocations += 1;
        let layout = match class {
            Some(c) => {
                let block = h.free[c];
                if block != 0 {
                    // SAFETY: a free block of class `c`, at least a word and
                    // aligned to GRAIN, holds the next one's address.
                    h.free[c] = unsafe { *(block as *const usize) };
                    h.kept_bytes -= (c + 1) * GRAIN;
                    h.kept_blocks -= 1;
                    return block as *mut u8;
                }
                class_layout(c)
            }
            None => layout,
        };
        // SAFETY: GlobalAlloc never asks for zero-sized layouts.
        if let Ok(p) = unsafe { h.talc.malloc(layout) } {
            return p.as_ptr();
        }
        let need = (layout.size() + layout.align() + 64) as u64;
        if grow(&mut h, need, layout.size() <= RESERVE_ALLOCATION)
            // SAFETY: as above.
            && let Ok(p) = unsafe { h.talc.malloc(layout) }
        {
            return p.as_ptr();
        }
        core::ptr::null_mut()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if large::owns(ptr) {
            // SAFETY: the pointer came from `large::alloc` of this size.
            return unsafe { large::dealloc(ptr, layout.size()) };
        }
        let Some(p) = NonNull::new(ptr) else {
            return;
        };
        let mut h = HEAP.lock();
        match class_of(layout) {
            Some(c) if h.kept_bytes + (c + 1) * GRAIN <= KEEP_BYTES => {
                // SAFETY: a block of class `c` from `alloc` (at least
                // GRAIN bytes, aligned to GRAIN), no longer used.
                unsafe { *(ptr as *mut usize) = h.free[c] };
                h.free[c] = ptr as usize;
                h.kept_bytes += (c + 1) * GRAIN;
                h.kept_blocks += 1;
            }
            // SAFETY: the pointer came from `alloc` with this class's layout.
            Some(c) => unsafe { h.talc.free(p, class_layout(c)) },
            // SAFETY: the pointer came from `alloc` with the same layout.
            None => unsafe { h.talc.free(p, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A large allocation that keeps its number of pages stays where it
        // is (a list that grows by a few entries, or shrinks to fit).
        if large::owns(ptr)
            && new_size >= large::LARGE_MIN
            && large::pages_of(new_size) == large::pages_of(layout.size())
        {
            return ptr;
        }
        // A small block is its class's whole size: a size of the same
        // class fits where it is.
        if let (Some(c), Ok(new)) = (class_of(layout), Layout::from_size_align(new_size, layout.align()))
            && class_of(new) == Some(c)
        {
            return ptr;
        }
        // Otherwise as the default: a new block, the bytes, the old freed.
        // SAFETY: the caller's promises are `alloc`'s and `dealloc`'s.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[global_allocator]
static ALLOCATOR: Allocator = Allocator;
