//! Record locks between processes (`ctl::LOCK`): the table is
//! `linuxabi::reclock`'s; a supervisor names the file and the range, and
//! the owner: its process, or an open file description (F_OFD_SETLK).
//!
//! The waiting forms (F_SETLKW, F_OFD_SETLKW, flock without LOCK_NB) are
//! passed here (`pass::LOCK`) and held until the lock in the way goes:
//! every request may have released one (an unlock, a close, a process's
//! end), so each held wait tries again after it, as the other held calls
//! do. A signal interrupts the wait as it does theirs. A record lock's
//! wait that would close a cycle of processes waiting for each other
//! fails with EDEADLK (Linux's `posix_locks_deadlock`).

use super::{Held, Shared, Waiting};
use crate::proto::{self, word};
use linuxabi::errno;
use linuxabi::reclock::{Want, ofd_owner};

/// How many lock waits the server holds at once, for every process
/// together: each is a `Held` record in its memory, so a process that
/// forks waiters without end meets ENOLCK (Linux's answer when it has no
/// memory for a lock) rather than exhausting it.
const MAX_WAITS: usize = 1024;

/// Linux's MAX_DEADLK_ITERATIONS: how far along the chain of who waits
/// for whom the deadlock check looks.
const MAX_DEADLK_ITERATIONS: usize = 10;

/// The kinds of lock a wait is for (`pass::LOCK`'s style).
pub const POSIX: u64 = 0;
pub const OFD: u64 = 1;
pub const FLOCK: u64 = 2;

fn want(kind: u64) -> Want {
    match kind {
        0 => Want::Read,
        1 => Want::Write,
        _ => Want::Unlock,
    }
}

impl Shared {
    /// The owner of a lock of `style` asked for by `pid` with the
    /// description's object `obj`, and the pid F_GETLK tells of it; None:
    /// `obj` is no file's description.
    fn lock_owner(&self, style: u64, pid: u32, obj: u64) -> Option<(u64, u32)> {
        if style == POSIX {
            return Some((pid as u64, pid));
        }
        (word(&self.objs.info(obj), 0) == proto::obj::FILE).then_some((ofd_owner(obj), u32::MAX))
    }

    /// `ctl::LOCK`'s reply words.
    pub(super) fn lock(&mut self, w: &[u64]) -> alloc::vec::Vec<u64> {
        let (pid, file) = (word(w, 1) as u32, (word(w, 2), word(w, 3)));
        let want = want(word(w, 5));
        let (start, end) = (word(w, 6), word(w, 7));
        let obj = word(w, 8);
        let style = if obj == 0 { POSIX } else { OFD };
        let Some((owner, lpid)) = self.lock_owner(style, pid, obj) else {
            return alloc::vec![errno::fail(errno::EBADF)];
        };
        if word(w, 4) != 0 {
            let r = self.locks.set(file, owner, lpid, (start, end), want);
            return alloc::vec![if r.is_ok() { 0 } else { errno::fail(errno::EAGAIN) }];
        }
        match self.locks.conflict(file, owner, start, end, want) {
            None => alloc::vec![0],
            Some(l) => alloc::vec![1, l.write as u64, l.start, l.end, l.pid as u64],
        }
    }

    /// `pass::LOCK`: [pid, device, inode, kind | style << 8, start, end,
    /// the description's object] — a lock taken now or waited for.
    pub(super) fn lock_pass(&mut self, rid: u64, tpid: u64, w: &[u64]) {
        let (kind, style) = (word(w, 4) & 0xff, word(w, 4) >> 8);
        let mut h = Held {
            rid,
            tpid,
            pid: word(w, 1) as u32,
            tid: (word(w, 1) >> 32) as u32,
            what: Waiting::Lock {
                file: (word(w, 2), word(w, 3)),
                range: (word(w, 5), word(w, 6)),
                kind,
                style,
                obj: word(w, 7),
            },
        };
        if kind > 1 || style > FLOCK {
            self.finish(&h, errno::fail(errno::EINVAL));
            return;
        }
        if self.lock_step(&mut h) {
            return;
        }
        let waits = self
            .held
            .iter()
            .filter(|h| matches!(h.what, Waiting::Lock { .. }))
            .count();
        if waits >= MAX_WAITS {
            self.finish(&h, errno::fail(errno::ENOLCK));
            return;
        }
        self.held.push(h);
    }

    /// Held lock wait `h` tries again: true if it ended (taken, or failed
    /// for good).
    pub(super) fn lock_step(&mut self, h: &mut Held) -> bool {
        let Waiting::Lock {
            file,
            range,
            kind,
            style,
            obj,
        } = h.what
        else {
            return false;
        };
        if style == FLOCK {
            let r = self.objs.flock(obj, file, kind + 1);
            if r == -errno::EAGAIN {
                return false;
            }
            self.finish(h, r as u64);
            return true;
        }
        let Some((owner, lpid)) = self.lock_owner(style, h.pid, obj) else {
            self.finish(h, errno::fail(errno::EBADF));
            return true;
        };
        match self.locks.set(file, owner, lpid, range, want(kind)) {
            Ok(()) => self.finish(h, 0),
            Err(l) if style == POSIX && self.posix_deadlock(h.pid, l.owner) => {
                self.finish(h, errno::fail(errno::EDEADLK))
            }
            Err(_) => return false,
        }
        true
    }

    /// Whether process `caller` waiting for a lock of `blocker` closes a
    /// cycle: `blocker` waits (a record lock's wait) for a lock whose
    /// owner waits for ... one of `caller`'s. Descriptions' locks end the
    /// chain, as in Linux: their waits are no process's.
    fn posix_deadlock(&self, caller: u32, mut blocker: u64) -> bool {
        for _ in 0..=MAX_DEADLK_ITERATIONS {
            let Some(next) = self.waits_for(blocker) else {
                return false;
            };
            if next == caller as u64 {
                return true;
            }
            blocker = next;
        }
        false
    }

    /// The owner of the lock that process `owner`'s record lock wait is
    /// stopped by, if it waits.
    fn waits_for(&self, owner: u64) -> Option<u64> {
        self.held.iter().find_map(|h| match h.what {
            Waiting::Lock {
                file,
                range,
                kind,
                style: POSIX,
                ..
            } if h.pid as u64 == owner => self
                .locks
                .conflict(file, owner, range.0, range.1, want(kind))
                .map(|l| l.owner),
            _ => None,
        })
    }

    /// Process `pid` ended: its lock waits go with it.
    pub(super) fn locks_exit(&mut self, pid: u32) {
        self.held
            .retain(|h| !(h.pid == pid && matches!(h.what, Waiting::Lock { .. })));
    }

    /// Object `obj` may be gone (its last reference released): the locks
    /// its description held go.
    pub(super) fn locks_released(&mut self, obj: u64) {
        if word(&self.objs.info(obj), 0) == 0 {
            self.locks.release_owner(ofd_owner(obj));
        }
    }
}
