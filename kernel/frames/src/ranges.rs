//! A small allocator of ranges of a numbered space (pages of a virtual
//! range): first fit among the freed ranges, else a bump from the top of
//! what was ever handed out. Freed ranges merge with their neighbours and
//! bring the top down when they reach it, so the space in use stays close
//! to what lives in it. Its table is a fixed array: it allocates nothing,
//! and so can serve the allocator the kernel's heap is built on. A freed
//! range that fits no slot of a full table and touches no other is
//! dropped, and counted (`lost`): the space is far larger than what it
//! serves, so that costs addresses, never memory.

/// Ranges of `[0, limit)`, with at most `N` free ranges below the top.
pub struct Ranges<const N: usize> {
    /// Free ranges below `top` as (first, length): sorted, disjoint, none
    /// touching another or `top`.
    free: [(u32, u32); N],
    nfree: usize,
    top: u32,
    limit: u32,
    lost: u64,
}

impl<const N: usize> Ranges<N> {
    pub const fn new(limit: u32) -> Self {
        Ranges {
            free: [(0, 0); N],
            nfree: 0,
            top: 0,
            limit,
            lost: 0,
        }
    }

    /// `n` (at least 1) consecutive numbers: the first, or None if no
    /// room is left.
    pub fn take(&mut self, n: u32) -> Option<u32> {
        if n == 0 {
            return None;
        }
        if let Some(i) = self.free[..self.nfree].iter().position(|&(_, len)| len >= n) {
            let (start, len) = self.free[i];
            if len == n {
                self.free.copy_within(i + 1..self.nfree, i);
                self.nfree -= 1;
            } else {
                self.free[i] = (start + n, len - n);
            }
            return Some(start);
        }
        let start = self.top;
        self.top = start.checked_add(n).filter(|&t| t <= self.limit)?;
        Some(start)
    }

    /// Gives back `n` numbers from `start`, which `take` handed out (in
    /// one piece or several).
    pub fn put(&mut self, start: u32, n: u32) {
        debug_assert!(n > 0 && start + n <= self.top);
        let i = self.free[..self.nfree].partition_point(|&(s, _)| s < start);
        let joins_prev = i > 0 && {
            let (s, len) = self.free[i - 1];
            s + len == start
        };
        let joins_next = i < self.nfree && start + n == self.free[i].0;
        let (at, merged) = match (joins_prev, joins_next) {
            (true, true) => {
                let (s, len) = self.free[i - 1];
                let next = self.free[i].1;
                self.free.copy_within(i + 1..self.nfree, i);
                self.nfree -= 1;
                (i - 1, (s, len + n + next))
            }
            (true, false) => (i - 1, (self.free[i - 1].0, self.free[i - 1].1 + n)),
            (false, true) => (i, (start, n + self.free[i].1)),
            (false, false) => {
                if start + n != self.top {
                    if self.nfree == N {
                        self.lost += n as u64;
                        return;
                    }
                    self.free.copy_within(i..self.nfree, i + 1);
                    self.nfree += 1;
                }
                (i, (start, n))
            }
        };
        if merged.0 + merged.1 == self.top {
            // It reaches the top, which comes down instead: only the last
            // free range can, and it was made the merged one (or none was
            // added for it).
            self.top = merged.0;
            if at < self.nfree && self.free[at].0 == merged.0 {
                self.nfree -= 1;
            }
        } else {
            self.free[at] = merged;
        }
    }

    /// The first number above everything handed out.
    pub fn top(&self) -> u32 {
        self.top
    }

    /// Numbers dropped because the table was full.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Free ranges below the top.
    pub fn free_ranges(&self) -> usize {
        self.nfree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model: which numbers are handed out.
    fn check<const N: usize>(r: &Ranges<N>, used: &[bool]) {
        let free = &r.free[..r.nfree];
        for w in free.windows(2) {
            assert!(w[0].0 + w[0].1 < w[1].0, "free ranges overlap or touch: {free:?}");
        }
        if let Some(&(s, len)) = free.last() {
            assert!(s + len < r.top, "a free range reaches the top");
        }
        for (k, &u) in used.iter().enumerate() {
            let k = k as u32;
            let in_free = free.iter().any(|&(s, len)| k >= s && k < s + len);
            if u {
                assert!(k < r.top && !in_free, "{k} in use but free");
            }
        }
    }

    #[test]
    fn first_fit_then_bump() {
        let mut r: Ranges<8> = Ranges::new(100);
        assert_eq!(r.take(10), Some(0));
        assert_eq!(r.take(10), Some(10));
        assert_eq!(r.take(10), Some(20));
        r.put(0, 10);
        assert_eq!(r.take(4), Some(0));
        assert_eq!(r.take(6), Some(4));
        assert_eq!(r.take(1), Some(30));
        assert_eq!(r.take(0), None);
    }

    #[test]
    fn freed_ranges_merge_and_bring_the_top_down() {
        let mut r: Ranges<8> = Ranges::new(100);
        let a = r.take(5).unwrap();
        let b = r.take(5).unwrap();
        let c = r.take(5).unwrap();
        r.put(a, 5);
        r.put(c, 5);
        assert_eq!(r.top(), 10);
        assert_eq!(r.free_ranges(), 1);
        r.put(b, 5);
        assert_eq!((r.top(), r.free_ranges()), (0, 0));
    }

    #[test]
    fn a_full_space_refuses() {
        let mut r: Ranges<4> = Ranges::new(10);
        assert_eq!(r.take(10), Some(0));
        assert_eq!(r.take(1), None);
        assert_eq!(r.take(u32::MAX), None);
        r.put(0, 10);
        assert_eq!(r.take(11), None);
        assert_eq!(r.take(10), Some(0));
    }

    #[test]
    fn a_full_table_drops_what_it_cannot_hold() {
        let mut r: Ranges<2> = Ranges::new(100);
        let all: Vec<u32> = (0..10).map(|_| r.take(1).unwrap()).collect();
        // Every other one freed: separate ranges, more than the table holds.
        for &k in all.iter().step_by(2) {
            r.put(k, 1);
        }
        assert_eq!(r.free_ranges(), 2);
        assert_eq!(r.lost(), 3);
        assert_eq!(r.top(), 10);
    }

    #[test]
    fn random_work_keeps_the_table_true() {
        let mut r: Ranges<16> = Ranges::new(4096);
        let mut used = vec![false; 4096];
        let mut live: Vec<(u32, u32)> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            if live.is_empty() || next() % 3 != 0 {
                let n = (next() % 40 + 1) as u32;
                if let Some(s) = r.take(n) {
                    for k in s..s + n {
                        assert!(!used[k as usize], "{k} handed out twice");
                        used[k as usize] = true;
                    }
                    live.push((s, n));
                }
            } else {
                let (s, n) = live.swap_remove((next() % live.len() as u64) as usize);
                for k in s..s + n {
                    used[k as usize] = false;
                }
                r.put(s, n);
            }
            check(&r, &used);
        }
        for (s, n) in live.drain(..) {
            r.put(s, n);
        }
        // Nothing dropped (the table held every gap): all back to nothing.
        assert!(
            r.lost() > 0 || (r.top(), r.free_ranges()) == (0, 0),
            "top {} after all went",
            r.top()
        );
    }
}
