//! Record locks (`fcntl` F_GETLK, F_SETLK, F_SETLKW): the supervisor turns
//! a `struct flock` into a byte range of the file (by its device and inode
//! numbers) and asks the shared server, which holds every process's locks
//! (`linuxabi::reclock`). A process's locks on a file go when it closes any
//! descriptor of it, and all of them when it ends.

use super::Sup;
use super::fdtable::{Kind, Ofd};
use crate::proto::{ctl, word};
use linuxabi::errno;
use linuxabi::structs as st;

const F_RDLCK: u16 = 0;
const F_WRLCK: u16 = 1;
const F_UNLCK: u16 = 2;
const SEEK_SET: u16 = 0;
const SEEK_CUR: u16 = 1;
const SEEK_END: u16 = 2;
/// `struct flock`: l_type, l_whence (i16 each), l_start, l_len (i64 at
/// 8 and 16), l_pid (i32 at 24), padded to 32 bytes.
const FLOCK_LEN: usize = 32;

impl Sup {
    /// The file a description names, for locks (None: not a file of the
    /// file server, which Linux locks too but nothing else can open).
    fn lock_key(&self, d: &Ofd) -> Option<(u64, u64)> {
        match d.kind {
            Kind::File { .. } => self.fstat_ofd(d).ok().map(|s| (s.dev, s.ino)),
            _ => None,
        }
    }

    /// The byte range `start..end` a `struct flock` names for description
    /// `d` (end u64::MAX: to the end of the file and on).
    fn lock_range(&self, d: &Ofd, f: &[u8]) -> Result<(u64, u64), i64> {
        let whence = u16::from_le_bytes([f[2], f[3]]);
        let (start, len) = (st::u64_at(f, 8) as i64, st::u64_at(f, 16) as i64);
        let base = match whence {
            SEEK_SET => 0,
            SEEK_CUR => self.pos(d) as i64,
            SEEK_END => self.fstat_ofd(d)?.size,
            _ => return Err(errno::EINVAL),
        };
        let start = base.checked_add(start).ok_or(errno::EOVERFLOW)?;
        let (from, to) = match len {
            0 => (start, i64::MAX),
            l if l > 0 => (start, start.checked_add(l).ok_or(errno::EOVERFLOW)?),
            l => (start.checked_add(l).ok_or(errno::EINVAL)?, start),
        };
        if from < 0 {
            return Err(errno::EINVAL);
        }
        let end = if to == i64::MAX { u64::MAX } else { to as u64 };
        Ok((from as u64, end))
    }

    /// F_GETLK (`set` false) and F_SETLK/F_SETLKW (`set` true) on
    /// description `d` with the `struct flock` at `arg`.
    pub(super) fn record_lock(&mut self, rid: u64, d: &Ofd, arg: u64, set: bool) -> Result<u64, i64> {
        let mut f = self.read_mem(rid, arg, FLOCK_LEN)?;
        let kind = u16::from_le_bytes([f[0], f[1]]);
        match kind {
            F_RDLCK if set && !d.readable() => return Err(errno::EBADF),
            F_WRLCK if set && !d.writable() => return Err(errno::EBADF),
            F_UNLCK if !set => return Err(errno::EINVAL),
            F_RDLCK | F_WRLCK | F_UNLCK => {}
            _ => return Err(errno::EINVAL),
        }
        let (start, end) = self.lock_range(d, &f)?;
        let Some((dev, ino)) = self.lock_key(d) else {
            // Nobody else reaches this file: nothing to conflict with.
            if !set {
                f[0..2].copy_from_slice(&F_UNLCK.to_le_bytes());
                self.write_mem(rid, arg, &f)?;
            }
            return Ok(0);
        };
        let r = self.ctl(&[
            ctl::LOCK,
            self.pid as u64,
            dev,
            ino,
            set as u64,
            kind as u64,
            start,
            end,
        ]);
        if set {
            if let Some(e) = errno::of(word(&r, 0)) {
                return Err(e);
            }
            if kind != F_UNLCK {
                self.has_locks = true;
            }
            return Ok(0);
        }
        // [found, write, start, end, pid]
        if word(&r, 0) == 0 {
            f[0..2].copy_from_slice(&F_UNLCK.to_le_bytes());
        } else {
            let (s, e) = (word(&r, 2), word(&r, 3));
            let kind = if word(&r, 1) != 0 { F_WRLCK } else { F_RDLCK };
            f[0..2].copy_from_slice(&kind.to_le_bytes());
            f[2..4].copy_from_slice(&SEEK_SET.to_le_bytes());
            f[8..16].copy_from_slice(&s.to_le_bytes());
            let len = if e == u64::MAX { 0 } else { e - s };
            f[16..24].copy_from_slice(&len.to_le_bytes());
            f[24..28].copy_from_slice(&(word(&r, 4) as u32).to_le_bytes());
        }
        self.write_mem(rid, arg, &f)?;
        Ok(0)
    }

    /// flock: a lock of the open file description, which its duplicates
    /// and a fork's children share, so it is the shared server's object
    /// of the description that holds it (made now if no fork made it yet)
    /// and the lock goes when the last descriptor of it closes. A lock in
    /// the way fails the call with EWOULDBLOCK even without LOCK_NB: as
    /// F_SETLKW, flock does not wait yet.
    pub(super) fn flock(&mut self, fd: u64, op: u64) -> Result<u64, i64> {
        const LOCK_SH: u64 = 1;
        const LOCK_EX: u64 = 2;
        const LOCK_NB: u64 = 4;
        const LOCK_UN: u64 = 8;
        let o = self.fds.ofd(fd)?;
        let want = match op & !LOCK_NB {
            LOCK_UN => 0,
            LOCK_SH => 1,
            LOCK_EX => 2,
            _ => return Err(errno::EINVAL),
        };
        let mut d = o.borrow_mut();
        if d.flags & linuxabi::fcntl::O_PATH != 0 {
            return Err(errno::EBADF);
        }
        let Some((dev, ino)) = self.lock_key(&d) else {
            // Nobody else reaches this file: nothing to conflict with.
            return Ok(0);
        };
        let owner = match d.shared {
            Some(id) => id,
            None => {
                let pos = d.pos;
                let id = self.ctl1(&[ctl::SHARE_FILE, pos, d.flags as u64])?;
                d.shared = Some(id);
                id
            }
        };
        self.ctl1(&[ctl::FLOCK, owner, dev, ino, want])
    }

    /// A descriptor of description `d` is being closed: the process's
    /// locks on its file go.
    pub(super) fn forget_locks(&self, d: &Ofd) {
        if !self.has_locks {
            return;
        }
        if let Some((dev, ino)) = self.lock_key(d) {
            self.ctl(&[ctl::UNLOCK_FILE, self.pid as u64, dev, ino]);
        }
    }
}
