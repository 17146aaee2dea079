//! Unnamed files (Linux's `O_TMPFILE`): open of a directory with
//! `O_TMPFILE` makes a regular file in its file system that no entry
//! names (the file server's `OPEN_TMPFILE`), freed when the last
//! descriptor of it goes (the file server's last close of it: a process
//! that dies closes it too). Without `O_EXCL`, `linkat` gives it a name,
//! through the descriptor itself (`AT_EMPTY_PATH`) or its
//! `/proc/self/fd` link followed (`AT_SYMLINK_FOLLOW`).

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd, OfdRef};
use super::files::{AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_FOLLOW, Target};
use super::vfs::VNode;
use alloc::format;
use alloc::string::String;
use linuxabi::errno;
use linuxabi::structs::StatView;
use tessera_api::fs as api;

/// The flags `O_TMPFILE` must come with exactly (Linux's
/// `O_TMPFILE_MASK`): its bit and `O_DIRECTORY`, not `O_CREAT`.
const MASK: u32 = fdt::O_TMPFILE | fdt::O_CREAT;

impl Sup {
    /// An open with `O_TMPFILE` in `flags`: Linux's checks of the flags
    /// (`build_open_flags`: EINVAL), then the directory's (ENOENT,
    /// ENOTDIR, EACCES; EOPNOTSUPP on a file system served here).
    pub(super) fn open_unnamed(&mut self, dirfd: u64, path: &str, flags: u32, mode: u32) -> Result<OfdRef, i64> {
        if flags & MASK != fdt::O_TMPFILE || flags & fdt::O_ACCMODE == fdt::O_RDONLY || flags & fdt::O_PATH != 0 {
            return Err(errno::EINVAL);
        }
        let (d, rel, dir) = match self.target(dirfd, path)? {
            Target::Fs(d, rel) => {
                let dir = self.unnamed_dir_path(dirfd, path);
                (d, rel, dir)
            }
            Target::Virt(abs) => {
                let (_, node) = self.vresolve(&abs)?;
                return match node {
                    VNode::Link(real) => self.open_unnamed(AT_FDCWD as u64, &real, flags, mode),
                    VNode::Dir(_) => Err(errno::EOPNOTSUPP),
                    _ => Err(errno::ENOTDIR),
                };
            }
        };
        let mut fsflags = flags & (fdt::O_ACCMODE | fdt::O_EXCL | fdt::O_APPEND | fdt::O_NOFOLLOW);
        if flags & fdt::O_ACCMODE == 3 {
            fsflags = (fsflags & !3) | fdt::O_RDWR;
        }
        let (fd, cache) = self
            .fs
            .open_unnamed(d, rel.as_bytes(), fsflags, mode & !self.umask & 0o7777)?;
        // Its /proc/self/fd link reads as Linux's: the directory, then
        // "#inode (deleted)".
        let ino = self.fs.fstat(fd).map(|b| StatView::parse(&b).ino).unwrap_or(0);
        let sep = if dir.ends_with('/') { "" } else { "/" };
        let keep =
            flags & !(fdt::O_CLOEXEC | fdt::O_CREAT | fdt::O_EXCL | fdt::O_TRUNC | fdt::O_NOCTTY | fdt::O_DIRECTORY);
        let o = Ofd::new(
            Kind::File { fd, dir: false },
            keep,
            format!("{dir}{sep}#{ino} (deleted)"),
        );
        if flags & fdt::O_DIRECT == 0 {
            o.borrow_mut().cache = cache;
        }
        Ok(o)
    }

    fn unnamed_dir_path(&self, dirfd: u64, path: &str) -> String {
        let base = if path.starts_with('/') {
            String::from("/")
        } else if dirfd as i64 == AT_FDCWD || dirfd as i32 == AT_FDCWD as i32 {
            self.cwd.clone()
        } else {
            self.fds.ofd(dirfd).map(|o| o.borrow().path.clone()).unwrap_or_default()
        };
        linuxabi::path::absolute(&base, path)
    }

    /// The file `linkat` names when it names an open description rather
    /// than a path: the descriptor itself (an empty path with
    /// `AT_EMPTY_PATH`) or one of this process's `/proc/self/fd` links
    /// followed. `None`: a path like any other. The file server's number
    /// of the file, or the error Linux gives (a directory EPERM, a
    /// description of no file system ext2 links in EXDEV; `AT_EMPTY_PATH`
    /// without CAP_DAC_READ_SEARCH ENOENT).
    pub(super) fn link_source(&self, dirfd: u64, path: &str, flags: u64) -> Option<Result<u32, i64>> {
        let fd = if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
            if !self.cred.caps.has(linuxabi::caps::CAP_DAC_READ_SEARCH) {
                return Some(Err(errno::ENOENT));
            }
            if dirfd as i64 == AT_FDCWD || dirfd as i32 == AT_FDCWD as i32 {
                return Some(Err(errno::EPERM));
            }
            dirfd
        } else if flags & AT_SYMLINK_FOLLOW != 0 {
            match self.target(dirfd, path) {
                Ok(Target::Virt(abs)) => self.own_fd_link(&abs)?,
                _ => return None,
            }
        } else {
            return None;
        };
        Some(self.fds.ofd(fd).and_then(|o| match o.borrow().kind {
            Kind::File { dir: true, .. } | Kind::VDir(_) => Err(errno::EPERM),
            Kind::File { fd, .. } => Ok(fd),
            _ => Err(errno::EXDEV),
        }))
    }

    /// An open of one of this process's `/proc/self/fd` links to a file
    /// no name leads to (an unnamed file, a memfd): the same file again,
    /// opened by its handle, as Linux's link opens the inode itself.
    /// `None`: any other path, opened as before.
    pub(super) fn reopen_unnamed(&mut self, abs: &str, flags: u32) -> Option<Result<OfdRef, i64>> {
        let n = self.own_fd_link(abs)?;
        let o = self.fds.ofd(n).ok()?;
        let (ffd, path) = {
            let d = o.borrow();
            match d.kind {
                Kind::File { fd, dir: false } if d.path.ends_with(" (deleted)") => (fd, d.path.clone()),
                _ => return None,
            }
        };
        if flags & fdt::O_PATH != 0 {
            return None;
        }
        let mut fsflags = flags & (fdt::O_ACCMODE | fdt::O_TRUNC | fdt::O_APPEND);
        if flags & fdt::O_ACCMODE == 3 {
            fsflags = (fsflags & !3) | fdt::O_RDWR;
        }
        let reopened = self
            .fs
            .handle(ffd, api::AT_EMPTY_PATH, b"")
            .and_then(|(ino, generation, _)| self.fs.open_handle(ffd, fsflags, ino, generation));
        Some(reopened.map(|(fd, cache)| {
            let keep = flags & !(fdt::O_CLOEXEC | fdt::O_CREAT | fdt::O_EXCL | fdt::O_TRUNC | fdt::O_NOCTTY);
            let o = Ofd::new(Kind::File { fd, dir: false }, keep, path);
            if flags & fdt::O_DIRECT == 0 {
                o.borrow_mut().cache = cache;
            }
            o
        }))
    }

    /// The descriptor number a `/proc/self/fd/N` (or `/proc/PID/fd/N` of
    /// this process, or `/dev/fd/N`) path names.
    fn own_fd_link(&self, abs: &str) -> Option<u64> {
        let rest = abs.strip_prefix("/dev/fd/").or_else(|| {
            let (who, rest) = abs.strip_prefix("/proc/")?.split_once('/')?;
            (who == "self" || who.parse::<u64>().ok() == Some(self.pid as u64))
                .then_some(rest)?
                .strip_prefix("fd/")
        })?;
        rest.parse().ok()
    }
}
