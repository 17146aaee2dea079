//! An eventfd's counter, as Linux keeps it: a read takes the whole count
//! (or one, in semaphore mode) and waits while it is zero; a write adds
//! and waits while the sum would pass the largest value, 2^64 - 2.

use crate::errno;

/// The largest count (a write that would pass it waits).
pub const MAX: u64 = u64::MAX - 1;
pub const EFD_SEMAPHORE: u64 = 1;
pub const EFD_CLOEXEC: u64 = 0o2000000;
pub const EFD_NONBLOCK: u64 = 0o4000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub value: u64,
    pub semaphore: bool,
}

impl Counter {
    pub fn new(value: u64, semaphore: bool) -> Counter {
        Counter { value, semaphore }
    }

    /// What a read of `len` bytes returns now: EINVAL below 8 bytes, None
    /// while the count is zero.
    pub fn read(&mut self, len: u64) -> Result<Option<u64>, i64> {
        if len < 8 {
            return Err(errno::EINVAL);
        }
        if self.value == 0 {
            return Ok(None);
        }
        let v = if self.semaphore { 1 } else { self.value };
        self.value -= v;
        Ok(Some(v))
    }

    /// A write of `add` (its 8 bytes read): EINVAL for u64::MAX, false
    /// while it would not fit.
    pub fn write(&mut self, add: u64) -> Result<bool, i64> {
        if add == u64::MAX {
            return Err(errno::EINVAL);
        }
        if add > MAX - self.value {
            return Ok(false);
        }
        self.value += add;
        Ok(true)
    }

    pub fn readable(&self) -> bool {
        self.value > 0
    }

    /// Whether a write of 1 fits.
    pub fn writable(&self) -> bool {
        self.value < MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        let mut c = Counter::new(3, false);
        assert_eq!(c.read(4), Err(errno::EINVAL));
        assert_eq!(c.read(8), Ok(Some(3)));
        assert_eq!(c.read(8), Ok(None));
        assert_eq!(c.write(u64::MAX), Err(errno::EINVAL));
        assert_eq!(c.write(MAX), Ok(true));
        assert!(!c.writable());
        assert_eq!(c.write(1), Ok(false));
        let mut s = Counter::new(2, true);
        assert_eq!(s.read(8), Ok(Some(1)));
        assert_eq!(s.read(8), Ok(Some(1)));
        assert!(!s.readable());
    }
}
