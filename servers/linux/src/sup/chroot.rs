//! The root directory (Linux's `chroot(2)`): a process's own `/`.
//!
//! Two places resolve a process's paths, so both know its root. The
//! supervisor makes paths absolute by their text (for the mount table
//! and for the paths it keeps: the working directory, each open
//! directory's), with `linuxabi::path::absolute_in`: an absolute name
//! starts at the root and `..` stops there. The system's file server
//! resolves what the names lead to, symbolic links included: the
//! supervisor gives it the root as an open directory (`SET_ROOT`), and
//! from then on the server starts the client's absolute names, `AT_FDCWD`
//! and absolute link targets there and keeps `..` there. The paths the
//! supervisor keeps stay the system's (a working directory may be
//! outside the root, as on Linux); the process sees them through its
//! root (getcwd; "(unreachable)" for one outside).
//!
//! The root is per process, inherited across fork (the child's
//! supervisor gets its own number for the directory and tells the file
//! server) and kept across exec. A root on a mounted file system, or in
//! the trees the supervisor serves itself (`/proc`, `/dev`), is refused
//! with EINVAL: their servers do not confine names. Inside a root those
//! trees are not served (as on Linux, where they are not there unless
//! mounted inside it).

use super::Sup;
use super::files::{AT_FDCWD, Target};
use super::fs::ROOT;
use super::vfs::VNode;
use alloc::format;
use alloc::string::String;
use linuxabi::errno;
use linuxabi::path;
use linuxabi::structs::StatView;

/// A process's root directory other than the system's.
pub struct Root {
    /// Its absolute path from the system's root (physical: no links).
    pub path: String,
    /// The system file server's number for it, held open.
    pub fd: u32,
}

/// A fork child's word for "no root of its own" (and for a number that
/// could not be shared).
const NONE: u64 = u64::MAX;
/// A root whose directory the file server does not hold for this client.
const LOST: u32 = u32::MAX;

impl Sup {
    /// `path` (from directory path `base`) made absolute and clean as this
    /// process's names go: from its root when absolute, `..` stopping at
    /// the root.
    pub(super) fn lexical(&self, base: &str, p: &str) -> String {
        match &self.root {
            None => path::absolute(base, p),
            Some(r) => path::absolute_in(&r.path, base, p),
        }
    }

    /// A system path as this process names it (None: outside its root).
    pub(super) fn seen(&self, abs: &str) -> Option<String> {
        match &self.root {
            None => Some(String::from(abs)),
            Some(r) => path::seen_from(&r.path, abs),
        }
    }

    /// Whether the supervisor's own trees (`/proc`, `/dev`, ...) are
    /// there: not inside a root.
    pub(super) fn serves_virtual(&self) -> bool {
        self.root.is_none()
    }

    /// A system path from one this process names (absolute, clean).
    fn system_path(&self, named: &str) -> String {
        match &self.root {
            Some(r) if named != "/" => format!("{}{named}", r.path),
            Some(r) => r.path.clone(),
            None => String::from(named),
        }
    }

    /// `abs` (a system path) with each symbolic link on the way replaced
    /// by what it names, as this process's root makes them lead; a path
    /// outside the root stays as it is.
    pub(super) fn real_path(&self, abs: &str) -> String {
        match self.seen(abs) {
            Some(named) => self.system_path(&self.physical(&named)),
            None => String::from(abs),
        }
    }

    /// getcwd's text: the working directory seen from the root, or
    /// "(unreachable)" and its system path when it is outside (as Linux:
    /// C libraries take a path not starting with `/` as ENOENT).
    pub(super) fn cwd_text(&self) -> String {
        self.seen(&self.cwd)
            .unwrap_or_else(|| format!("(unreachable){}", self.cwd))
    }

    /// Whether the caller may search a directory of attributes `s`.
    pub(super) fn may_search(&self, s: &StatView) -> bool {
        if self.cred.euid == 0 {
            return true;
        }
        let bits = if s.uid == self.cred.euid {
            s.mode >> 6
        } else if self.in_group(s.gid) {
            s.mode >> 3
        } else {
            s.mode
        };
        bits & 1 != 0
    }

    /// chroot(path): Linux's order: the name is looked up (ENOENT,
    /// ENOTDIR, ELOOP, ENAMETOOLONG, EACCES on the way), the directory
    /// must be searchable (EACCES), then CAP_SYS_CHROOT (EPERM). The
    /// working directory stays where it is.
    pub(super) fn chroot(&mut self, rid: u64, at: u64) -> Result<u64, i64> {
        let p = self.read_path(rid, at)?;
        let abs = self.lexical(&self.cwd.clone(), &p);
        let (d, rel) = match self.target(AT_FDCWD as u64, &p)? {
            Target::Fs(d, rel) => (d, rel),
            Target::Virt(v) => {
                return match self.vresolve(&v)?.1 {
                    VNode::Dir(_) => Err(errno::EINVAL),
                    _ => Err(errno::ENOTDIR),
                };
            }
        };
        let o_path = linuxabi::fcntl::O_PATH | super::fdtable::O_DIRECTORY;
        let fd = self.fs.open(d, rel.as_bytes(), o_path, 0)?;
        let verdict = self.fs.fstat(fd).map(|b| StatView::parse(&b)).and_then(|s| {
            if !self.may_search(&s) {
                Err(errno::EACCES)
            } else if !self.cred.caps.has(linuxabi::caps::CAP_SYS_CHROOT) {
                Err(errno::EPERM)
            } else if self.fs.mounts.route(0, fd).2 != 0 {
                Err(errno::EINVAL)
            } else {
                Ok(())
            }
        });
        if let Err(e) = verdict {
            self.fs.close(fd);
            return Err(e);
        }
        // Relative names go on from the working directory, which may
        // now be outside the root: the server needs its number, not its
        // path, from here on.
        if self.cwd_fd.is_none() && self.root.is_none() {
            self.cwd_fd = self.fs.open(ROOT, self.cwd.as_bytes(), o_path, 0).ok();
        }
        let new = self.real_path(&abs);
        let set = if new == "/" {
            self.fs.set_root(ROOT)
        } else {
            self.fs.set_root(fd)
        };
        if let Err(e) = set {
            self.fs.close(fd);
            return Err(e);
        }
        let old = if new == "/" {
            self.fs.close(fd);
            self.root.take()
        } else {
            self.root.replace(Root { path: new, fd })
        };
        if let Some(old) = old.filter(|o| o.fd != LOST) {
            self.fs.close(old.fd);
        }
        Ok(0)
    }

    /// Back to the system's root (the process ended; the supervisor goes
    /// back to the pool, and its file server client with it).
    pub(super) fn leave_root(&mut self) {
        if let Some(r) = self.root.take() {
            let _ = self.fs.set_root(ROOT);
            if r.fd != LOST {
                self.fs.close(r.fd);
            }
        }
    }

    /// The root for a forked child's supervisor `child_sup`: its path and
    /// the child's number for it.
    pub(super) fn root_for_child(&self, child_sup: u64) -> (String, u64) {
        match &self.root {
            None => (String::new(), NONE),
            Some(r) => (
                r.path.clone(),
                self.fs.share(r.fd, child_sup).map_or(NONE, |f| f as u64),
            ),
        }
    }

    /// A forked child takes its parent's root. A root that could not be
    /// handed over (the file server's numbers exhausted) is no reason to
    /// let the child out of it: its names then lead nowhere (`lost`).
    pub(super) fn adopt_root(&mut self, path: String, fd: u64) {
        if path.is_empty() {
            return;
        }
        let fd = match u32::try_from(fd) {
            Ok(fd) if self.fs.set_root(fd).is_ok() => fd,
            _ => LOST,
        };
        self.root = Some(Root { path, fd });
    }

    /// ENOENT for every name of a process whose root was lost.
    pub(super) fn root_lost(&self) -> Result<(), i64> {
        match &self.root {
            Some(r) if r.fd == LOST => Err(errno::ENOENT),
            _ => Ok(()),
        }
    }
}
