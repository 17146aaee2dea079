//! Names and paths: one component at a time, following symbolic links
//! (at most [`MAX_SYMLINKS`], as Linux) and checking on the way that the
//! tree is a tree.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use super::{FileManager, Handle, Stat};
use crate::device::BlockDevice;
use crate::disk::dirent::NAME_MAX;
use crate::disk::inode::{FileType, Inode, ROOT_INO};
use crate::error::{Errno, Result};

/// Symbolic links followed while resolving one path.
pub const MAX_SYMLINKS: u32 = 40;
/// The longest path, as Linux's `PATH_MAX`.
pub const PATH_MAX: usize = 4096;

/// Whether a caller may search a directory, given its attributes.
pub type Search<'a> = Option<&'a dyn Fn(&Stat) -> bool>;

/// Checks a name for a new entry: not empty, not `.` or `..`, no `/` or
/// NUL, at most 255 bytes.
pub(crate) fn check_name(name: &[u8]) -> Result<()> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    if name == b"." || name == b".." {
        return Err(Errno::EEXIST);
    }
    if name.iter().any(|&c| c == b'/' || c == 0) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

impl<D: BlockDevice> FileManager<D> {
    /// The entry `name` in directory `dir`.
    ///
    /// A directory found by name must name `dir` as its parent in its `..`
    /// entry and must not be the root: a second entry for a directory (a
    /// loop in the tree) gives `EIO` instead of leading a walk round in
    /// circles.
    pub fn lookup(&mut self, dir: Handle, name: &[u8]) -> Result<Handle> {
        let dir_inode = self.inode(dir)?;
        self.lookup_in(dir, &dir_inode, name).map(|(h, _)| h)
    }

    /// [`lookup`](Self::lookup) in a directory whose inode the caller has
    /// just fetched (with [`inode`](Self::inode)); returns the inode found
    /// with its handle, so that a walk fetches each inode once.
    fn lookup_in(&mut self, dir: Handle, dir_inode: &Inode, name: &[u8]) -> Result<(Handle, Inode)> {
        if !dir_inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if name != b".." && dir_inode.links == 0 {
            return Err(Errno::ENOENT);
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if name.is_empty() || name.contains(&b'/') {
            return Err(Errno::ENOENT);
        }
        let ino = match self.names.recent(dir.ino, name) {
            Some(ino) => ino,
            None => {
                let ino = self.find(dir.ino, name)?.map_or(0, |f| f.ino);
                self.names.note(dir.ino, name, ino);
                ino
            }
        };
        if ino == 0 {
            return Err(Errno::ENOENT);
        }
        let (h, inode) = self.handle_of(ino)?;
        if inode.is_dir() && name != b"." && name != b".." && (h.ino == ROOT_INO || self.dotdot(h.ino)? != dir.ino) {
            return Err(Errno::EIO);
        }
        Ok((h, inode))
    }

    /// Resolves `path` from `start` (or from the root if it begins with
    /// `/`). A symbolic link as the last component is followed only if
    /// `follow` is set; a trailing `/` asks for a directory.
    pub fn resolve(&mut self, start: Handle, path: &[u8], follow: bool) -> Result<Handle> {
        self.resolve_as(start, path, follow, None)
    }

    /// `EACCES` unless `search` lets its caller look names up in `dir`.
    fn searchable(&mut self, dir: Handle, search: Search) -> Result<()> {
        match search {
            Some(may) if !may(&self.stat(dir)?) => Err(Errno::EACCES),
            _ => Ok(()),
        }
    }

    /// [`resolve`](Self::resolve) for a caller who needs `search`'s leave
    /// to look a name up in each directory on the way (as Linux asks for
    /// the search bit of each); `None` passes them all.
    pub fn resolve_as(&mut self, start: Handle, path: &[u8], follow: bool, search: Search) -> Result<Handle> {
        let root = self.root()?;
        self.resolve_in(root, start, path, follow, search)
    }

    /// [`resolve_as`](Self::resolve_as) for a caller whose root directory
    /// is `root` (Linux's chroot): an absolute path or symbolic link
    /// starts there, and `..` there stays there, so that no name leads
    /// above it.
    pub fn resolve_in(
        &mut self,
        root: Handle,
        start: Handle,
        path: &[u8],
        follow: bool,
        search: Search,
    ) -> Result<Handle> {
        if path.len() > PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let mut buf: Vec<u8> = path.to_vec();
        let mut pos = 0;
        let mut cur = if buf[0] == b'/' { root } else { start };
        // `cur`'s inode, when this walk fetched it already: each component
        // used to fetch and check the directory's inode three times and
        // the entry's twice, a good part of resolving a path.
        let mut cur_inode: Option<Inode> = None;
        let mut links = 0;
        loop {
            while pos < buf.len() && buf[pos] == b'/' {
                pos += 1;
            }
            if pos == buf.len() {
                return Ok(cur);
            }
            let end = buf[pos..]
                .iter()
                .position(|&c| c == b'/')
                .map_or(buf.len(), |i| pos + i);
            let rest_has_name = buf[end..].iter().any(|&c| c != b'/');
            let trailing_slash = !rest_has_name && end < buf.len();
            let name = &buf[pos..end];
            let dir_inode = match cur_inode.take() {
                Some(inode) => inode,
                None => self.inode(cur)?,
            };
            if let Some(may) = search
                && !may(&self.stat_of(cur, &dir_inode))
            {
                return Err(Errno::EACCES);
            }
            let (next, next_inode) = if name == b"." || (name == b".." && cur.ino == root.ino) {
                if !dir_inode.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                (cur, dir_inode)
            } else {
                self.lookup_in(cur, &dir_inode, name)?
            };
            let kind = next_inode.kind().unwrap_or(FileType::Regular);
            if kind == FileType::Symlink && (rest_has_name || follow || trailing_slash) {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::ELOOP);
                }
                let mut target = self.readlink(next)?;
                target.extend_from_slice(&buf[end..]);
                if target.len() > PATH_MAX {
                    return Err(Errno::ENAMETOOLONG);
                }
                if target[0] == b'/' {
                    cur = root;
                }
                buf = target;
                pos = 0;
                continue;
            }
            if (rest_has_name || trailing_slash) && kind != FileType::Directory {
                return Err(Errno::ENOTDIR);
            }
            cur = next;
            cur_inode = Some(next_inode);
            pos = end;
        }
    }

    /// Resolves all of `path` but its last component, which must be a
    /// directory, and returns it with that last name (trailing `/`s
    /// dropped). The root alone has no last name (`EBUSY`).
    pub fn resolve_parent(&mut self, start: Handle, path: &[u8]) -> Result<(Handle, Vec<u8>)> {
        self.resolve_parent_as(start, path, None)
    }

    /// [`resolve_parent`](Self::resolve_parent) checking `search` on each
    /// directory, the last one's too (its entry is looked up next).
    pub fn resolve_parent_as(&mut self, start: Handle, path: &[u8], search: Search) -> Result<(Handle, Vec<u8>)> {
        let root = self.root()?;
        self.resolve_parent_in(root, start, path, search)
    }

    /// [`resolve_parent_as`](Self::resolve_parent_as) for a caller whose
    /// root directory is `root` (as [`resolve_in`](Self::resolve_in)).
    pub fn resolve_parent_in(
        &mut self,
        root: Handle,
        start: Handle,
        path: &[u8],
        search: Search,
    ) -> Result<(Handle, Vec<u8>)> {
        let trimmed = match path.iter().rposition(|&c| c != b'/') {
            Some(i) => &path[..=i],
            None if path.is_empty() => return Err(Errno::ENOENT),
            None => return Err(Errno::EBUSY),
        };
        let (dir, name) = match trimmed.iter().rposition(|&c| c == b'/') {
            Some(i) => {
                let dir_path = &trimmed[..i];
                let dir = if dir_path.iter().all(|&c| c == b'/') {
                    root
                } else {
                    self.resolve_in(root, start, dir_path, true, search)?
                };
                (dir, &trimmed[i + 1..])
            }
            None => (start, trimmed),
        };
        self.dir_inode(dir)?;
        self.searchable(dir, search)?;
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        Ok((dir, name.to_vec()))
    }

    /// Whether directory `ancestor` is `dir` or above it, found by walking
    /// up the `..` entries. A loop in a damaged tree ends in `EIO`.
    pub(crate) fn is_ancestor(&mut self, ancestor: u32, dir: u32) -> Result<bool> {
        let mut seen = BTreeSet::new();
        let mut cur = dir;
        loop {
            if cur == ancestor {
                return Ok(true);
            }
            if cur == ROOT_INO {
                return Ok(false);
            }
            if !seen.insert(cur) {
                return Err(Errno::EIO);
            }
            cur = self.dotdot(cur)?;
        }
    }
}
