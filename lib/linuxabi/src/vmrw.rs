//! process_vm_readv(2) and process_vm_writev(2): Linux's rules for their
//! iovec arrays (`lib/iov_iter.c`'s import_iovec and iovec_from_user),
//! for who may reach another process's memory (ptrace's
//! PTRACE_MODE_ATTACH_REALCREDS, `kernel/ptrace.c`), and the pieces a copy
//! between the two arrays is made of.

use crate::errno;
use alloc::vec::Vec;

/// The most iovecs either array may have (UIO_MAXIOV).
pub const IOV_MAX: u64 = 1024;
/// The most bytes one call moves (MAX_RW_COUNT): the local array's
/// lengths are cut down to it.
pub const MAX_RW_COUNT: u64 = 0x7fff_f000;
/// The end of user space (TASK_SIZE_MAX): a local iovec reaching past it
/// fails access_ok.
pub const TASK_SIZE: u64 = 0x0000_7fff_ffff_f000;
/// Bytes of one `struct iovec`.
pub const IOVEC: usize = 16;

/// One iovec: base address and length.
pub type Seg = (u64, u64);

/// The iovecs of `raw` (the array's bytes), a negative length EINVAL.
fn parse(raw: &[u8]) -> Result<Vec<Seg>, i64> {
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
    let segs: Vec<Seg> = raw
        .chunks_exact(IOVEC)
        .map(|c| (word(&c[..8]), word(&c[8..])))
        .collect();
    if segs.iter().any(|s| (s.1 as i64) < 0) {
        return Err(errno::EINVAL);
    }
    Ok(segs)
}

/// The local (caller's) array, as import_iovec takes it: each iovec must
/// lie in user space (EFAULT), and the lengths together are cut down to
/// `MAX_RW_COUNT`.
pub fn local(raw: &[u8]) -> Result<Vec<Seg>, i64> {
    let mut segs = parse(raw)?;
    let mut total = 0u64;
    for s in &mut segs {
        if s.0.checked_add(s.1).is_none_or(|end| end > TASK_SIZE) {
            return Err(errno::EFAULT);
        }
        s.1 = s.1.min(MAX_RW_COUNT - total);
        total += s.1;
    }
    Ok(segs)
}

/// The remote (target's) array: any address, looked at only as the copy
/// reaches it.
pub fn remote(raw: &[u8]) -> Result<Vec<Seg>, i64> {
    parse(raw)
}

/// Whether a remote array moves anything (Linux then looks up the pid).
pub fn any(segs: &[Seg]) -> bool {
    segs.iter().any(|s| s.1 > 0)
}

/// Real, effective and saved user ids, then group ids: what the access
/// check compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ids {
    pub uid: [u32; 3],
    pub gid: [u32; 3],
}

/// Whether a process with `caller`'s ids (and CAP_SYS_PTRACE if `cap`)
/// may read and write the memory of one with `target`'s: its real uid is
/// each of the target's uids, and its real gid each of its gids, or it
/// holds the capability (__ptrace_may_access with
/// PTRACE_MODE_REALCREDS). A process may always reach itself.
pub fn may_access(caller: &Ids, target: &Ids, cap: bool, same_process: bool) -> bool {
    let same = target.uid.iter().all(|&u| u == caller.uid[0]) && target.gid.iter().all(|&g| g == caller.gid[0]);
    same_process || same || cap
}

/// The pieces of a copy: (local address, remote address, length), in
/// order, each at most `max`, taking the remote iovecs one by one and
/// the local ones as they fill, until either array is used up.
pub fn pieces(local: &[Seg], remote: &[Seg], max: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let (mut li, mut loff) = (0, 0u64);
    for &(rbase, rlen) in remote {
        let mut roff = 0u64;
        while roff < rlen {
            while li < local.len() && loff == local[li].1 {
                li += 1;
                loff = 0;
            }
            let Some(&(lbase, llen)) = local.get(li) else {
                return out;
            };
            let n = (rlen - roff).min(llen - loff).min(max);
            out.push((lbase.wrapping_add(loff), rbase.wrapping_add(roff), n));
            roff += n;
            loff += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(segs: &[(u64, u64)]) -> Vec<u8> {
        segs.iter()
            .flat_map(|s| s.0.to_le_bytes().into_iter().chain(s.1.to_le_bytes()))
            .collect()
    }

    #[test]
    fn arrays_follow_import_iovec() {
        assert_eq!(local(&raw(&[(0x1000, u64::MAX)])), Err(errno::EINVAL));
        assert_eq!(remote(&raw(&[(0x1000, 1 << 63)])), Err(errno::EINVAL));
        // A bad length is found before a bad address, as Linux reads the
        // whole array first.
        assert_eq!(local(&raw(&[(TASK_SIZE, 8), (0, u64::MAX)])), Err(errno::EINVAL));
        assert_eq!(local(&raw(&[(TASK_SIZE - 8, 9)])), Err(errno::EFAULT));
        assert_eq!(local(&raw(&[(u64::MAX - 4, 8)])), Err(errno::EFAULT));
        assert_eq!(local(&raw(&[(TASK_SIZE - 8, 8)])), Ok(alloc::vec![(TASK_SIZE - 8, 8)]));
        // The remote side's addresses are the copy's business.
        assert_eq!(remote(&raw(&[(u64::MAX - 4, 8)])), Ok(alloc::vec![(u64::MAX - 4, 8)]));
        let big = local(&raw(&[(0x1000, MAX_RW_COUNT - 10), (0x1000, 100), (0x2000, 5)])).unwrap();
        assert_eq!(big, alloc::vec![(0x1000, MAX_RW_COUNT - 10), (0x1000, 10), (0x2000, 0)]);
        assert!(!any(&[(0, 0), (5, 0)]) && any(&[(0, 0), (5, 1)]));
    }

    #[test]
    fn access_is_real_ids_or_the_capability() {
        let root = Ids::default();
        let user = Ids {
            uid: [1000; 3],
            gid: [100; 3],
        };
        assert!(may_access(&user, &user, false, false));
        assert!(!may_access(&user, &root, false, false));
        assert!(may_access(&user, &root, true, false));
        assert!(may_access(&user, &root, false, true));
        // A set-uid target (saved uid another's) is out of reach.
        let setuid = Ids {
            uid: [1000, 0, 0],
            gid: [100; 3],
        };
        assert!(!may_access(&user, &setuid, false, false));
        // The caller's effective ids do not count, its real ones do.
        let su = Ids {
            uid: [1000, 0, 0],
            gid: [100; 3],
        };
        assert!(may_access(&su, &user, false, false));
        let other_group = Ids {
            uid: [1000; 3],
            gid: [100, 100, 5],
        };
        assert!(!may_access(&user, &other_group, false, false));
    }

    #[test]
    fn pieces_pair_the_arrays() {
        let l = [(0x100, 3), (0x200, 0), (0x300, 5)];
        let r = [(0x1000, 4), (0x2000, 10)];
        assert_eq!(
            pieces(&l, &r, 64),
            alloc::vec![(0x100, 0x1000, 3), (0x300, 0x1003, 1), (0x301, 0x2000, 4)]
        );
        assert_eq!(pieces(&[(0x100, 10)], &[(0x1000, 10)], 4).len(), 3);
        assert!(pieces(&[], &r, 64).is_empty());
        assert!(pieces(&l, &[], 64).is_empty());
    }
}
