//! A simulated persistent region that can lose power: the persistence model
//! of `region.rs`, made executable so that tests can cut the power after any
//! operation and look at every state the medium may then be in.
//!
//! It keeps the durable content (what survives) and, for every aligned 8-byte
//! word written since it was last made durable, the values written to it in
//! order. After a crash the medium holds, for each such word, its durable
//! value or any one of those values: `image` picks which.

use crate::region::{Region, RegionError, checked_range};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

const WORD: usize = 8;

#[derive(Debug, Clone, Default)]
struct Pending {
    /// (global write number, value), oldest first.
    versions: Vec<(u64, [u8; WORD])>,
    /// How many of `versions` a flush has covered (made durable at the next fence).
    flushed: usize,
}

#[derive(Debug, Clone)]
pub struct SimRegion {
    durable: Vec<u8>,
    /// What the CPU sees: durable content with every write applied.
    view: Vec<u8>,
    pending: BTreeMap<usize, Pending>,
    writes: u64,
    ops: u64,
    /// Operations after which the power goes: later ones do nothing.
    cut_after: Option<u64>,
}

impl SimRegion {
    pub fn new(size: usize) -> SimRegion {
        Self::from_image(alloc::vec![0; size.next_multiple_of(WORD)])
    }

    /// A region whose medium holds `image`, all of it durable.
    pub fn from_image(image: Vec<u8>) -> SimRegion {
        SimRegion {
            view: image.clone(),
            durable: image,
            pending: BTreeMap::new(),
            writes: 0,
            ops: 0,
            cut_after: None,
        }
    }

    /// Operations (write, flush, fence) carried out so far.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// Loses power once `ops` more operations have been carried out.
    pub fn cut_power_after(&mut self, ops: u64) {
        self.cut_after = Some(self.ops + ops);
    }

    pub fn powered(&self) -> bool {
        self.cut_after.is_none_or(|cut| self.ops < cut)
    }

    /// Number of word writes that may or may not have reached the medium.
    pub fn pending_writes(&self) -> usize {
        self.pending.values().map(|p| p.versions.len()).sum()
    }

    /// Write numbers of the pending writes, ascending (for `image_upto`).
    pub fn pending_write_numbers(&self) -> Vec<u64> {
        let mut n: Vec<u64> = self
            .pending
            .values()
            .flat_map(|p| p.versions.iter().map(|v| v.0))
            .collect();
        n.sort_unstable();
        n
    }

    /// The medium after a crash, each pending word resolved by `choose`,
    /// which gets the number of values written to the word and returns how
    /// many of them reached the medium (0: none, the durable value stays;
    /// k: the k-th value is the last that did).
    pub fn image(&self, mut choose: impl FnMut(usize) -> usize) -> Vec<u8> {
        let mut img = self.durable.clone();
        for (&word, p) in &self.pending {
            let k = choose(p.versions.len()).min(p.versions.len());
            if k > 0 {
                img[word * WORD..word * WORD + WORD].copy_from_slice(&p.versions[k - 1].1);
            }
        }
        img
    }

    /// The medium if exactly the writes numbered below `upto` reached it, in
    /// program order.
    pub fn image_upto(&self, upto: u64) -> Vec<u8> {
        let mut img = self.durable.clone();
        for (&word, p) in &self.pending {
            if let Some(v) = p.versions.iter().rev().find(|v| v.0 < upto) {
                img[word * WORD..word * WORD + WORD].copy_from_slice(&v.1);
            }
        }
        img
    }

    /// The medium if exactly the writes numbered `from` and later reached it:
    /// the cache evicted the newest lines and kept the older ones.
    pub fn image_from(&self, from: u64) -> Vec<u8> {
        let mut img = self.durable.clone();
        for (&word, p) in &self.pending {
            if let Some(v) = p.versions.last().filter(|v| v.0 >= from) {
                img[word * WORD..word * WORD + WORD].copy_from_slice(&v.1);
            }
        }
        img
    }

    /// Takes one operation; false once the power is gone.
    fn step(&mut self) -> bool {
        let powered = self.powered();
        if powered {
            self.ops += 1;
        }
        powered
    }
}

impl Region for SimRegion {
    fn size(&self) -> u64 {
        self.view.len() as u64
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), RegionError> {
        let r = checked_range(self.size(), offset, buf.len() as u64)?;
        buf.copy_from_slice(&self.view[r]);
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), RegionError> {
        let r = checked_range(self.size(), offset, data.len() as u64)?;
        if !self.step() || r.is_empty() {
            return Ok(());
        }
        self.view[r.clone()].copy_from_slice(data);
        for word in r.start / WORD..r.end.div_ceil(WORD) {
            let mut value = [0u8; WORD];
            value.copy_from_slice(&self.view[word * WORD..word * WORD + WORD]);
            self.pending
                .entry(word)
                .or_default()
                .versions
                .push((self.writes, value));
            self.writes += 1;
        }
        Ok(())
    }

    fn flush(&mut self, offset: u64, len: u64) -> Result<(), RegionError> {
        let r = checked_range(self.size(), offset, len)?;
        if !self.step() || r.is_empty() {
            return Ok(());
        }
        for (_, p) in self.pending.range_mut(r.start / WORD..r.end.div_ceil(WORD)) {
            p.flushed = p.versions.len();
        }
        Ok(())
    }

    fn fence(&mut self) -> Result<(), RegionError> {
        if !self.step() {
            return Ok(());
        }
        let durable = &mut self.durable;
        self.pending.retain(|&word, p| {
            if p.flushed > 0 {
                durable[word * WORD..word * WORD + WORD].copy_from_slice(&p.versions[p.flushed - 1].1);
                p.versions.drain(..p.flushed);
                p.flushed = 0;
            }
            !p.versions.is_empty()
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_flushed_and_fenced_writes_are_sure_to_survive() {
        let mut r = SimRegion::new(64);
        r.write(0, &[1; 16]).unwrap();
        r.write(16, &[2; 8]).unwrap();
        r.flush(0, 8).unwrap();
        r.fence().unwrap();
        // Word 0 is durable; words 1 and 2 may or may not be.
        assert_eq!(r.pending_writes(), 2);
        let none = r.image(|_| 0);
        assert_eq!(&none[..24], &[[1u8; 8], [0; 8], [0; 8]].concat()[..]);
        let all = r.image(|n| n);
        assert_eq!(&all[..24], &[[1u8; 8], [1; 8], [2; 8]].concat()[..]);
        let mut buf = [0u8; 24];
        r.read(0, &mut buf).unwrap();
        assert_eq!(buf.to_vec(), all[..24].to_vec(), "the CPU sees its writes");
    }

    #[test]
    fn a_word_written_twice_may_keep_either_value_and_a_write_may_tear() {
        let mut r = SimRegion::new(32);
        r.write(4, &[7; 8]).unwrap(); // spans words 0 and 1
        r.write(0, &[9; 4]).unwrap();
        assert_eq!(r.pending_writes(), 3);
        let first = r.image(|_| 1);
        assert_eq!(&first[..16], &[0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0]);
        let torn = r.image_upto(1);
        assert_eq!(&torn[..16], &[0, 0, 0, 0, 7, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0]);
        let newest = r.image_from(1);
        assert_eq!(&newest[..16], &[9, 9, 9, 9, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0]);
    }

    #[test]
    fn after_the_power_cut_nothing_changes() {
        let mut r = SimRegion::new(32);
        r.cut_power_after(1);
        r.write(0, &[1; 8]).unwrap();
        r.write(8, &[2; 8]).unwrap();
        r.flush(0, 16).unwrap();
        r.fence().unwrap();
        assert!(!r.powered());
        assert_eq!(r.ops(), 1);
        assert_eq!(r.pending_writes(), 1);
        assert_eq!(&r.image(|n| n)[..16], &[[1u8; 8], [0; 8]].concat()[..]);
    }
}
