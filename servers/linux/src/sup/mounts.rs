//! Mounted file systems as a process sees them: `mount(2)` and
//! `umount2(2)` (the shared server starts and ends the servers of each,
//! `shared/mounts.rs`), paths that cross into a mount (resolved by their
//! absolute path: the longest mount point above it names the file server
//! and the rest is the path inside), file numbers tagged with their
//! mount's number, and `/proc/mounts`.
//!
//! The table is the shared server's; a supervisor reads it for each path
//! once the name `linux.mounts` exists (no mount ever made: no cost but
//! one name lookup).

use super::Sup;
use super::files::Target;
use crate::proto::{ctl, word};
use crate::shared::mounts as op;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use linuxabi::errno;
use tessera_rt::sys;

use super::fs::ROOT;

/// The working directory, as the `*at` calls name it.
const AT: u64 = super::files::AT_FDCWD as u64;

/// A directory token: the root of mount `id`.
pub(super) const MOUNT_ROOT: u32 = 0x4000_0000;

/// Whether the file server's file `fd` is the system's (mount 0), whose
/// `struct stat` reaches programs as that server wrote it (`set_dev`
/// changes a mount's st_dev).
pub fn on_system_fs(fd: u32) -> bool {
    fd == ROOT || (fd & MOUNT_ROOT == 0 && fd >> 24 == 0)
}

/// Mount `id`'s file number `fd` as the supervisor keeps it.
pub fn tag(id: u32, fd: u32) -> u32 {
    if id == 0 { fd } else { id << 24 | (fd & 0xff_ffff) }
}

#[derive(Clone, Debug)]
pub struct Mounted {
    pub id: u32,
    pub fs: u64,
    pub dev: u32,
    pub flags: u64,
    pub path: String,
    /// A bind's source (MS_BIND): names below `path` are those below it.
    pub source: Option<String>,
}

/// The mounts a supervisor knows, and the shared server to ask.
#[derive(Default)]
pub struct Table {
    pub shared: u64,
    list: RefCell<Vec<Mounted>>,
}

impl Table {
    /// Whether any file system was ever mounted.
    fn any(&self) -> bool {
        sys::name_lookup(op::MOUNTED_NAME).is_ok()
    }

    /// Reads the table again from the shared server.
    pub fn refresh(&self) {
        let mut reply = alloc::vec![0u8; 8192];
        let mut m = Vec::new();
        for w in [ctl::MOUNT, op::LIST] {
            m.extend_from_slice(&w.to_le_bytes());
        }
        let Ok(n) = sys::call(self.shared, crate::proto::shared::CTL, &m, &mut reply) else {
            return;
        };
        let w = crate::proto::words(&reply[..n]);
        let mut list = Vec::new();
        let mut i = 1;
        for _ in 0..word(&w, 0).min(64) {
            let (id, fs, dev, flags) = (word(&w, i), word(&w, i + 1), word(&w, i + 2), word(&w, i + 3));
            let Some(path) = op::path_from(w.get(i + 4..).unwrap_or(&[])) else {
                break;
            };
            i += 4 + op::path_len(&path);
            let Some(source) = op::path_from(w.get(i..).unwrap_or(&[])) else {
                break;
            };
            i += op::path_len(&source);
            list.push(Mounted {
                id: id as u32,
                fs,
                dev: dev as u32,
                flags,
                path,
                source: (!source.is_empty()).then_some(source),
            });
        }
        *self.list.borrow_mut() = list;
    }

    pub fn list(&self) -> Vec<Mounted> {
        if self.any() {
            self.refresh();
        }
        self.list.borrow().clone()
    }

    /// The server of file `fd` (or directory token), its number there,
    /// and its mount's number (0: the system's file server `root`).
    pub fn route(&self, root: u64, fd: u32) -> (u64, u32, u32) {
        if fd == ROOT {
            return (root, ROOT, 0);
        }
        let (id, local) = if fd & MOUNT_ROOT != 0 {
            (fd & 0xff, ROOT)
        } else {
            (fd >> 24, fd & 0xff_ffff)
        };
        if id == 0 {
            return (root, local, 0);
        }
        let find = |l: &Vec<Mounted>| l.iter().find(|m| m.id == id).map(|m| m.fs);
        let pid = find(&self.list.borrow()).or_else(|| {
            self.refresh();
            find(&self.list.borrow())
        });
        // A mount that went: its files answer EIO (a call to no server).
        (pid.unwrap_or(0), local, id)
    }

    /// Whether mount `id` is read-only (MS_RDONLY, at mount or remount).
    pub fn read_only(&self, id: u32) -> bool {
        id != 0
            && self
                .list
                .borrow()
                .iter()
                .any(|m| m.id == id && m.flags & MS_RDONLY != 0)
    }

    /// Whether mount `id` has mount(2) flag `flag` (MS_NODEV, MS_NOEXEC).
    pub fn has(&self, id: u32, flag: u64) -> bool {
        id != 0 && self.list.borrow().iter().any(|m| m.id == id && m.flags & flag != 0)
    }

    /// statfs's `f_flags` of mount `id` (None: not a mount), as Linux's
    /// from the mount's flags: ST_VALID always, relatime unless noatime
    /// or strictatime was asked for.
    pub fn statfs_flags(&self, id: u32) -> Option<u64> {
        const ST_VALID: u64 = 0x20;
        const ST_RELATIME: u64 = 4096;
        const SHOWN: u64 =
            MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS | MS_MANDLOCK | MS_NOATIME | MS_NODIRATIME;
        let list = self.list.borrow();
        let m = list.iter().find(|m| m.id == id && id != 0)?;
        let relatime = if m.flags & (MS_NOATIME | MS_STRICTATIME) == 0 {
            ST_RELATIME
        } else {
            0
        };
        Some(ST_VALID | (m.flags & SHOWN) | relatime)
    }

    /// A stat of mount `id`'s file: its device is the loop device, as
    /// on Linux (the file server reports its own).
    pub fn set_dev(&self, id: u32, st: &mut [u8; 144]) {
        if id == 0 {
            return;
        }
        if let Some(m) = self.list.borrow().iter().find(|m| m.id == id) {
            let dev = linuxabi::structs::makedev(linuxabi::loopdev::LOOP_MAJOR, m.dev);
            st[..8].copy_from_slice(&dev.to_le_bytes());
        }
    }

    /// Where an absolute path leads when file systems are mounted: the
    /// mount holding it and the path inside (None: no mount exists).
    pub fn target(&self, abs: &str) -> Option<Target> {
        if !self.any() {
            return None;
        }
        self.refresh();
        let list = self.list.borrow();
        // A bind leads on to its source's names, which are routed again;
        // each bind is passed once (a directory bound onto itself, or
        // binds that lead round, end).
        let mut abs = String::from(abs);
        let mut passed = Vec::new();
        loop {
            let best = list
                .iter()
                .enumerate()
                .filter(|(i, _)| !passed.contains(i))
                .filter_map(|(i, m)| linuxabi::path::below(&abs, &m.path).map(|rest| (i, m, rest)))
                .max_by_key(|(_, m, _)| m.path.len());
            match best {
                Some((i, m, _)) if m.source.is_some() => {
                    let source = m.source.as_deref().unwrap_or("/");
                    abs = op::moved(&abs, &m.path, source).unwrap_or(abs);
                    passed.push(i);
                }
                Some((_, m, rest)) => return Some(Target::Fs(MOUNT_ROOT | m.id, format!("/{rest}"))),
                None => return Some(Target::Fs(ROOT, abs)),
            }
        }
    }
}

/// The mount(2) flags a mount keeps: read-only, no device files and no
/// programs change what it does here; the others (nosuid, atime rules,
/// ...) are kept for statfs and /proc/mounts only. The propagation types (private, slave, shared, unbindable)
/// have nothing to change: there is no propagation.
pub(super) const MS_RDONLY: u64 = 1;
const MS_NOSUID: u64 = 2;
pub const MS_NODEV: u64 = 4;
pub const MS_NOEXEC: u64 = 8;
const MS_SYNCHRONOUS: u64 = 16;
const MS_MANDLOCK: u64 = 64;
const MS_NOATIME: u64 = 1024;
const MS_NODIRATIME: u64 = 2048;
const MS_STRICTATIME: u64 = 1 << 24;
const KEPT: u64 = MS_RDONLY
    | MS_NOSUID
    | MS_NODEV
    | MS_NOEXEC
    | MS_SYNCHRONOUS
    | MS_MANDLOCK
    | MS_NOATIME
    | MS_NODIRATIME
    | MS_STRICTATIME;
const MS_REMOUNT: u64 = 32;
const MS_BIND: u64 = 4096;
const MS_MOVE: u64 = 8192;
const MS_PROPAGATION: u64 = (1 << 17) | (1 << 18) | (1 << 19) | (1 << 20);
const MS_MGC_MSK: u64 = 0xffff_0000;
const MS_MGC_VAL: u64 = 0xc0ed_0000;

const MNT_FORCE: u64 = 1;
const MNT_DETACH: u64 = 2;
const MNT_EXPIRE: u64 = 4;
const UMOUNT_NOFOLLOW: u64 = 8;

impl Sup {
    /// `/proc/mounts`: the system's file systems, then the mounted ones.
    pub(super) fn mounts_text(&self, base: &[u8]) -> Vec<u8> {
        let mut t = base.to_vec();
        for m in self.fs.mounts.list() {
            let ro = if m.flags & MS_RDONLY != 0 { "ro" } else { "rw" };
            let mut opts = String::from(ro);
            for (flag, name) in [
                (MS_SYNCHRONOUS, "sync"),
                (MS_NOSUID, "nosuid"),
                (MS_NODEV, "nodev"),
                (MS_NOEXEC, "noexec"),
                (MS_MANDLOCK, "mand"),
                (MS_NOATIME, "noatime"),
                (MS_NODIRATIME, "nodiratime"),
            ] {
                if m.flags & flag != 0 {
                    opts.push(',');
                    opts.push_str(name);
                }
            }
            if m.flags & (MS_NOATIME | MS_STRICTATIME) == 0 {
                opts.push_str(",relatime");
            }
            // A bind shows the device its source is on, as Linux.
            let dev = match m.source.as_deref().map(|s| self.fs.mounts.target(s)) {
                Some(Some(Target::Fs(d, _))) if d & MOUNT_ROOT != 0 => {
                    let id = d & 0xff;
                    let list = self.fs.mounts.list.borrow();
                    list.iter().find(|x| x.id == id).map(|x| x.dev)
                }
                Some(_) => None,
                None => Some(m.dev),
            };
            let dev = dev.map_or(String::from("/dev/root"), |d| format!("/dev/loop{d}"));
            t.extend(format!("{dev} {} ext2 {opts} 0 0\n", m.path).into_bytes());
        }
        t
    }

    /// statfs of the file system `path` is on.
    pub(super) fn statfs_at(&mut self, rid: u64, path: &str, out: u64) -> Result<u64, i64> {
        match self.target(AT, path)? {
            Target::Fs(d, _) => {
                let b = self.fs.statfs_of(d)?;
                self.write_mem(rid, out, &b)?;
                Ok(0)
            }
            Target::Virt(_) => self.statfs_of(rid, out),
        }
    }

    /// fstatfs: of the file system the descriptor's file is on.
    pub(super) fn fstatfs(&mut self, rid: u64, fd: u64, out: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let file = match o.borrow().kind {
            super::fdtable::Kind::File { fd, .. } => Some(fd),
            _ => None,
        };
        match file {
            Some(f) => {
                let b = self.fs.statfs_of(f)?;
                self.write_mem(rid, out, &b)?;
                Ok(0)
            }
            None => self.statfs_of(rid, out),
        }
    }

    /// Whether `path` is on a read-only mount.
    pub(super) fn on_read_only_mount(&self, dirfd: u64, path: &str) -> bool {
        match self.target(dirfd, path) {
            Ok(Target::Fs(d, _)) => self.fs.mounts.read_only(self.fs.mounts.route(0, d).2),
            _ => false,
        }
    }

    fn read_str(&self, rid: u64, at: u64) -> Result<String, i64> {
        let b = self.read_cstr(rid, at, linuxabi::path::PATH_MAX - 1)?;
        String::from_utf8(b).map_err(|_| errno::EINVAL)
    }

    /// mount(source, target, type, flags, data): an ext2 file system on a
    /// loop device; a remount or a propagation change of a mount point
    /// changes nothing (there is no propagation); a bind (MS_BIND) is an
    /// entry of the table whose names lead to its source's, a move
    /// (MS_MOVE) a mount's new path.
    pub(super) fn mount(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        if self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        let mut flags = a[3];
        if flags & MS_MGC_MSK == MS_MGC_VAL {
            flags &= !MS_MGC_MSK;
        }
        let target = self.read_path(rid, a[1])?;
        let st = self.stat_at(AT, &target, 0)?;
        let abs = self.at_path(AT, &target, false)?;
        let mounted = self.fs.mounts.list().iter().any(|m| m.path == abs);
        if flags & MS_REMOUNT != 0 {
            if !mounted {
                return Err(errno::EINVAL);
            }
            let mut m = alloc::vec![ctl::MOUNT, op::REMOUNT, flags & KEPT];
            m.extend(op::path_words(&abs));
            return self.ctl1(&m).map(|_| 0);
        }
        if flags & MS_PROPAGATION != 0 && flags & (MS_BIND | MS_MOVE) == 0 {
            return if mounted { Ok(0) } else { Err(errno::EINVAL) };
        }
        if flags & MS_MOVE != 0 {
            return self.mount_move(rid, a[0], &abs, st.is_dir());
        }
        if flags & MS_BIND != 0 {
            return self.mount_bind(rid, a[0], &abs, st.is_dir(), flags);
        }
        let fstype = if a[2] == 0 {
            Err(errno::EFAULT)
        } else {
            self.read_str(rid, a[2])
        }?;
        if !matches!(fstype.as_str(), "ext2") {
            return Err(errno::ENODEV);
        }
        if a[0] == 0 {
            return Err(errno::EFAULT);
        }
        let source = self.read_path(rid, a[0])?;
        let sst = self.stat_at(AT, &source, 0)?;
        if sst.mode & 0o170000 != linuxabi::structs::S_IFBLK {
            return Err(errno::ENOTBLK);
        }
        let (major, minor) = linuxabi::structs::split_dev(sst.rdev);
        if major != linuxabi::loopdev::LOOP_MAJOR {
            return Err(errno::ENXIO);
        }
        if !st.is_dir() {
            return Err(errno::ENOTDIR);
        }
        let mut m = alloc::vec![ctl::MOUNT, op::ADD, minor as u64, flags & KEPT];
        m.extend(op::path_words(&abs));
        let r = self.ctl(&m);
        if r.len() < 5 {
            return Err(errno::of(word(&r, 0)).unwrap_or(errno::EIO));
        }
        // The servers start; the file server registers once it has read
        // the file system (or found it unusable).
        let (id, procs) = (r[0], [r[1], r[2], r[3]]);
        let name = format!("mnt{}.fs", r[4]);
        let mut up = false;
        for _ in 0..10_000 {
            if sys::name_lookup(&name).is_ok() {
                up = true;
                break;
            }
            if procs.iter().any(|&p| !sys::alive(p)) {
                break;
            }
            sys::sleep_ns(1_000_000);
        }
        self.ctl1(&[ctl::MOUNT, op::READY, id, up as u64]).map(|_| 0)
    }

    /// The source of a bind or move: its system path, links resolved
    /// (binds are routed by path), and whether it is a directory.
    /// No source, or an empty one, is EINVAL (Linux's do_loopback).
    fn mount_source(&mut self, rid: u64, at: u64) -> Result<(String, bool), i64> {
        if at == 0 {
            return Err(errno::EINVAL);
        }
        let source = self.read_cstr(rid, at, linuxabi::path::PATH_MAX - 1)?;
        let source = String::from_utf8(source).map_err(|_| errno::EINVAL)?;
        if source.is_empty() {
            return Err(errno::EINVAL);
        }
        let st = self.stat_at(AT, &source, 0)?;
        let abs = self.at_path(AT, &source, false)?;
        Ok((self.real_path(&abs), st.is_dir()))
    }

    /// MS_BIND: a directory onto a directory or a file onto a file
    /// (ENOTDIR otherwise, as Linux's graft_tree).
    fn mount_bind(&mut self, rid: u64, at: u64, abs: &str, dir: bool, flags: u64) -> Result<u64, i64> {
        let (source, source_dir) = self.mount_source(rid, at)?;
        if source_dir != dir {
            return Err(errno::ENOTDIR);
        }
        let mut m = alloc::vec![ctl::MOUNT, op::BIND, flags & KEPT];
        m.extend(op::path_words(abs));
        m.extend(op::path_words(&source));
        self.ctl1(&m).map(|_| 0)
    }

    /// MS_MOVE: the source must be where something is mounted and the
    /// target a directory (EINVAL), not below the source (ELOOP).
    fn mount_move(&mut self, rid: u64, at: u64, abs: &str, dir: bool) -> Result<u64, i64> {
        let (source, _) = self.mount_source(rid, at)?;
        if !self.fs.mounts.list().iter().any(|m| m.path == source) {
            return Err(errno::EINVAL);
        }
        if !dir {
            return Err(errno::EINVAL);
        }
        let mut m = alloc::vec![ctl::MOUNT, op::MOVE];
        m.extend(op::path_words(&source));
        m.extend(op::path_words(abs));
        self.ctl1(&m).map(|_| 0)
    }

    /// umount2(target, flags): EINVAL for a path where nothing is
    /// mounted, EBUSY while its files are open (MNT_DETACH: at once).
    pub(super) fn umount(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let flags = a[1];
        if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0
            || (flags & MNT_EXPIRE != 0 && flags & (MNT_FORCE | MNT_DETACH) != 0)
        {
            return Err(errno::EINVAL);
        }
        if self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        let target = self.read_path(rid, a[0])?;
        self.stat_at(AT, &target, 0)?;
        let abs = self.at_path(AT, &target, false)?;
        let bind = match self.fs.mounts.list().iter().find(|m| m.path == abs) {
            Some(m) => m.source.is_some(),
            None => return Err(errno::EINVAL),
        };
        // Files open on it, a working directory inside included, keep it
        // busy (the shared server asks its file server).
        let mut m = alloc::vec![ctl::MOUNT, op::REMOVE, flags];
        m.extend(op::path_words(&abs));
        // (A bind's files are its source's: their marks stay.)
        let before = if bind { None } else { self.note_stat((AT, &abs)) };
        self.ctl1(&m)?;
        if let Some(st) = before {
            self.note_unmount(st.dev);
        }
        Ok(0)
    }
}
