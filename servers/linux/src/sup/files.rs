//! File calls: paths (made absolute for the files served here, relative to
//! a directory's number for the file server), open and close, reads and
//! writes on every kind of description, positions, metadata, directories,
//! names, descriptors (`dup`, `fcntl`), pipes and the terminal's ioctls.

use super::fdtable::{self as fdt, Kind, Ofd, OfdRef};
use super::fs::ROOT;
use super::vfs::{VNode, is_virtual};
use super::{Out, Sup, ret};
use crate::proto::{self, ctl, obj, pass, word};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::inotify as ino;
use linuxabi::nr;
use linuxabi::signal as sig;
use linuxabi::structs::{self as st, StatView};
use linuxabi::termios as tio;
use tessera_api::fs::{self as api, SetAttr};
use tessera_rt::abi::linux::CallFor;
use tessera_rt::sys::calls;

pub const AT_FDCWD: i64 = -100;
pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
pub const AT_REMOVEDIR: u64 = 0x200;
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
pub const AT_EACCESS: u64 = 0x200;
pub const AT_EMPTY_PATH: u64 = 0x1000;
/// The limit on the size of a file a process writes (its index in
/// `limits`).
pub(super) const RLIMIT_FSIZE: usize = 1;

/// Where a path leads: to the file server (a directory's number there and
/// the path from it), or to a file served here (its absolute path).
pub enum Target {
    Fs(u32, String),
    Virt(String),
}

/// A small random-number generator for /dev/urandom and getrandom
/// (xorshift, seeded from the time-stamp counter).
pub fn random_bytes(buf: &mut [u8]) {
    static STATE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
    let mut x = STATE.load(core::sync::atomic::Ordering::Relaxed);
    if x == 0 {
        x = tessera_rt::sys::rdtsc() | 1;
    }
    for b in buf.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    STATE.store(x, core::sync::atomic::Ordering::Relaxed);
}

impl Sup {
    // ---- paths ----

    /// The absolute path a directory descriptor stands for.
    fn dir_path(&self, dirfd: u64) -> Result<String, i64> {
        if dirfd as i64 == AT_FDCWD || dirfd as i32 == AT_FDCWD as i32 {
            return Ok(self.cwd.clone());
        }
        Ok(self.fds.ofd(dirfd)?.borrow().path.clone())
    }

    /// Where `path` (relative to `dirfd`) leads.
    pub(super) fn target(&self, dirfd: u64, path: &str) -> Result<Target, i64> {
        let cwd = dirfd as i64 == AT_FDCWD || dirfd as i32 == AT_FDCWD as i32;
        // A name relative to a descriptor that is no directory leads
        // nowhere, whatever its path would lead to.
        if !cwd
            && !path.is_empty()
            && !path.starts_with('/')
            && !matches!(
                self.fds.ofd(dirfd)?.borrow().kind,
                Kind::File { dir: true, .. } | Kind::VDir(_)
            )
        {
            return Err(errno::ENOTDIR);
        }
        self.root_lost()?;
        let base = if path.starts_with('/') {
            String::from("/")
        } else {
            self.dir_path(dirfd)?
        };
        let abs = self.lexical(&base, path);
        if self.serves_virtual() && is_virtual(&abs) {
            return Ok(Target::Virt(abs));
        }
        match self.fs.mounts.target(&abs) {
            // Inside a root, the system's file server takes names as the
            // process gives them (it knows the root), not as paths; a
            // bind's source by its name from the root.
            Some(Target::Fs(ROOT, p)) if self.root.is_some() && p != abs => {
                return Ok(Target::Fs(ROOT, self.seen(&p).ok_or(errno::ENOENT)?));
            }
            Some(Target::Fs(ROOT, _)) if self.root.is_some() => {}
            Some(t) => return Ok(t),
            None => {}
        }
        if path.starts_with('/') {
            return Ok(Target::Fs(ROOT, String::from(path)));
        }
        // The root's name for a system path (a directory outside the
        // root has none: the process cannot name it).
        let named = || self.seen(&abs).ok_or(errno::ENOENT);
        if cwd {
            return Ok(match self.cwd_fd {
                Some(fd) => Target::Fs(fd, String::from(path)),
                None => Target::Fs(ROOT, named()?),
            });
        }
        let o = self.fds.ofd(dirfd)?;
        let d = o.borrow();
        match d.kind {
            Kind::File { fd, .. } => Ok(Target::Fs(fd, String::from(path))),
            Kind::VDir(_) => Ok(Target::Fs(ROOT, named()?)),
            _ => Err(errno::ENOTDIR),
        }
    }

    /// `target` for the file server only (exec, chdir of a disk path).
    pub(super) fn fs_path(&self, dirfd: u64, path: &str) -> Result<(u32, String), i64> {
        match self.target(dirfd, path)? {
            Target::Fs(d, p) => Ok((d, p)),
            Target::Virt(abs) => match self.vresolve(&abs)? {
                (p, VNode::Link(_)) => Ok((ROOT, p)),
                _ => Err(errno::EACCES),
            },
        }
    }

    /// The absolute path of `path` relative to `dirfd` (execveat).
    pub(super) fn at_path(&self, dirfd: u64, path: &str, empty: bool) -> Result<String, i64> {
        if path.is_empty() {
            if !empty {
                return Err(errno::ENOENT);
            }
            return self.dir_path(dirfd);
        }
        let base = if path.starts_with('/') {
            String::from("/")
        } else {
            self.dir_path(dirfd)?
        };
        Ok(self.lexical(&base, path))
    }

    fn abs_of(&self, dirfd: u64, path: &str) -> String {
        let base = if path.starts_with('/') {
            String::from("/")
        } else {
            self.dir_path(dirfd).unwrap_or_else(|_| self.cwd.clone())
        };
        self.lexical(&base, path)
    }

    pub(super) fn limit(&self) -> usize {
        (self.limits[7][0].min(1 << 20)) as usize
    }

    // ---- open and close ----

    /// The description an open makes (`open_call` gives it a number).
    pub(super) fn open_ofd_at(
        &mut self,
        rid: u64,
        dirfd: u64,
        path_at: u64,
        flags: u64,
        mode: u64,
    ) -> Result<OfdRef, i64> {
        let path = self.read_path(rid, path_at)?;
        self.open_ofd(dirfd, &path, flags as u32, mode as u32)
    }

    /// The lowest free number for new description `ofd`, opened with
    /// `flags`; the description goes if there is none.
    pub(super) fn install(&mut self, ofd: OfdRef, flags: u32) -> Result<u64, i64> {
        let fd = match self.fds.insert(ofd.clone(), flags & fdt::O_CLOEXEC != 0, self.limit()) {
            Ok(fd) => fd,
            Err(e) => {
                self.release(&ofd);
                return Err(e);
            }
        };
        Ok(fd as u64)
    }

    /// O_NOATIME is for the file's owner (or CAP_FOWNER), as Linux's
    /// inode_owner_or_capable: EPERM otherwise.
    fn may_noatime(&self, owner: u32) -> Result<(), i64> {
        if self.fs.cred.uid == 0 || self.fs.cred.uid == owner {
            Ok(())
        } else {
            Err(errno::EPERM)
        }
    }

    pub(super) fn open_ofd(&mut self, dirfd: u64, path: &str, flags: u32, mode: u32) -> Result<OfdRef, i64> {
        if flags & fdt::O_TMPFILE_BIT != 0 {
            return self.open_unnamed(dirfd, path, flags, mode);
        }
        // Only an existing file can be another's: one the open makes is
        // the caller's.
        if flags & fdt::O_NOATIME != 0
            && self.fs.cred.uid != 0
            && let Ok(st) = self.stat_at(dirfd, path, 0)
        {
            self.may_noatime(st.uid)?;
        }
        let keep = flags & !(fdt::O_CLOEXEC | fdt::O_CREAT | fdt::O_EXCL | fdt::O_TRUNC | fdt::O_NOCTTY);
        match self.target(dirfd, path)? {
            Target::Virt(abs) => {
                if let Some(o) = self.reopen_unnamed(&abs, flags) {
                    return o;
                }
                let (abs, node) = self.vresolve(&abs)?;
                if let VNode::Link(real) = node {
                    return self.open_ofd(AT_FDCWD as u64, &real, flags, mode);
                }
                if flags & fdt::O_CREAT != 0 && flags & fdt::O_EXCL != 0 {
                    return Err(errno::EEXIST);
                }
                let dir = matches!(node, VNode::Dir(_));
                if flags & fdt::O_DIRECTORY != 0 && !dir {
                    return Err(errno::ENOTDIR);
                }
                if dir && flags & fdt::O_ACCMODE != 0 {
                    return Err(errno::EISDIR);
                }
                let settable = super::vfs::writable(&abs) && self.cred.euid == 0;
                if matches!(node, VNode::Mem(_)) && flags & fdt::O_ACCMODE != 0 && !settable {
                    return Err(errno::EACCES);
                }
                // Mode 0200: not even root reads it (Linux's sysctl_perm).
                if abs == super::vfs::DROP_CACHES && flags & fdt::O_ACCMODE != fdt::O_WRONLY {
                    return Err(errno::EACCES);
                }
                // A fresh description of the terminal holds a reference.
                let kind = self.vkind(node);
                if let Kind::Obj { id, .. } = kind {
                    if id == obj::TTY_ID
                        && self.ctl1(&[ctl::TTY_CHECK, self.pid as u64]) == Err(errno::ENOTTY)
                        && abs == "/dev/tty"
                    {
                        return Err(errno::ENXIO);
                    }
                    self.ctl(&[ctl::HOLD, id]);
                }
                if let Kind::Loop(node) = kind {
                    self.loop_open(node)?;
                }
                Ok(Ofd::new(kind, keep, abs))
            }
            Target::Fs(d, rel) => {
                let mut fsflags = flags
                    & (fdt::O_ACCMODE
                        | fdt::O_CREAT
                        | fdt::O_EXCL
                        | fdt::O_TRUNC
                        | fdt::O_APPEND
                        | fdt::O_DIRECTORY
                        | fdt::O_NOFOLLOW);
                if flags & fdt::O_ACCMODE == 3 {
                    fsflags = (fsflags & !3) | fdt::O_RDWR;
                }
                if flags & fdt::O_PATH != 0 {
                    fsflags = (fsflags & (fdt::O_DIRECTORY | fdt::O_NOFOLLOW)) | api::O_PATH;
                }
                // Whether the open makes the file or cuts it (inotify's
                // IN_CREATE, IN_MODIFY): looked at only while watches exist.
                let before = if flags & (fdt::O_CREAT | fdt::O_TRUNC) != 0 && flags & fdt::O_PATH == 0 {
                    Some(self.note_stat((dirfd, path)))
                } else {
                    None
                };
                // O_CREAT on a directory (".", "..", "dir/") is the file
                // server's EISDIR, as on Linux.
                let mode = if flags & fdt::O_CREAT != 0 {
                    self.new_file_mode(dirfd, path, mode)
                } else {
                    mode & !self.umask & 0o7777
                };
                let (fd, cache) = match self.fs.open_cached(d, rel.as_bytes(), fsflags, mode) {
                    // A FIFO, device file or socket: served here.
                    Err(errno::ENXIO) => {
                        let abs = self.abs_of(dirfd, path);
                        return self.open_node(d, &rel, flags, abs);
                    }
                    r => r?,
                };
                // O_NOATIME is the file owner's (or root's) to ask for.
                if flags & linuxabi::fcntl::O_NOATIME != 0
                    && self.cred.euid != 0
                    && self
                        .fs
                        .fstat(fd)
                        .map_or(true, |b| StatView::parse(&b).uid != self.cred.euid)
                {
                    self.fs.close(fd);
                    return Err(errno::EPERM);
                }
                let abs = self.abs_of(dirfd, path);
                let o = Ofd::new(
                    Kind::File {
                        fd,
                        dir: flags & fdt::O_DIRECTORY != 0,
                    },
                    keep,
                    abs,
                );
                // O_DIRECT reads go to the file server (and the disk) as
                // asked; O_PATH and directories have no bytes to read.
                if flags & (fdt::O_DIRECT | fdt::O_PATH | fdt::O_DIRECTORY) == 0 {
                    o.borrow_mut().cache = cache;
                }
                if flags & fdt::O_PATH == 0 && self.watching.on {
                    let d = o.borrow();
                    match before {
                        Some(None) if flags & fdt::O_CREAT != 0 => {
                            self.note_entry((dirfd, path), false, ino::IN_CREATE)
                        }
                        Some(Some(_)) if flags & fdt::O_TRUNC != 0 => self.note_ofd(&d, ino::IN_MODIFY),
                        _ => {}
                    }
                    self.note_ofd(&d, ino::IN_OPEN);
                }
                Ok(o)
            }
        }
    }

    /// A description no descriptor leads to any more.
    pub(super) fn release(&mut self, o: &OfdRef) {
        let d = o.borrow();
        if let Kind::File { fd, .. } = d.kind {
            if d.flags & fdt::O_PATH == 0 {
                let m = if d.writable() {
                    ino::IN_CLOSE_WRITE
                } else {
                    ino::IN_CLOSE_NOWRITE
                };
                self.note_ofd(&d, m);
            }
            self.fs.close(fd);
        }
        if let Some(fd) = d.node {
            self.fs.close(fd);
        }
        if let Kind::Socket { id, .. } = d.kind {
            self.net_close(id);
        }
        if let Kind::Loop(node) = d.kind {
            self.loop_release(node);
        }
        for id in d.objects() {
            self.ctl(&[ctl::RELEASE, id]);
        }
    }

    pub(super) fn close_fd(&mut self, fd: u64) -> Result<u64, i64> {
        let s = self.fds.take(fd)?;
        self.forget_locks(&s.ofd.borrow());
        if let Kind::Obj { id, kind: obj::MQUEUE } = s.ofd.borrow().kind {
            self.mq_closed(id);
        }
        if !self.fds.holds(&s.ofd) && !self.fmap_holds(&s.ofd) {
            self.release(&s.ofd);
        }
        Ok(0)
    }

    // ---- positions ----

    pub(super) fn pos(&self, d: &Ofd) -> u64 {
        match d.shared {
            Some(id) => self.ctl1(&[ctl::FILE_POS, id, 0, 0]).unwrap_or(0),
            None => d.pos,
        }
    }

    pub(super) fn set_pos(&self, d: &mut Ofd, p: u64) {
        match d.shared {
            Some(id) => {
                self.ctl(&[ctl::FILE_POS, id, 1, p]);
            }
            None => d.pos = p,
        }
    }

    /// The position a read or write of `d` starts at (`at`: pread's and
    /// pwrite's own). A shared description's is taken until `pos_put`, so
    /// two processes' calls through it run one after the other.
    pub(super) fn pos_take(&self, d: &Ofd, at: Option<u64>) -> u64 {
        match (at, d.shared) {
            (Some(at), _) => at,
            (None, Some(id)) => self.ctl1(&[ctl::FILE_POS, id, 3, 0]).unwrap_or(0),
            (None, None) => d.pos,
        }
    }

    /// Ends what `pos_take` began: the position is `new` if the call moved
    /// it (`at`: it was pread's or pwrite's, and nothing was taken).
    pub(super) fn pos_put(&self, d: &mut Ofd, at: Option<u64>, new: Option<u64>) {
        match (at, d.shared) {
            (Some(_), _) => {}
            (None, Some(id)) => {
                let _ = match new {
                    Some(p) => self.ctl(&[ctl::FILE_POS, id, 4, p]),
                    None => self.ctl(&[ctl::FILE_POS, id, 5, 0]),
                };
            }
            (None, None) => {
                if let Some(p) = new {
                    d.pos = p;
                }
            }
        }
    }

    /// Status flags: a shared description's are the shared server's.
    pub(super) fn flags_of(&self, d: &Ofd) -> u32 {
        match d.object() {
            Some(id) => {
                let info = self.ctl(&[ctl::OBJ_INFO, id]);
                if word(&info, 0) == 0 {
                    d.flags
                } else {
                    (d.flags & !fdt::SETFL_MASK) | (word(&info, 1) as u32 & fdt::SETFL_MASK)
                }
            }
            None => d.flags,
        }
    }

    // ---- reads and writes ----

    pub(super) fn read(&mut self, rid: u64, a: [u64; 6], at: Option<u64>) -> Out {
        let (fd, buf, len) = (a[0], a[1], a[2]);
        let o = match self.fds.ofd(fd) {
            Ok(o) => o,
            Err(e) => return ret(Err(e)),
        };
        let mut d = o.borrow_mut();
        if !d.readable() {
            return ret(Err(errno::EBADF));
        }
        if (len as i64) < 0 {
            return ret(Err(errno::EINVAL));
        }
        match d.kind.clone() {
            Kind::File { fd: ffd, .. } => {
                let off = self.pos_take(&d, at);
                // The kernel's cache of the file did not serve it (it
                // serves no read yet, and a pread only when it holds every
                // page): the pages go there for the next preads.
                let mut flags = if d.cache != 0 { api::MISSED } else { 0 };
                if d.flags & fdt::O_NOATIME != 0 {
                    flags |= api::NOATIME;
                }
                let r = self.fs.read_to_caller(rid, ffd, off, buf, len, flags);
                self.pos_put(&mut d, at, r.ok().map(|n| off + n));
                if matches!(r, Ok(n) if n > 0) {
                    self.note_ofd(&d, ino::IN_ACCESS);
                }
                ret(r)
            }
            Kind::Obj {
                kind: obj::FANOTIFY, ..
            } if at.is_none() => {
                drop(d);
                self.fanotify_read(rid, nr::READ, a)
            }
            Kind::Obj { id, kind } => {
                if at.is_some() {
                    return ret(Err(errno::ESPIPE));
                }
                let mut flags = 0;
                if self.flags_of(&d) & fdt::O_NONBLOCK != 0 {
                    flags |= pass::NONBLOCK;
                }
                let ttin = self.sig.mask & sig::bit(sig::SIGTTIN) != 0
                    || self.sig.action(sig::SIGTTIN).handler == sig::SIG_IGN;
                if kind == obj::TTY && ttin {
                    flags |= pass::TTIN_MASKED;
                }
                drop(d);
                self.pass(rid, 0, a, &[pass::READ, self.pid as u64, id, buf, len, flags])
            }
            Kind::Null => Out::Ret(0),
            Kind::Zero | Kind::Full | Kind::Random => {
                let mut done = 0u64;
                let mut chunk = vec![0u8; (len as usize).min(65536)];
                while done < len {
                    let n = (len - done).min(chunk.len() as u64) as usize;
                    if matches!(d.kind, Kind::Random) {
                        random_bytes(&mut chunk[..n]);
                    }
                    if self.write_mem(rid, buf + done, &chunk[..n]).is_err() {
                        return ret(if done > 0 { Ok(done) } else { Err(errno::EFAULT) });
                    }
                    done += n as u64;
                }
                Out::Ret(len)
            }
            // A namespace's file has no read (nsfs's).
            Kind::Mem(_) if super::vfs::ns_of(&d.path).is_some() => ret(Err(errno::EINVAL)),
            Kind::Mem(m) => {
                let off = at.unwrap_or(d.pos) as usize;
                let part = m.get(off.min(m.len())..).unwrap_or(&[]);
                let n = part.len().min(len as usize);
                if let Err(e) = self.write_mem(rid, buf, &part[..n]) {
                    return ret(Err(e));
                }
                if at.is_none() {
                    d.pos += n as u64;
                }
                Out::Ret(n as u64)
            }
            Kind::VDir(_) => ret(Err(errno::EISDIR)),
            Kind::Socket { .. } | Kind::Unix { .. } | Kind::UnixSock { .. } if at.is_some() => ret(Err(errno::ESPIPE)),
            Kind::Socket { .. } => {
                drop(d);
                self.sock_call(rid, linuxabi::nr::READ, a, None)
            }
            Kind::KUnix { .. } if at.is_some() => ret(Err(errno::ESPIPE)),
            // Bound in the kernel, as a kernel pipe's end.
            Kind::KUnix { .. } => ret(Err(errno::EBADF)),
            Kind::Unix { .. } | Kind::UnixSock { .. } => {
                drop(d);
                self.unix_read(rid, linuxabi::nr::READ, a, &o, (buf, len, 0), (0, 0))
            }
            Kind::KPipe { .. } if at.is_some() => ret(Err(errno::ESPIPE)),
            // Bound in the kernel, which serves every read of it: a number
            // it does not know is not the process's.
            Kind::KPipe { .. } => ret(Err(errno::EBADF)),
            Kind::Epoll(_) => ret(Err(errno::EINVAL)),
            Kind::SignalFd(_) if at.is_some() => ret(Err(errno::ESPIPE)),
            Kind::SignalFd(mask) => {
                let nonblock = d.flags & fdt::O_NONBLOCK != 0;
                drop(d);
                self.signalfd_read(rid, mask, nonblock, buf, len)
            }
            Kind::Loop(node) => ret(self.loop_io(rid, node, &mut d, (buf, len), at, false)),
        }
    }

    /// Whether a truncate may take a file of `size` bytes to `len`: not
    /// past RLIMIT_FSIZE when it grows (EFBIG and SIGXFSZ, as Linux's
    /// `inode_newsize_ok`).
    pub(super) fn fsize_grow_ok(&mut self, size: u64, len: u64) -> Result<(), i64> {
        if len > size && len > self.limits[RLIMIT_FSIZE][0] {
            self.raise(linuxabi::signal::SIGXFSZ);
            return Err(errno::EFBIG);
        }
        Ok(())
    }

    /// How much of a write of `len` bytes at `off` (at the end with
    /// `append`) RLIMIT_FSIZE lets through: up to the limit; none at or
    /// past it, which is EFBIG and SIGXFSZ, as on Linux.
    pub(super) fn fsize_room(&mut self, ffd: u32, off: u64, append: bool, len: u64) -> Result<u64, i64> {
        let limit = self.limits[RLIMIT_FSIZE][0];
        if limit == u64::MAX || len == 0 {
            return Ok(len);
        }
        let start = if append {
            StatView::parse(&self.fs.fstat(ffd)?).size as u64
        } else {
            off
        };
        if start >= limit {
            self.raise(linuxabi::signal::SIGXFSZ);
            return Err(errno::EFBIG);
        }
        Ok(len.min(limit - start))
    }

    pub(super) fn write(&mut self, rid: u64, a: [u64; 6], at: Option<u64>) -> Out {
        let (fd, buf, len) = (a[0], a[1], a[2]);
        let o = match self.fds.ofd(fd) {
            Ok(o) => o,
            Err(e) => return ret(Err(e)),
        };
        let mut d = o.borrow_mut();
        if !d.writable() {
            return ret(Err(errno::EBADF));
        }
        if (len as i64) < 0 {
            return ret(Err(errno::EINVAL));
        }
        match d.kind.clone() {
            Kind::File { fd: ffd, .. } => {
                let append = self.flags_of(&d) & fdt::O_APPEND != 0;
                let off = self.pos_take(&d, at);
                let r = self
                    .fsize_room(ffd, off, append, len)
                    .and_then(|len| self.fs.write_from_caller(rid, ffd, off, append, buf, len));
                self.pos_put(&mut d, at, r.ok().map(|(_, end)| end));
                drop(d);
                if let Ok((n, end)) = r {
                    self.fmap_wrote(rid, ffd, end - n, buf, n);
                    self.mapped_file_resized(rid, ffd);
                    self.file_pages_wrote(rid, ffd, end - n, buf, n);
                    if n > 0 {
                        self.note_ofd(&o.borrow(), ino::IN_MODIFY);
                    }
                }
                ret(r.map(|(n, _)| n))
            }
            Kind::Obj { id, kind } => {
                if at.is_some() {
                    return ret(Err(errno::ESPIPE));
                }
                if kind == obj::TTY {
                    return ret(self.tty_write(rid, buf, len));
                }
                let flags = if self.flags_of(&d) & fdt::O_NONBLOCK != 0 {
                    pass::NONBLOCK
                } else {
                    0
                };
                drop(d);
                self.pass(rid, 1, a, &[pass::WRITE, self.pid as u64, id, buf, len, flags])
            }
            Kind::Null | Kind::Zero | Kind::Random => Out::Ret(len),
            Kind::Full => ret(Err(errno::ENOSPC)),
            Kind::Mem(_) if super::sysv::setting_of(&d.path).is_some() => {
                let index = super::sysv::setting_of(&d.path).unwrap_or(0);
                drop(d);
                ret(self.sysv_setting_write(rid, index, buf, len))
            }
            Kind::Mem(_) if super::vfs::writable(&d.path) => {
                let path = d.path.clone();
                drop(d);
                ret(self.sysctl_write(rid, &path, buf, len))
            }
            Kind::Mem(_) | Kind::VDir(_) => ret(Err(errno::EBADF)),
            Kind::Socket { .. } | Kind::Unix { .. } | Kind::UnixSock { .. } if at.is_some() => ret(Err(errno::ESPIPE)),
            Kind::Socket { .. } => {
                drop(d);
                self.sock_call(rid, linuxabi::nr::WRITE, a, None)
            }
            Kind::KUnix { .. } if at.is_some() => ret(Err(errno::ESPIPE)),
            // The kernel passes on the writes it finds no reader for.
            Kind::KUnix { .. } => {
                drop(d);
                ret(self.kunix_epipe(0))
            }
            Kind::Unix { .. } | Kind::UnixSock { .. } => {
                drop(d);
                self.unix_write(rid, linuxabi::nr::WRITE, a, &o, (buf, len, 0), None)
            }
            Kind::KPipe { .. } if at.is_some() => ret(Err(errno::ESPIPE)),
            // The kernel passes on the writes it finds no reader for.
            Kind::KPipe { .. } => {
                drop(d);
                ret(self.kpipe_write(&o))
            }
            Kind::Epoll(_) | Kind::SignalFd(_) => ret(Err(errno::EINVAL)),
            Kind::Loop(node) => ret(self.loop_io(rid, node, &mut d, (buf, len), at, true)),
        }
    }

    /// Bytes of the process's buffer to the terminal: the shared server
    /// reads them straight from the process (one copy).
    fn tty_write(&mut self, rid: u64, buf: u64, len: u64) -> Result<u64, i64> {
        if len == 0 {
            return Ok(0);
        }
        // TOSTOP stops a background writer.
        match self.tty_may_change(true) {
            Ok(()) | Err(errno::ENOTTY) => {}
            Err(e) => return Err(e),
        }
        let mut reply = [0u8; 8];
        let req = CallFor {
            rid,
            server: self.shared,
            entry: proto::shared::TTY_WRITE,
            msg_addr: buf,
            msg_len: len,
            reply_addr: reply.as_mut_ptr() as u64,
            reply_len: 8,
            flags: tessera_rt::abi::linux::MSG_IN_CALLER,
        };
        match calls::call_for(&req) {
            Ok(_) => {
                let v = i64::from_le_bytes(reply);
                if v < 0 { Err(-v) } else { Ok(v as u64) }
            }
            Err(_) => Err(errno::EFAULT),
        }
    }

    /// readv / writev / preadv / pwritev: each buffer in turn, until one is
    /// short.
    pub(super) fn vector_io(&mut self, rid: u64, a: [u64; 6], write: bool, at: Option<u64>) -> Out {
        let (fd, iov, cnt) = (a[0], a[1], a[2]);
        if cnt > 1024 {
            return ret(Err(errno::EINVAL));
        }
        match self.fds.ofd(fd) {
            Err(e) => return ret(Err(e)),
            Ok(o) if matches!(o.borrow().kind, Kind::Socket { .. }) && at.is_none() => {
                let n = if write {
                    linuxabi::nr::WRITEV
                } else {
                    linuxabi::nr::READV
                };
                return self.sock_call(rid, n, a, None);
            }
            Ok(_) => {}
        }
        let vecs = match self.read_mem(rid, iov, cnt as usize * 16) {
            Ok(v) => v,
            Err(e) => return ret(Err(e)),
        };
        let mut total = 0u64;
        for i in 0..cnt as usize {
            let base = st::u64_at(&vecs, i * 16);
            let len = st::u64_at(&vecs, i * 16 + 8);
            if (len as i64) < 0 {
                return ret(Err(errno::EINVAL));
            }
            if len == 0 {
                continue;
            }
            let args = [fd, base, len, 0, 0, 0];
            let off = at.map(|o| o + total);
            let r = if write {
                self.write(rid, args, off)
            } else {
                self.read(rid, args, off)
            };
            match r {
                Out::Ret(v) => match errno::of(v) {
                    Some(e) => return ret(if total > 0 { Ok(total) } else { Err(e) }),
                    None => {
                        total += v;
                        if v < len {
                            break;
                        }
                    }
                },
                // Passed on to wait (a pipe): that part ends the call.
                Out::Done if total == 0 => return Out::Done,
                Out::Done => break,
            }
        }
        Out::Ret(total)
    }

    pub(super) fn lseek(&mut self, fd: u64, off: u64, whence: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let mut d = o.borrow_mut();
        let size = match &d.kind {
            Kind::File { fd, .. } => StatView::parse(&self.fs.fstat(*fd)?).size as u64,
            Kind::Mem(m) => m.len() as u64,
            Kind::VDir(l) => l.len() as u64,
            Kind::Loop(node) => self.loop_size(*node),
            Kind::Obj { .. }
            | Kind::KPipe { .. }
            | Kind::KUnix { .. }
            | Kind::Socket { .. }
            | Kind::Unix { .. }
            | Kind::UnixSock { .. }
            | Kind::Epoll(_) => {
                return Err(errno::ESPIPE);
            }
            _ => return Ok(0),
        };
        let cur = self.pos(&d);
        let new = match whence {
            0 => off as i64,
            1 => cur as i64 + off as i64,
            2 => size as i64 + off as i64,
            3 | 4 if (off as i64) < 0 || off >= size => return Err(errno::ENXIO),
            // A regular file's holes are the file server's to find; the
            // rest is data to its end.
            3 | 4 => match d.kind {
                Kind::File { fd: ffd, dir: false } => self.fs.seek_data_or_hole(ffd, whence as u32, off)? as i64,
                _ if whence == 3 => off as i64,
                _ => size as i64,
            },
            _ => return Err(errno::EINVAL),
        };
        if new < 0 {
            return Err(errno::EINVAL);
        }
        self.set_pos(&mut d, new as u64);
        Ok(new as u64)
    }

    // ---- metadata ----

    /// `struct stat` of a socket numbered `ino`.
    fn socket_stat(&self, ino: u64) -> StatView {
        StatView {
            dev: st::makedev(0, 8),
            ino,
            nlink: 1,
            mode: st::S_IFSOCK | 0o777,
            blksize: 4096,
            uid: self.cred.euid,
            gid: self.cred.egid,
            ..StatView::default()
        }
    }

    /// `struct stat` of a description.
    pub(super) fn fstat_ofd(&self, d: &Ofd) -> Result<StatView, i64> {
        if let Some(fd) = d.node {
            return Ok(StatView::parse(&self.fs.fstat(fd)?));
        }
        Ok(match &d.kind {
            Kind::File { fd, .. } => StatView::parse(&self.fs.fstat(*fd)?),
            Kind::Obj { id, kind } => {
                let (mode, rdev) = if *kind == obj::TTY {
                    (st::S_IFCHR | 0o620, st::makedev(5, 1))
                } else {
                    (st::S_IFIFO | 0o600, 0)
                };
                StatView {
                    dev: st::makedev(0, 12),
                    ino: *id,
                    nlink: 1,
                    mode,
                    rdev,
                    blksize: 4096,
                    uid: self.cred.euid,
                    gid: self.cred.egid,
                    ..StatView::default()
                }
            }
            // Sockets: the TCP/IP server's number, or the shared server's
            // object (an AF_UNIX socket's, or its connection's pipe).
            Kind::Socket { id, .. } => self.socket_stat(*id as u64),
            Kind::UnixSock { obj, .. } => self.socket_stat(*obj),
            Kind::Unix { rx, .. } => self.socket_stat(*rx),
            Kind::KUnix { id } => self.socket_stat(*id),
            Kind::KPipe { id, .. } => StatView {
                dev: st::makedev(0, 12),
                ino: *id & 0xffff_ffff,
                nlink: 1,
                mode: st::S_IFIFO | 0o600,
                blksize: 4096,
                uid: self.cred.euid,
                gid: self.cred.egid,
                ..StatView::default()
            },
            Kind::Epoll(_) | Kind::SignalFd(_) => StatView {
                dev: st::makedev(0, 14),
                nlink: 1,
                mode: 0o600,
                blksize: 4096,
                uid: self.cred.euid,
                gid: self.cred.egid,
                ..StatView::default()
            },
            _ => {
                let node = self.vnode(&d.path).unwrap_or(VNode::Mem(Vec::new()));
                let mut s = self.vstat(&d.path, &node);
                if let Kind::Mem(m) = &d.kind {
                    s.size = m.len() as i64;
                }
                s
            }
        })
    }

    /// stat of `path` relative to `dirfd` (`flags`: AT_SYMLINK_NOFOLLOW,
    /// AT_EMPTY_PATH).
    /// The permission bits a file made at (`dirfd`, `path`) with `mode`
    /// gets, as Linux's vfs_prepare_mode: first mode_strip_sgid (a file
    /// made set-group-id and group-executable in a set-group-id
    /// directory whose group its maker is not in, without privilege,
    /// loses the bit; CVE-2018-13405), then the umask. Only that case
    /// costs a look at the directory.
    pub(super) fn new_file_mode(&self, dirfd: u64, path: &str, mode: u32) -> u32 {
        const S_ISGID: u32 = 0o2000;
        const S_IXGRP: u32 = 0o010;
        let mut mode = mode & 0o7777;
        if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP && self.fs.cred.uid != 0 {
            let parent = match path.trim_end_matches('/').rfind('/') {
                Some(0) => "/",
                Some(i) => &path[..i],
                None => ".",
            };
            if let Ok(dir) = self.stat_at(dirfd, parent, 0)
                && dir.mode & S_ISGID != 0
                && dir.gid != self.fs.cred.gid
                && !self.cred.groups.contains(&dir.gid)
            {
                mode &= !S_ISGID;
            }
        }
        mode & !self.umask
    }

    pub(super) fn stat_at(&self, dirfd: u64, path: &str, flags: u64) -> Result<StatView, i64> {
        if path.is_empty() {
            if flags & AT_EMPTY_PATH == 0 {
                return Err(errno::ENOENT);
            }
            if dirfd as i32 == AT_FDCWD as i32 {
                return self.stat_at(AT_FDCWD as u64, &self.cwd.clone(), flags & !AT_EMPTY_PATH);
            }
            let o = self.fds.ofd(dirfd)?;
            let d = o.borrow();
            return self.fstat_ofd(&d);
        }
        match self.target(dirfd, path)? {
            Target::Fs(d, rel) => {
                // A trailing slash names a directory: it follows a last
                // link, and anything else there is ENOTDIR.
                let slash = path.ends_with('/');
                let f = if flags & AT_SYMLINK_NOFOLLOW != 0 && !slash {
                    api::AT_SYMLINK_NOFOLLOW
                } else {
                    0
                };
                let st = StatView::parse(&self.fs.stat(d, rel.as_bytes(), f)?);
                if slash && !st.is_dir() {
                    return Err(errno::ENOTDIR);
                }
                Ok(st)
            }
            Target::Virt(abs) => {
                if flags & AT_SYMLINK_NOFOLLOW != 0 {
                    let node = match self.vnode(&abs)? {
                        VNode::Ns(i) => VNode::Link(super::vfs::ns_link(i)),
                        n => n,
                    };
                    return Ok(self.vstat(&abs, &node));
                }
                let (p, node) = self.vresolve(&abs)?;
                if let VNode::Link(real) = node {
                    return self.stat_at(AT_FDCWD as u64, &real, 0);
                }
                Ok(self.vstat(&p, &node))
            }
        }
    }

    pub(super) fn stat_call(&mut self, rid: u64, dirfd: u64, path_at: u64, out: u64, flags: u64) -> Result<u64, i64> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800) != 0 {
            return Err(errno::EINVAL);
        }
        let path = self.read_cstr(rid, path_at, linuxabi::path::PATH_MAX - 1)?;
        let path = String::from_utf8(path).map_err(|_| errno::EINVAL)?;
        let s = self.stat_at(dirfd, &path, flags)?;
        self.write_mem(rid, out, &s.to_bytes())?;
        Ok(0)
    }

    pub(super) fn statx(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let flags = a[2];
        // AT_STATX_FORCE_SYNC and AT_STATX_DONT_SYNC (0x2000, 0x4000)
        // exclude each other.
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800 | 0x6000) != 0
            || flags & 0x6000 == 0x6000
            || a[3] & 0x8000_0000 != 0
        {
            return Err(errno::EINVAL);
        }
        let path = self.read_cstr(rid, a[1], linuxabi::path::PATH_MAX - 1)?;
        let path = String::from_utf8(path).map_err(|_| errno::EINVAL)?;
        let s = self.stat_at(a[0], &path, flags)?;
        self.write_mem(rid, a[4], &s.to_statx())?;
        Ok(0)
    }

    pub(super) fn fstat(&mut self, rid: u64, fd: u64, out: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let s = self.fstat_ofd(&o.borrow())?;
        self.write_mem(rid, out, &s.to_bytes())?;
        Ok(0)
    }

    /// access / faccessat: with the real ids unless AT_EACCESS.
    pub(super) fn access(&mut self, rid: u64, dirfd: u64, path_at: u64, mode: u64, flags: u64) -> Result<u64, i64> {
        if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(errno::EINVAL);
        }
        let path = self.read_path(rid, path_at)?;
        let s = self.stat_at(dirfd, &path, flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))?;
        if mode == 0 {
            return Ok(0);
        }
        if mode & 2 != 0 && self.on_read_only_mount(dirfd, &path) {
            return Err(errno::EROFS);
        }
        let (uid, gid) = if flags & AT_EACCESS != 0 {
            (self.cred.euid, self.cred.egid)
        } else {
            (self.cred.uid, self.cred.gid)
        };
        let ok = if uid == 0 {
            mode & 1 == 0 || s.is_dir() || s.mode & 0o111 != 0
        } else {
            let bits = if uid == s.uid {
                s.mode >> 6
            } else if gid == s.gid || self.cred.groups.contains(&s.gid) {
                s.mode >> 3
            } else {
                s.mode
            } & 7;
            bits as u64 & mode == mode
        };
        if !ok {
            return Err(errno::EACCES);
        }
        Ok(0)
    }

    // ---- directories ----

    pub(super) fn getdents64(&mut self, rid: u64, fd: u64, buf: u64, count: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let mut d = o.borrow_mut();
        match d.kind.clone() {
            Kind::File { fd: ffd, .. } => {
                let mut tmp = vec![0u8; (count as usize).min(32768)];
                let pos = self.pos_take(&d, None);
                let r = self.fs.readdir(ffd, pos, &mut tmp);
                let next = r.ok().and_then(|n| api::dirents(&tmp[..n]).last().map(|l| l.next));
                self.pos_put(&mut d, None, next);
                let n = r?;
                self.write_mem(rid, buf, &tmp[..n])?;
                Ok(n as u64)
            }
            Kind::VDir(list) => {
                let mut out = vec![0u8; (count as usize).min(32768)];
                let mut used = 0;
                let mut i = d.pos as usize;
                // "." and ".." first, then the entries.
                let total = list.len() + 2;
                while i < total {
                    let (name, t, ino): (&str, u8, u64) = match i {
                        0 => (".", 4, 1),
                        1 => ("..", 4, 1),
                        k => {
                            let e = &list[k - 2];
                            (e.0.as_str(), e.1, e.2)
                        }
                    };
                    match api::write_dirent(&mut out[used..], ino, i as u64 + 1, t, name.as_bytes()) {
                        Some(n) => used += n,
                        None if used == 0 => return Err(errno::EINVAL),
                        None => break,
                    }
                    i += 1;
                }
                d.pos = i as u64;
                self.write_mem(rid, buf, &out[..used])?;
                Ok(used as u64)
            }
            _ => Err(errno::ENOTDIR),
        }
    }

    pub(super) fn mkdirat(&mut self, rid: u64, dirfd: u64, path_at: u64, mode: u64) -> Result<u64, i64> {
        let path = self.read_path(rid, path_at)?;
        match self.target(dirfd, &path)? {
            Target::Virt(_) => Err(errno::EEXIST),
            Target::Fs(d, rel) => {
                let mut fields = [0u8; 8];
                fields[..4].copy_from_slice(&((mode as u32) & !self.umask & 0o7777).to_le_bytes());
                match self.fs.path_op(api::MKDIR, d, 0, &fields, &[rel.as_bytes()]) {
                    // The file server has no last name for the root (EBUSY);
                    // for mkdir it simply exists (`mkdir -p` relies on it).
                    Err(errno::EBUSY) => Err(errno::EEXIST),
                    r => {
                        if r.is_ok() {
                            self.note_entry((dirfd, &path), true, ino::IN_CREATE);
                        }
                        r.map(|_| 0)
                    }
                }
            }
        }
    }

    pub(super) fn unlinkat(&mut self, rid: u64, dirfd: u64, path_at: u64, flags: u64) -> Result<u64, i64> {
        if flags & !AT_REMOVEDIR != 0 {
            return Err(errno::EINVAL);
        }
        let path = self.read_path(rid, path_at)?;
        self.unlink_fs(dirfd, &path, flags)
    }

    fn unlink_fs(&mut self, dirfd: u64, path: &str, flags: u64) -> Result<u64, i64> {
        let before = self.note_stat((dirfd, path));
        let r = self.unlink_at(dirfd, path, flags);
        if let (Ok(_), Some(st)) = (r, before) {
            self.note_unlinked((dirfd, path), &st);
        }
        r
    }

    fn unlink_at(&mut self, dirfd: u64, path: &str, flags: u64) -> Result<u64, i64> {
        match self.target(dirfd, path)? {
            Target::Virt(_) => Err(errno::EPERM),
            Target::Fs(d, rel) => {
                if flags & AT_REMOVEDIR != 0 {
                    // The name as given: the target may be a whole path.
                    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                    if last == "." {
                        return Err(errno::EINVAL);
                    }
                    if last == ".." {
                        return Err(errno::ENOTEMPTY);
                    }
                    // A mount's root is a mount point in the file system
                    // above it, which no one removes while it is mounted.
                    if d & super::mounts::MOUNT_ROOT != 0 && rel.trim_matches('/').is_empty() {
                        return Err(errno::EBUSY);
                    }
                    return self.fs.path_op(api::RMDIR, d, 0, &[], &[rel.as_bytes()]).map(|_| 0);
                }
                // unlink of a directory: EISDIR, as Linux says.
                if let Ok(b) = self.fs.stat(d, rel.as_bytes(), api::AT_SYMLINK_NOFOLLOW)
                    && StatView::parse(&b).is_dir()
                {
                    return Err(errno::EISDIR);
                }
                self.fs.path_op(api::UNLINK, d, 0, &[], &[rel.as_bytes()]).map(|_| 0)
            }
        }
    }

    /// renameat2 and linkat: two paths.
    pub(super) fn two_paths(&mut self, rid: u64, a: [u64; 6], link: bool) -> Result<u64, i64> {
        let flags = a[4];
        if link && flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(errno::EINVAL);
        }
        // renameat2: NOREPLACE, EXCHANGE and WHITEOUT, which the file
        // server makes in the rename's request (as Linux's ext4 driver on
        // an ext2 disk does; its ext2 driver refuses the last two).
        let rflags = if link { 0 } else { linuxabi::rename::check(flags)? };
        let old = self.read_path_empty(rid, a[1], link && flags & AT_EMPTY_PATH != 0)?;
        let new = self.read_path(rid, a[3])?;
        // linkat of an open description (an unnamed file's first name):
        // the file server resolves its own number with AT_EMPTY_PATH.
        let source = if link {
            self.link_source(a[0], &old, flags)
        } else {
            None
        };
        let (od, orel) = match source {
            Some(fd) => (fd?, String::new()),
            None => match self.target(a[0], &old)? {
                Target::Fs(d, r) => (d, r),
                Target::Virt(_) => return Err(errno::EXDEV),
            },
        };
        let (nd, nrel) = match self.target(a[2], &new)? {
            Target::Fs(d, r) => (d, r),
            Target::Virt(_) => return Err(errno::EXDEV),
        };
        if !link && (linuxabi::path::basename(&orel) == "." || linuxabi::path::basename(&orel) == "..") {
            return Err(errno::EBUSY);
        }
        // The new name's mount is asked first (Linux's filename_create
        // takes write access to it before vfs_link looks at the file).
        if link && self.fs.mounted_with(nd, super::mounts::MS_RDONLY) {
            return Err(errno::EROFS);
        }
        if link
            && let Ok(b) = self.fs.stat(od, orel.as_bytes(), 0)
            && StatView::parse(&b).is_dir()
        {
            return Err(errno::EPERM);
        }
        let mut fields = [0u8; 8];
        fields[..4].copy_from_slice(&nd.to_le_bytes());
        fields[4..].copy_from_slice(&(orel.len() as u32).to_le_bytes());
        let f = if source.is_some() {
            api::AT_EMPTY_PATH
        } else if link && flags & AT_SYMLINK_FOLLOW != 0 {
            0x400
        } else {
            rflags
        };
        let entry = if link { api::LINK } else { api::RENAME };
        let (from, to) = ((a[0], old.as_str()), (a[2], new.as_str()));
        let (before, over) = (self.note_stat(from), self.note_stat(to));
        self.fs
            .path_op(entry, od, f, &fields, &[orel.as_bytes(), nrel.as_bytes()])?;
        if let Some(st) = before {
            if link {
                self.note_link(to, &st);
            } else if rflags & linuxabi::rename::RENAME_EXCHANGE != 0 {
                self.note_move(from, to, &st);
                if let Some(o) = over {
                    self.note_move(to, from, &o);
                }
            } else if !(over.is_some_and(|o| o.dev == st.dev && o.ino == st.ino)) {
                if let Some(o) = over {
                    self.note_unlinked(to, &o);
                }
                self.note_move(from, to, &st);
            }
        }
        Ok(0)
    }

    pub(super) fn symlinkat(&mut self, rid: u64, target_at: u64, dirfd: u64, path_at: u64) -> Result<u64, i64> {
        let target = self.read_path(rid, target_at)?;
        let path = self.read_path(rid, path_at)?;
        match self.target(dirfd, &path)? {
            Target::Virt(_) => Err(errno::EEXIST),
            Target::Fs(d, rel) => {
                let mut fields = [0u8; 8];
                fields[..4].copy_from_slice(&(target.len() as u32).to_le_bytes());
                self.fs
                    .path_op(api::SYMLINK, d, 0, &fields, &[target.as_bytes(), rel.as_bytes()])?;
                self.note_entry((dirfd, &path), false, ino::IN_CREATE);
                Ok(0)
            }
        }
    }

    pub(super) fn readlinkat(&mut self, rid: u64, dirfd: u64, path_at: u64, buf: u64, size: u64) -> Result<u64, i64> {
        if (size as i64) <= 0 {
            return Err(errno::EINVAL);
        }
        let path = self.read_cstr(rid, path_at, linuxabi::path::PATH_MAX - 1)?;
        // No path: the link the descriptor is (one opened O_PATH|O_NOFOLLOW).
        if path.is_empty() && dirfd as i32 != AT_FDCWD as i32 {
            let o = self.fds.ofd(dirfd)?;
            let target = match o.borrow().kind {
                Kind::File { fd, .. } => self.fs.readlink(fd, api::AT_EMPTY_PATH, b"")?,
                _ => return Err(errno::ENOENT),
            };
            let n = target.len().min(size as usize);
            self.write_mem(rid, buf, &target[..n])?;
            return Ok(n as u64);
        }
        if path.is_empty() {
            return Err(errno::ENOENT);
        }
        let path = String::from_utf8(path).map_err(|_| errno::EINVAL)?;
        let target = match self.target(dirfd, &path)? {
            Target::Fs(d, rel) => self.fs.readlink(d, 0, rel.as_bytes())?,
            Target::Virt(abs) => match self.vnode(&abs)? {
                VNode::Link(t) => t.into_bytes(),
                VNode::Ns(i) => super::vfs::ns_link(i).into_bytes(),
                _ => return Err(errno::EINVAL),
            },
        };
        let n = target.len().min(size as usize);
        self.write_mem(rid, buf, &target[..n])?;
        Ok(n as u64)
    }

    /// chmod, chown, utimes, truncate through SETATTR: of a path, or of a
    /// descriptor (`fd` given).
    pub(super) fn setattr_at(&mut self, dirfd: u64, path: &str, nofollow: bool, a: &SetAttr) -> Result<u64, i64> {
        match self.target(dirfd, path)? {
            Target::Virt(_) => Err(errno::EPERM),
            Target::Fs(d, rel) => {
                let f = if nofollow { api::AT_SYMLINK_NOFOLLOW } else { 0 };
                self.fs.setattr(d, f, a, rel.as_bytes())?;
                if self.watching.on
                    && let Ok(st) = self.stat_at(dirfd, path, if nofollow { 0x100 } else { 0 })
                {
                    self.note_path((dirfd, path), &st, attr_event(a));
                }
                Ok(0)
            }
        }
    }

    pub(super) fn setattr_fd(&mut self, fd: u64, a: &SetAttr) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        match d.kind {
            Kind::File { fd, .. } => {
                self.fs.setattr(fd, api::AT_EMPTY_PATH, a, b"")?;
                self.note_ofd(&d, attr_event(a));
                Ok(0)
            }
            Kind::Obj { .. } | Kind::KPipe { .. } => Ok(0),
            _ => Err(errno::EPERM),
        }
    }

    pub(super) fn ftruncate(&mut self, fd: u64, len: u64) -> Result<u64, i64> {
        if (len as i64) < 0 {
            return Err(errno::EINVAL);
        }
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        match d.kind {
            Kind::File { fd: ffd, .. } if d.writable() => {
                let size = StatView::parse(&self.fs.fstat(ffd)?).size as u64;
                drop(d);
                self.fsize_grow_ok(size, len)?;
                self.fs.truncate(ffd, len)?;
                self.note_ofd(&o.borrow(), ino::IN_MODIFY);
                Ok(0)
            }
            Kind::File { .. } => Err(errno::EINVAL),
            _ => Err(errno::EINVAL),
        }
    }

    /// posix_fadvise: advice is only taken (the file server reads what it
    /// is asked); a pipe is ESPIPE, an advice Linux does not know EINVAL.
    pub(super) fn fadvise(&mut self, fd: u64, advice: u64) -> Result<u64, i64> {
        const POSIX_FADV_NOREUSE: u64 = 5;
        let o = self.fds.ofd(fd)?;
        if matches!(o.borrow().kind, Kind::KPipe { .. } | Kind::Obj { .. })
            && self.fstat_ofd(&o.borrow())?.mode & 0o170000 == st::S_IFIFO
        {
            return Err(errno::ESPIPE);
        }
        if advice as u32 as u64 > POSIX_FADV_NOREUSE {
            return Err(errno::EINVAL);
        }
        Ok(0)
    }

    pub(super) fn fsync(&mut self, fd: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        match d.kind {
            Kind::File { fd, .. } => self.fs.fsync(fd).map(|_| 0),
            Kind::Loop(node) => self.loop_fsync(node),
            _ => Err(errno::EINVAL),
        }
    }

    pub(super) fn statfs_of(&mut self, rid: u64, out: u64) -> Result<u64, i64> {
        let b = self.fs.statfs()?;
        self.write_mem(rid, out, &b)?;
        Ok(0)
    }

    // ---- working directory ----

    pub(super) fn chdir_to(&mut self, dirfd: u64, path: &str) -> Result<u64, i64> {
        let abs = self.abs_of(dirfd, path);
        match self.target(dirfd, path)? {
            Target::Virt(v) => {
                let (p, node) = self.vresolve(&v)?;
                if !matches!(node, VNode::Dir(_)) {
                    return Err(errno::ENOTDIR);
                }
                if let Some(fd) = self.cwd_fd.take() {
                    self.fs.close(fd);
                }
                self.cwd = p;
            }
            Target::Fs(d, rel) => {
                let fd = self.fs.open(d, rel.as_bytes(), fdt::O_DIRECTORY, 0)?;
                self.enter(fd, self.real_path(&abs))?;
            }
        }
        Ok(0)
    }

    /// The working directory becomes the directory open as `fd`, at
    /// system path `abs`, if the caller may search it.
    fn enter(&mut self, fd: u32, abs: String) -> Result<(), i64> {
        let s = StatView::parse(&self.fs.fstat(fd)?);
        if !self.may_search(&s) {
            self.fs.close(fd);
            return Err(errno::EACCES);
        }
        if let Some(old) = self.cwd_fd.replace(fd) {
            self.fs.close(old);
        }
        self.cwd = abs;
        Ok(())
    }

    /// `abs` with each symbolic link on the way replaced by what it names:
    /// a working directory is where the links lead, not the way there
    /// (Linux's getcwd). One lookup per name, but none for those of the
    /// working directory when `abs` lies below it: that one is where its
    /// links led already (a CGI's chdir into its script's directory from
    /// the server's document root looks at one name, not at every one).
    pub(super) fn physical(&self, abs: &str) -> String {
        // (Inside a root, a directory entered by descriptor keeps the
        // name it was opened by: not known to be where links lead.)
        let below = (self.root.is_none() && self.cwd != "/")
            .then(|| abs.strip_prefix(self.cwd.as_str()))
            .flatten()
            .filter(|tail| tail.is_empty() || tail.starts_with('/'));
        let (mut out, abs) = match below {
            Some(tail) => (self.cwd.clone(), tail),
            None => (String::from("/"), abs),
        };
        let mut rest: Vec<String> = abs
            .split('/')
            .filter(|c| !c.is_empty())
            .rev()
            .map(String::from)
            .collect();
        let mut links = 0;
        while let Some(c) = rest.pop() {
            let next = linuxabi::path::absolute(&out, &c);
            let link = match self.target(AT_FDCWD as u64, &next) {
                Ok(Target::Fs(d, rel)) => self
                    .fs
                    .stat(d, rel.as_bytes(), api::AT_SYMLINK_NOFOLLOW)
                    .is_ok_and(|b| StatView::parse(&b).kind() == st::S_IFLNK)
                    .then(|| self.fs.readlink(d, 0, rel.as_bytes()).ok())
                    .flatten(),
                _ => None,
            };
            match link {
                Some(t) if links < 40 => {
                    links += 1;
                    let t = String::from_utf8_lossy(&t).into_owned();
                    if t.starts_with('/') {
                        out = String::from("/");
                    }
                    rest.extend(t.split('/').filter(|c| !c.is_empty()).rev().map(String::from));
                }
                _ => out = next,
            }
        }
        out
    }

    pub(super) fn fchdir(&mut self, fd: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let (path, kind) = {
            let d = o.borrow();
            (d.path.clone(), d.kind.clone())
        };
        match kind {
            Kind::File { fd, .. } => {
                let s = StatView::parse(&self.fs.fstat(fd)?);
                if !s.is_dir() {
                    return Err(errno::ENOTDIR);
                }
                if self.root.is_some() {
                    // The directory itself, wherever it is (one outside the
                    // root stays usable, as on Linux): not its name.
                    let new = self.fs.open(fd, b".", fdt::O_DIRECTORY, 0)?;
                    return self.enter(new, path).map(|_| 0);
                }
                self.chdir_to(AT_FDCWD as u64, &path)
            }
            Kind::VDir(_) => {
                self.cwd = path;
                Ok(0)
            }
            _ => Err(errno::ENOTDIR),
        }
    }

    pub(super) fn getcwd(&mut self, rid: u64, buf: u64, size: u64) -> Result<u64, i64> {
        if let Some(fd) = self.cwd_fd
            && let Ok(b) = self.fs.fstat(fd)
            && StatView::parse(&b).nlink == 0
        {
            return Err(errno::ENOENT);
        }
        let mut p = self.cwd_text().into_bytes();
        p.push(0);
        if size < p.len() as u64 {
            return Err(errno::ERANGE);
        }
        self.write_mem(rid, buf, &p)?;
        Ok(p.len() as u64)
    }

    // ---- descriptors ----

    pub(super) fn dup3(&mut self, old: u64, new: u64, flags: u64, dup2: bool) -> Result<u64, i64> {
        if flags & !(fdt::O_CLOEXEC as u64) != 0 {
            return Err(errno::EINVAL);
        }
        let o = self.fds.ofd(old)?;
        if old == new {
            return if dup2 { Ok(new) } else { Err(errno::EINVAL) };
        }
        if new as usize >= self.limit() {
            return Err(errno::EBADF);
        }
        if let Some(prev) = self.fds.set(new as usize, o, flags != 0) {
            self.forget_locks(&prev.ofd.borrow());
            if !self.fds.holds(&prev.ofd) && !self.fmap_holds(&prev.ofd) {
                self.release(&prev.ofd);
            }
        }
        Ok(new)
    }

    pub(super) fn fcntl(&mut self, rid: u64, fd: u64, cmd: u64, arg: u64) -> Result<u64, i64> {
        const F_DUPFD: u64 = 0;
        const F_GETFD: u64 = 1;
        const F_SETFD: u64 = 2;
        const F_GETFL: u64 = 3;
        const F_SETFL: u64 = 4;
        const F_SETOWN: u64 = 8;
        const F_GETOWN: u64 = 9;
        const F_SETSIG: u64 = 10;
        const F_GETSIG: u64 = 11;
        const F_SETOWN_EX: u64 = 15;
        const F_GETOWN_EX: u64 = 16;
        const F_SETLEASE: u64 = 1024;
        const F_GETLEASE: u64 = 1025;
        const F_DUPFD_CLOEXEC: u64 = 1030;
        const F_SETPIPE_SZ: u64 = 1031;
        const F_GETPIPE_SZ: u64 = 1032;
        let slot = self.fds.get(fd)?.clone();
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if arg as usize >= self.limit() {
                    return Err(errno::EINVAL);
                }
                let n = self.fds.free_from(arg as usize, self.limit())?;
                self.fds.set(n, slot.ofd, cmd == F_DUPFD_CLOEXEC);
                Ok(n as u64)
            }
            F_GETFD => Ok(slot.cloexec as u64),
            F_SETFD => {
                self.fds.set(fd as usize, slot.ofd, arg & 1 != 0);
                Ok(0)
            }
            // open() on x86_64 adds O_LARGEFILE; pipe() does not.
            F_GETFL => {
                let d = slot.ofd.borrow();
                let pipe = matches!(d.kind, Kind::Obj { kind, .. } if kind != obj::TTY)
                    || matches!(
                        d.kind,
                        Kind::Socket { .. }
                            | Kind::Unix { .. }
                            | Kind::UnixSock { .. }
                            | Kind::Epoll(_)
                            | Kind::SignalFd(_)
                    );
                if matches!(d.kind, Kind::KPipe { .. } | Kind::KUnix { .. }) {
                    drop(d);
                    return Ok(self.kpipe_flags(&slot.ofd) as u64);
                }
                let large = if pipe { 0 } else { fdt::O_LARGEFILE };
                Ok((self.flags_of(&d) | large) as u64)
            }
            F_SETFL => {
                let mut d = slot.ofd.borrow_mut();
                if arg as u32 & fdt::O_NOATIME != 0 && d.flags & fdt::O_NOATIME == 0 {
                    let owner = self.fstat_ofd(&d).map_or(0, |st| st.uid);
                    self.may_noatime(owner)?;
                }
                d.flags = (d.flags & !fdt::SETFL_MASK) | (arg as u32 & fdt::SETFL_MASK);
                if let Some(id) = d.object() {
                    self.ctl(&[ctl::OBJ_SETFL, id, (d.flags & fdt::SETFL_MASK) as u64]);
                }
                if matches!(d.kind, Kind::KPipe { .. } | Kind::KUnix { .. }) {
                    let flags = d.flags;
                    drop(d);
                    self.kpipe_setfl(&slot.ofd, flags);
                }
                Ok(0)
            }
            F_SETOWN => self.f_setown(&slot.ofd, arg),
            F_GETOWN => Ok(self.f_getown(&slot.ofd)),
            F_SETSIG => self.f_setsig(&slot.ofd, arg),
            F_GETSIG => Ok(self.f_getsig(&slot.ofd)),
            F_SETOWN_EX => self.f_setown_ex(rid, &slot.ofd, arg),
            F_GETOWN_EX => self.f_getown_ex(rid, &slot.ofd, arg),
            F_SETLEASE => self.set_lease(&slot.ofd, arg),
            F_GETLEASE => Ok(slot.ofd.borrow().lease.unwrap_or(super::lease::F_UNLCK) as u64),
            F_GETPIPE_SZ | F_SETPIPE_SZ if matches!(slot.ofd.borrow().kind, Kind::KPipe { .. }) => {
                // Linux reads F_SETPIPE_SZ's argument as an unsigned int.
                let size = (cmd == F_SETPIPE_SZ).then_some(arg as u32 as u64);
                self.kpipe_size(&slot.ofd, size)
            }
            linuxabi::seals::F_GET_SEALS => self.file_seals(fd, None),
            linuxabi::seals::F_ADD_SEALS => self.file_seals(fd, Some(arg)),
            F_GETPIPE_SZ | F_SETPIPE_SZ => {
                let Some(id) = slot.ofd.borrow().object() else {
                    return Err(errno::EBADF);
                };
                // Linux reads F_SETPIPE_SZ's argument as an unsigned int.
                let size = if cmd == F_SETPIPE_SZ {
                    let now = self.ctl1(&[ctl::PIPE_SIZE, id, u64::MAX])?;
                    self.pipe_size_allowed(now, arg as u32 as u64)?;
                    arg as u32 as u64
                } else {
                    u64::MAX
                };
                self.ctl1(&[ctl::PIPE_SIZE, id, size])
            }
            _ => Err(errno::EINVAL),
        }
    }

    pub(super) fn ioctl(&mut self, rid: u64, fd: u64, req: u64, arg: u64) -> Out {
        const FIONBIO: u64 = 0x5421;
        const FIOCLEX: u64 = 0x5451;
        const FIONCLEX: u64 = 0x5450;
        let slot = match self.fds.get(fd) {
            Ok(s) => s.clone(),
            Err(e) => return ret(Err(e)),
        };
        match req {
            FIOCLEX | FIONCLEX => {
                self.fds.set(fd as usize, slot.ofd, req == FIOCLEX);
                return Out::Ret(0);
            }
            FIONBIO => {
                let on = match self.read_mem(rid, arg, 4) {
                    Ok(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) != 0,
                    Err(e) => return ret(Err(e)),
                };
                let f = slot.ofd.borrow().flags;
                let nf = if on { f | fdt::O_NONBLOCK } else { f & !fdt::O_NONBLOCK };
                return ret(self.fcntl(rid, fd, 4, nf as u64));
            }
            _ => {}
        }
        let kind = slot.ofd.borrow().kind.clone();
        let ns = super::vfs::ns_of(&slot.ofd.borrow().path);
        match kind {
            Kind::Mem(_) if let Some(i) = ns => ret(self.ns_ioctl(rid, i, req, arg)),
            Kind::Obj { kind: obj::TTY, .. } => ret(self.tty_ioctl(rid, req, arg)),
            Kind::KPipe { .. } | Kind::KUnix { .. } if req == tio::FIONREAD => {
                let held = match self.kpipe_held(&slot.ofd) {
                    Ok(h) => h,
                    Err(e) => return ret(Err(e)),
                };
                ret(self.write_u32(rid, arg, held as u32).map(|_| 0))
            }
            Kind::Obj { id, .. } if req == tio::FIONREAD => {
                let avail = word(&self.ctl(&[ctl::OBJ_INFO, id]), 2);
                ret(self.write_u32(rid, arg, avail as u32).map(|_| 0))
            }
            Kind::File { fd: ffd, .. } if req == tio::FIONREAD => {
                let size = self.fs.fstat(ffd).map(|b| StatView::parse(&b).size as u64).unwrap_or(0);
                let pos = self.pos(&slot.ofd.borrow());
                ret(self.write_u32(rid, arg, size.saturating_sub(pos) as u32).map(|_| 0))
            }
            Kind::Loop(node) => {
                let flags = slot.ofd.borrow().flags;
                ret(self.loop_ioctl(rid, node, flags, req, arg))
            }
            _ => ret(Err(errno::ENOTTY)),
        }
    }

    /// Whether the process may change the terminal (`write`: write to it)
    /// now, as Linux's tty_check_change: from a background group, SIGTTOU
    /// for the group and the call restarts, unless the signal is ignored
    /// or blocked (then it goes ahead); EIO if the group is orphaned;
    /// ENOTTY if the terminal is not the process's.
    fn tty_may_change(&mut self, write: bool) -> Result<(), i64> {
        let c = self.ctl(&[ctl::TTY_CHECK, self.pid as u64, write as u64]);
        let v = word(&c, 0);
        let ignored =
            self.sig.mask & sig::bit(sig::SIGTTOU) != 0 || self.sig.action(sig::SIGTTOU).handler == sig::SIG_IGN;
        match errno::of(v) {
            Some(errno::EIO) if ignored => Ok(()),
            Some(e) => Err(e),
            None if v == sig::SIGTTOU as u64 && !ignored => {
                let pg = self.ctl1(&[ctl::GETPGID, self.pid as u64, 0]).unwrap_or(0);
                let _ = self.send(-(pg as i64), sig::SIGTTOU as u64, 0x80, 0);
                Err(errno::ERESTARTSYS)
            }
            None => Ok(()),
        }
    }

    fn tty_ioctl(&mut self, rid: u64, req: u64, arg: u64) -> Result<u64, i64> {
        let changes = matches!(
            req,
            tio::TCSETS | tio::TCSETSW | tio::TCSETSF | tio::TIOCSPGRP | tio::TCFLSH
        );
        if changes {
            match self.tty_may_change(false) {
                // Not its terminal: only tcsetpgrp needs it to be (the
                // shared server answers the others).
                Err(errno::ENOTTY) if req != tio::TIOCSPGRP => {}
                // tcsetpgrp from an orphaned background group (Linux).
                Err(errno::EIO) if req == tio::TIOCSPGRP => return Err(errno::ENOTTY),
                Err(e) => return Err(e),
                Ok(()) => {}
            }
        }
        let mut m = vec![ctl::TTY_IOCTL, self.pid as u64, req];
        match req {
            tio::TCSETS | tio::TCSETSW | tio::TCSETSF => {
                let mut b = self.read_mem(rid, arg, tio::Termios::LEN)?;
                b.resize(40, 0);
                m.extend(proto::words(&b));
            }
            tio::TIOCSWINSZ => {
                let b = self.read_mem(rid, arg, 8)?;
                m.push(st::u64_at(&b, 0));
            }
            tio::TIOCSPGRP => {
                let b = self.read_mem(rid, arg, 4)?;
                m.push(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64);
            }
            _ => m.push(arg),
        }
        let r = self.ctl(&m);
        let v = word(&r, 0);
        if let Some(e) = errno::of(v) {
            return Err(e);
        }
        match req {
            tio::TIOCSWINSZ => {
                if word(&r, 1) != 0 {
                    self.post(linuxabi::frame::SigInfo {
                        signo: sig::SIGWINCH,
                        code: 0x80,
                        ..Default::default()
                    });
                }
                Ok(0)
            }
            tio::TCGETS => {
                let b = proto::bytes(&r[1..]);
                self.write_mem(rid, arg, &b[..tio::Termios::LEN])?;
                Ok(0)
            }
            tio::TIOCGWINSZ => {
                self.write_mem(rid, arg, &word(&r, 1).to_le_bytes())?;
                Ok(0)
            }
            tio::TIOCGPGRP | tio::TIOCGSID => {
                self.write_u32(rid, arg, v as u32)?;
                Ok(0)
            }
            tio::FIONREAD | tio::TIOCOUTQ => {
                self.write_u32(rid, arg, word(&r, 1) as u32)?;
                Ok(0)
            }
            _ => Ok(v),
        }
    }
}

/// inotify's event of a change of attributes: a new size is IN_MODIFY.
fn attr_event(a: &SetAttr) -> u32 {
    if a.valid & SetAttr::SIZE != 0 {
        ino::IN_MODIFY
    } else {
        ino::IN_ATTRIB
    }
}
