//! Test data that a guest program and the host (or two test suites) must
//! produce alike: the host checks a file the guest wrote by regenerating
//! its content here, so there is one definition of each.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;

/// Bytes that say where they are: byte i of content `seed` differs from
/// byte i of any other seed and from its neighbours (xorshift, mixed with
/// the position).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x as u8) ^ (i as u8)
        })
        .collect()
}

/// FNV-1a over `data`, 64 bits (what `fstest tree` reports per file).
pub fn fnv64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// File sizes on both sides of the block boundaries of a 1 KiB- and a
/// 4 KiB-block ext2, and past the direct blocks into the indirect ones.
pub const FILE_SIZES: &[usize] = &[
    0,
    1,
    100,
    1023,
    1024,
    1025,
    4095,
    4096,
    4097,
    12 * 1024 + 1,
    48 * 1024 + 1,
    65536 + 123,
    300 * 1024 + 7,
];

/// A seeded generator (splitmix64: any seed, 0 included, gives a full
/// sequence), so that a failing run can be replayed from its seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    // Not an Iterator: a generator never ends, and callers want the number.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform enough below `n` for tests; 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fixed() {
        // Worked out apart from this code (a few lines of Python over the
        // same definitions): the guest and the host read these files.
        assert_eq!(pattern(1, 8), [0xad, 0x77, 0x34, 0x77, 0xe8, 0x7c, 0xc9, 0xed]);
        assert_eq!(pattern(1000, 4), [0x2d, 0x9e, 0xa2, 0x92]);
        assert_eq!(fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_zero_seed_still_moves() {
        let mut r = Rng(0);
        let (a, b) = (r.next(), r.next());
        assert!(a != 0 && b != 0 && a != b);
        assert_eq!(r.below(0), 0);
        assert!(r.below(7) < 7);
    }
}
