//! File seals (`fcntl` F_ADD_SEALS, F_GET_SEALS; Linux's `mm/memfd.c` and
//! shmem's checks): what a sealed file refuses. A file made without
//! MFD_ALLOW_SEALING starts sealed against sealing (F_SEAL_SEAL).

use crate::errno::{EINVAL, EPERM};

pub const F_ADD_SEALS: u64 = 1033;
pub const F_GET_SEALS: u64 = 1034;

pub const F_SEAL_SEAL: u32 = 0x1;
pub const F_SEAL_SHRINK: u32 = 0x2;
pub const F_SEAL_GROW: u32 = 0x4;
pub const F_SEAL_WRITE: u32 = 0x8;
pub const F_SEAL_FUTURE_WRITE: u32 = 0x10;
pub const ALL: u32 = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;

/// memfd_create's flags (Linux 6.1: no MFD_NOEXEC_SEAL or MFD_EXEC yet).
pub const MFD_CLOEXEC: u32 = 0x1;
pub const MFD_ALLOW_SEALING: u32 = 0x2;
pub const MFD_HUGETLB: u32 = 0x4;
/// The huge page size bits MFD_HUGETLB may carry (`MFD_HUGE_MASK <<
/// MFD_HUGE_SHIFT`).
pub const MFD_HUGE_BITS: u32 = 0x3f << 26;
/// Longest name (the "memfd:" prefix makes it NAME_MAX).
pub const MFD_NAME_MAX_LEN: usize = 255 - 6;

/// The seals a new memfd starts with.
pub fn initial(flags: u32) -> u32 {
    if flags & MFD_ALLOW_SEALING != 0 { 0 } else { F_SEAL_SEAL }
}

/// memfd_create's check of its flags: EINVAL for bits it does not know
/// (the huge page size bits only with MFD_HUGETLB).
pub fn check_flags(flags: u32) -> Result<(), i64> {
    let known = MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB;
    let known = if flags & MFD_HUGETLB != 0 {
        known | MFD_HUGE_BITS
    } else {
        known
    };
    if flags & !known != 0 { Err(EINVAL) } else { Ok(()) }
}

/// F_ADD_SEALS of `add` to a file with `seals`, through a description
/// open for writing or not: the seals after, or Linux's error (unknown
/// bits EINVAL, a read-only description or F_SEAL_SEAL EPERM). Whether
/// writable shared mappings forbid F_SEAL_WRITE (EBUSY) is the caller's
/// to say first.
pub fn add(seals: u32, add: u32, writable: bool) -> Result<u32, i64> {
    if add & !ALL != 0 {
        return Err(EINVAL);
    }
    if !writable || seals & F_SEAL_SEAL != 0 {
        return Err(EPERM);
    }
    Ok(seals | add)
}

/// Whether a write of `len` bytes at `off` to a file of `size` bytes
/// with `seals` may go on (EPERM: sealed against writes, or against
/// growing and it would grow the file).
pub fn may_write(seals: u32, off: u64, len: u64, size: u64) -> Result<(), i64> {
    if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
        return Err(EPERM);
    }
    if seals & F_SEAL_GROW != 0 && off.saturating_add(len) > size {
        return Err(EPERM);
    }
    Ok(())
}

/// Whether the file's size may go from `old` to `new` (truncate,
/// ftruncate, an open with O_TRUNC).
pub fn may_resize(seals: u32, old: u64, new: u64) -> Result<(), i64> {
    if (new < old && seals & F_SEAL_SHRINK != 0) || (new > old && seals & F_SEAL_GROW != 0) {
        return Err(EPERM);
    }
    Ok(())
}

/// Whether fallocate may change bytes `off..off + len` of a file of
/// `size` (Linux's shmem_fallocate): a punched or zeroed range is a write
/// (EPERM when sealed against writes), an allocation past the end is
/// growth (EPERM under F_SEAL_GROW, with FALLOC_FL_KEEP_SIZE too).
pub fn may_fallocate(seals: u32, punches: bool, off: u64, len: u64, size: u64) -> Result<(), i64> {
    if punches {
        return if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
            Err(EPERM)
        } else {
            Ok(())
        };
    }
    if seals & F_SEAL_GROW != 0 && off.saturating_add(len) > size {
        return Err(EPERM);
    }
    Ok(())
}

/// Whether a shared mapping with write access may be made (EPERM once
/// the file is sealed against writes, future ones included).
pub fn may_map_writable(seals: u32) -> Result<(), i64> {
    if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
        Err(EPERM)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallocate_obeys_write_and_grow_seals() {
        assert_eq!(may_fallocate(F_SEAL_WRITE, true, 0, 10, 100), Err(EPERM));
        assert_eq!(may_fallocate(F_SEAL_FUTURE_WRITE, true, 0, 10, 100), Err(EPERM));
        assert_eq!(may_fallocate(F_SEAL_WRITE, false, 0, 10, 100), Ok(()));
        assert_eq!(may_fallocate(F_SEAL_GROW, false, 90, 20, 100), Err(EPERM));
        assert_eq!(may_fallocate(F_SEAL_GROW, false, 0, 100, 100), Ok(()));
        assert_eq!(may_fallocate(F_SEAL_GROW, true, 90, 20, 100), Ok(()));
        assert_eq!(may_fallocate(F_SEAL_SHRINK, true, 0, 10, 100), Ok(()));
    }

    #[test]
    fn sealing_against_sealing_is_final() {
        let s = add(0, F_SEAL_SHRINK | F_SEAL_WRITE, true).unwrap();
        assert_eq!(add(s, F_SEAL_SHRINK, true), Ok(s));
        let s = add(s, F_SEAL_SEAL, true).unwrap();
        assert_eq!(add(s, 0, true), Err(EPERM));
        assert_eq!(add(s, F_SEAL_GROW, true), Err(EPERM));
        assert_eq!(add(initial(0), F_SEAL_WRITE, true), Err(EPERM));
        assert_eq!(initial(MFD_ALLOW_SEALING), 0);
    }

    #[test]
    fn bad_bits_and_read_only_descriptions_are_refused() {
        assert_eq!(add(0, 0x20, true), Err(EINVAL));
        assert_eq!(add(0, u32::MAX, true), Err(EINVAL));
        assert_eq!(add(0, F_SEAL_WRITE, false), Err(EPERM));
        assert_eq!(check_flags(0x100), Err(EINVAL));
        assert_eq!(check_flags(!MFD_CLOEXEC), Err(EINVAL));
        assert_eq!(check_flags(0x8000_0000), Err(EINVAL));
        assert_eq!(check_flags(MFD_CLOEXEC | MFD_ALLOW_SEALING), Ok(()));
        assert_eq!(check_flags(MFD_HUGETLB | (21 << 26)), Ok(()));
        assert_eq!(check_flags(21 << 26), Err(EINVAL));
    }

    #[test]
    fn each_seal_refuses_its_change() {
        assert_eq!(may_write(F_SEAL_WRITE, 0, 1, 10), Err(EPERM));
        assert_eq!(may_write(F_SEAL_FUTURE_WRITE, 0, 1, 10), Err(EPERM));
        assert_eq!(may_write(F_SEAL_GROW, 0, 10, 10), Ok(()));
        assert_eq!(may_write(F_SEAL_GROW, 5, 6, 10), Err(EPERM));
        assert_eq!(may_write(F_SEAL_GROW, u64::MAX, 2, 10), Err(EPERM));
        assert_eq!(may_write(F_SEAL_SHRINK, 100, 1, 10), Ok(()));
        assert_eq!(may_resize(F_SEAL_SHRINK, 10, 5), Err(EPERM));
        assert_eq!(may_resize(F_SEAL_SHRINK, 10, 20), Ok(()));
        assert_eq!(may_resize(F_SEAL_GROW, 10, 20), Err(EPERM));
        assert_eq!(may_resize(F_SEAL_GROW, 10, 10), Ok(()));
        assert_eq!(may_resize(F_SEAL_WRITE, 10, 0), Ok(()));
        assert_eq!(may_map_writable(F_SEAL_SHRINK | F_SEAL_GROW), Ok(()));
        assert_eq!(may_map_writable(F_SEAL_FUTURE_WRITE), Err(EPERM));
    }
}
