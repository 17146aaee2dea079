//! The cache's pages: which device page each slot holds, which are dirty
//! and since which barrier epoch, and the LRU order. Pure bookkeeping; the
//! server moves the data.
//!
//! Write order: the file system's barriers cut time into epochs, and
//! write-back goes epoch by epoch, oldest first. A page written back must
//! carry no write of a later epoch than the pages it goes out with, so a
//! page still dirty from an earlier epoch that is written again keeps that
//! epoch's version in a *shadow*: a copy in a slot of its own, written back
//! with its epoch, while the page itself goes on with the new one. (Without
//! a free slot for the shadow, everything up to the old epoch is written
//! back first.)
//!
//! Slots come in *extents*: runs of consecutive slots whose pages are one
//! physically contiguous piece of memory (an ICA), so that consecutive
//! slots of an extent can go to the device as one request. A read of many
//! pages asks for such a run ([`Pages::victim_run`]); a write-back is cut
//! into requests whose pieces are such runs ([`requests`]).

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

const NONE: usize = usize::MAX;

pub struct Slot {
    /// The device page it holds (a shadow: none; it is not found by page).
    pub key: Option<u64>,
    /// Epoch of its oldest write not yet on the disk.
    pub dirty: Option<u64>,
    /// A shadow holds an earlier epoch's version of this page.
    pub shadow_of: Option<u64>,
    /// Brought in by read-ahead and not touched since.
    pub ahead: bool,
    prev: usize,
    next: usize,
}

pub struct Pages {
    pub slots: Vec<Slot>,
    index: BTreeMap<u64, usize>,
    /// Writes not yet on the disk, in write-back order: (epoch, page) and
    /// the slot holding that version (the page's own, or its shadow).
    dirty: BTreeMap<(u64, u64), usize>,
    /// Most recently used first.
    head: usize,
    tail: usize,
    /// Lowest first: a cache that starts empty fills its slots in order,
    /// so the pages read together lie together.
    free: BTreeSet<usize>,
}

impl Pages {
    pub fn new(n: usize) -> Pages {
        Pages {
            slots: (0..n)
                .map(|_| Slot {
                    key: None,
                    dirty: None,
                    shadow_of: None,
                    ahead: false,
                    prev: NONE,
                    next: NONE,
                })
                .collect(),
            index: BTreeMap::new(),
            dirty: BTreeMap::new(),
            head: NONE,
            tail: NONE,
            free: (0..n).collect(),
        }
    }

    pub fn lookup(&self, page: u64) -> Option<usize> {
        self.index.get(&page).copied()
    }

    /// Pages held.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    fn unlink(&mut self, s: usize) {
        let (p, n) = (self.slots[s].prev, self.slots[s].next);
        if p != NONE {
            self.slots[p].next = n;
        } else if self.head == s {
            self.head = n;
        }
        if n != NONE {
            self.slots[n].prev = p;
        } else if self.tail == s {
            self.tail = p;
        }
        self.slots[s].prev = NONE;
        self.slots[s].next = NONE;
    }

    fn push_front(&mut self, s: usize) {
        self.slots[s].next = self.head;
        self.slots[s].prev = NONE;
        if self.head != NONE {
            self.slots[self.head].prev = s;
        }
        self.head = s;
        if self.tail == NONE {
            self.tail = s;
        }
    }

    /// Marks slot `s` used just now.
    pub fn touch(&mut self, s: usize) {
        if self.head != s {
            self.unlink(s);
            self.push_front(s);
        }
    }

    /// A slot to fill: a free one, else the least recently used clean one
    /// (`None` if every used slot is dirty: write back first). `skip` are
    /// slots that must not be taken (being filled by the same request).
    pub fn victim(&mut self, skip: &[usize]) -> Option<usize> {
        if let Some(s) = self.free.pop_first() {
            return Some(s);
        }
        let s = self.lru_clean(skip)?;
        self.forget(s);
        self.free.remove(&s);
        Some(s)
    }

    /// The least recently used clean slot not in `skip`.
    fn lru_clean(&self, skip: &[usize]) -> Option<usize> {
        let mut s = self.tail;
        while s != NONE {
            if self.slots[s].dirty.is_none() && !skip.contains(&s) {
                return Some(s);
            }
            s = self.slots[s].prev;
        }
        None
    }

    /// Whether slot `s` may be taken for a run: free, or holding a clean
    /// page (a shadow is dirty until written back; a retired slot is
    /// neither held nor free).
    fn available(&self, s: usize) -> bool {
        self.free.contains(&s) || (self.slots[s].key.is_some() && self.slots[s].dirty.is_none())
    }

    /// Up to `n` consecutive slots to fill, inside one extent of `extent`
    /// slots (extent i is slots `i * extent ..`): (first slot, how many,
    /// at least one). A run of free slots if the first free ones hold one;
    /// else the run grows around the least recently used clean slot over
    /// its free and clean neighbours (which are dropped: the pages read
    /// together are evicted together, so their neighbours are old too).
    /// `None` if every slot is dirty.
    pub fn victim_run(&mut self, n: usize, extent: usize) -> Option<(usize, usize)> {
        let extent = extent.max(1);
        let n = n.clamp(1, extent);
        let (lo, hi) = match self.free_run(n, extent) {
            Some(run) => run,
            None => {
                let start = self.lru_clean(&[])?;
                let base = start - start % extent;
                let end = (base + extent).min(self.slots.len());
                let (mut lo, mut hi) = (start, start + 1);
                while hi - lo < n && hi < end && self.available(hi) {
                    hi += 1;
                }
                while hi - lo < n && lo > base && self.available(lo - 1) {
                    lo -= 1;
                }
                (lo, hi)
            }
        };
        for s in lo..hi {
            self.forget(s);
            self.free.remove(&s);
        }
        Some((lo, hi - lo))
    }

    /// A run of `n` free slots inside one extent, or of fewer that reach
    /// their extent's end, if the first free slots hold one (a bounded
    /// look: the free slots of a cache filling up lie in order, and a
    /// scattered few are not worth a search): (first, end).
    fn free_run(&self, n: usize, extent: usize) -> Option<(usize, usize)> {
        let (mut first, mut len) = (NONE, 0);
        for &s in self.free.iter().take(4 * extent) {
            if len > 0 && s == first + len && s % extent != 0 {
                len += 1;
            } else {
                (first, len) = (s, 1);
            }
            let last = (s + 1) % extent == 0 || s + 1 == self.slots.len();
            if len == n || last {
                return Some((first, first + len));
            }
        }
        None
    }

    /// Slot `s` (a victim) now holds `page`.
    pub fn assign(&mut self, s: usize, page: u64, ahead: bool) {
        self.slots[s].key = Some(page);
        self.slots[s].ahead = ahead;
        self.index.insert(page, s);
        self.push_front(s);
    }

    /// Slot `s` holds nothing any more (it must be clean); it goes to the
    /// free list.
    pub fn forget(&mut self, s: usize) {
        if let Some(k) = self.slots[s].key.take() {
            self.index.remove(&k);
            self.unlink(s);
            self.free.insert(s);
        }
        self.slots[s].ahead = false;
    }

    /// Slot `s`, a victim never assigned, goes back to the free list.
    pub fn unused(&mut self, s: usize) {
        self.free.insert(s);
    }

    /// Slot `s` leaves the cache for good (its page was lost).
    pub fn retire(&mut self, s: usize) {
        self.mark_clean(s);
        self.forget(s);
        self.free.remove(&s);
    }

    /// The earlier epoch whose version of slot `s` must be kept before a
    /// write in `epoch` changes it.
    pub fn older_version(&self, s: usize, epoch: u64) -> Option<u64> {
        self.slots[s].dirty.filter(|&e| e < epoch)
    }

    /// Slot `shadow` (a victim), into which the caller copied slot `s`,
    /// now holds `s`'s pending version; `s` is clean until written again.
    pub fn shadow(&mut self, s: usize, shadow: usize) {
        let (Some(e), Some(k)) = (self.slots[s].dirty.take(), self.slots[s].key) else {
            return;
        };
        self.dirty.insert((e, k), shadow);
        self.slots[shadow].shadow_of = Some(k);
        self.slots[shadow].dirty = Some(e);
    }

    /// Slot `s` was written in `epoch`.
    pub fn mark_dirty(&mut self, s: usize, epoch: u64) {
        if self.slots[s].dirty.is_none()
            && let Some(k) = self.slots[s].key
        {
            self.slots[s].dirty = Some(epoch);
            self.dirty.insert((epoch, k), s);
        }
    }

    /// Slot `s` is on the disk: clean, or free if it was a shadow.
    pub fn mark_clean(&mut self, s: usize) {
        let Some(e) = self.slots[s].dirty.take() else {
            return;
        };
        match self.slots[s].shadow_of.take() {
            Some(k) => {
                self.dirty.remove(&(e, k));
                self.free.insert(s);
            }
            None => {
                if let Some(k) = self.slots[s].key {
                    self.dirty.remove(&(e, k));
                }
            }
        }
    }

    /// The writes of the oldest epoch, if it is at most `up_to`: (epoch,
    /// (page, slot) in ascending page order).
    pub fn oldest_dirty(&self, up_to: u64) -> Option<(u64, Vec<(u64, usize)>)> {
        let (&(epoch, _), _) = self.dirty.first_key_value()?;
        if epoch > up_to {
            return None;
        }
        let pages = self
            .dirty
            .range((epoch, 0)..=(epoch, u64::MAX))
            .map(|(&(_, p), &s)| (p, s))
            .collect();
        Some((epoch, pages))
    }

    /// Every page held, for dropping them all.
    pub fn held(&self) -> Vec<usize> {
        self.index.values().copied().collect()
    }
}

/// Splits (page, slot) pairs in ascending page order into device
/// requests: each covers consecutive pages, at most `max` of them, in at
/// most `max_pieces` pieces, a piece being consecutive slots of one extent
/// (of `extent` slots), and no extent in two pieces of one request (an
/// extent travels whole). Returns (first page, the slots).
pub fn requests(pages: &[(u64, usize)], extent: usize, max: usize, max_pieces: usize) -> Vec<(u64, Vec<usize>)> {
    let extent = extent.max(1);
    let mut out: Vec<(u64, Vec<usize>)> = Vec::new();
    let mut extents: Vec<usize> = Vec::new();
    for &(p, s) in pages {
        if let Some((first, slots)) = out.last_mut()
            && *first + slots.len() as u64 == p
            && slots.len() < max
        {
            let prev = slots[slots.len() - 1];
            if prev + 1 == s && s % extent != 0 {
                slots.push(s);
                continue;
            }
            if extents.len() < max_pieces && !extents.contains(&(s / extent)) {
                extents.push(s / extent);
                slots.push(s);
                continue;
            }
        }
        out.push((p, alloc::vec![s]));
        extents.clear();
        extents.push(s / extent);
    }
    out
}

/// The pieces of a request's slots (consecutive slots of one extent):
/// (extent, first slot in it, slots).
pub fn pieces(slots: &[usize], extent: usize) -> Vec<(usize, usize, usize)> {
    let extent = extent.max(1);
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for &s in slots {
        match out.last_mut() {
            Some((e, at, n)) if *e == s / extent && *e * extent + *at + *n == s => *n += 1,
            _ => out.push((s / extent, s % extent, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of the cache's memory and a disk: each write puts the
    /// write's number into a page; write-back copies slots to the disk and
    /// logs (epoch, page, write number).
    struct Model {
        pages: Pages,
        mem: Vec<u64>,
        disk: BTreeMap<u64, u64>,
        log: Vec<(u64, u64, u64)>,
        epoch: u64,
        writes: u64,
        /// Epoch of every write, by number.
        epoch_of: Vec<u64>,
    }

    impl Model {
        fn new(n: usize) -> Model {
            Model {
                pages: Pages::new(n),
                mem: vec![0; n],
                disk: BTreeMap::new(),
                log: Vec::new(),
                epoch: 0,
                writes: 0,
                epoch_of: vec![0],
            }
        }

        fn write_back_oldest(&mut self) {
            let Some((e, pages)) = self.pages.oldest_dirty(u64::MAX) else {
                return;
            };
            for (first, slots) in requests(&pages, 3, 4, 2) {
                for (i, s) in slots.into_iter().enumerate() {
                    let p = first + i as u64;
                    self.disk.insert(p, self.mem[s]);
                    self.log.push((e, p, self.mem[s]));
                    self.pages.mark_clean(s);
                }
            }
        }

        fn write(&mut self, page: u64) {
            let s = match self.pages.lookup(page) {
                Some(s) => s,
                None => loop {
                    if let Some(s) = self.pages.victim(&[]) {
                        self.pages.assign(s, page, false);
                        self.mem[s] = self.disk.get(&page).copied().unwrap_or(0);
                        break s;
                    }
                    self.write_back_oldest();
                },
            };
            if self.pages.older_version(s, self.epoch).is_some() {
                match self.pages.victim(&[s]) {
                    Some(sh) => {
                        self.mem[sh] = self.mem[s];
                        self.pages.shadow(s, sh);
                    }
                    None => {
                        let e = self.pages.older_version(s, self.epoch).unwrap();
                        while self.pages.oldest_dirty(e).is_some() {
                            self.write_back_oldest();
                        }
                    }
                }
            }
            self.writes += 1;
            self.epoch_of.push(self.epoch);
            self.mem[s] = self.writes;
            self.pages.mark_dirty(s, self.epoch);
        }
    }

    /// Random writes, barriers and write-backs: the disk receives epochs in
    /// order, and a page written back for epoch e holds a write of epoch e
    /// (never one that came after a later barrier: that one goes out with
    /// its own epoch, the earlier version from a shadow).
    #[test]
    fn write_back_keeps_the_barriers() {
        for (slots, seed) in [(4usize, 1u64), (8, 2), (16, 3), (64, 4)] {
            let mut m = Model::new(slots);
            let mut x = seed;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            for _ in 0..5000 {
                match next() % 10 {
                    0 => m.epoch += 1,
                    1 => m.write_back_oldest(),
                    _ => {
                        let page = next() % 12;
                        m.write(page);
                    }
                }
            }
            while m.pages.oldest_dirty(u64::MAX).is_some() {
                m.write_back_oldest();
            }
            let mut last = 0;
            for &(e, p, w) in &m.log {
                assert!(e >= last, "epoch {e} written after {last}");
                last = e;
                assert_eq!(
                    m.epoch_of[w as usize], e,
                    "page {p} carried write {w} of another epoch than {e}"
                );
            }
            // The last write-back of each page holds its last write.
            for (&p, &w) in &m.disk {
                let latest = m.pages.lookup(p).map(|s| m.mem[s]);
                assert!(latest.is_none_or(|l| l == w), "page {p}: disk {w}, cache {latest:?}");
            }
        }
    }

    #[test]
    fn lru_takes_the_least_recently_used_clean_page() {
        let mut p = Pages::new(3);
        for page in 0..3 {
            let s = p.victim(&[]).unwrap();
            p.assign(s, page, false);
        }
        let s0 = p.lookup(0).unwrap();
        p.touch(s0);
        p.mark_dirty(p.lookup(1).unwrap(), 0);
        // Page 1 is dirty and page 0 was used last: page 2 goes.
        let v = p.victim(&[]).unwrap();
        assert_eq!(p.lookup(2), None);
        p.assign(v, 9, false);
        assert_eq!(p.lookup(9), Some(v));
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn requests_split_at_gaps_length_and_extents() {
        let pages = [(1, 10), (2, 11), (3, 12), (5, 13), (6, 14)];
        assert_eq!(
            requests(&pages, 64, 2, 8),
            vec![(1, vec![10, 11]), (3, vec![12]), (5, vec![13, 14])]
        );
        // Extents of 4: slots 10, 11 and 12 (extents 2, 2, 3) are two pieces;
        // slot 1 (extent 0) a third; slot 9 would be extent 2 again: a new
        // request.
        let pages = [(1, 10), (2, 11), (3, 12), (4, 1), (5, 9), (6, 2)];
        let r = requests(&pages, 4, 16, 8);
        assert_eq!(r, vec![(1, vec![10, 11, 12, 1]), (5, vec![9, 2])]);
        assert_eq!(pieces(&r[0].1, 4), vec![(2, 2, 2), (3, 0, 1), (0, 1, 1)]);
        // At most two pieces.
        assert_eq!(
            requests(&pages[..4], 4, 16, 2),
            vec![(1, vec![10, 11, 12]), (4, vec![1])]
        );
    }

    #[test]
    fn runs_are_taken_inside_an_extent() {
        let mut p = Pages::new(10);
        // Free and in order: the first four.
        assert_eq!(p.victim_run(4, 4), Some((0, 4)));
        for (i, s) in (0..4).enumerate() {
            p.assign(s, 100 + i as u64, false);
        }
        // Six more asked, four fit in the next extent.
        assert_eq!(p.victim_run(6, 4), Some((4, 4)));
        for s in 4..8 {
            p.assign(s, 200 + s as u64, false);
        }
        assert_eq!(p.victim_run(4, 4), Some((8, 2)));
        assert_eq!(p.lookup(207), Some(7), "a short free run evicts nothing");
        for s in 8..10 {
            p.assign(s, 300 + s as u64, false);
            p.mark_dirty(s, 0);
        }
        // No slot free: the least recently used clean slot (0) and its
        // clean neighbours go, the dirty ones stay.
        p.touch(5);
        assert_eq!(p.victim_run(4, 4), Some((0, 4)));
        assert_eq!(p.lookup(100), None);
        assert_eq!(p.lookup(205), Some(5));
        p.touch(6);
        p.touch(7);
        p.touch(4);
        p.touch(5);
        for s in 0..4 {
            p.assign(s, 400 + s as u64, false);
        }
        // 4..8 clean, touched before 0..4; 8, 9 dirty: extent 1.
        assert_eq!(p.victim_run(8, 4), Some((4, 4)));
        // Nothing but dirty and fresh-but-unassigned: none.
        for s in 0..4 {
            p.mark_dirty(s, 0);
        }
        assert_eq!(p.victim_run(2, 4), None);
    }
}
