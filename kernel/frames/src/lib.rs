//! Physical frame allocator: a binary buddy system over frame numbers.
//!
//! Tessera needs runs of `n` physically contiguous frames (AnT's ICA, Tender's
//! containers, DMA buffers), not only single frames, and it must report how
//! much is free. A buddy system gives both with O(log n) work per operation.
//! A request for `n` frames takes the smallest block of order `k` with
//! `2^k >= n` and gives the unused tail back immediately, so a run of 3 frames
//! costs 3 frames, not 4.
//!
//! The allocator keeps its metadata in a caller-supplied slice (one
//! [`FrameMeta`] per frame) instead of inside the free frames themselves, so
//! it never touches the memory it manages and runs unchanged in host tests.
//! Out of memory is an error value ([`OutOfFrames`]), never a panic.
#![cfg_attr(not(test), no_std)]

pub mod ranges;

/// Largest block is 2^MAX_ORDER frames (4 GiB of 4 KiB frames would be 20).
pub const MAX_ORDER: usize = 18;
const NONE: u32 = u32::MAX;

/// Per-frame bookkeeping. `order` is only meaningful for the head frame of a
/// free block; `free_head` marks that head. `shares` counts, for a frame in
/// use, the holders it has beyond the first (copy-on-write after a fork):
/// only the last holder's release frees it.
#[derive(Clone, Copy, Debug)]
pub struct FrameMeta {
    next: u32,
    prev: u32,
    order: u8,
    free_head: bool,
    shares: u16,
}

impl FrameMeta {
    pub const EMPTY: FrameMeta = FrameMeta {
        next: NONE,
        prev: NONE,
        order: 0,
        free_head: false,
        shares: 0,
    };
}

/// The request could not be met: not enough contiguous free frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfFrames {
    pub requested: usize,
}

/// Counts reported to the inspector and used by leak tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames handed to the allocator as usable RAM.
    pub managed: usize,
    /// Frames currently free.
    pub free: usize,
    /// Largest contiguous run that can currently be allocated, in frames.
    pub largest_run: usize,
}

pub struct FrameAllocator<'m> {
    meta: &'m mut [FrameMeta],
    heads: [u32; MAX_ORDER + 1],
    managed: usize,
    free: usize,
}

impl<'m> FrameAllocator<'m> {
    /// An allocator for frames `0..meta.len()`, all of them initially in use.
    /// Usable memory is then given with [`FrameAllocator::add_free_range`].
    pub fn new(meta: &'m mut [FrameMeta]) -> Self {
        assert!(meta.len() < NONE as usize, "too many frames");
        meta.fill(FrameMeta::EMPTY);
        FrameAllocator {
            meta,
            heads: [NONE; MAX_ORDER + 1],
            managed: 0,
            free: 0,
        }
    }

    pub fn frame_count(&self) -> usize {
        self.meta.len()
    }

    /// Declares frames `start..start + count` usable and free. Frames outside
    /// the metadata are ignored, so a memory map larger than the slice is safe.
    pub fn add_free_range(&mut self, start: usize, count: usize) {
        let end = start.saturating_add(count).min(self.meta.len());
        let mut pfn = start;
        while pfn < end {
            let order = largest_order_at(pfn, end - pfn);
            self.managed += 1 << order;
            self.release_block(pfn, order);
            pfn += 1 << order;
        }
    }

    /// Frames free now.
    #[inline(always)]
    pub fn free_frames(&self) -> usize {
        self.free
    }

    /// Allocates `n` physically contiguous frames and returns the first frame
    /// number. The run starts on a boundary of the smallest power of two that
    /// holds `n`.
    pub fn alloc(&mut self, n: usize) -> Result<usize, OutOfFrames> {
        let err = OutOfFrames { requested: n };
        if n == 0 {
            return Err(err);
        }
        let want = order_for(n).ok_or(err)?;
        let mut order = want;
        while order <= MAX_ORDER && self.heads[order] == NONE {
            order += 1;
        }
        if order > MAX_ORDER {
            return Err(err);
        }
        let pfn = self.heads[order] as usize;
        self.unlink(pfn, order);
        // Split down to the wanted order; the upper halves stay free.
        while order > want {
            order -= 1;
            self.link(pfn + (1 << order), order);
        }
        self.free -= 1 << want;
        // Give back the tail beyond n.
        let size = 1usize << want;
        if size > n {
            self.free_run(pfn + n, size - n);
        }
        Ok(pfn)
    }

    /// Returns `n` frames starting at `pfn` (any run previously allocated,
    /// or any part of one). Freeing a frame that is already free is a bug in
    /// the caller and is reported by panic in debug builds.
    pub fn free_run(&mut self, pfn: usize, n: usize) {
        let end = pfn + n;
        let mut at = pfn;
        while at < end {
            let order = largest_order_at(at, end - at);
            self.release_block(at, order);
            at += 1 << order;
        }
    }

    /// One more holder of frame `pfn` (in use): false, and nothing
    /// changed, if it has as many as it can count or is not managed here.
    pub fn share(&mut self, pfn: usize) -> bool {
        match self.meta.get_mut(pfn) {
            Some(m) if !m.free_head && m.shares < u16::MAX => {
                m.shares += 1;
                true
            }
            _ => false,
        }
    }

    /// Holders of frame `pfn` beyond the first (0: one holder alone).
    #[inline]
    pub fn shares(&self, pfn: usize) -> u16 {
        self.meta.get(pfn).map_or(0, |m| m.shares)
    }

    /// One holder of frame `pfn` lets go: the frame is freed if it was the
    /// last (true), else it stays for the others.
    pub fn release(&mut self, pfn: usize) -> bool {
        match self.meta.get_mut(pfn) {
            Some(m) if m.shares > 0 => {
                m.shares -= 1;
                false
            }
            _ => {
                self.free_run(pfn, 1);
                true
            }
        }
    }

    pub fn stats(&self) -> FrameStats {
        let largest = (0..=MAX_ORDER)
            .rev()
            .find(|&o| self.heads[o] != NONE)
            .map_or(0, |o| 1 << o);
        FrameStats {
            managed: self.managed,
            free: self.free,
            largest_run: largest,
        }
    }

    /// Is `pfn` inside a free block? (Slow; for tests and assertions.)
    pub fn is_free(&self, pfn: usize) -> bool {
        (0..=MAX_ORDER).any(|order| {
            let head = pfn & !((1usize << order) - 1);
            head < self.meta.len() && self.meta[head].free_head && self.meta[head].order as usize == order
        })
    }

    /// Frees one aligned block, merging with its buddy as long as possible.
    fn release_block(&mut self, mut pfn: usize, mut order: usize) {
        debug_assert!(!self.is_free(pfn), "double free of frame {pfn}");
        debug_assert!(self.meta[pfn].shares == 0, "frame {pfn} freed while shared");
        self.free += 1 << order;
        while order < MAX_ORDER {
            let buddy = pfn ^ (1 << order);
            if buddy >= self.meta.len() || !self.meta[buddy].free_head || self.meta[buddy].order as usize != order {
                break;
            }
            self.unlink(buddy, order);
            pfn = pfn.min(buddy);
            order += 1;
        }
        self.link(pfn, order);
    }

    fn link(&mut self, pfn: usize, order: usize) {
        let head = self.heads[order];
        self.meta[pfn] = FrameMeta {
            next: head,
            prev: NONE,
            order: order as u8,
            free_head: true,
            shares: 0,
        };
        if head != NONE {
            self.meta[head as usize].prev = pfn as u32;
        }
        self.heads[order] = pfn as u32;
    }

    fn unlink(&mut self, pfn: usize, order: usize) {
        let FrameMeta { next, prev, .. } = self.meta[pfn];
        if prev == NONE {
            self.heads[order] = next;
        } else {
            self.meta[prev as usize].next = next;
        }
        if next != NONE {
            self.meta[next as usize].prev = prev;
        }
        self.meta[pfn] = FrameMeta::EMPTY;
    }
}

/// Smallest order whose block holds `n` frames.
fn order_for(n: usize) -> Option<usize> {
    let order = n.checked_next_power_of_two()?.trailing_zeros() as usize;
    (order <= MAX_ORDER).then_some(order)
}

/// Largest order of a block that starts at `pfn` (alignment) and fits in
/// `remaining` frames.
fn largest_order_at(pfn: usize, remaining: usize) -> usize {
    let align = if pfn == 0 {
        MAX_ORDER
    } else {
        pfn.trailing_zeros() as usize
    };
    let fit = (usize::BITS - 1 - remaining.leading_zeros()) as usize;
    align.min(fit).min(MAX_ORDER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_alloc<R>(frames: usize, f: impl FnOnce(&mut FrameAllocator) -> R) -> R {
        let mut meta = vec![FrameMeta::EMPTY; frames];
        let mut a = FrameAllocator::new(&mut meta);
        f(&mut a)
    }

    #[test]
    fn empty_allocator_reports_out_of_frames() {
        with_alloc(64, |a| {
            assert_eq!(a.alloc(1), Err(OutOfFrames { requested: 1 }));
            assert_eq!(a.stats().free, 0);
        });
    }

    #[test]
    fn zero_and_huge_requests_are_errors() {
        with_alloc(64, |a| {
            a.add_free_range(0, 64);
            assert!(a.alloc(0).is_err());
            assert!(a.alloc(65).is_err());
            assert!(a.alloc(usize::MAX).is_err());
            assert_eq!(a.stats().free, 64);
        });
    }

    #[test]
    fn contiguous_runs_are_disjoint_and_aligned() {
        with_alloc(1024, |a| {
            a.add_free_range(0, 1024);
            let mut runs = Vec::new();
            for n in [1usize, 3, 5, 8, 17, 64, 2, 100] {
                let p = a.alloc(n).unwrap();
                assert_eq!(p % n.next_power_of_two(), 0, "run of {n} at {p}");
                for q in p..p + n {
                    assert!(!a.is_free(q));
                }
                runs.push((p, n));
            }
            runs.sort();
            for w in runs.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "overlap {w:?}");
            }
            let used: usize = runs.iter().map(|r| r.1).sum();
            assert_eq!(a.stats().free, 1024 - used);
            for (p, n) in runs {
                a.free_run(p, n);
            }
            assert_eq!(a.stats().free, 1024);
            assert_eq!(a.stats().largest_run, 1024);
        });
    }

    #[test]
    fn tail_of_a_rounded_block_is_returned() {
        with_alloc(8, |a| {
            a.add_free_range(0, 8);
            let p = a.alloc(5).unwrap();
            assert_eq!(a.stats().free, 3);
            // The tail is 5 (alone) and 6..8 (a pair).
            assert_eq!(a.alloc(2).unwrap(), p + 6);
            assert_eq!(a.alloc(1).unwrap(), p + 5);
            assert!(a.alloc(1).is_err());
        });
    }

    #[test]
    fn holes_in_the_memory_map_are_never_handed_out() {
        with_alloc(256, |a| {
            a.add_free_range(1, 9); // 1..10
            a.add_free_range(100, 56); // 100..156
            let mut got = Vec::new();
            while let Ok(p) = a.alloc(1) {
                got.push(p);
            }
            got.sort();
            let want: Vec<usize> = (1..10).chain(100..156).collect();
            assert_eq!(got, want);
            assert_eq!(a.stats().managed, 65);
        });
    }

    #[test]
    fn fragmentation_then_full_merge() {
        with_alloc(512, |a| {
            a.add_free_range(0, 512);
            let singles: Vec<usize> = (0..512).map(|_| a.alloc(1).unwrap()).collect();
            assert!(a.alloc(1).is_err());
            // Free every other frame: no run of 2 exists.
            for p in singles.iter().step_by(2) {
                a.free_run(*p, 1);
            }
            assert_eq!(a.stats().largest_run, 1);
            assert!(a.alloc(2).is_err());
            for p in singles.iter().skip(1).step_by(2) {
                a.free_run(*p, 1);
            }
            assert_eq!(a.stats().largest_run, 512);
            assert_eq!(a.alloc(512).unwrap(), 0);
        });
    }

    #[test]
    fn randomized_against_a_model() {
        // A small deterministic generator keeps the test reproducible.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        with_alloc(2048, |a| {
            a.add_free_range(3, 2000);
            let mut owned = vec![false; 2048];
            let mut live: Vec<(usize, usize)> = Vec::new();
            for _ in 0..20_000 {
                if rnd() % 3 != 0 || live.is_empty() {
                    let n = 1 + (rnd() % 40) as usize;
                    if let Ok(p) = a.alloc(n) {
                        for f in owned.iter_mut().skip(p).take(n) {
                            assert!(!*f);
                            *f = true;
                        }
                        assert!(p >= 3 && p + n <= 2003);
                        live.push((p, n));
                    }
                } else {
                    let i = (rnd() as usize) % live.len();
                    let (p, n) = live.swap_remove(i);
                    for f in owned.iter_mut().skip(p).take(n) {
                        *f = false;
                    }
                    a.free_run(p, n);
                }
                let used = owned.iter().filter(|x| **x).count();
                assert_eq!(a.stats().free, 2000 - used);
            }
            for (p, n) in live.drain(..) {
                a.free_run(p, n);
            }
            assert_eq!(a.stats().free, 2000);
        });
    }

    #[test]
    fn a_shared_frame_is_freed_by_its_last_holder_only() {
        with_alloc(64, |a| {
            a.add_free_range(0, 64);
            let f = a.alloc(1).unwrap();
            assert_eq!(a.shares(f), 0);
            assert!(a.share(f));
            assert!(a.share(f));
            assert_eq!(a.shares(f), 2);
            assert!(!a.release(f));
            assert!(!a.release(f));
            assert!(!a.is_free(f));
            assert_eq!(a.stats().free, 63);
            assert!(a.release(f));
            assert!(a.is_free(f));
            assert_eq!(a.stats().free, 64);
            // A free frame has no holder to add to.
            let g = a.alloc(64).unwrap();
            a.free_run(g, 64);
            assert!(!a.share(g));
        });
    }

    #[test]
    fn a_share_count_stops_at_its_limit() {
        with_alloc(8, |a| {
            a.add_free_range(0, 8);
            let f = a.alloc(1).unwrap();
            for _ in 0..u16::MAX {
                assert!(a.share(f));
            }
            assert!(!a.share(f));
            for _ in 0..u16::MAX {
                assert!(!a.release(f));
            }
            assert!(a.release(f));
            assert_eq!(a.stats().free, 8);
        });
    }
}
