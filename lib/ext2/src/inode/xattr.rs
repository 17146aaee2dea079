//! Extended attributes: an inode's attribute block, read, changed and
//! written whole as Linux's ext2 keeps it (see [`crate::disk::xattr`]).
//!
//! A large inode holds attributes of its own too (after its extra
//! fields), as Linux's ext4 driver, which mounts ext2 on Debian, keeps
//! them: a value goes there first when it fits.
//!
//! A block several inodes share (reference count above one, as Linux's
//! ext2 makes for inodes with equal attributes) is read like any other;
//! a change to it gives the inode a block of its own and drops one
//! reference from the shared one, which its other inodes keep unchanged.

use super::{Change, InodeManager};
use crate::device::BlockDevice;
use crate::disk::inode::Inode;
use crate::disk::superblock::COMPAT_EXT_ATTR;
use crate::disk::xattr::{self, Attr};
use crate::error::{Errno, Result};
use alloc::vec::Vec;
use core::ops::Range;

/// `setxattr`'s flags, as Linux numbers them.
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;

/// Where an inode keeps attributes of its own: the block of the inode
/// table, the bytes there (magic, entries, values), and what they hold.
struct Ibody {
    block: u64,
    range: Range<usize>,
    attrs: Vec<Attr>,
}

impl<D: BlockDevice> InodeManager<D> {
    /// The attributes of inode `ino`: those in the inode, then those in
    /// its attribute block (the order Linux lists them in).
    pub fn xattrs(&mut self, ino: u32) -> Result<Vec<Attr>> {
        let inode = self.get(ino)?;
        let mut attrs = self.ibody(ino, &inode)?.map(|i| i.attrs).unwrap_or_default();
        attrs.extend(self.block_xattrs(&inode)?);
        Ok(attrs)
    }

    /// The inode's own attribute area, if it has room for one: a large
    /// inode's bytes after its extra fields, as ext4 places them.
    fn ibody(&mut self, ino: u32, inode: &Inode) -> Result<Option<Ibody>> {
        let isz = self.sb.inode_size as usize;
        let start = 128 + inode.extra_isize as usize;
        // The magic, one entry's header and the end mark at least.
        if isz <= 128 || !inode.extra_isize.is_multiple_of(4) || start + 4 + 16 + 4 > isz {
            return Ok(None);
        }
        let (block, off) = self.locate(ino)?;
        let range = off + start..off + isz;
        let mut attrs = Ok(Vec::new());
        self.disk
            .read(block, &mut |b| attrs = xattr::decode_ibody(&b[range.clone()]))?;
        match attrs {
            Ok(attrs) => Ok(Some(Ibody { block, range, attrs })),
            Err(e) => {
                self.disk.stats.inconsistencies += 1;
                Err(e)
            }
        }
    }

    fn write_ibody(&mut self, ib: &Ibody, attrs: &mut [Attr]) -> Result<()> {
        let range = ib.range.clone();
        self.disk.write_part(ib.block, range.clone(), &mut |b| {
            xattr::encode_ibody(attrs, &mut b[range.clone()])
        })
    }

    /// The attributes in the inode's attribute block (none without one).
    fn block_xattrs(&mut self, inode: &Inode) -> Result<Vec<Attr>> {
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
    /// (`ENODATA`), as does removing one that does not. A value goes
    /// into the inode when it fits there, else into the attribute block
    /// (and leaves the other place), as ext4 places it; `ENOSPC` when it
    /// fits in neither. The inode's change time is stamped.
    pub fn xattr_set(&mut self, ino: u32, name: &[u8], value: Option<&[u8]>, flags: u32) -> Result<()> {
        self.writable()?;
        let (index, name) = xattr::split_name(name)?;
        let bs = self.sb.block_size as usize;
        let inode = self.get(ino)?;
        let ib = self.ibody(ino, &inode)?;
        let mut in_inode = ib.as_ref().map(|i| i.attrs.clone()).unwrap_or_default();
        let mut in_block = self.block_xattrs(&inode)?;
        let is = |a: &Attr| a.index == index && a.name == name;
        let at_inode = in_inode.iter().position(is);
        let at_block = in_block.iter().position(is);
        let exists = at_inode.is_some() || at_block.is_some();
        if !exists && (flags & XATTR_REPLACE != 0 || value.is_none()) {
            return Err(Errno::ENODATA);
        }
        if exists && flags & XATTR_CREATE != 0 {
            return Err(Errno::EEXIST);
        }
        match value {
            None => {
                if let (Some(i), Some(ib)) = (at_inode, &ib) {
                    in_inode.remove(i);
                    self.write_ibody(ib, &mut in_inode)?;
                } else if let Some(i) = at_block {
                    in_block.remove(i);
                    self.write_xattrs(ino, &mut in_block)?;
                }
            }
            Some(v) => {
                if v.len() > bs {
                    return Err(Errno::ENOSPC);
                }
                let new = Attr {
                    index,
                    name: name.to_vec(),
                    value: v.to_vec(),
                };
                let put = |attrs: &mut Vec<Attr>, at: Option<usize>| match at {
                    Some(i) => attrs[i] = new.clone(),
                    None => attrs.push(new.clone()),
                };
                let mut inode_after = in_inode.clone();
                put(&mut inode_after, at_inode);
                match &ib {
                    Some(ib) if xattr::room_ibody(&inode_after) + 4 <= ib.range.len() => {
                        self.write_ibody(ib, &mut inode_after)?;
                        if let Some(i) = at_block {
                            in_block.remove(i);
                            self.write_xattrs(ino, &mut in_block)?;
                        }
                    }
                    _ => {
                        put(&mut in_block, at_block);
                        if xattr::room(&in_block) > bs {
                            return Err(Errno::ENOSPC);
                        }
                        self.write_xattrs(ino, &mut in_block)?;
                        if let (Some(i), Some(ib)) = (at_inode, &ib) {
                            in_inode.remove(i);
                            self.write_ibody(ib, &mut in_inode)?;
                        }
                    }
                }
            }
        }
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
