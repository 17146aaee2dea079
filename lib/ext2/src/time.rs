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
    /// 32-bit seconds beyond 2038, and the nanoseconds.
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
