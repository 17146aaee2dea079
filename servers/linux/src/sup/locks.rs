//! Record locks (`fcntl` F_GETLK, F_SETLK, F_SETLKW, and the open file
//! description's F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW): the supervisor
//! turns a `struct flock` into a byte range of the file (by its device and
//! inode numbers) and asks the shared server, which holds every process's
//! locks (`linuxabi::reclock`). A process's locks on a file go when it
//! closes any descriptor of it, and all of them when it ends; a
//! description's when its last descriptor closes. The waiting forms, and
//! flock without LOCK_NB, are passed to the shared server, which holds
//! them until the lock can be taken (`shared/locks.rs`).

use super::fdtable::{Kind, Ofd};
use super::{Out, Sup, ret};
use crate::proto::{ctl, pass, word};
use linuxabi::errno;
use linuxabi::structs as st;

const F_GETLK: u64 = 5;
const F_SETLK: u64 = 6;
const F_SETLKW: u64 = 7;
const F_OFD_GETLK: u64 = 36;
const F_OFD_SETLK: u64 = 37;
const F_OFD_SETLKW: u64 = 38;

/// Whether fcntl command `cmd` is a lock's (served by `fcntl_lock`).
pub fn is_lock_cmd(cmd: u64) -> bool {
    matches!(
        cmd,
        F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW
    )
}

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

    /// The shared server's object of description `d`, which its locks
    /// belong to (made now if no fork made it yet).
    fn description_object(&self, d: &mut Ofd) -> Result<u64, i64> {
        if let Some(id) = d.shared {
            return Ok(id);
        }
        let id = self.ctl1(&[ctl::SHARE_FILE, d.pos, d.flags as u64])?;
        d.shared = Some(id);
        Ok(id)
    }

    /// fcntl's lock commands on descriptor `a[0]` with the `struct flock`
    /// at `a[2]` (call `n`, passed on when it waits).
    pub(super) fn fcntl_lock(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        let (cmd, arg) = (a[1], a[2]);
        let o = match self.fds.ofd(a[0]) {
            Ok(o) => o,
            Err(e) => return Out::Ret(errno::fail(e)),
        };
        let mut d = o.borrow_mut();
        let set = !matches!(cmd, F_GETLK | F_OFD_GETLK);
        let ofd = matches!(cmd, F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW);
        let wait = matches!(cmd, F_SETLKW | F_OFD_SETLKW);
        let r = (|| {
            let f = self.read_mem(rid, arg, FLOCK_LEN)?;
            // A description's lock has no process: Linux wants l_pid 0.
            if ofd && st::u64_at(&f, 24) as u32 != 0 {
                return Err(errno::EINVAL);
            }
            let obj = if ofd && self.lock_key(&d).is_some() {
                self.description_object(&mut d)?
            } else {
                0
            };
            Ok((f, obj))
        })();
        let (f, obj) = match r {
            Ok(v) => v,
            Err(e) => return Out::Ret(errno::fail(e)),
        };
        let kind = u16::from_le_bytes([f[0], f[1]]);
        if !wait || kind == F_UNLCK {
            return ret(self.record_lock(rid, &d, arg, f, set, obj));
        }
        let key = self.lock_key(&d);
        let range = match self.lock_check(&d, &f, set) {
            Ok(r) => r,
            Err(e) => return Out::Ret(errno::fail(e)),
        };
        let Some((dev, ino)) = key else {
            // Nobody else reaches this file: nothing to wait for.
            return Out::Ret(0);
        };
        drop(d);
        if !ofd {
            self.has_locks = true;
        }
        let style = if ofd { 1 } else { 0 };
        let w = [
            pass::LOCK,
            self.pid as u64,
            dev,
            ino,
            kind as u64 | style << 8,
            range.0,
            range.1,
            obj,
        ];
        self.pass(rid, n, a, &w)
    }

    /// The lock type's checks against description `d` (F_SETLK `set`),
    /// then the range the `struct flock` `f` names.
    fn lock_check(&self, d: &Ofd, f: &[u8], set: bool) -> Result<(u64, u64), i64> {
        match u16::from_le_bytes([f[0], f[1]]) {
            F_RDLCK if set && !d.readable() => return Err(errno::EBADF),
            F_WRLCK if set && !d.writable() => return Err(errno::EBADF),
            F_UNLCK if !set => return Err(errno::EINVAL),
            F_RDLCK | F_WRLCK | F_UNLCK => {}
            _ => return Err(errno::EINVAL),
        }
        self.lock_range(d, f)
    }

    /// F_GETLK (`set` false) and F_SETLK (`set` true) on description `d`
    /// with the `struct flock` `f` read from `arg`; the lock is the
    /// description's object `obj`'s (0: the process's).
    fn record_lock(
        &mut self,
        rid: u64,
        d: &Ofd,
        arg: u64,
        mut f: alloc::vec::Vec<u8>,
        set: bool,
        obj: u64,
    ) -> Result<u64, i64> {
        let kind = u16::from_le_bytes([f[0], f[1]]);
        let (start, end) = self.lock_check(d, &f, set)?;
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
            obj,
        ]);
        if set {
            if let Some(e) = errno::of(word(&r, 0)) {
                return Err(e);
            }
            if kind != F_UNLCK && obj == 0 {
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
    /// of the description that holds it and the lock goes when the last
    /// descriptor of it closes. Without LOCK_NB the call is passed on and
    /// waits while another description's lock is in the way.
    pub(super) fn flock(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        const LOCK_SH: u64 = 1;
        const LOCK_EX: u64 = 2;
        const LOCK_NB: u64 = 4;
        const LOCK_UN: u64 = 8;
        let op = a[1];
        let r = (|| {
            let o = self.fds.ofd(a[0])?;
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
            let Some(key) = self.lock_key(&d) else {
                // Nobody else reaches this file: nothing to conflict with.
                return Ok(None);
            };
            Ok(Some((self.description_object(&mut d)?, key, want)))
        })();
        let (owner, (dev, ino), want) = match r {
            Ok(Some(v)) => v,
            Ok(None) => return Out::Ret(0),
            Err(e) => return Out::Ret(errno::fail(e)),
        };
        if want == 0 || op & LOCK_NB != 0 {
            return ret(self.ctl1(&[ctl::FLOCK, owner, dev, ino, want]));
        }
        let w = [pass::LOCK, self.pid as u64, dev, ino, (want - 1) | 2 << 8, 0, 0, owner];
        self.pass(rid, n, a, &w)
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
