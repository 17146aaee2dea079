//! The kernel's physical memory: one buddy allocator (crate `frames`) over
//! every usable frame of the boot memory map, behind an interrupt-safe lock.

use super::layout::{PAGE_SIZE, page_align_up, phys_to_virt};
use crate::sync::IrqMutex;
use frames::{FrameAllocator, FrameMeta, FrameStats};
use platform::memmap::MemoryMap;

static FRAMES: IrqMutex<Option<FrameAllocator<'static>>> = IrqMutex::new(None);

/// Physical memory is exhausted (or no run of the requested length exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory;

/// Frames the allocator never manages: RAM above this is left alone so that
/// the metadata (12 bytes a frame) stays small. 64 GiB is far beyond what the
/// experiments use.
const MAX_MANAGED: u64 = 64 << 30;

/// Sets up the allocator over `memmap`, minus the `reserved` physical ranges
/// (kernel image, boot modules, low memory). The metadata array is carved out
/// of the first usable range below 4 GiB that can hold it, because the boot
/// page tables only map that much.
pub fn init(memmap: &MemoryMap, reserved: &[(u64, u64)]) -> Result<(), OutOfMemory> {
    let end = memmap.usable_end().min(MAX_MANAGED);
    let frames = (end / PAGE_SIZE) as usize;
    let meta_bytes = page_align_up((frames * core::mem::size_of::<FrameMeta>()) as u64);
    let overlaps = |b: u64, e: u64, r: &[(u64, u64)]| r.iter().any(|&(rb, re)| b < re && rb < e);
    let mut meta_at = None;
    memmap.for_each_usable(|base, size| {
        if meta_at.is_some() {
            return;
        }
        let mut b = base.max(1 << 20);
        while b + meta_bytes <= (base + size).min(4 << 30) {
            if !overlaps(b, b + meta_bytes, reserved) {
                meta_at = Some(b);
                return;
            }
            b += PAGE_SIZE;
        }
    });
    let meta_at = meta_at.ok_or(OutOfMemory)?;
    // SAFETY: the range is usable RAM, reserved from now on for this array
    // alone, and mapped by the boot tables' direct map (it lies below 4 GiB).
    let meta = unsafe { core::slice::from_raw_parts_mut(phys_to_virt(meta_at) as *mut FrameMeta, frames) };
    let mut alloc = FrameAllocator::new(meta);
    let meta_range = (meta_at, meta_at + meta_bytes);
    memmap.for_each_usable(|base, size| {
        // Hand out each usable range minus the reserved pieces inside it.
        let mut start = base;
        let limit = (base + size).min(end);
        while start < limit {
            let cut = reserved
                .iter()
                .chain(core::iter::once(&meta_range))
                .filter(|&&(rb, re)| rb < limit && re > start)
                .min_by_key(|&&(rb, _)| rb);
            match cut {
                Some(&(rb, re)) if rb <= start => start = page_align_up(re),
                Some(&(rb, _)) => {
                    let piece_end = rb & !(PAGE_SIZE - 1);
                    if piece_end > start {
                        alloc.add_free_range((start / PAGE_SIZE) as usize, ((piece_end - start) / PAGE_SIZE) as usize);
                    }
                    start = piece_end.max(start + PAGE_SIZE);
                }
                None => {
                    alloc.add_free_range((start / PAGE_SIZE) as usize, ((limit - start) / PAGE_SIZE) as usize);
                    start = limit;
                }
            }
        }
    });
    *FRAMES.lock() = Some(alloc);
    Ok(())
}

/// Frames an ordinary allocation leaves alone (1 MiB): the kernel's own
/// needs that cannot have the pool give memory back where they arise, for
/// a lock is held there, take them instead (`Reserve`). Ordinary
/// allocations thus fail first, and their failure has the pool give its
/// memory back (`pool::or_reclaim`, a user page fault), which refills the
/// reserve.
pub const RESERVE: usize = 256;

/// How far into the reserve an allocation may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Reserve {
    /// None of it: every allocation by default.
    None = 0,
    /// Half: a system call's access to user memory that faults a page in
    /// (its caller may hold a lock the pool's release takes).
    Half = 1,
    /// All: the kernel heap's growth for its own small allocations (made
    /// with the heap's lock held).
    All = 2,
}

/// The frames the current allocation must leave free.
#[cold]
fn floor() -> usize {
    // (Before this CPU's data is set up there is no computation to ask.)
    if crate::cpu::try_this_cpu().is_none() {
        return 0;
    }
    let level = crate::computation::with_current(|c| c.frame_reserve.load(core::sync::atomic::Ordering::Relaxed));
    match level {
        Some(0) => RESERVE,
        Some(1) => RESERVE / 2,
        // Level All, or boot (no computation yet).
        _ => 0,
    }
}

/// Runs `f` with allocations (on this computation) allowed `level` of
/// the reserve, or what they were allowed before if that was more.
pub fn with_reserve<T>(level: Reserve, f: impl FnOnce() -> T) -> T {
    use core::sync::atomic::Ordering::Relaxed;
    if crate::cpu::try_this_cpu().is_none() {
        return f();
    }
    let before = crate::computation::with_current(|c| c.frame_reserve.fetch_max(level as u8, Relaxed));
    let r = f();
    if let Some(b) = before {
        crate::computation::with_current(|c| c.frame_reserve.store(b, Relaxed));
    }
    r
}

/// `n` physically contiguous frames; returns the physical address of the first.
pub fn alloc(n: usize) -> Result<u64, OutOfMemory> {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut().ok_or(OutOfMemory)?;
    // Only near the reserve is the computation asked what it may take.
    let free = a.free_frames();
    if free < n + RESERVE && free < n + floor() {
        return Err(OutOfMemory);
    }
    a.alloc(n).map(|pfn| pfn as u64 * PAGE_SIZE).map_err(|_| OutOfMemory)
}

/// Like `alloc`, with the frames filled with zeros.
pub fn alloc_zeroed(n: usize) -> Result<u64, OutOfMemory> {
    let pa = alloc(n)?;
    // SAFETY: the frames were just allocated to us and are mapped in the direct map.
    unsafe { zero_pages(phys_to_virt(pa) as *mut u8, n) };
    Ok(pa)
}

/// Zeroes `n` pages from `page` with one `rep stosq`. `write_bytes` calls
/// `memset`, which chooses its method by length first: a page's zeroing
/// (a first touch's, a pooled page's refill) went a fiftieth longer.
///
/// # Safety
/// `page` must be page aligned, and the `n` pages from it memory the
/// caller may write (frames it owns, through the direct map).
#[inline(always)]
pub unsafe fn zero_pages(page: *mut u8, n: usize) {
    // SAFETY: the caller's promise; Rust code runs with the direction
    // flag clear, so the stores go up from `page`.
    unsafe {
        core::arch::asm!(
            "rep stosq",
            inout("rcx") n * (PAGE_SIZE as usize / 8) => _,
            inout("rdi") page => _,
            in("rax") 0u64,
            options(nostack, preserves_flags),
        );
    }
}

/// Returns `n` frames starting at physical address `pa`.
pub fn free(pa: u64, n: usize) {
    if let Some(a) = FRAMES.lock().as_mut() {
        a.free_run((pa / PAGE_SIZE) as usize, n);
    }
}

pub fn stats() -> FrameStats {
    FRAMES.lock().as_ref().map(|a| a.stats()).unwrap_or_default()
}

/// One more holder for each frame of `frames` (0: none there), all or
/// none: a frame whose count is full leaves every count as it was.
pub fn share_all(frames: &[u64]) -> Result<(), OutOfMemory> {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut().ok_or(OutOfMemory)?;
    for (i, &pa) in frames.iter().enumerate() {
        if pa != 0 && !a.share((pa / PAGE_SIZE) as usize) {
            for &done in frames[..i].iter().filter(|&&f| f != 0) {
                a.release((done / PAGE_SIZE) as usize);
            }
            return Err(OutOfMemory);
        }
    }
    Ok(())
}

/// Whether frame `pa` has holders beyond the one asking.
#[inline]
pub fn is_shared(pa: u64) -> bool {
    FRAMES
        .lock()
        .as_ref()
        .is_some_and(|a| a.shares((pa / PAGE_SIZE) as usize) != 0)
}

/// One holder of frame `pa` lets go: freed if it was the last.
pub fn release(pa: u64) {
    if let Some(a) = FRAMES.lock().as_mut() {
        a.release((pa / PAGE_SIZE) as usize);
    }
}

/// `release` of every frame of `frames` (0: none there), each cleared, under
/// one hold of the allocator's lock: a forked region's end lets go of all
/// its frames at once (taken one at a time, the lock's hold was half of
/// each frame's cost).
pub fn release_all(frames: &mut [u64]) {
    let mut guard = FRAMES.lock();
    let Some(a) = guard.as_mut() else { return };
    for f in frames.iter_mut().filter(|f| **f != 0) {
        a.release((core::mem::take(f) / PAGE_SIZE) as usize);
    }
}

/// Lets go of (and clears) every frame of `frames` that has other
/// holders, keeping those that are the caller's alone.
pub fn release_shared(frames: &mut [u64]) {
    let mut guard = FRAMES.lock();
    let Some(a) = guard.as_mut() else { return };
    for f in frames.iter_mut().filter(|f| **f != 0) {
        let pfn = (*f / PAGE_SIZE) as usize;
        if a.shares(pfn) != 0 {
            a.release(pfn);
            *f = 0;
        }
    }
}
