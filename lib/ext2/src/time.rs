//! Time as the file system records it. The library has no clock: the caller
//! says what time it is ([`crate::FileManager::set_time`]) and every change
//! from then on is stamped with it.

/// Seconds since 1970 (UTC) and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Timestamp {
    pub secs: i64,
    pub nanos: u32,
}

impl Timestamp {
    pub const fn new(secs: i64, nanos: u32) -> Timestamp {
        Timestamp { secs, nanos }
    }

    /// The low 32 bits of the seconds, as the base inode field keeps them.
    pub(crate) fn lo(self) -> u32 {
        self.secs as u32
    }

    /// The `*_extra` field of a large inode: two bits that extend the signed
    /// 32-bit seconds beyond 2038 (up to 2446), and the nanoseconds.
    pub(crate) fn extra(self) -> u32 {
        let epoch = ((self.secs - (self.secs as i32) as i64) >> 32) as u32 & 3;
        epoch | (self.nanos.min(999_999_999) << 2)
    }

    /// From the base field alone (small inodes).
    pub(crate) fn from_lo(lo: u32) -> Timestamp {
        Timestamp::new(lo as i32 as i64, 0)
    }

    /// From the base field and its `*_extra` field.
    pub(crate) fn from_parts(lo: u32, extra: u32) -> Timestamp {
        let secs = lo as i32 as i64 + (((extra & 3) as i64) << 32);
        Timestamp::new(secs, (extra >> 2).min(999_999_999))
    }
}

#[cfg(test)]
mod tests {
    use super::Timestamp;

    #[test]
    fn extra_bits_carry_the_seconds_past_2038() {
        for secs in [
            0i64,
            1,
            -1,
            i32::MAX as i64,
            i32::MAX as i64 + 1,
            5_000_000_000,
            15_000_000_000,
            -(1 << 31),
        ] {
            let t = Timestamp::new(secs, 123_456_789);
            assert_eq!(Timestamp::from_parts(t.lo(), t.extra()), t, "{secs}");
        }
        assert_eq!(Timestamp::from_lo(Timestamp::new(-5, 0).lo()), Timestamp::new(-5, 0));
    }
}
