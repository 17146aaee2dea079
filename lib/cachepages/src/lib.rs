//! The cache's pages: which device page each slot holds, which are dirty
//! and since which barrier epoch, and the LRU order. Pure bookkeeping; the
//! server moves the data.
//!
//! Write order: the file system's barriers cut time into epochs. A page
//! written back must carry no write of a later epoch than any page still
//! waiting, so write-back goes epoch by epoch, oldest first, and a page
//! dirty from an earlier epoch that is written again is first written back
//! with everything up to its epoch (`must_flush_before_write`).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

const NONE: usize = usize::MAX;

pub struct Slot {
    /// The device page it holds.
    pub key: Option<u64>,
    /// Epoch of its oldest write not yet on the disk.
    pub dirty: Option<u64>,
    /// Brought in by read-ahead and not touched since.
    pub ahead: bool,
    prev: usize,
    next: usize,
}

pub struct Pages {
    pub slots: Vec<Slot>,
    index: BTreeMap<u64, usize>,
    /// Dirty pages as (epoch, page), in write-back order.
    dirty: BTreeSet<(u64, u64)>,
    /// Most recently used first.
    head: usize,
    tail: usize,
    free: Vec<usize>,
}

impl Pages {
    pub fn new(n: usize) -> Pages {
        Pages {
            slots: (0..n)
                .map(|_| Slot {
                    key: None,
                    dirty: None,
                    ahead: false,
                    prev: NONE,
                    next: NONE,
                })
                .collect(),
            index: BTreeMap::new(),
            dirty: BTreeSet::new(),
            head: NONE,
            tail: NONE,
            free: (0..n).rev().collect(),
        }
    }

    pub fn lookup(&self, page: u64) -> Option<usize> {
        self.index.get(&page).copied()
    }

    pub fn len(&self) -> usize {
        self.index.len()
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
        if let Some(s) = self.free.pop() {
            return Some(s);
        }
        let mut s = self.tail;
        while s != NONE {
            if self.slots[s].dirty.is_none() && !skip.contains(&s) {
                self.forget(s);
                self.free.pop();
                return Some(s);
            }
            s = self.slots[s].prev;
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
            self.free.push(s);
        }
        self.slots[s].ahead = false;
    }

    /// Slot `s`, a victim never assigned, goes back to the free list.
    pub fn unused(&mut self, s: usize) {
        self.free.push(s);
    }

    /// Slot `s` leaves the cache for good (its page was lost).
    pub fn retire(&mut self, s: usize) {
        self.forget(s);
        self.free.retain(|&f| f != s);
    }

    /// Whether a write to slot `s` in `epoch` must wait for write-back of
    /// everything up to the epoch it returns.
    pub fn must_flush_before_write(&self, s: usize, epoch: u64) -> Option<u64> {
        self.slots[s].dirty.filter(|&e| e < epoch)
    }

    /// Slot `s` was written in `epoch`.
    pub fn mark_dirty(&mut self, s: usize, epoch: u64) {
        if self.slots[s].dirty.is_none()
            && let Some(k) = self.slots[s].key
        {
            self.slots[s].dirty = Some(epoch);
            self.dirty.insert((epoch, k));
        }
    }

    /// Slot `s` is on the disk.
    pub fn mark_clean(&mut self, s: usize) {
        if let (Some(e), Some(k)) = (self.slots[s].dirty.take(), self.slots[s].key) {
            self.dirty.remove(&(e, k));
        }
    }

    /// The dirty pages of the oldest epoch, if it is at most `up_to`:
    /// (epoch, pages in ascending order).
    pub fn oldest_dirty(&self, up_to: u64) -> Option<(u64, Vec<u64>)> {
        let &(epoch, _) = self.dirty.first()?;
        if epoch > up_to {
            return None;
        }
        let pages = self
            .dirty
            .range((epoch, 0)..=(epoch, u64::MAX))
            .map(|&(_, p)| p)
            .collect();
        Some((epoch, pages))
    }

    /// Every page held, for dropping them all.
    pub fn held(&self) -> Vec<usize> {
        self.index.values().copied().collect()
    }
}

/// Splits ascending pages into runs of consecutive pages, at most `max`
/// long.
pub fn runs(pages: &[u64], max: usize) -> Vec<(u64, usize)> {
    let mut out: Vec<(u64, usize)> = Vec::new();
    for &p in pages {
        match out.last_mut() {
            Some((first, n)) if *first + *n as u64 == p && *n < max => *n += 1,
            _ => out.push((p, 1)),
        }
    }
    out
}
