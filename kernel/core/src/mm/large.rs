//! Large kernel allocations (`LARGE_MIN` bytes or more), each in pages of
//! its own in a virtual range apart from the heap's, as Linux's vmalloc:
//! frames from the frame allocator, mapped at allocation, unmapped and
//! given back at release. The heap only grows (talc cannot give back the
//! middle of its arena); the lists a process makes the kernel keep (a
//! region's frames: 2 MiB for 1 GiB) would otherwise stay the heap's for
//! good once freed, and a workload that made many once would leave every
//! later one without memory.
//!
//! Why 16 KiB: below it, rounding up to whole pages would waste up to a
//! page an allocation on the kernel's many small records; from it on, an
//! allocation is a list or buffer whose size a process chose, which must
//! go back to the frame allocator when it is freed, and whose own cost
//! dwarfs a mapping's.
//!
//! Unmapping kernel pages needs a TLB shootdown, which waits for the other
//! CPUs. A release may come in any context (an interrupt handler dropping
//! the last reference to something, a path holding locks with interrupts
//! off), where waiting for other CPUs can deadlock against one spinning
//! with interrupts off. So a freed range first goes on a list, still
//! mapped (its first bytes link it), and is unmapped only where that is
//! safe: by a release or allocation that runs with interrupts on (no
//! kernel lock held on this CPU), on CPU 0's idle path, and when memory
//! runs short (`reclaim`). Its frames go back to the frame allocator, and
//! its virtual range to the range allocator, only after the shootdown: no
//! CPU can reach a frame or range handed out again through a stale
//! translation. Up to `CACHE_MAX` bytes of freed ranges stay mapped to be
//! handed out again as they are (no shootdown at all: the mapping never
//! changed), so that a path that makes and frees one large buffer at a
//! time does not pay an IPI round for each.

use super::frames;
use super::layout::{LARGE_BASE, LARGE_SIZE, PAGE_SIZE};
use super::paging::{self, flags};
use super::tlb;
use crate::sync::IrqMutex;
use ::frames::ranges::Ranges;
use core::alloc::Layout;
use core::sync::atomic::{AtomicU64, Ordering};

/// The smallest allocation made here rather than in the heap.
pub const LARGE_MIN: usize = 16 << 10;

/// Freed ranges kept mapped for reuse, at most (bytes).
const CACHE_MAX: u64 = 1 << 20;

/// Free virtual ranges the range allocator tracks; past that, a freed range
/// that touches no other is dropped (virtual space only: the range is
/// 256 GiB, and ranges are handed out lowest first, so fragments merge).
const FREE_SLOTS: usize = 256;

/// Ranges unmapped per shootdown.
const BATCH: usize = 16;

/// A freed range's first bytes while it waits on a list (still mapped).
#[repr(C)]
struct Node {
    next: u64,
    pages: u64,
}

struct Large {
    /// The virtual range's pages, numbered from `LARGE_BASE`.
    ranges: Ranges<FREE_SLOTS>,
    /// Freed ranges still mapped, to hand out again as they are.
    cached: u64,
    cached_pages: u64,
    /// Freed ranges waiting for their unmapping and shootdown.
    dead: u64,
    dead_pages: u64,
    /// Pages mapped here: in use, cached and dead.
    mapped: u64,
    /// Pages of allocations in use.
    live: u64,
}

static LARGE: IrqMutex<Large> = IrqMutex::new(Large {
    ranges: Ranges::new((LARGE_SIZE / PAGE_SIZE) as u32),
    cached: 0,
    cached_pages: 0,
    dead: 0,
    dead_pages: 0,
    mapped: 0,
    live: 0,
});

/// Allocations since boot, and releases (unmappings) since boot.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static RELEASES: AtomicU64 = AtomicU64::new(0);

impl Large {
    /// Unlinks a cached range of exactly `pages` pages, if there is one.
    fn cached_of(&mut self, pages: u64) -> Option<u64> {
        let mut link: *mut u64 = &mut self.cached;
        // SAFETY: every node on the list is the start of a freed range,
        // still mapped, that only this list (under the lock) reaches.
        unsafe {
            while *link != 0 {
                let node = *link as *mut Node;
                if (*node).pages == pages {
                    *link = (*node).next;
                    self.cached_pages -= pages;
                    return Some(node as u64);
                }
                link = &mut (*node).next;
            }
        }
        None
    }
}

/// Whether `layout` is allocated here.
#[inline]
pub fn takes(layout: Layout) -> bool {
    layout.size() >= LARGE_MIN && layout.align() <= PAGE_SIZE as usize
}

/// Whether `ptr` is one of this allocator's.
#[inline]
pub fn owns(ptr: *mut u8) -> bool {
    (LARGE_BASE..LARGE_BASE + LARGE_SIZE).contains(&(ptr as u64))
}

pub fn pages_of(size: usize) -> u64 {
    (size as u64).div_ceil(PAGE_SIZE)
}

/// Whether a shootdown may wait for other CPUs here: interrupts on means
/// no kernel lock is held on this CPU (`IrqMutex` turns them off) and
/// this is no interrupt handler.
fn may_wait() -> bool {
    x86_64::instructions::interrupts::are_enabled() && crate::cpu::try_this_cpu().is_some()
}

/// A mapped range of `size` bytes, or null (no frames, or no virtual
/// range left).
pub fn alloc(size: usize) -> *mut u8 {
    let pages = pages_of(size);
    if may_wait() {
        release_dead();
    }
    let Ok(n) = u32::try_from(pages + 1) else {
        return core::ptr::null_mut();
    };
    // More than there is at all: refused before page tables are made for
    // it (they stay: the kernel's tables are never freed).
    if (frames::stats().free as u64) < pages && !(may_wait() && reclaim() >= pages) {
        return core::ptr::null_mut();
    }
    let start = {
        let mut l = LARGE.lock();
        if let Some(va) = l.cached_of(pages) {
            l.live += pages;
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            return va as *mut u8;
        }
        // One page more than mapped: a guard that faults on an overrun
        // rather than letting it reach the next allocation.
        match l.ranges.take(n) {
            Some(s) => s,
            None => return core::ptr::null_mut(),
        }
    };
    let va = LARGE_BASE + start as u64 * PAGE_SIZE;
    let flags = flags::WRITABLE | flags::NO_EXECUTE | flags::GLOBAL;
    let mut mapped = paging::map_kernel_pages(va, pages, flags);
    // The frames cached ranges hold may be what is missing.
    if mapped.is_err() && may_wait() && reclaim() > 0 {
        mapped = paging::map_kernel_pages(va, pages, flags);
    }
    let mut l = LARGE.lock();
    if mapped.is_err() {
        // Never used: no CPU can hold a translation of it.
        l.ranges.put(start, n);
        return core::ptr::null_mut();
    }
    l.mapped += pages;
    l.live += pages;
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    va as *mut u8
}

/// Frees an allocation of `size` bytes at `ptr` (see the module's text
/// for when its pages go).
///
/// # Safety
/// `ptr` came from `alloc(size)` and is not used any more.
pub unsafe fn dealloc(ptr: *mut u8, size: usize) {
    let pages = pages_of(size);
    let node = ptr as *mut Node;
    let wait = {
        let mut guard = LARGE.lock();
        let l = &mut *guard;
        l.live -= pages;
        let cache = l.cached_pages + pages <= CACHE_MAX / PAGE_SIZE;
        let (head, count) = if cache {
            (&mut l.cached, &mut l.cached_pages)
        } else {
            (&mut l.dead, &mut l.dead_pages)
        };
        // SAFETY: the range is mapped and the caller's no longer: its
        // first bytes link it into the list.
        unsafe { node.write(Node { next: *head, pages }) };
        *head = node as u64;
        *count += pages;
        l.dead != 0
    };
    if wait && may_wait() {
        release_dead();
    }
}

/// Unmaps the ranges waiting for it, shoots their translations down and
/// gives their frames and virtual ranges back. Only where `may_wait`.
/// How many pages went.
fn release_dead() -> u64 {
    let mut released = 0;
    loop {
        let mut chain = {
            let mut l = LARGE.lock();
            core::mem::take(&mut l.dead)
        };
        if chain == 0 {
            return released;
        }
        while chain != 0 {
            let mut batch = [(0u64, 0u64); BATCH];
            let mut n = 0;
            while chain != 0 && n < BATCH {
                // SAFETY: a node of a chain this call took off the list:
                // still mapped, and nobody else's.
                let node = unsafe { (chain as *const Node).read() };
                batch[n] = (chain, node.pages);
                n += 1;
                chain = node.next;
            }
            let batch = &batch[..n];
            for &(va, pages) in batch {
                paging::kernel_retire(va, pages as usize);
            }
            match batch {
                [(va, pages)] => tlb::shootdown_kernel(*va, *pages),
                _ => tlb::shootdown_kernel_all(),
            }
            for &(va, pages) in batch {
                paging::kernel_take_retired(va, pages as usize, |pa| frames::free(pa, 1));
            }
            let mut l = LARGE.lock();
            for &(va, pages) in batch {
                l.ranges.put(((va - LARGE_BASE) / PAGE_SIZE) as u32, pages as u32 + 1);
                l.mapped -= pages;
                l.dead_pages -= pages;
                released += pages;
            }
            RELEASES.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

/// Memory running short: the cached ranges go too, with those waiting.
/// How many pages went back to the frame allocator (0 where shootdowns
/// cannot wait: they go at the next safe point).
pub fn reclaim() -> u64 {
    {
        let mut l = LARGE.lock();
        let mut chain = core::mem::take(&mut l.cached);
        let pages = core::mem::take(&mut l.cached_pages);
        l.dead_pages += pages;
        // SAFETY: the nodes are the freed ranges the list held, mapped.
        unsafe {
            while chain != 0 {
                let node = chain as *mut Node;
                chain = (*node).next;
                (*node).next = l.dead;
                l.dead = node as u64;
            }
        }
    }
    if may_wait() { release_dead() } else { 0 }
}

/// A safe point (CPU 0's idle path): ranges freed where a shootdown could
/// not wait go now.
pub fn on_idle() {
    if LARGE.lock().dead != 0 && may_wait() {
        release_dead();
    }
}

/// Whether `pages` pages more can be had with the frames' reserve and
/// `margin` pages to spare.
pub fn room_for(size: usize, margin: u64) -> bool {
    let want = pages_of(size) + margin + frames::RESERVE as u64;
    if (frames::stats().free as u64) < want {
        reclaim();
    }
    frames::stats().free as u64 >= want
}

#[derive(Debug, Clone, Copy, Default)]
pub struct LargeStats {
    /// Pages mapped: in use, cached for reuse, and waiting for release.
    pub mapped: u64,
    /// Pages of allocations in use.
    pub live: u64,
    pub cached: u64,
    pub waiting: u64,
    /// Virtual pages past the top of the range in use.
    pub top: u64,
    /// Virtual pages dropped (the free table was full).
    pub lost: u64,
    /// Page tables made for the range (never freed).
    pub tables: u64,
    pub allocations: u64,
    /// Ranges unmapped and given back.
    pub releases: u64,
}

pub fn stats() -> LargeStats {
    let l = LARGE.lock();
    LargeStats {
        mapped: l.mapped,
        live: l.live,
        cached: l.cached_pages,
        waiting: l.dead_pages,
        top: l.ranges.top() as u64,
        lost: l.ranges.lost(),
        tables: paging::LARGE_TABLES.load(Ordering::Relaxed),
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        releases: RELEASES.load(Ordering::Relaxed),
    }
}
