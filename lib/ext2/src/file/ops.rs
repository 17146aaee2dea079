//! The operations that change names: create, mkdir, mknod, symlink, link,
//! unlink, rmdir, rename; and attribute changes.
//!
//! ext2 has no journal, so the order of writes decides what a crash can
//! leave. The rules, each chosen so that `e2fsck -p` repairs what is left
//! (the crate docs list the states):
//! - A new inode is written with no links (it reads as deleted), then its
//!   entry; only behind a barrier does it get its links. A crash never
//!   leaves a live inode that no entry names.
//! - Removing the last name: the inode is marked deleted first, behind a
//!   barrier, then the entry goes. A crash leaves at most an entry naming a
//!   deleted inode, which e2fsck clears.
//! - A link count goes up before a new entry and down after an old one is
//!   gone, so it is never too low while the inode lives.
//! - Rename writes the new entry, a barrier, then removes the old one.

use alloc::vec::Vec;

use super::path::check_name;
use super::{FileManager, Handle, Stat};
use crate::device::BlockDevice;
use crate::disk::inode::{FileType, ROOT_INO};
use crate::error::{Errno, Result};
use crate::inode::{Change, LINK_MAX, NewInode};
use crate::time::Timestamp;

/// The owner of a new file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

/// Attribute changes (chmod, chown, truncate, utimes); `None` leaves a
/// field as it is. The change time becomes the current time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetAttr {
    /// Permission bits (the low 12 bits of the mode).
    pub perm: Option<u16>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<Timestamp>,
    pub mtime: Option<Timestamp>,
}

/// What to put in a new inode besides its attributes.
enum Content<'a> {
    Nothing,
    Directory,
    Symlink(&'a [u8]),
}

impl<D: BlockDevice> FileManager<D> {
    /// Creates an empty regular file.
    pub fn create(&mut self, dir: Handle, name: &[u8], perm: u16, owner: Owner) -> Result<Handle> {
        self.make(dir, name, FileType::Regular, perm, owner, None, Content::Nothing)
    }

    /// Creates a device file, FIFO or socket.
    pub fn mknod(
        &mut self,
        dir: Handle,
        name: &[u8],
        kind: FileType,
        perm: u16,
        owner: Owner,
        rdev: (u32, u32),
    ) -> Result<Handle> {
        let rdev = match kind {
            FileType::CharDevice | FileType::BlockDevice => Some(rdev),
            FileType::Fifo | FileType::Socket => None,
            FileType::Regular => return self.create(dir, name, perm, owner),
            _ => return Err(Errno::EINVAL),
        };
        self.make(dir, name, kind, perm, owner, rdev, Content::Nothing)
    }

    pub fn mkdir(&mut self, dir: Handle, name: &[u8], perm: u16, owner: Owner) -> Result<Handle> {
        self.make(dir, name, FileType::Directory, perm, owner, None, Content::Directory)
    }

    /// Creates a symbolic link to `target`: in the inode itself if it is
    /// shorter than 60 bytes, else in a block.
    pub fn symlink(&mut self, dir: Handle, name: &[u8], target: &[u8], owner: Owner) -> Result<Handle> {
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        if target.len() >= self.inodes.block_size() as usize {
            return Err(Errno::ENAMETOOLONG);
        }
        self.make(
            dir,
            name,
            FileType::Symlink,
            0o777,
            owner,
            None,
            Content::Symlink(target),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn make(
        &mut self,
        dir: Handle,
        name: &[u8],
        kind: FileType,
        perm: u16,
        owner: Owner,
        rdev: Option<(u32, u32)>,
        content: Content,
    ) -> Result<Handle> {
        self.inodes.writable()?;
        check_name(name)?;
        let parent = self.live_dir(dir)?;
        let is_dir = kind == FileType::Directory;
        if is_dir && parent.links >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        let slot = self.plan_insert(dir.ino, name)?;
        // A set-group-id directory gives what is made in it its group, and
        // a directory made in it the bit too (Linux's inode_init_owner).
        const S_ISGID: u16 = 0o2000;
        let (gid, sgid) = if parent.mode & S_ISGID != 0 {
            (parent.gid, if is_dir { S_ISGID } else { 0 })
        } else {
            (owner.gid, 0)
        };
        let new = NewInode {
            mode: kind.mode_bits() | (perm & 0o7777) | sgid,
            uid: owner.uid,
            gid,
            links: 0,
            rdev,
        };
        let (ino, inode) = self.inodes.create(dir.ino, &new)?;
        let filled = match content {
            Content::Nothing => Ok(()),
            Content::Directory => {
                let mut block = alloc::vec![0; self.inodes.block_size() as usize];
                self.init_dir_block(&mut block, ino, dir.ino);
                self.inodes
                    .append_dir_block(ino, &mut |b| b.copy_from_slice(&block))
                    .map(|_| ())
            }
            Content::Symlink(target) if target.len() < 60 => self.inodes.write_inline(ino, target),
            Content::Symlink(target) => self.inodes.write(ino, 0, target).map(|_| ()),
        };
        // The parent's link from the new directory's `..` comes before the
        // entry (links never fewer than references).
        let raised = is_dir && filled.is_ok();
        let linked = filled
            .and_then(|()| {
                if is_dir {
                    self.inodes.change(dir.ino, &Change::links(parent.links + 1))?;
                }
                Ok(())
            })
            .and_then(|()| self.insert(dir.ino, slot, name, ino, kind));
        if let Err(e) = linked {
            if raised {
                self.inodes.change(dir.ino, &Change::links(parent.links))?;
            }
            self.names.drop_dir(ino);
            self.inodes.release(ino)?;
            return Err(e);
        }
        self.inodes.barrier()?;
        self.inodes.change(ino, &Change::links(if is_dir { 2 } else { 1 }))?;
        self.touch_dir(dir.ino)?;
        Ok(Handle {
            ino,
            generation: inode.generation,
        })
    }

    /// A directory's contents changed: its modification and change times.
    pub(crate) fn touch_dir(&mut self, dir: u32) -> Result<()> {
        let now = self.inodes.now();
        self.inodes.change(
            dir,
            &Change {
                mtime: Some(now),
                ctime: Some(now),
                ..Change::default()
            },
        )?;
        Ok(())
    }

    /// Marks an inode deleted whose last name is about to go: freed now,
    /// or at its last close if a client has it open. The barrier puts this
    /// before the removal of the entry.
    fn kill(&mut self, ino: u32) -> Result<()> {
        let now = self.inodes.now();
        if self.open.contains_key(&ino) {
            self.inodes.change(
                ino,
                &Change {
                    links: Some(0),
                    ctime: Some(now),
                    ..Change::default()
                },
            )?;
            self.orphans.insert(ino);
        } else {
            self.names.drop_dir(ino);
            self.inodes.release(ino)?;
        }
        self.inodes.barrier()
    }

    /// Removes the entry `name` naming `ino` (a non-directory): the inode
    /// dies first if this is its last name, else loses a link after.
    fn unlink_entry(&mut self, dir: u32, name: &[u8], ino: u32) -> Result<()> {
        let links = self.inodes.get(ino)?.links;
        if links <= 1 {
            self.kill(ino)?;
            self.remove(dir, name)?;
        } else {
            self.remove(dir, name)?;
            let now = self.inodes.now();
            self.inodes.change(
                ino,
                &Change {
                    links: Some(links - 1),
                    ctime: Some(now),
                    ..Change::default()
                },
            )?;
        }
        self.inodes.maybe_commit()
    }

    /// A new name for an existing file (not a directory).
    pub fn link(&mut self, target: Handle, dir: Handle, name: &[u8]) -> Result<()> {
        self.inodes.writable()?;
        check_name(name)?;
        let inode = self.inode(target)?;
        if inode.is_dir() {
            return Err(Errno::EPERM);
        }
        if inode.links >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        // An orphan kept alive by an open handle cannot come back; an
        // unnamed file made linkable gets its first name (`unnamed.rs`).
        let first = inode.links == 0;
        if first && !self.linkable.contains(&target.ino) {
            return Err(Errno::ENOENT);
        }
        self.live_dir(dir)?;
        let slot = self.plan_insert(dir.ino, name)?;
        if first {
            self.insert(dir.ino, slot, name, target.ino, inode.kind().ok_or(Errno::EIO)?)?;
            self.inodes.barrier()?;
            let now = self.inodes.now();
            self.inodes.change(
                target.ino,
                &Change {
                    links: Some(1),
                    ctime: Some(now),
                    ..Change::default()
                },
            )?;
            self.linkable.remove(&target.ino);
            self.orphans.remove(&target.ino);
            return self.touch_dir(dir.ino);
        }
        let now = self.inodes.now();
        self.inodes.change(
            target.ino,
            &Change {
                links: Some(inode.links + 1),
                ctime: Some(now),
                ..Change::default()
            },
        )?;
        if let Err(e) = self.insert(dir.ino, slot, name, target.ino, inode.kind().ok_or(Errno::EIO)?) {
            self.inodes.change(target.ino, &Change::links(inode.links))?;
            return Err(e);
        }
        self.touch_dir(dir.ino)
    }

    /// Removes a name of a file that is not a directory.
    pub fn unlink(&mut self, dir: Handle, name: &[u8]) -> Result<()> {
        self.inodes.writable()?;
        self.dir_inode(dir)?;
        if name == b"." || name == b".." {
            return Err(Errno::EISDIR);
        }
        let child = self.lookup(dir, name)?;
        if self.stat(child)?.kind == FileType::Directory {
            return Err(Errno::EISDIR);
        }
        self.unlink_entry(dir.ino, name, child.ino)?;
        self.touch_dir(dir.ino)
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, dir: Handle, name: &[u8]) -> Result<()> {
        self.inodes.writable()?;
        let parent = self.dir_inode(dir)?;
        match name {
            b"." => return Err(Errno::EINVAL),
            b".." => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        let child = self.lookup(dir, name)?;
        if self.stat(child)?.kind != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        if child.ino == ROOT_INO {
            return Err(Errno::EBUSY);
        }
        if !self.is_empty(child.ino)? {
            return Err(Errno::ENOTEMPTY);
        }
        self.kill(child.ino)?;
        self.remove(dir.ino, name)?;
        let now = self.inodes.now();
        self.inodes.change(
            dir.ino,
            &Change {
                links: Some(parent.links.saturating_sub(1)),
                mtime: Some(now),
                ctime: Some(now),
                ..Change::default()
            },
        )?;
        self.inodes.maybe_commit()
    }

    /// Moves `from_name` in `from_dir` to `to_name` in `to_dir`, replacing
    /// what is there (a file by a file, an empty directory by a directory).
    ///
    /// The new entry is written before the old one is removed, so a crash
    /// in between leaves the file under both names, never under none.
    pub fn rename(&mut self, from_dir: Handle, from_name: &[u8], to_dir: Handle, to_name: &[u8]) -> Result<()> {
        self.inodes.writable()?;
        for name in [from_name, to_name] {
            if name == b"." || name == b".." {
                return Err(Errno::EINVAL);
            }
        }
        check_name(to_name)?;
        self.dir_inode(from_dir)?;
        self.live_dir(to_dir)?;
        let src = self.lookup(from_dir, from_name)?;
        let src_kind = self.stat(src)?.kind;
        let src_is_dir = src_kind == FileType::Directory;
        let dst = match self.lookup(to_dir, to_name) {
            Ok(h) => Some((h, self.stat(h)?)),
            Err(Errno::ENOENT) => None,
            Err(e) => return Err(e),
        };
        if let Some((h, _)) = dst
            && h.ino == src.ino
        {
            return Ok(());
        }
        if src_is_dir {
            if src.ino == ROOT_INO {
                return Err(Errno::EBUSY);
            }
            if from_dir.ino != to_dir.ino && self.is_ancestor(src.ino, to_dir.ino)? {
                return Err(Errno::EINVAL);
            }
        }
        match dst {
            Some((_, ref st)) if src_is_dir && st.kind != FileType::Directory => return Err(Errno::ENOTDIR),
            Some((_, ref st)) if !src_is_dir && st.kind == FileType::Directory => return Err(Errno::EISDIR),
            Some((h, _)) if src_is_dir && !self.is_empty(h.ino)? => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        let moves_up = src_is_dir && from_dir.ino != to_dir.ino;
        let dst_is_dir = matches!(dst, Some((_, ref st)) if st.kind == FileType::Directory);
        let now = self.inodes.now();
        // The new parent gains a subdirectory unless one is replaced.
        if moves_up && !dst_is_dir {
            let links = self.inode(to_dir)?.links;
            if links >= LINK_MAX {
                return Err(Errno::EMLINK);
            }
            self.inodes.change(to_dir.ino, &Change::links(links + 1))?;
        }
        match dst {
            Some((h, st)) => {
                // A target losing its last name dies before its entry is
                // taken over.
                let last = dst_is_dir || st.links <= 1;
                if last {
                    self.kill(h.ino)?;
                }
                let found = self.find(to_dir.ino, to_name)?.ok_or(Errno::EIO)?;
                self.set_entry(to_dir.ino, &found, src.ino, src_kind)?;
                if !last {
                    self.inodes.change(
                        h.ino,
                        &Change {
                            links: Some(st.links - 1),
                            ctime: Some(now),
                            ..Change::default()
                        },
                    )?;
                }
                if dst_is_dir && !moves_up {
                    // The replaced directory's `..` no longer counts (a
                    // directory moving in takes its place otherwise).
                    let links = self.inode(to_dir)?.links;
                    self.inodes
                        .change(to_dir.ino, &Change::links(links.saturating_sub(1)))?;
                }
            }
            None => {
                let entered = self
                    .plan_insert(to_dir.ino, to_name)
                    .and_then(|slot| self.insert(to_dir.ino, slot, to_name, src.ino, src_kind));
                if let Err(e) = entered {
                    if moves_up {
                        let links = self.inode(to_dir)?.links;
                        self.inodes.change(to_dir.ino, &Change::links(links - 1))?;
                    }
                    return Err(e);
                }
            }
        }
        // The new name is on disk before the old one goes.
        self.inodes.barrier()?;
        if moves_up {
            // And its `..` names the new parent before the old entry goes:
            // a crash in between leaves the directory under both names,
            // which is all e2fsck then has to mend.
            self.set_dotdot(src.ino, to_dir.ino)?;
            self.inodes.barrier()?;
        }
        self.remove(from_dir.ino, from_name)?;
        if moves_up {
            let links = self.inode(from_dir)?.links;
            self.inodes
                .change(from_dir.ino, &Change::links(links.saturating_sub(1)))?;
        }
        self.inodes.change(
            src.ino,
            &Change {
                ctime: Some(now),
                ..Change::default()
            },
        )?;
        self.touch_dir(from_dir.ino)?;
        if to_dir.ino != from_dir.ino {
            self.touch_dir(to_dir.ino)?;
        }
        self.inodes.maybe_commit()
    }

    /// The target of a symbolic link.
    pub fn readlink(&mut self, h: Handle) -> Result<Vec<u8>> {
        let inode = self.inode(h)?;
        if inode.kind() != Some(FileType::Symlink) {
            return Err(Errno::EINVAL);
        }
        let len = inode.size as usize;
        let target = if self.inodes.is_fast_symlink(&inode) {
            inode.inline_data()[..len].to_vec()
        } else {
            let mut buf = alloc::vec![0; len];
            if self.inodes.read(h.ino, 0, &mut buf)? != len {
                return Err(Errno::EIO);
            }
            buf
        };
        // A NUL inside the target would cut it short for a C reader.
        if target.contains(&0) {
            return Err(Errno::EIO);
        }
        Ok(target)
    }

    /// Changes attributes (chmod, chown, truncate, utimes).
    pub fn setattr(&mut self, h: Handle, a: &SetAttr) -> Result<Stat> {
        self.inodes.writable()?;
        let inode = self.inode(h)?;
        if let Some(size) = a.size {
            match inode.kind() {
                Some(FileType::Regular) => {
                    if size != inode.size {
                        self.inodes.truncate(h.ino, size)?;
                    }
                }
                Some(FileType::Directory) => return Err(Errno::EISDIR),
                _ => return Err(Errno::EINVAL),
            }
        }
        let now = self.inodes.now();
        let inode = self.inodes.change(
            h.ino,
            &Change {
                perm: a.perm,
                uid: a.uid,
                gid: a.gid,
                atime: a.atime,
                mtime: a.mtime,
                ctime: Some(now),
                ..Change::default()
            },
        )?;
        Ok(self.stat_of(h, &inode))
    }
}
