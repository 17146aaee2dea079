//! fallocate's modes (`linux/falloc.h`) and the checks `vfs_fallocate`
//! makes of a mode before it looks at the file, in its order.

use crate::errno::{EINVAL, EOPNOTSUPP};

pub const FALLOC_FL_KEEP_SIZE: u32 = 0x01;
pub const FALLOC_FL_PUNCH_HOLE: u32 = 0x02;
pub const FALLOC_FL_NO_HIDE_STALE: u32 = 0x04;
pub const FALLOC_FL_COLLAPSE_RANGE: u32 = 0x08;
pub const FALLOC_FL_ZERO_RANGE: u32 = 0x10;
pub const FALLOC_FL_INSERT_RANGE: u32 = 0x20;
pub const FALLOC_FL_UNSHARE_RANGE: u32 = 0x40;

/// The modes the VFS lets through to a file system.
pub const SUPPORTED: u32 = FALLOC_FL_KEEP_SIZE
    | FALLOC_FL_PUNCH_HOLE
    | FALLOC_FL_COLLAPSE_RANGE
    | FALLOC_FL_ZERO_RANGE
    | FALLOC_FL_INSERT_RANGE
    | FALLOC_FL_UNSHARE_RANGE;

/// `vfs_fallocate`'s checks of `offset`, `len` and `mode`, before the
/// descriptor's access mode and file type: EINVAL for a negative offset or
/// a length not above zero, EOPNOTSUPP for a mode it does not know, a punch
/// with zeroing or without KEEP_SIZE; EINVAL for collapse, insert or
/// unshare mixed with other modes.
pub fn check(mode: u32, offset: i64, len: i64) -> Result<(), i64> {
    if offset < 0 || len <= 0 {
        return Err(EINVAL);
    }
    if mode & !SUPPORTED != 0 {
        return Err(EOPNOTSUPP);
    }
    let punch_zero = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
    if mode & punch_zero == punch_zero {
        return Err(EOPNOTSUPP);
    }
    if mode & FALLOC_FL_PUNCH_HOLE != 0 && mode & FALLOC_FL_KEEP_SIZE == 0 {
        return Err(EOPNOTSUPP);
    }
    for alone in [FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE] {
        if mode & alone != 0 && mode & !alone != 0 {
            return Err(EINVAL);
        }
    }
    if mode & FALLOC_FL_UNSHARE_RANGE != 0 && mode & !(FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE) != 0 {
        return Err(EINVAL);
    }
    Ok(())
}

/// Whether `offset + len` passes the largest file size `max` or wraps
/// (EFBIG, the VFS's last check before the file system).
pub fn past_max(offset: i64, len: i64, max: u64) -> bool {
    match offset.checked_add(len) {
        Some(end) => end as u64 > max,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_in_linux_order() {
        assert_eq!(check(0, 0, 1), Ok(()));
        assert_eq!(check(FALLOC_FL_KEEP_SIZE, 0, 1), Ok(()));
        assert_eq!(check(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1), Ok(()));
        assert_eq!(check(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 1), Ok(()));
        // The range first, whatever the mode.
        assert_eq!(check(0xff, -1, 1), Err(EINVAL));
        assert_eq!(check(0, 0, 0), Err(EINVAL));
        assert_eq!(check(0, 0, -5), Err(EINVAL));
        assert_eq!(check(FALLOC_FL_NO_HIDE_STALE, 0, 1), Err(EOPNOTSUPP));
        assert_eq!(check(0x80, 0, 1), Err(EOPNOTSUPP));
        assert_eq!(check(FALLOC_FL_PUNCH_HOLE, 0, 1), Err(EOPNOTSUPP));
        assert_eq!(
            check(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 1),
            Err(EOPNOTSUPP)
        );
        assert_eq!(check(FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_KEEP_SIZE, 0, 1), Err(EINVAL));
        assert_eq!(check(FALLOC_FL_INSERT_RANGE | FALLOC_FL_ZERO_RANGE, 0, 1), Err(EINVAL));
        assert_eq!(check(FALLOC_FL_COLLAPSE_RANGE, 0, 1), Ok(()));
        assert_eq!(check(FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE, 0, 1), Ok(()));
        assert_eq!(check(FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_ZERO_RANGE, 0, 1), Err(EINVAL));
    }

    #[test]
    fn the_end_may_not_pass_the_largest_file_or_wrap() {
        assert!(!past_max(0, 100, 100));
        assert!(past_max(1, 100, 100));
        assert!(past_max(i64::MAX, 1, u64::MAX));
    }
}
