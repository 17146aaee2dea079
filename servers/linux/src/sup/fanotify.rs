//! fanotify: descriptors of groups the shared server holds
//! (`shared/fanotify.rs`), fed by the same reports of file calls as
//! inotify's watches (`inotify.rs`). A read is served here, not there:
//! each event carries a descriptor of its file opened for the reader,
//! which only the reader's supervisor can make.

use super::fdtable::{self as fdt, Kind, Ofd};
use super::{Out, Sup, ret};
use crate::proto::{self, ctl, obj, word};
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::fanotify::{self as fan, On};
use linuxabi::structs::{S_IFDIR, S_IFMT};
use tessera_rt::sys;

const AT_FDCWD: u64 = -100i64 as u64;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_EMPTY_PATH: u64 = 0x1000;

impl Sup {
    pub(super) fn fanotify_init(&mut self, flags: u64, f_flags: u64) -> Result<u64, i64> {
        fan::check_init(flags, f_flags, self.cred.euid == 0)?;
        let keep = flags & (fan::FAN_UNLIMITED_QUEUE | fan::FAN_UNLIMITED_MARKS);
        let id = self.ctl1(&[
            ctl::INOTIFY,
            proto::inotify::FAN_INIT,
            self.cred.uid as u64,
            keep,
            f_flags,
        ])?;
        let nonblock = if flags & fan::FAN_NONBLOCK != 0 {
            fdt::O_NONBLOCK
        } else {
            0
        };
        if nonblock != 0 {
            self.ctl(&[ctl::OBJ_SETFL, id, nonblock as u64]);
        }
        let o = Ofd::new(
            Kind::Obj {
                id,
                kind: obj::FANOTIFY,
            },
            fdt::O_RDONLY | nonblock,
            String::from("anon_inode:[fanotify]"),
        );
        match self.fds.insert(o.clone(), flags & fan::FAN_CLOEXEC != 0, self.limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.release(&o);
                Err(e)
            }
        }
    }

    /// The group descriptor `fd` leads to (EBADF: none; EINVAL: not a
    /// group), as Linux checks it.
    fn group(&self, fd: u64) -> Result<u64, i64> {
        match self.fds.ofd(fd)?.borrow().kind {
            Kind::Obj {
                id,
                kind: obj::FANOTIFY,
            } => Ok(id),
            _ => Err(errno::EINVAL),
        }
    }

    pub(super) fn fanotify_mark(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (fd, flags, mask, dirfd, path_at) = (a[0], a[1] as u32 as u64, a[2], a[3], a[4]);
        let on = fan::check_mark(flags, mask)?;
        let id = self.group(fd)?;
        // Events needing file handles or permission answers are not
        // built: refused as a kernel without them refuses them.
        if mask & (fan::FID_EVENTS | fan::PERM_EVENTS) != 0 {
            return Err(errno::EINVAL);
        }
        if flags & fan::FAN_MARK_FLUSH != 0 {
            return self.ctl1(&[ctl::INOTIFY, proto::inotify::FAN_MARK, id, flags, 0, 0, 0]);
        }
        let nofollow = if flags & fan::FAN_MARK_DONT_FOLLOW != 0 {
            AT_SYMLINK_NOFOLLOW
        } else {
            0
        };
        let st = if path_at == 0 {
            // No path: the directory descriptor's own file.
            if dirfd == AT_FDCWD {
                self.stat_at(AT_FDCWD, ".", 0)?
            } else {
                let o = self.fds.ofd(dirfd)?;
                let d = o.borrow();
                self.fstat_ofd(&d)?
            }
        } else {
            let path = self.read_path(rid, path_at)?;
            if path.is_empty() {
                return Err(errno::ENOENT);
            }
            self.stat_at(dirfd, &path, nofollow & !AT_EMPTY_PATH)?
        };
        if flags & fan::FAN_MARK_ONLYDIR != 0 && st.mode & S_IFMT != S_IFDIR {
            return Err(errno::ENOTDIR);
        }
        let ino = if on == On::Inode { st.ino } else { 0 };
        self.ctl1(&[ctl::INOTIFY, proto::inotify::FAN_MARK, id, flags, st.dev, ino, mask])
    }

    /// read(2) of group `id` (call `rid`, arguments `a`): one metadata
    /// record per event, each with a descriptor of its file opened here;
    /// with none queued, EAGAIN or a wait a signal ends (the shared
    /// server's poll wakes the supervisor, which serves it again).
    pub(super) fn fanotify_read(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        let (fd, buf, len) = (a[0], a[1], a[2]);
        let (id, nonblock) = match self.fds.ofd(fd) {
            Ok(o) => {
                let d = o.borrow();
                match d.kind {
                    Kind::Obj {
                        id,
                        kind: obj::FANOTIFY,
                    } => (id, self.flags_of(&d) & fdt::O_NONBLOCK != 0),
                    _ => return ret(Err(errno::EINVAL)),
                }
            }
            Err(e) => return ret(Err(e)),
        };
        let mut out: Vec<u8> = Vec::new();
        let mut opened: Vec<u64> = Vec::new();
        let mut fail = 0;
        while out.len() + fan::METADATA_LEN <= len as usize || out.is_empty() {
            let r = self.fan_take(id, len - out.len() as u64);
            match errno::of(word(&r, 0)) {
                Some(e) => {
                    fail = e;
                    break;
                }
                None if word(&r, 0) == 0 => break,
                None => {}
            }
            let (mask, pid, f_flags, plen) = (word(&r, 1), word(&r, 2) as i32, word(&r, 3), word(&r, 4) as usize);
            let mut path = proto::bytes(r.get(5..).unwrap_or(&[]));
            path.truncate(plen);
            let efd = if mask == fan::FAN_Q_OVERFLOW {
                Ok(fan::FAN_NOFD as i64 as u64)
            } else {
                self.fan_open(&String::from_utf8_lossy(&path), f_flags as u32)
            };
            match efd {
                Ok(efd) => {
                    if efd != fan::FAN_NOFD as i64 as u64 {
                        opened.push(efd);
                    }
                    fan::metadata(mask, efd as i32, pid, &mut out);
                }
                // The event is lost, as Linux loses it when it cannot
                // make the descriptor; the read says why if it is the
                // first.
                Err(e) => {
                    fail = e;
                    break;
                }
            }
        }
        if !out.is_empty() {
            if self.write_mem(rid, buf, &out).is_err() {
                for f in opened {
                    let _ = self.close_fd(f);
                }
                return ret(Err(errno::EFAULT));
            }
            return Out::Ret(out.len() as u64);
        }
        if fail != 0 {
            return ret(Err(fail));
        }
        if nonblock {
            return ret(Err(errno::EAGAIN));
        }
        let r = self.ctl(&[ctl::POLL, self.pid as u64, u64::MAX, id, 1]);
        if word(&r, 0) != 0 {
            return self.fanotify_read(rid, n, a);
        }
        self.hold_until_ready(rid, n, a, word(&r, 1), Default::default())
    }

    fn fan_take(&self, id: u64, room: u64) -> Vec<u64> {
        // A path may be longer than `ctl`'s reply room.
        let mut reply = alloc::vec![0u8; 4200];
        let m = [ctl::INOTIFY, proto::inotify::FAN_TAKE, id, room];
        match sys::call(self.shared, proto::shared::CTL, &proto::bytes(&m), &mut reply) {
            Ok(n) => proto::words(&reply[..n]),
            Err(_) => alloc::vec![errno::fail(errno::EIO)],
        }
    }

    /// The reader's descriptor of an event's file: opened without events
    /// of its own (Linux's FMODE_NONOTIFY), nor for its close.
    fn fan_open(&mut self, path: &str, f_flags: u32) -> Result<u64, i64> {
        let was = self.watching;
        self.watching.on = false;
        let o = self.open_ofd(AT_FDCWD, path, f_flags & !(fdt::O_CREAT | fdt::O_TRUNC), 0);
        self.watching = was;
        let o = o?;
        o.borrow_mut().quiet = true;
        self.install(o, f_flags)
    }
}
