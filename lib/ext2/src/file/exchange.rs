//! renameat2's RENAME_EXCHANGE: two names swap the files they name, in
//! one operation, directories too. A directory that changes parent has its
//! `..` pointed at the new one, and each parent's link count follows the
//! subdirectories it gains or loses.

use super::path::check_name;
use super::{FileManager, Handle};
use crate::device::BlockDevice;
use crate::disk::inode::{FileType, ROOT_INO};
use crate::error::{Errno, Result};
use crate::inode::{Change, LINK_MAX};

impl<D: BlockDevice> FileManager<D> {
    /// Swaps what `a_name` in `a_dir` and `b_name` in `b_dir` name. Both
    /// must exist. Neither directory may be moved under itself (EINVAL,
    /// from either side, as Linux's exchange says).
    pub fn exchange(&mut self, a_dir: Handle, a_name: &[u8], b_dir: Handle, b_name: &[u8]) -> Result<()> {
        self.inodes.writable()?;
        for name in [a_name, b_name] {
            if name == b"." || name == b".." {
                return Err(Errno::EINVAL);
            }
            check_name(name)?;
        }
        self.live_dir(a_dir)?;
        self.live_dir(b_dir)?;
        let a = self.lookup(a_dir, a_name)?;
        let b = self.lookup(b_dir, b_name)?;
        if a.ino == b.ino {
            return Ok(());
        }
        let (a_kind, b_kind) = (self.stat(a)?.kind, self.stat(b)?.kind);
        let (a_is_dir, b_is_dir) = (a_kind == FileType::Directory, b_kind == FileType::Directory);
        if (a_is_dir && a.ino == ROOT_INO) || (b_is_dir && b.ino == ROOT_INO) {
            return Err(Errno::EBUSY);
        }
        let moved = a_dir.ino != b_dir.ino;
        if moved && a_is_dir && self.is_ancestor(a.ino, b_dir.ino)? {
            return Err(Errno::EINVAL);
        }
        if moved && b_is_dir && self.is_ancestor(b.ino, a_dir.ino)? {
            return Err(Errno::EINVAL);
        }
        // A parent that gets a directory for a file gains a link (its
        // `..`), the other loses one.
        let (a_links, b_links) = (self.inode(a_dir)?.links, self.inode(b_dir)?.links);
        let shift = if moved && a_is_dir != b_is_dir {
            if a_is_dir { 1 } else { -1 }
        } else {
            0
        };
        if (shift > 0 && b_links >= LINK_MAX) || (shift < 0 && a_links >= LINK_MAX) {
            return Err(Errno::EMLINK);
        }
        let found_a = self.find(a_dir.ino, a_name)?.ok_or(Errno::ENOENT)?;
        let found_b = self.find(b_dir.ino, b_name)?.ok_or(Errno::ENOENT)?;
        self.set_entry(a_dir.ino, &found_a, b.ino, b_kind)?;
        self.set_entry(b_dir.ino, &found_b, a.ino, a_kind)?;
        self.inodes.barrier()?;
        if moved {
            if a_is_dir {
                self.set_dotdot(a.ino, b_dir.ino)?;
            }
            if b_is_dir {
                self.set_dotdot(b.ino, a_dir.ino)?;
            }
            if shift != 0 {
                let (a_new, b_new) = if shift > 0 {
                    (a_links.saturating_sub(1), b_links + 1)
                } else {
                    (a_links + 1, b_links.saturating_sub(1))
                };
                self.inodes.change(a_dir.ino, &Change::links(a_new))?;
                self.inodes.change(b_dir.ino, &Change::links(b_new))?;
            }
        }
        let now = self.inodes.now();
        for ino in [a.ino, b.ino] {
            self.inodes.change(
                ino,
                &Change {
                    ctime: Some(now),
                    ..Change::default()
                },
            )?;
        }
        self.touch_dir(a_dir.ino)?;
        if moved {
            self.touch_dir(b_dir.ino)?;
        }
        Ok(())
    }
}
