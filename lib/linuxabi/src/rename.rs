//! renameat2's flags (`linux/fs.h`) and the checks `do_renameat2` makes of
//! them before it looks at a name.

use crate::errno::EINVAL;

pub const RENAME_NOREPLACE: u32 = 1;
pub const RENAME_EXCHANGE: u32 = 2;
pub const RENAME_WHITEOUT: u32 = 4;

/// EINVAL for a flag Linux does not know, and for EXCHANGE with
/// NOREPLACE or WHITEOUT (an exchange replaces by definition and leaves
/// no name to white out). The flags are an unsigned int: the register's
/// upper half is not the caller's.
pub fn check(flags: u64) -> Result<u32, i64> {
    let flags = flags as u32;
    if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
        return Err(EINVAL);
    }
    if flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0 {
        return Err(EINVAL);
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_as_do_renameat2_checks_them() {
        assert_eq!(check(0), Ok(0));
        assert_eq!(check(1), Ok(RENAME_NOREPLACE));
        assert_eq!(check(2), Ok(RENAME_EXCHANGE));
        assert_eq!(check(4), Ok(RENAME_WHITEOUT));
        assert_eq!(check(5), Ok(5));
        assert_eq!(check(3), Err(EINVAL));
        assert_eq!(check(6), Err(EINVAL));
        assert_eq!(check(8), Err(EINVAL));
        assert_eq!(check(1 << 32), Ok(0));
    }
}
