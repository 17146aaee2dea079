//! Extended attributes: an inode's attribute block, read, changed and
//! written whole as Linux's ext2 keeps it (see [`crate::disk::xattr`]).
//!
//! A block several inodes share (reference count above one, as Linux's
//! ext2 makes for inodes with equal attributes) is read like any other;
//! a change to it gives the inode a block of its own and drops one
//! reference from the shared one, which its other inodes keep unchanged.

use super::{Change, InodeManager};
use crate::device::BlockDevice;
use crate::disk::superblock::COMPAT_EXT_ATTR;
use crate::disk::xattr::{self, Attr};
use crate::error::{Errno, Result};
use alloc::vec::Vec;

/// `setxattr`'s flags, as Linux numbers them.
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;

impl<D: BlockDevice> InodeManager<D> {
    /// The attributes of inode `ino` (none without an attribute block).
    pub fn xattrs(&mut self, ino: u32) -> Result<Vec<Attr>> {
        let inode = self.get(ino)?;
        if inode.file_acl == 0 {
            return Ok(Vec::new());
        }
        let block = inode.file_acl as u64;
        if !self.block_ok(block) {
            self.disk.stats.inconsistencies += 1;
            return Err(Errno::EIO);
        }
        let mut attrs = Err(Errno::EIO);
        self.disk.read(block, &mut |b| attrs = xattr::decode(b))?;
        if attrs.is_err() {
            self.disk.stats.inconsistencies += 1;
        }
        attrs
    }

    /// The value of attribute `name` (with its prefix), or `ENODATA`.
    pub fn xattr_get(&mut self, ino: u32, name: &[u8]) -> Result<Vec<u8>> {
        let (index, name) = xattr::split_name(name)?;
        self.xattrs(ino)?
            .into_iter()
            .find(|a| a.index == index && a.name == name)
            .map(|a| a.value)
            .ok_or(Errno::ENODATA)
    }

    /// Sets (`value` given) or removes (`None`) attribute `name`, with
    /// `setxattr`'s flags: `XATTR_CREATE` fails on an attribute that
    /// exists (`EEXIST`), `XATTR_REPLACE` on one that does not
    /// (`ENODATA`), as does removing one that does not. `ERANGE` for a
    /// value longer than a block, `ENOSPC` when the attributes would not
    /// fit in one. The inode's change time is stamped.
    pub fn xattr_set(&mut self, ino: u32, name: &[u8], value: Option<&[u8]>, flags: u32) -> Result<()> {
        self.writable()?;
        let (index, name) = xattr::split_name(name)?;
        let bs = self.sb.block_size as usize;
        if value.is_some_and(|v| v.len() > bs) {
            return Err(Errno::ERANGE);
        }
        let mut attrs = self.xattrs(ino)?;
        let at = attrs.iter().position(|a| a.index == index && a.name == name);
        match (at, value) {
            (None, _) if flags & XATTR_REPLACE != 0 => return Err(Errno::ENODATA),
            (None, None) => return Err(Errno::ENODATA),
            (Some(_), _) if flags & XATTR_CREATE != 0 => return Err(Errno::EEXIST),
            (Some(i), None) => {
                attrs.remove(i);
            }
            (Some(i), Some(v)) => attrs[i].value = v.to_vec(),
            (None, Some(v)) => attrs.push(Attr {
                index,
                name: name.to_vec(),
                value: v.to_vec(),
            }),
        }
        if xattr::room(&attrs) > bs {
            return Err(Errno::ENOSPC);
        }
        self.write_xattrs(ino, &mut attrs)?;
        let now = self.now;
        self.change(
            ino,
            &Change {
                ctime: Some(now),
                ..Change::default()
            },
        )?;
        Ok(())
    }

    /// Stores `attrs` as inode `ino`'s attribute block: in place when the
    /// inode is the block's only holder, else in a new block (the shared
    /// one loses a reference); no block at all for no attributes.
    fn write_xattrs(&mut self, ino: u32, attrs: &mut [Attr]) -> Result<()> {
        let mut inode = self.get(ino)?;
        let old = inode.file_acl as u64;
        let mut refs = 0;
        if old != 0 {
            self.disk.read(old, &mut |b| refs = xattr::refcount(b).unwrap_or(0))?;
        }
        if old != 0 && refs == 1 && !attrs.is_empty() {
            return self.disk.fill(old, &mut |b| xattr::encode(attrs, 1, b));
        }
        let sectors = self.sb.block_size / 512;
        if !attrs.is_empty() {
            // The new block near the inode, as Linux's goal is its group.
            let group = (ino - 1) / self.sb.inodes_per_group;
            let goal = self.sb.group_start(group);
            let (block, _) = self.alloc_blocks(goal, 1)?;
            if let Err(e) = self.disk.fill(block, &mut |b| xattr::encode(attrs, 1, b)) {
                let _ = self.free_blocks_now(block, 1);
                return Err(e);
            }
            // The block's contents before the inode points to it.
            self.disk.barrier()?;
            inode.file_acl = block as u32;
            inode.sectors = inode.sectors.saturating_add(sectors);
            if old != 0 {
                inode.sectors = inode.sectors.saturating_sub(sectors);
            }
            self.put(ino, &inode)?;
            if self.sb.compat & COMPAT_EXT_ATTR == 0 && self.sb.rev_level == 1 {
                self.sb.compat |= COMPAT_EXT_ATTR;
                self.write_super()?;
            }
        } else {
            inode.file_acl = 0;
            inode.sectors = inode.sectors.saturating_sub(sectors);
            self.put(ino, &inode)?;
        }
        if old != 0 {
            self.drop_xattr_ref(old, refs)?;
        }
        Ok(())
    }

    /// Drops one reference from attribute block `block` that had `refs`,
    /// freeing it with the last.
    fn drop_xattr_ref(&mut self, block: u64, refs: u32) -> Result<()> {
        if refs > 1 {
            self.disk.write(block, &mut |b| {
                if let Ok(r) = xattr::refcount(b) {
                    crate::disk::put_u32(b, 4, r.saturating_sub(1).max(1));
                }
            })
        } else {
            self.free_block_later(block);
            Ok(())
        }
    }
}
