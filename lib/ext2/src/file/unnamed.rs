//! Unnamed files (Linux's `O_TMPFILE`): a regular inode made in a
//! directory's file system with no entry naming it, open from birth, and
//! freed at its last close, as an orphan is.
//!
//! On disk it is what `make` writes before an entry names a new inode:
//! no links and a deletion time, so it reads as deleted. A crash while
//! it is open thus leaves an inode and blocks marked in use that nothing
//! names and that reads as deleted: `e2fsck -p` frees them (the bitmap
//! differences of pass 5) without asking, as it does for an orphan of a
//! file unlinked while open. No orphan list is kept on disk (ext2 has
//! none; ext3's lives in the journal's superblock fields).
//!
//! One made linkable (no `O_EXCL`) may get a first name by
//! [`FileManager::link`], once: Linux's `I_LINKABLE`. The new entry is
//! written first, and only behind a barrier does the inode get its link
//! (and lose its deletion time), the order `make` keeps for a new file.

use super::ops::Owner;
use super::{FileManager, Handle};
use crate::device::BlockDevice;
use crate::disk::inode::FileType;
use crate::error::Result;
use crate::inode::NewInode;

impl<D: BlockDevice> FileManager<D> {
    /// Makes an unnamed regular file in the file system of directory
    /// `dir` (a live one: `ENOENT` for one removed), counted open once:
    /// the caller's [`FileManager::close`] frees it. A set-group-id
    /// directory gives it its group, as a named file's.
    pub fn create_unnamed(&mut self, dir: Handle, perm: u16, owner: Owner, linkable: bool) -> Result<Handle> {
        self.inodes.writable()?;
        let parent = self.live_dir(dir)?;
        const S_ISGID: u16 = 0o2000;
        let gid = if parent.mode & S_ISGID != 0 {
            parent.gid
        } else {
            owner.gid
        };
        let new = NewInode {
            mode: FileType::Regular.mode_bits() | (perm & 0o7777),
            uid: owner.uid,
            gid,
            links: 0,
            rdev: None,
        };
        let (ino, inode) = self.inodes.create(dir.ino, &new)?;
        self.orphans.insert(ino);
        if linkable {
            self.linkable.insert(ino);
        }
        *self.open.entry(ino).or_insert(0) += 1;
        Ok(Handle {
            ino,
            generation: inode.generation,
        })
    }

    /// Whether `ino` is an unnamed file that may still get a name.
    pub fn is_linkable(&self, ino: u32) -> bool {
        self.linkable.contains(&ino)
    }
}
