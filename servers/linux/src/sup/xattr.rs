//! The twelve extended-attribute calls (`setxattr`, `getxattr`,
//! `listxattr`, `removexattr`, each by path, by path without following a
//! final link (`l*`) and by descriptor (`f*`)): the arguments checked as
//! Linux's `fs/xattr.c` checks them, in its order (the file first, then
//! the flags, the name, the size, the value), then one `XATTR` request
//! to the file server, which applies the permission rules. The files the
//! supervisor makes itself (`/dev`, `/proc`, `/sys`, pipes, sockets)
//! hold no attributes: an empty list, and `EOPNOTSUPP` once Linux's
//! permission rules pass (`user.` is for regular files and directories
//! only: EPERM to set, ENODATA to read on the others).

use super::Sup;
use super::fdtable::Kind;
use super::files::{AT_FDCWD, Target};
use super::vfs::VNode;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::fcntl::O_PATH;
use tessera_api::fs as api;

/// Which file a call names.
#[derive(Clone, Copy)]
pub enum On {
    /// A path (its address), following a final symbolic link or not.
    Path {
        at: u64,
        follow: bool,
    },
    Fd(u64),
}

/// The longest name Linux takes (`XATTR_NAME_MAX`).
const NAME_MAX: usize = 255;

/// A file the call reaches: the file server's (file or directory
/// number, flags of the request, path) or one of the supervisor's own,
/// which is a regular file or directory or not (`special`).
enum Object {
    Served(u32, u32, Vec<u8>),
    Own { special: bool },
}

impl Sup {
    fn xattr_object(&mut self, rid: u64, on: On) -> Result<Object, i64> {
        match on {
            On::Path { at, follow } => {
                let path = self.read_path(rid, at)?;
                match self.target(AT_FDCWD as u64, &path)? {
                    Target::Virt(abs) => {
                        let special = match self.vnode(&abs)? {
                            VNode::Dev(..) => true,
                            VNode::Link(_) => !follow,
                            VNode::Dir(_) | VNode::Mem(_) | VNode::Ns(_) => false,
                        };
                        Ok(Object::Own { special })
                    }
                    Target::Fs(d, rel) => {
                        let flags = if follow { 0 } else { api::AT_SYMLINK_NOFOLLOW };
                        Ok(Object::Served(d, flags, rel.into_bytes()))
                    }
                }
            }
            On::Fd(fd) => {
                let o = self.fds.ofd(fd)?;
                let d = o.borrow();
                // An O_PATH descriptor names a file without opening it.
                if d.flags & O_PATH != 0 {
                    return Err(errno::EBADF);
                }
                match d.kind {
                    Kind::File { fd, .. } => Ok(Object::Served(fd, api::AT_EMPTY_PATH, Vec::new())),
                    Kind::Mem(_) | Kind::VDir(_) => Ok(Object::Own { special: false }),
                    _ => Ok(Object::Own { special: true }),
                }
            }
        }
    }

    /// An argument's error `e`, or the path's own if it names no file:
    /// Linux looks the path up before it reads the other arguments (the
    /// file server looks it up only with the request).
    fn path_first(&self, obj: &Object, e: i64) -> i64 {
        match obj {
            Object::Served(d, f, path) if !path.is_empty() => match self.fs.stat(*d, path, *f) {
                Err(pe) => pe,
                Ok(_) => e,
            },
            _ => e,
        }
    }

    /// The answer for one of the supervisor's own files: Linux's
    /// `xattr_permission` first, then no attribute support.
    fn own_xattr(&self, special: bool, name: &[u8], write: bool) -> i64 {
        let refused = if write { errno::EPERM } else { errno::ENODATA };
        if name.starts_with(b"user.") && special {
            return refused;
        }
        if name.starts_with(b"trusted.") && self.fs.cred.uid != 0 {
            return refused;
        }
        errno::EOPNOTSUPP
    }

    /// The attribute name at `at`: empty or longer than 255 bytes is
    /// ERANGE, as Linux's copy of it fails.
    fn xattr_name(&self, rid: u64, at: u64) -> Result<Vec<u8>, i64> {
        match self.read_cstr(rid, at, NAME_MAX) {
            Ok(n) if n.is_empty() => Err(errno::ERANGE),
            Ok(n) => Ok(n),
            Err(e) if e == errno::ENAMETOOLONG => Err(errno::ERANGE),
            Err(e) => Err(e),
        }
    }

    /// setxattr, lsetxattr, fsetxattr.
    pub(super) fn setxattr(
        &mut self,
        rid: u64,
        on: On,
        name_at: u64,
        value: u64,
        size: u64,
        flags: u64,
    ) -> Result<u64, i64> {
        let obj = self.xattr_object(rid, on)?;
        let args = (|| {
            if flags & !u64::from(api::XATTR_CREATE | api::XATTR_REPLACE) != 0 {
                return Err(errno::EINVAL);
            }
            let name = self.xattr_name(rid, name_at)?;
            if size > api::XATTR_SIZE_MAX as u64 {
                return Err(errno::E2BIG);
            }
            Ok((name, self.read_mem(rid, value, size as usize)?))
        })();
        let (name, value) = args.map_err(|e| self.path_first(&obj, e))?;
        match obj {
            Object::Own { special } => Err(self.own_xattr(special, &name, true)),
            Object::Served(d, f, path) => self
                .fs
                .xattr(d, f, api::XATTR_SET, flags as u32, &name, &value, 0, &path)
                .map(|_| 0),
        }
    }

    /// getxattr, lgetxattr, fgetxattr.
    pub(super) fn getxattr(&mut self, rid: u64, on: On, name_at: u64, buf: u64, size: u64) -> Result<u64, i64> {
        let obj = self.xattr_object(rid, on)?;
        let name = self.xattr_name(rid, name_at).map_err(|e| self.path_first(&obj, e))?;
        let size = size.min(api::XATTR_SIZE_MAX as u64) as usize;
        match obj {
            Object::Own { special } => Err(self.own_xattr(special, &name, false)),
            Object::Served(d, f, path) => {
                let (n, bytes) = self.fs.xattr(d, f, api::XATTR_GET, 0, &name, &[], size, &path)?;
                self.write_mem(rid, buf, &bytes)?;
                Ok(n)
            }
        }
    }

    /// listxattr, llistxattr, flistxattr.
    pub(super) fn listxattr(&mut self, rid: u64, on: On, buf: u64, size: u64) -> Result<u64, i64> {
        let obj = self.xattr_object(rid, on)?;
        let size = size.min(api::XATTR_SIZE_MAX as u64) as usize;
        match obj {
            Object::Own { .. } => Ok(0),
            Object::Served(d, f, path) => {
                let (n, bytes) = self.fs.xattr(d, f, api::XATTR_LIST, 0, &[], &[], size, &path)?;
                self.write_mem(rid, buf, &bytes)?;
                Ok(n)
            }
        }
    }

    /// removexattr, lremovexattr, fremovexattr.
    pub(super) fn removexattr(&mut self, rid: u64, on: On, name_at: u64) -> Result<u64, i64> {
        let obj = self.xattr_object(rid, on)?;
        let name = self.xattr_name(rid, name_at).map_err(|e| self.path_first(&obj, e))?;
        match obj {
            Object::Own { special } => Err(self.own_xattr(special, &name, true)),
            Object::Served(d, f, path) => self
                .fs
                .xattr(d, f, api::XATTR_REMOVE, 0, &name, &[], 0, &path)
                .map(|_| 0),
        }
    }
}
