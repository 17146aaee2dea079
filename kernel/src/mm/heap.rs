//! The kernel heap: a first-fit allocator (crate `linked_list_allocator`) over
//! a virtual range that grows by mapping fresh frames when it runs out.
//! Allocation failure is reported as a null pointer; kernel code that can
//! meet exhaustion uses the fallible APIs (`try_reserve`, `Box::try_new` ...).

use super::layout::{HEAP_BASE, HEAP_MAX, PAGE_SIZE};
use super::paging::{self, flags};
use crate::sync::IrqMutex;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use linked_list_allocator::Heap;

struct KernelHeap {
    heap: Heap,
    mapped: u64,
}

static HEAP: IrqMutex<KernelHeap> = IrqMutex::new(KernelHeap {
    heap: Heap::empty(),
    mapped: 0,
});

/// Heap growth step: large enough that growth is rare, small enough that
/// the heap stays a small part of a 512 MiB machine.
const GROW_STEP: u64 = 1 << 20;

#[derive(Debug, Clone, Copy)]
pub struct HeapStats {
    pub size: usize,
    pub used: usize,
}

pub fn init() -> Result<(), paging::MapError> {
    let mut h = HEAP.lock();
    let pages = GROW_STEP / PAGE_SIZE;
    paging::map_kernel_pages(HEAP_BASE, pages, flags::WRITABLE | flags::NO_EXECUTE | flags::GLOBAL)?;
    // SAFETY: the range was just mapped for the heap and nothing else uses it.
    unsafe { h.heap.init(HEAP_BASE as *mut u8, GROW_STEP as usize) };
    h.mapped = GROW_STEP;
    Ok(())
}

fn grow(h: &mut KernelHeap, at_least: u64) -> bool {
    let by = at_least.next_multiple_of(GROW_STEP);
    if h.mapped + by > HEAP_MAX {
        return false;
    }
    let pages = by / PAGE_SIZE;
    if paging::map_kernel_pages(
        HEAP_BASE + h.mapped,
        pages,
        flags::WRITABLE | flags::NO_EXECUTE | flags::GLOBAL,
    )
    .is_err()
    {
        return false;
    }
    // SAFETY: the new pages directly follow the heap's current top.
    unsafe { h.heap.extend(by as usize) };
    h.mapped += by;
    true
}

pub fn stats() -> HeapStats {
    let h = HEAP.lock();
    HeapStats {
        size: h.heap.size(),
        used: h.heap.used(),
    }
}

struct Allocator;

// SAFETY: all heap state is behind one interrupt-safe lock.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut h = HEAP.lock();
        if let Ok(p) = h.heap.allocate_first_fit(layout) {
            return p.as_ptr();
        }
        let need = (layout.size() + layout.align() + 64) as u64;
        if grow(&mut h, need)
            && let Ok(p) = h.heap.allocate_first_fit(layout)
        {
            return p.as_ptr();
        }
        core::ptr::null_mut()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: the pointer came from `alloc` with the same layout.
            unsafe { HEAP.lock().heap.deallocate(p, layout) };
        }
    }
}

#[global_allocator]
static ALLOCATOR: Allocator = Allocator;
