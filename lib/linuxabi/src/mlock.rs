//! What a process has locked with mlock, mlock2 and mlockall (VmLck in
//! /proc/PID/status), and mlock's rounding of a range to whole pages.

use alloc::vec::Vec;

pub const PAGE: u64 = 4096;

/// What a process has locked: page-aligned ranges, sorted and disjoint,
/// and the bytes mlockall(MCL_CURRENT) locked (its whole memory then).
#[derive(Clone, Debug, Default)]
pub struct Locked {
    ranges: Vec<(u64, u64)>,
    all: u64,
    /// MCL_FUTURE: what it maps from now on is locked too (kept for
    /// mlockall's answer; Tessera's mappings need no locking).
    pub future: bool,
}

impl Locked {
    /// Everything the process maps now, `bytes` of it (mlockall's
    /// MCL_CURRENT), the ranges locked before included.
    pub fn everything(bytes: u64, future: bool) -> Locked {
        Locked {
            ranges: Vec::new(),
            all: bytes,
            future,
        }
    }

    /// The bytes locked (VmLck).
    pub fn bytes(&self) -> u64 {
        self.all + self.ranges.iter().map(|(s, e)| e - s).sum::<u64>()
    }

    /// The bytes of `[start, end)` already locked.
    pub fn within(&self, start: u64, end: u64) -> u64 {
        self.ranges
            .iter()
            .map(|&(s, e)| e.min(end).saturating_sub(s.max(start)))
            .sum()
    }

    pub fn remove(&mut self, start: u64, end: u64) {
        let mut kept = Vec::with_capacity(self.ranges.len() + 1);
        for &(s, e) in &self.ranges {
            if e <= start || s >= end {
                kept.push((s, e));
                continue;
            }
            if s < start {
                kept.push((s, start));
            }
            if e > end {
                kept.push((end, e));
            }
        }
        self.ranges = kept;
    }

    pub fn add(&mut self, start: u64, end: u64) {
        self.remove(start, end);
        let at = self.ranges.partition_point(|&(s, _)| s < start);
        self.ranges.insert(at, (start, end));
    }
}

/// `[addr, addr + len)` widened to whole pages, as Linux's mlock takes
/// it; None past the end of the address space.
pub fn pages_of(addr: u64, len: u64) -> Option<(u64, u64)> {
    let start = addr & !(PAGE - 1);
    let len = (addr % PAGE).checked_add(len)?.checked_next_multiple_of(PAGE)?;
    Some((start, start.checked_add(len)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn ranges_merge_split_and_count_once() {
        let mut l = Locked::default();
        l.add(0x1000, 0x4000);
        l.add(0x3000, 0x6000);
        assert_eq!(l.bytes(), 0x5000);
        assert_eq!(l.within(0x2000, 0x8000), 0x4000);
        l.remove(0x2000, 0x3000);
        assert_eq!(l.ranges, vec![(0x1000, 0x2000), (0x3000, 0x6000)]);
        l.remove(0, u64::MAX);
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn pages_widen_and_refuse_overflow() {
        assert_eq!(pages_of(0x1001, 1), Some((0x1000, 0x2000)));
        assert_eq!(pages_of(0x1000, 0), Some((0x1000, 0x1000)));
        assert_eq!(pages_of(u64::MAX - 10, 100), None);
    }
}
