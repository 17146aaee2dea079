//! mknod and mknodat: FIFOs, sockets, regular files and (for root)
//! device files made on the file server's file system; and their opens.
//!
//! The file server has no bytes of a FIFO or a device file: it checks an
//! open's permissions and refuses it with ENXIO, and the open is served
//! here from the inode's type. A named FIFO is a pipe of the shared
//! server (`ctl::FIFO_OPEN`) that every open of the same inode joins; a
//! device file is the device its numbers name, where this system has it,
//! as `/dev` serves it (ENXIO otherwise: no driver, as Linux says). Both
//! keep the inode (an O_PATH open) for fstat.
//!
//! **Waiting.** As Linux's fifo_open, an O_RDONLY open waits for a writer
//! and an O_WRONLY one for a reader (O_RDWR never waits; O_NONBLOCK: a
//! reader does not wait, a writer without a reader gets ENXIO). The end
//! counts as open while it waits, so the other side's open goes on at
//! once. The wait is a poll of the shared server (`obj::FIFO_PARTNER`),
//! held here like a socket's so that a signal ends it: the end is let go
//! and the call restarts under SA_RESTART (ERESTARTSYS), else EINTR.

use super::fdtable::{self as fdt, Kind, Ofd, OfdRef};
use super::files::Target;
use super::{Hold, Out, Sup, ret};
use crate::proto::{ctl, obj, word};
use alloc::format;
use alloc::string::String;
use linuxabi::errno;
use linuxabi::structs::{self as st, StatView};
use tessera_api::fs as api;

/// An open waiting for a FIFO's other side.
pub struct FifoWait {
    rid: u64,
    token: u64,
    pub ofd: OfdRef,
    flags: u32,
}

/// The `/dev` name of device file numbers `(major, minor)`, a block
/// device's if `block`.
fn device_name(block: bool, (major, minor): (u32, u32)) -> Option<String> {
    use linuxabi::loopdev as lo;
    Some(String::from(match (block, major, minor) {
        (false, 1, 3) => "null",
        (false, 1, 5) => "zero",
        (false, 1, 7) => "full",
        (false, 1, 8) => "random",
        (false, 1, 9) => "urandom",
        (false, 5, 0) => "tty",
        (false, 5, 1) => "console",
        (false, lo::MISC_MAJOR, lo::LOOP_CTRL_MINOR) => "loop-control",
        (true, lo::LOOP_MAJOR, n) => return Some(format!("loop{n}")),
        _ => return None,
    }))
}

const S_IFMT: u32 = 0o170000;
const S_IFSOCK: u32 = 0o140000;
const S_IFBLK: u32 = 0o060000;
const S_IFDIR: u32 = 0o040000;

impl Sup {
    pub(super) fn mknodat(&mut self, rid: u64, dirfd: u64, path_at: u64, mode: u64, dev: u64) -> Result<u64, i64> {
        let mode = mode as u32;
        let kind = match mode & S_IFMT {
            0 => st::S_IFREG,
            t @ (st::S_IFREG | st::S_IFIFO | S_IFSOCK) => t,
            t @ (st::S_IFCHR | S_IFBLK) if self.cred.euid == 0 => t,
            st::S_IFCHR | S_IFBLK | S_IFDIR => return Err(errno::EPERM),
            _ => return Err(errno::EINVAL),
        };
        let path = self.read_path(rid, path_at)?;
        match self.target(dirfd, &path)? {
            // /dev and /proc take no new names.
            Target::Virt(abs) => Err(if self.vnode(&abs).is_ok() {
                errno::EEXIST
            } else {
                errno::ENOENT
            }),
            Target::Fs(d, rel) => {
                // Linux's dev_t: major in bits 8-19, minor in 0-7 and 20-31.
                let dev = dev as u32;
                let (major, minor) = ((dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00));
                let mut fields = [0u8; 8];
                fields[..4].copy_from_slice(&(kind | self.new_file_mode(dirfd, &path, mode)).to_le_bytes());
                fields[4..].copy_from_slice(&((major << 20) | minor).to_le_bytes());
                match self.fs.path_op(api::MKNOD, d, 0, &fields, &[rel.as_bytes()]) {
                    Err(errno::EBUSY) => Err(errno::EEXIST),
                    r => r.map(|_| 0),
                }
            }
        }
    }
}

impl Sup {
    /// An open the file server refused with ENXIO once its permission
    /// check passed: the file at `rel` of directory `d` is a FIFO, a
    /// device file or a socket. A FIFO's end that must wait for its other
    /// side is left in `fifo_pending` for the open call to hold.
    pub(super) fn open_node(&mut self, d: u32, rel: &str, flags: u32, abs: String) -> Result<OfdRef, i64> {
        let path_flags = api::O_PATH | (flags & fdt::O_NOFOLLOW);
        let (node, _) = self.fs.open_cached(d, rel.as_bytes(), path_flags, 0)?;
        let nodev = self.fs.mounted_with(d, super::mounts::MS_NODEV);
        let r = self.open_node_as(node, flags, abs, nodev);
        if r.is_err() {
            self.fs.close(node);
        }
        r
    }

    fn open_node_as(&mut self, node: u32, flags: u32, abs: String, nodev: bool) -> Result<OfdRef, i64> {
        let s = StatView::parse(&self.fs.fstat(node)?);
        let keep = flags & !(fdt::O_CLOEXEC | fdt::O_CREAT | fdt::O_EXCL | fdt::O_TRUNC | fdt::O_NOCTTY);
        let o = match s.mode & st::S_IFMT {
            st::S_IFIFO => {
                let access = match flags & fdt::O_ACCMODE {
                    fdt::O_RDONLY => 0,
                    fdt::O_WRONLY => 1,
                    fdt::O_RDWR => 2,
                    // Neither reading nor writing: Linux's fifo_open.
                    _ => return Err(errno::EINVAL),
                };
                let nonblock = flags & fdt::O_NONBLOCK != 0;
                let status = (keep & fdt::SETFL_MASK) as u64;
                let r = self.ctl(&[ctl::FIFO_OPEN, s.dev, s.ino, access, status]);
                let id = word(&r, 0);
                if let Some(e) = errno::of(id) {
                    return Err(e);
                }
                let (kind, there) = (word(&r, 1), word(&r, 2) != 0);
                let o = Ofd::new(Kind::Obj { id, kind }, keep, abs);
                if !there && !nonblock && access != 2 {
                    self.fifo_pending = Some(o.clone());
                }
                o
            }
            // Linux's may_open: a nodev mount's device files are refused
            // before their device is looked for.
            st::S_IFCHR | st::S_IFBLK if nodev => return Err(errno::EACCES),
            t @ (st::S_IFCHR | st::S_IFBLK) => {
                let name = device_name(t == st::S_IFBLK, st::split_dev(s.rdev)).ok_or(errno::ENXIO)?;
                let dev_flags = flags & !(fdt::O_CREAT | fdt::O_EXCL | fdt::O_TRUNC | fdt::O_DIRECTORY);
                let o = match self.open_ofd(super::files::AT_FDCWD as u64, &format!("/dev/{name}"), dev_flags, 0) {
                    // A loop device not made yet: no such device.
                    Err(errno::ENOENT) => return Err(errno::ENXIO),
                    r => r?,
                };
                o.borrow_mut().path = abs;
                o
            }
            // A socket's file opens with ENXIO, as Linux's.
            _ => return Err(errno::ENXIO),
        };
        o.borrow_mut().node = Some(node);
        Ok(o)
    }

    /// open, openat and creat: a new descriptor of the lowest free number,
    /// once a FIFO's other side is there.
    pub(super) fn open_call(&mut self, rid: u64, dirfd: u64, path_at: u64, flags: u64, mode: u64) -> Out {
        self.fifo_pending = None;
        let ofd = match self.open_ofd_at(rid, dirfd, path_at, flags, mode) {
            Ok(o) => o,
            Err(e) => return ret(Err(e)),
        };
        if flags & fdt::O_TRUNC as u64 != 0
            && let Kind::File { fd: ffd, .. } = ofd.borrow().kind
        {
            self.mapped_file_truncated(rid, ffd);
        }
        match self.fifo_pending.take() {
            Some(o) => self.fifo_hold(rid, o, flags as u32),
            None => ret(self.install(ofd, flags as u32)),
        }
    }

    /// Holds open `rid` of FIFO end `o` until its other side opens, or
    /// answers it if it has.
    fn fifo_hold(&mut self, rid: u64, o: OfdRef, flags: u32) -> Out {
        if self.sig.deliverable() != 0 {
            self.release(&o);
            return ret(Err(errno::ERESTARTSYS));
        }
        let id = o.borrow().object().unwrap_or(0);
        let r = self.ctl(&[ctl::POLL, self.pid as u64, u64::MAX, id, obj::FIFO_PARTNER]);
        let token = word(&r, 1);
        if let Some(e) = errno::of(word(&r, 0)) {
            self.release(&o);
            return ret(Err(e));
        }
        if word(&r, 0) != 0 || token == 0 {
            return ret(self.install(o, flags));
        }
        self.fifo_wait = Some(FifoWait {
            rid,
            token,
            ofd: o,
            flags,
        });
        self.held = Some((rid, Hold::Poll { token }));
        Out::Done
    }

    /// The shared server's wake for a held FIFO open: it looks again.
    /// Returns whether the token was this module's.
    pub(super) fn fifo_woken(&mut self, token: u64) -> bool {
        if self.fifo_wait.as_ref().is_none_or(|w| w.token != token) {
            return false;
        }
        let Some(w) = self.fifo_wait.take() else {
            return false;
        };
        if !matches!(self.held, Some((r, Hold::Poll { token: t })) if r == w.rid && t == token) {
            self.release(&w.ofd);
            return true;
        }
        self.held = None;
        self.in_call = true;
        let o = self.fifo_hold(w.rid, w.ofd, w.flags);
        self.in_call = false;
        if let Out::Ret(v) = o {
            self.answer(w.rid, v);
        }
        true
    }

    /// Ends a held FIFO open (a signal came): its end is let go. Whether
    /// one was held.
    pub(super) fn fifo_cancel(&mut self) -> bool {
        let held = match (&self.fifo_wait, self.held) {
            (Some(w), Some((rid, Hold::Poll { token }))) => w.rid == rid && w.token == token,
            _ => false,
        };
        if let Some(w) = self.fifo_wait.take() {
            self.release(&w.ofd);
        }
        held
    }
}
