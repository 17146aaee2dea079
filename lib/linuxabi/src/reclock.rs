//! POSIX record locks (`fcntl` F_SETLK, F_GETLK) as Linux keeps them: a
//! lock belongs to a process and a file, a process's own locks never
//! conflict with each other, a new lock replaces what the same process
//! held over its range (splitting what it covered only in part), and
//! adjacent or overlapping locks of one type and owner become one. A
//! process loses all its locks on a file when it closes any descriptor of
//! it, and all of them when it ends. An open file description's locks
//! (F_OFD_SETLK) are the same locks with the description as their owner:
//! they conflict with every other owner's and go when it is closed.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// A file, as its device and inode numbers name it.
pub type FileKey = (u64, u64);

/// The owner of an open file description's locks with object `id`:
/// apart from every pid (a process's record locks' owner).
pub fn ofd_owner(id: u64) -> u64 {
    id | 1 << 63
}

/// One lock: bytes `start..end` (`end` u64::MAX: to the end of the file
/// and beyond) of a file, held by `owner` (a pid or `ofd_owner`); `pid`
/// is what F_GETLK tells of it (-1 for a description's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock {
    pub owner: u64,
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    pub write: bool,
}

impl Lock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }
}

/// What a process asks for over a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    Read,
    Write,
    Unlock,
}

#[derive(Default)]
pub struct Locks {
    files: BTreeMap<FileKey, Vec<Lock>>,
}

impl Locks {
    /// The first lock of another owner that stands in the way of `want`
    /// by `owner` over `start..end` (F_GETLK).
    pub fn conflict(&self, file: FileKey, owner: u64, start: u64, end: u64, want: Want) -> Option<Lock> {
        if want == Want::Unlock {
            return None;
        }
        self.files
            .get(&file)?
            .iter()
            .find(|l| l.owner != owner && l.overlaps(start, end) && (l.write || want == Want::Write))
            .copied()
    }

    /// F_SETLK: takes (or gives up) `start..end` for `owner` (F_GETLK
    /// telling `pid` of it); the lock of another owner in the way if it
    /// cannot (EAGAIN for the caller).
    pub fn set(
        &mut self,
        file: FileKey,
        owner: u64,
        pid: u32,
        (start, end): (u64, u64),
        want: Want,
    ) -> Result<(), Lock> {
        if start >= end {
            return Ok(());
        }
        if let Some(l) = self.conflict(file, owner, start, end, want) {
            return Err(l);
        }
        let list = self.files.remove(&file).unwrap_or_default();
        // What the process held over the range goes; the parts outside it
        // stay.
        let mut kept = Vec::with_capacity(list.len() + 2);
        for l in list {
            if l.owner != owner || !l.overlaps(start, end) {
                kept.push(l);
                continue;
            }
            if l.start < start {
                kept.push(Lock { end: start, ..l });
            }
            if l.end > end {
                kept.push(Lock { start: end, ..l });
            }
        }
        if want != Want::Unlock {
            let mut new = Lock {
                owner,
                pid,
                start,
                end,
                write: want == Want::Write,
            };
            // Its neighbours of the same kind (touching it) join it.
            kept.retain(|l| {
                let joins = l.owner == owner && l.write == new.write && l.start <= new.end && new.start <= l.end;
                if joins {
                    new.start = new.start.min(l.start);
                    new.end = new.end.max(l.end);
                }
                !joins
            });
            kept.push(new);
        }
        kept.sort_by_key(|l| (l.start, l.owner));
        if !kept.is_empty() {
            self.files.insert(file, kept);
        }
        Ok(())
    }

    /// Every lock `pid` holds on `file` goes (it closed a descriptor of it).
    pub fn release_file(&mut self, file: FileKey, pid: u32) {
        if let Some(list) = self.files.get_mut(&file) {
            list.retain(|l| l.owner != pid as u64);
            if list.is_empty() {
                self.files.remove(&file);
            }
        }
    }

    /// Every lock `pid` holds goes (it ended).
    pub fn release_all(&mut self, pid: u32) {
        self.release_owner(pid as u64);
    }

    /// Every lock of `owner` goes (a process ended, or the last
    /// descriptor of a description closed).
    pub fn release_owner(&mut self, owner: u64) {
        self.files.retain(|_, list| {
            list.retain(|l| l.owner != owner);
            !list.is_empty()
        });
    }

    /// The locks on `file`, in order of their start.
    pub fn of(&self, file: FileKey) -> &[Lock] {
        self.files.get(&file).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileKey = (1, 2);

    fn lock(pid: u32, start: u64, end: u64, write: bool) -> Lock {
        Lock {
            owner: pid as u64,
            pid,
            start,
            end,
            write,
        }
    }

    #[test]
    fn other_processes_conflict_own_locks_do_not() {
        let mut l = Locks::default();
        assert_eq!(l.set(F, 1, 1, (0, 10), Want::Write), Ok(()));
        assert_eq!(l.set(F, 1, 1, (5, 20), Want::Write), Ok(()));
        assert_eq!(l.of(F), &[lock(1, 0, 20, true)]);
        assert_eq!(l.set(F, 2, 2, (19, 30), Want::Read), Err(lock(1, 0, 20, true)));
        assert_eq!(l.set(F, 2, 2, (20, 30), Want::Write), Ok(()));
        assert_eq!(l.conflict(F, 2, 0, 1, Want::Read), Some(lock(1, 0, 20, true)));
        assert_eq!(l.conflict(F, 1, 0, 1, Want::Write), None);
        // Read locks share.
        let mut r = Locks::default();
        assert_eq!(r.set(F, 1, 1, (0, 10), Want::Read), Ok(()));
        assert_eq!(r.set(F, 2, 2, (0, 10), Want::Read), Ok(()));
        assert_eq!(r.set(F, 3, 3, (5, 6), Want::Write), Err(lock(1, 0, 10, false)));
    }

    #[test]
    fn a_new_lock_splits_and_replaces_the_old() {
        let mut l = Locks::default();
        l.set(F, 1, 1, (0, 100), Want::Read).unwrap();
        l.set(F, 1, 1, (40, 60), Want::Write).unwrap();
        assert_eq!(
            l.of(F),
            &[lock(1, 0, 40, false), lock(1, 40, 60, true), lock(1, 60, 100, false)]
        );
        l.set(F, 1, 1, (50, 70), Want::Unlock).unwrap();
        assert_eq!(
            l.of(F),
            &[lock(1, 0, 40, false), lock(1, 40, 50, true), lock(1, 70, 100, false)]
        );
        l.set(F, 1, 1, (40, 50), Want::Read).unwrap();
        assert_eq!(l.of(F), &[lock(1, 0, 50, false), lock(1, 70, 100, false)]);
        l.set(F, 1, 1, (0, u64::MAX), Want::Unlock).unwrap();
        assert!(l.of(F).is_empty());
    }

    #[test]
    fn close_and_exit_release() {
        let mut l = Locks::default();
        l.set(F, 1, 1, (0, 10), Want::Write).unwrap();
        l.set((1, 3), 1, 1, (0, 10), Want::Write).unwrap();
        l.set(F, 2, 2, (10, 20), Want::Write).unwrap();
        l.release_file(F, 1);
        assert_eq!(l.of(F), &[lock(2, 10, 20, true)]);
        assert_eq!(l.of((1, 3)).len(), 1);
        l.release_all(1);
        assert!(l.of((1, 3)).is_empty());
        assert_eq!(l.set(F, 3, 3, (0, 10), Want::Write), Ok(()));
    }

    #[test]
    fn a_description_owns_its_locks_apart_from_its_process() {
        let mut l = Locks::default();
        let (a, b) = (ofd_owner(7), ofd_owner(8));
        l.set(F, a, u32::MAX, (0, 10), Want::Write).unwrap();
        // Another description of the same process conflicts, and so does
        // the process's own record lock.
        assert_eq!(l.set(F, b, u32::MAX, (5, 6), Want::Read).unwrap_err().owner, a);
        assert_eq!(l.set(F, 1, 1, (5, 6), Want::Read).unwrap_err().pid, u32::MAX);
        l.set(F, 1, 1, (10, 20), Want::Write).unwrap();
        // A process's close or end does not take a description's locks.
        l.release_all(1);
        assert_eq!(l.of(F).len(), 1);
        l.release_owner(a);
        assert!(l.of(F).is_empty());
        assert_eq!(l.set(F, b, u32::MAX, (5, 6), Want::Read), Ok(()));
    }
}
