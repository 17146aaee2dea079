//! Capabilities: a process's effective, permitted, inheritable and
//! bounding sets, and Linux's rules for changing them (capset, exec,
//! the uid changes, PR_CAPBSET_DROP). Files carry no capabilities here:
//! at exec a root user's program gets them all, as a program without file
//! capabilities does on Linux.

use crate::errno;

/// The highest capability number Linux 6.1 knows (CAP_CHECKPOINT_RESTORE).
pub const LAST_CAP: u64 = 40;
/// Every capability.
pub const FULL: u64 = (1 << (LAST_CAP + 1)) - 1;
/// Reads and searches any file; opens a file handle (open_by_handle_at).
pub const CAP_DAC_READ_SEARCH: u64 = 2;
pub const CAP_SETPCAP: u64 = 8;
pub const CAP_SYS_CHROOT: u64 = 18;
pub const CAP_SYS_NICE: u64 = 23;
pub const CAP_SYS_ADMIN: u64 = 21;

/// `__user_cap_header_struct.version`: one 32-bit record per set (v1),
/// two (v2, v3).
pub const V1: u32 = 0x1998_0330;
pub const V2: u32 = 0x2007_1026;
pub const V3: u32 = 0x2008_0522;

/// The 32-bit records a version's data has (None: a version Linux does
/// not know; it answers with V3, its preferred one).
pub fn records(version: u32) -> Option<usize> {
    match version {
        V1 => Some(1),
        V2 | V3 => Some(2),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub effective: u64,
    pub permitted: u64,
    pub inheritable: u64,
    pub bounding: u64,
    /// The real, effective and saved uids the sets last followed.
    ids: [u32; 3],
}

impl Default for Caps {
    /// Root's: the first process's.
    fn default() -> Self {
        Caps {
            effective: FULL,
            permitted: FULL,
            inheritable: 0,
            bounding: FULL,
            ids: [0; 3],
        }
    }
}

impl Caps {
    /// The sets a child of a fork starts with (the parent's), at `ids`.
    pub fn with(effective: u64, permitted: u64, inheritable: u64, bounding: u64, ids: [u32; 3]) -> Caps {
        Caps {
            effective: effective & FULL,
            permitted: permitted & FULL,
            inheritable: inheritable & FULL,
            bounding: bounding & FULL,
            ids,
        }
    }

    /// Whether the effective set holds `cap`.
    pub fn has(&self, cap: u64) -> bool {
        self.effective & (1 << cap) != 0
    }

    /// capset on the caller itself (Linux's cap_capset): EPERM when a set
    /// would grow beyond what the old ones allow.
    pub fn set(&mut self, effective: u64, permitted: u64, inheritable: u64) -> Result<(), i64> {
        let (e, p, i) = (effective & FULL, permitted & FULL, inheritable & FULL);
        // Without CAP_SETPCAP the inheritable set stays within the old
        // inheritable and permitted ones.
        if !self.has(CAP_SETPCAP) && i & !(self.inheritable | self.permitted) != 0 {
            return Err(errno::EPERM);
        }
        if i & !(self.inheritable | self.bounding) != 0 || p & !self.permitted != 0 || e & !p != 0 {
            return Err(errno::EPERM);
        }
        self.effective = e;
        self.permitted = p;
        self.inheritable = i;
        Ok(())
    }

    /// PR_CAPBSET_READ.
    pub fn bound(&self, cap: u64) -> Result<u64, i64> {
        if cap > LAST_CAP {
            return Err(errno::EINVAL);
        }
        Ok((self.bounding >> cap) & 1)
    }

    /// PR_CAPBSET_DROP: CAP_SETPCAP's.
    pub fn drop_bound(&mut self, cap: u64) -> Result<(), i64> {
        if cap > LAST_CAP {
            return Err(errno::EINVAL);
        }
        if !self.has(CAP_SETPCAP) {
            return Err(errno::EPERM);
        }
        self.bounding &= !(1 << cap);
        Ok(())
    }

    /// The uids changed to `ids` [real, effective, saved]: losing root in
    /// all three drops the permitted and effective sets, the effective id
    /// leaving 0 empties the effective set and coming back to 0 fills it
    /// from the permitted one (Linux's cap_emulate_setxuid).
    pub fn follow_ids(&mut self, ids: [u32; 3]) {
        let old = self.ids;
        if old.contains(&0) && !ids.contains(&0) {
            self.permitted = 0;
            self.effective = 0;
        }
        if old[1] == 0 && ids[1] != 0 {
            self.effective = 0;
        }
        if old[1] != 0 && ids[1] == 0 {
            self.effective = self.permitted;
        }
        self.ids = ids;
    }

    /// execve of a program without file capabilities by uids `ids`: root
    /// (real or effective) gets its inheritable and bounding sets as
    /// permitted, effective only when the effective uid is 0; anyone else
    /// none.
    pub fn exec(&mut self, ids: [u32; 3]) {
        let root = ids[0] == 0 || ids[1] == 0;
        self.permitted = if root {
            (self.inheritable | self.bounding) & FULL
        } else {
            0
        };
        self.effective = if ids[1] == 0 { self.permitted } else { 0 };
        self.ids = ids;
    }

    pub fn ids(&self) -> [u32; 3] {
        self.ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capset_keeps_sets_within_the_old_ones() {
        let mut c = Caps::default();
        let kill = 1 << 5;
        assert_eq!(c.set(kill, kill | 1, kill), Ok(()));
        // pE beyond pP, pP beyond the old pP.
        assert_eq!(c.set(kill | 2, kill | 1, 0), Err(errno::EPERM));
        assert_eq!(c.set(kill, kill | 2, 0), Err(errno::EPERM));
        // Without CAP_SETPCAP, pI within the old pI and pP.
        assert_eq!(c.set(kill, kill, 4), Err(errno::EPERM));
        assert_eq!(c.set(0, 0, 1), Ok(()));
        assert_eq!((c.effective, c.permitted, c.inheritable), (0, 0, 1));
    }

    #[test]
    fn inheritable_within_the_bounding_set() {
        let mut c = Caps::default();
        assert_eq!(c.drop_bound(5), Ok(()));
        assert_eq!(c.bound(5), Ok(0));
        assert_eq!(c.bound(6), Ok(1));
        assert_eq!(c.set(FULL, FULL, 1 << 5), Err(errno::EPERM));
        assert_eq!(c.set(FULL, FULL, 1 << 6), Ok(()));
        assert_eq!(c.bound(LAST_CAP + 1), Err(errno::EINVAL));
        assert_eq!(c.drop_bound(LAST_CAP + 1), Err(errno::EINVAL));
        c.set(0, FULL, 0).unwrap();
        assert_eq!(c.drop_bound(6), Err(errno::EPERM));
    }

    #[test]
    fn uid_changes() {
        let mut c = Caps::default();
        c.follow_ids([0, 1000, 0]);
        assert_eq!((c.effective, c.permitted), (0, FULL));
        c.follow_ids([0, 0, 0]);
        assert_eq!(c.effective, FULL);
        c.follow_ids([1000, 1000, 1000]);
        assert_eq!((c.effective, c.permitted), (0, 0));
        c.follow_ids([0, 0, 0]);
        assert_eq!(c.effective, 0);
    }

    #[test]
    fn exec_gives_root_its_bounding_set() {
        let mut c = Caps::default();
        c.drop_bound(5).unwrap();
        c.set(0, 1, 0).unwrap();
        c.exec([0, 0, 0]);
        assert_eq!(c.permitted, FULL & !(1 << 5));
        assert_eq!(c.effective, c.permitted);
        c.exec([0, 1000, 1000]);
        assert_eq!((c.effective, c.permitted), (0, FULL & !(1 << 5)));
        c.exec([1000, 1000, 1000]);
        assert_eq!((c.effective, c.permitted), (0, 0));
    }

    #[test]
    fn versions() {
        assert_eq!(records(V1), Some(1));
        assert_eq!(records(V3), Some(2));
        assert_eq!(records(0), None);
    }
}
