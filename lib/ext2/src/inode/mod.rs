//! The inode manager (seed 003's inode process): inodes, the allocation of
//! inodes and blocks, and each inode's block map from logical to physical
//! blocks. It knows nothing of names or directories' contents.
//!
//! Its public methods are the interface the file manager uses, and they
//! take and return plain values (inode numbers, offsets, [`Inode`]s,
//! [`Segment`]s), so that the two can later sit in different processes and
//! these calls become messages. The exceptions are the directory-block
//! methods, which lend a block to a closure: across processes they become a
//! page handed over by the block cache.

mod allocator;
mod blockmap;
mod data;
mod io;
mod space;
mod xattr;

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

pub use self::data::Segment;
pub(crate) use self::io::Disk;
pub use self::io::Stats;
pub use self::xattr::{XATTR_CREATE, XATTR_REPLACE};
use crate::device::BlockDevice;
use crate::disk::group::{DESC_SIZE, GroupDesc};
use crate::disk::inode::{FLAG_INDEX, FLAGS_FOREIGN, FileType, Inode, ROOT_INO};
use crate::disk::superblock::{STATE_VALID, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, Superblock};
use crate::error::{Errno, Result};
use crate::time::Timestamp;

/// How to mount.
#[derive(Debug, Clone, Copy, Default)]
pub struct MountOptions {
    /// Never write to the device.
    pub read_only: bool,
    /// The time of the mount (recorded in the superblock).
    pub time: Timestamp,
}

/// What a new inode starts as.
#[derive(Debug, Clone, Copy)]
pub struct NewInode {
    /// Type and permission bits.
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    /// 0 for an inode not yet named by any entry (it reads as deleted
    /// until it gets its links), else 1 for a file, 2 for a directory.
    pub links: u16,
    /// Major and minor number of a device file.
    pub rdev: Option<(u32, u32)>,
}

/// Attribute changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Change {
    /// Permission bits (the low 12 bits of the mode); the type stays.
    pub perm: Option<u16>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub links: Option<u16>,
    pub atime: Option<Timestamp>,
    pub mtime: Option<Timestamp>,
    pub ctime: Option<Timestamp>,
    /// `i_flags` bits to clear.
    pub clear_flags: u32,
}

impl Change {
    /// Only the link count, set to `n`.
    pub fn links(n: u16) -> Change {
        Change {
            links: Some(n),
            ..Change::default()
        }
    }
}

/// File system totals, as `statfs` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFs {
    pub block_size: u32,
    /// Blocks for files (the total less the file system's own metadata).
    pub blocks: u64,
    pub free_blocks: u64,
    /// Free blocks less those reserved for the superuser.
    pub available_blocks: u64,
    pub inodes: u64,
    pub free_inodes: u64,
    pub name_max: u32,
    /// From the file system's UUID.
    pub fsid: u64,
}

/// The most links one inode may have (as Linux's ext2).
pub const LINK_MAX: u16 = 32000;

/// Inodes kept decoded between calls. Every write of an inode goes through
/// [`InodeManager::put`], which updates the copy, so the copies are never
/// stale.
const CACHED_INODES: usize = 64;

pub struct InodeManager<D> {
    pub(crate) disk: Disk<D>,
    pub(crate) sb: Superblock,
    pub(crate) groups: Vec<GroupDesc>,
    read_only: bool,
    now: Timestamp,
    pub(crate) pending: allocator::Pending,
    cache: [Option<(u32, Inode)>; CACHED_INODES],
    /// Blocks of the inode tables in which an inode was freed since mount.
    /// A new inode's block is written whole, unread, only when every other
    /// inode in it is free and none is here: no handle made since mount
    /// can name an inode of such a block, so the generations it forgets
    /// (their slots read as zeros from then on) matter to no one.
    pub(crate) freed_itable: BTreeSet<u64>,
    /// Per group, an index below which every bit of the inode bitmap is
    /// set (allocation starts its search there rather than at the group's
    /// first inode: in a full directory's group that search was most of
    /// an allocation).
    pub(crate) inode_hints: Vec<u32>,
    /// Pointers in an indirect block.
    pub(crate) ptrs: u64,
    /// The largest file size the block map can hold.
    max_size: u64,
    /// The inodes written since `forget_changed`, each once, and whether
    /// more were than `CHANGED_MAX` (any may have been): a server that
    /// keeps copies of files' attributes elsewhere (the kernel's file
    /// caches) finds here, whatever the operation, which went stale.
    changed: Vec<u32>,
    changed_overflow: bool,
}

/// Inodes `changed` lists; past it, every inode counts as changed.
const CHANGED_MAX: usize = 32;

impl<D: BlockDevice> InodeManager<D> {
    /// Reads and checks the superblock and every group descriptor.
    ///
    /// A superblock that is not ext2 or asks for unsupported features gives
    /// `EINVAL`; one that contradicts itself, or a root that is not a
    /// directory, `EIO`. Group descriptors that fail their check make their
    /// groups unreadable and the mount read-only.
    pub fn mount(mut dev: D, opts: MountOptions) -> Result<InodeManager<D>> {
        let mut raw = [0u8; SUPERBLOCK_SIZE];
        dev.read_block(SUPERBLOCK_OFFSET / SUPERBLOCK_SIZE as u64, SUPERBLOCK_SIZE, &mut |b| {
            raw.copy_from_slice(&b[..SUPERBLOCK_SIZE])
        })?;
        let mut sb = Superblock::decode(&raw)?;
        let bs = sb.block_size as usize;
        let mut disk = Disk {
            dev,
            block_size: bs,
            stats: Stats::default(),
        };
        // The device must hold every block the superblock claims.
        disk.read(sb.blocks_count as u64 - 1, &mut |_| ())?;
        // The table grows only as its blocks are read, so a corrupt group
        // count cannot make the library allocate more than the device holds.
        let mut groups = Vec::new();
        let per_block = bs / DESC_SIZE;
        for first in (0..sb.groups).step_by(per_block) {
            let n = (sb.groups - first).min(per_block as u32) as usize;
            let block = sb.first_data_block as u64 + 1 + (first as usize / per_block) as u64;
            disk.read(block, &mut |b| {
                for i in 0..n {
                    groups.push(GroupDesc::decode(&b[i * DESC_SIZE..(i + 1) * DESC_SIZE]));
                }
            })?;
        }
        let mut all_valid = true;
        let (mut free_blocks, mut free_inodes) = (0u64, 0u64);
        for (g, gd) in groups.iter_mut().enumerate() {
            gd.valid = gd.check(&sb, g as u32);
            all_valid &= gd.valid;
            if gd.valid {
                free_blocks += gd.free_blocks as u64;
                free_inodes += gd.free_inodes as u64;
            }
        }
        // As Linux does, the totals come from the groups: they are the ones
        // kept up to date on every allocation.
        sb.free_blocks = free_blocks.min(sb.blocks_count as u64) as u32;
        sb.free_inodes = free_inodes.min(sb.inodes_count as u64) as u32;
        let ptrs = bs as u64 / 4;
        let mut m = InodeManager {
            disk,
            read_only: opts.read_only || !sb.writable() || !all_valid,
            max_size: max_file_size(&sb, ptrs),
            sb,
            groups,
            now: opts.time,
            pending: allocator::Pending::default(),
            cache: core::array::from_fn(|_| None),
            freed_itable: BTreeSet::new(),
            inode_hints: Vec::new(),
            changed: Vec::new(),
            changed_overflow: false,
            ptrs,
        };
        let root = m.get(ROOT_INO)?;
        if !root.is_dir() || root.links == 0 {
            return Err(Errno::EIO);
        }
        m.check(&root)?;
        if !m.read_only {
            // Not clean until unmounted: after a crash `e2fsck -p` checks
            // the whole file system instead of trusting it.
            m.sb.state &= !STATE_VALID;
            m.sb.mnt_count = m.sb.mnt_count.wrapping_add(1);
            m.sb.mtime = opts.time.lo();
            m.write_super()?;
            m.disk.barrier()?;
        }
        Ok(m)
    }

    /// Commits everything, marks the file system clean and hands the device
    /// back.
    pub fn unmount(mut self) -> Result<D> {
        if !self.read_only {
            self.sync()?;
            self.sb.state |= STATE_VALID;
            self.write_super()?;
            self.disk.sync()?;
        }
        Ok(self.disk.dev)
    }

    /// Makes everything written so far durable: frees are committed to the
    /// bitmaps, the superblock's totals written, and the device synced.
    pub fn sync(&mut self) -> Result<()> {
        if !self.read_only {
            self.commit_frees()?;
            self.sb.wtime = self.now.lo();
            self.write_super()?;
        }
        self.disk.sync()
    }

    fn write_super(&mut self) -> Result<()> {
        let (block, off) = self.sb.location();
        let sb = &self.sb;
        self.disk.write_part(block, off..off + SUPERBLOCK_SIZE, &mut |b| {
            sb.encode(&mut b[off..off + SUPERBLOCK_SIZE])
        })
    }

    pub fn block_size(&self) -> u32 {
        self.sb.block_size
    }

    /// The device, for a caller that moves mapped data itself.
    pub fn device(&mut self) -> &mut D {
        &mut self.disk.dev
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    pub fn inodes_count(&self) -> u32 {
        self.sb.inodes_count
    }

    /// Whether directory entries carry the file type.
    pub fn has_filetype(&self) -> bool {
        self.sb.has_filetype()
    }

    /// The time stamped on every change from now on.
    pub fn set_time(&mut self, t: Timestamp) {
        self.now = t;
    }

    pub fn now(&self) -> Timestamp {
        self.now
    }

    pub fn max_file_size(&self) -> u64 {
        self.max_size
    }

    pub fn stats(&self) -> Stats {
        self.disk.stats
    }

    /// Orders the writes so far before every later one (see
    /// [`BlockDevice::barrier`]).
    pub fn barrier(&mut self) -> Result<()> {
        self.disk.barrier()
    }

    pub(crate) fn writable(&self) -> Result<()> {
        if self.read_only { Err(Errno::EROFS) } else { Ok(()) }
    }

    pub fn statfs(&self) -> StatFs {
        let free_blocks = self.sb.free_blocks as u64 + self.pending.blocks;
        let free_inodes = self.sb.free_inodes as u64 + self.pending.inodes.len() as u64;
        let mut fsid = 0u64;
        for (i, b) in self.sb.uuid.iter().enumerate() {
            fsid ^= (*b as u64) << (8 * (i % 8));
        }
        // As Linux counts it: the blocks of the superblock copies, the
        // descriptors, the bitmaps and the inode tables are not space for
        // files (the blocks reserved for the descriptors' growth are).
        let sb = &self.sb;
        let copies = (0..sb.groups).filter(|&g| sb.group_has_super(g)).count() as u64;
        let overhead = sb.first_data_block as u64
            + copies * (1 + sb.gdt_blocks as u64)
            + sb.groups as u64 * (2 + sb.inode_table_blocks as u64);
        StatFs {
            block_size: self.sb.block_size,
            blocks: self.sb.blocks_count as u64 - overhead,
            free_blocks,
            available_blocks: free_blocks.saturating_sub(self.sb.r_blocks_count as u64),
            inodes: self.sb.inodes_count as u64,
            free_inodes,
            name_max: crate::disk::dirent::NAME_MAX as u32,
            fsid,
        }
    }

    /// Where inode `ino` lives: its block and byte offset there.
    fn locate(&self, ino: u32) -> Result<(u64, usize)> {
        if ino == 0 || ino > self.sb.inodes_count {
            return Err(Errno::EIO);
        }
        let ipg = self.sb.inodes_per_group;
        let gd = &self.groups[((ino - 1) / ipg) as usize];
        if !gd.valid {
            return Err(Errno::EIO);
        }
        let byte = ((ino - 1) % ipg) as u64 * self.sb.inode_size as u64;
        let bs = self.sb.block_size as u64;
        Ok((gd.inode_table as u64 + byte / bs, (byte % bs) as usize))
    }

    fn cache_slot(ino: u32) -> usize {
        ino as usize % CACHED_INODES
    }

    /// Reads inode `ino`, whatever state it is in.
    pub fn get(&mut self, ino: u32) -> Result<Inode> {
        if let Some((i, inode)) = &self.cache[Self::cache_slot(ino)]
            && *i == ino
        {
            return Ok(inode.clone());
        }
        let (block, off) = self.locate(ino)?;
        let isz = self.sb.inode_size as usize;
        let mut inode = Inode::default();
        self.disk
            .read(block, &mut |b| inode = Inode::decode(&b[off..off + isz]))?;
        self.cache[Self::cache_slot(ino)] = Some((ino, inode.clone()));
        Ok(inode)
    }

    /// Writes inode `ino`'s fields back.
    pub(crate) fn put(&mut self, ino: u32, inode: &Inode) -> Result<()> {
        self.writable()?;
        let (block, off) = self.locate(ino)?;
        let isz = self.sb.inode_size as usize;
        self.disk
            .write_part(block, off..off + isz, &mut |b| inode.encode(&mut b[off..off + isz]))?;
        self.cache[Self::cache_slot(ino)] = Some((ino, inode.clone()));
        if !self.changed.contains(&ino) {
            if self.changed.len() < CHANGED_MAX {
                self.changed.push(ino);
            } else {
                self.changed_overflow = true;
            }
        }
        Ok(())
    }

    /// The inodes written (their attributes changed) since the last
    /// `forget_changed`, and whether others were too (too many to list).
    pub fn changed(&self) -> (&[u32], bool) {
        (&self.changed, self.changed_overflow)
    }

    pub fn forget_changed(&mut self) {
        self.changed.clear();
        self.changed_overflow = false;
    }

    /// Checks that an inode in use is one the library can work on safely:
    /// a known type, no ext4-only flags, and a size its kind allows.
    pub fn check(&self, inode: &Inode) -> Result<()> {
        let kind = inode.kind().ok_or(Errno::EIO)?;
        if inode.flags & FLAGS_FOREIGN != 0 {
            return Err(Errno::EIO);
        }
        let bs = self.sb.block_size as u64;
        let ok = match kind {
            FileType::Directory => {
                let held = inode.sectors as u64 / (bs / 512);
                inode.size > 0
                    && inode.size.is_multiple_of(bs)
                    && inode.size / bs <= held
                    && inode.size / bs <= self.sb.blocks_count as u64
            }
            FileType::Symlink => {
                inode.size > 0
                    && if self.is_fast_symlink(inode) {
                        inode.size < 60
                    } else {
                        inode.size < bs
                    }
            }
            FileType::Regular => inode.size <= self.max_size,
            _ => true,
        };
        if ok { Ok(()) } else { Err(Errno::EIO) }
    }

    /// A fast symlink keeps its target in the block pointers; Linux tells
    /// it by its holding no block besides an attribute block.
    pub fn is_fast_symlink(&self, inode: &Inode) -> bool {
        let acl = if inode.file_acl != 0 {
            self.sb.block_size / 512
        } else {
            0
        };
        inode.sectors == acl
    }

    /// Allocates an inode near `parent` and writes its initial state.
    ///
    /// When every other inode of its block is free (and none was freed
    /// since mount), the block is written whole, the other inodes zeroed,
    /// without being read first: a create then never waits for the disk
    /// for the inode table (Linux's ext4 does the same, trusting the
    /// bitmap, in `__ext4_get_inode_loc`). A zeroed inode is what mke2fs
    /// leaves and what e2fsck reads as unused.
    pub fn create(&mut self, parent: u32, new: &NewInode) -> Result<(u32, Inode)> {
        self.writable()?;
        let kind = FileType::from_mode(new.mode).ok_or(Errno::EINVAL)?;
        let (ino, unread) = self.alloc_inode(parent, kind == FileType::Directory)?;
        let (block, off) = self.locate(ino)?;
        let isz = self.sb.inode_size as usize;
        let mut inode = Inode {
            mode: new.mode,
            uid: new.uid,
            gid: new.gid,
            atime: self.now,
            ctime: self.now,
            mtime: self.now,
            links: new.links,
            dtime: if new.links == 0 { self.now.lo().max(1) } else { 0 },
            extra_isize: if isz > 128 { self.sb.extra_isize } else { 0 },
            ..Inode::default()
        };
        if let Some((major, minor)) = new.rdev {
            encode_rdev(&mut inode.block, major, minor);
        }
        let now = self.now;
        let inode_ref = &mut inode;
        let mut init = |b: &mut [u8]| {
            let raw = &mut b[off..off + isz];
            // The generation of the slot's previous inode, plus one: a
            // handle to that inode no longer matches.
            inode_ref.generation = Inode::decode(raw).generation.wrapping_add(1);
            raw.fill(0);
            inode_ref.encode(raw);
            Inode::encode_crtime(raw, inode_ref.extra_isize, now);
        };
        if unread {
            self.disk.fill(block, &mut |b| {
                b.fill(0);
                init(b)
            })?;
            // Copies of the block's other (free) inodes now differ from it.
            let per_block = (self.sb.block_size / self.sb.inode_size).max(1);
            let first = ino - (ino - 1) % self.sb.inodes_per_group % per_block;
            for slot in self.cache.iter_mut() {
                if slot
                    .as_ref()
                    .is_some_and(|(i, _)| (first..first + per_block).contains(i))
                {
                    *slot = None;
                }
            }
        } else {
            self.disk.write_part(block, off..off + isz, &mut init)?;
        }
        self.cache[Self::cache_slot(ino)] = Some((ino, inode.clone()));
        Ok((ino, inode))
    }

    /// Frees an inode with no links left: its blocks, its attribute block,
    /// then the inode itself. The frees take effect at the next commit
    /// (see [`InodeManager::sync`]).
    pub fn release(&mut self, ino: u32) -> Result<()> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        let mut result = Ok(());
        let is_fast = inode.kind() == Some(FileType::Symlink) && self.is_fast_symlink(&inode);
        let has_blocks = matches!(
            inode.kind(),
            Some(FileType::Regular | FileType::Directory | FileType::Symlink)
        );
        if has_blocks && !is_fast {
            result = self.free_blocks_from(&mut inode, 0);
        }
        if inode.file_acl != 0 {
            let r = self.release_xattr_block(&mut inode);
            result = result.and(r);
        }
        if !has_blocks || is_fast {
            inode.block = [0; crate::disk::inode::N_BLOCKS];
        }
        inode.size = 0;
        inode.links = 0;
        // e2fsck reads a zero dtime on a deleted inode as damage, and a
        // small one as an orphan list entry: the time must be real.
        inode.dtime = self.now.lo().max(1);
        self.put(ino, &inode)?;
        self.free_inode_later(ino, inode.is_dir());
        result
    }

    /// Drops the inode's reference to its extended-attribute block, freeing
    /// the block with the last reference.
    fn release_xattr_block(&mut self, inode: &mut Inode) -> Result<()> {
        const MAGIC: u32 = 0xea02_0000;
        let block = inode.file_acl as u64;
        inode.file_acl = 0;
        inode.sectors = inode.sectors.saturating_sub(self.sb.block_size / 512);
        if !self.block_ok(block) {
            self.disk.stats.inconsistencies += 1;
            return Err(Errno::EIO);
        }
        let mut refs = None;
        self.disk.write(block, &mut |b| {
            if crate::disk::u32_at(b, 0) == MAGIC {
                let r = crate::disk::u32_at(b, 4);
                if r > 1 {
                    crate::disk::put_u32(b, 4, r - 1);
                }
                refs = Some(r);
            }
        })?;
        match refs {
            Some(1) | Some(0) => {
                self.free_block_later(block);
                Ok(())
            }
            Some(_) => Ok(()),
            None => {
                self.disk.stats.inconsistencies += 1;
                Err(Errno::EIO)
            }
        }
    }

    /// Applies attribute changes and writes the inode.
    pub fn change(&mut self, ino: u32, c: &Change) -> Result<Inode> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        if let Some(p) = c.perm {
            inode.mode = (inode.mode & 0xf000) | (p & 0o7777);
        }
        if let Some(u) = c.uid {
            inode.uid = u;
        }
        if let Some(g) = c.gid {
            inode.gid = g;
        }
        if let Some(l) = c.links {
            inode.links = l;
            // An inode with no links reads as deleted to e2fsck, which
            // wants a (real) deletion time on it; one with links has none.
            inode.dtime = if l == 0 { self.now.lo().max(1) } else { 0 };
        }
        if let Some(t) = c.atime {
            inode.atime = t;
        }
        if let Some(t) = c.mtime {
            inode.mtime = t;
        }
        if let Some(t) = c.ctime {
            inode.ctime = t;
        }
        inode.flags &= !c.clear_flags;
        self.put(ino, &inode)?;
        Ok(inode)
    }
}

impl<D: BlockDevice> InodeManager<D> {
    /// Turns off a directory's hash index before its entries change, as
    /// Linux's ext2 does: the entries stay where they are and read as a
    /// plain linear directory. The flag goes to disk first, behind a
    /// barrier, so a crash never leaves an index that misses an entry.
    pub fn drop_index(&mut self, ino: u32) -> Result<()> {
        let inode = self.get(ino)?;
        if inode.flags & FLAG_INDEX != 0 {
            self.change(
                ino,
                &Change {
                    clear_flags: FLAG_INDEX,
                    ..Change::default()
                },
            )?;
            self.disk.barrier()?;
        }
        Ok(())
    }
}

/// A device number in the block pointers, as Linux writes it: the old
/// 16-bit form in the first pointer when it fits, else the new 32-bit form
/// in the second.
fn encode_rdev(block: &mut [u32], major: u32, minor: u32) {
    if major < 256 && minor < 256 {
        block[0] = (major << 8) | minor;
    } else {
        block[1] = (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & !0xff) << 12);
    }
}

/// The device number of a device file.
pub fn decode_rdev(inode: &Inode) -> (u32, u32) {
    if inode.block[0] != 0 {
        let d = inode.block[0];
        ((d >> 8) & 0xff, d & 0xff)
    } else {
        let d = inode.block[1];
        ((d >> 8) & 0xfff, (d & 0xff) | ((d >> 12) & 0xfff00))
    }
}

/// The largest file the block map can address and `i_blocks` (32 bits of
/// 512-byte units) can count.
fn max_file_size(sb: &Superblock, ptrs: u64) -> u64 {
    let bs = sb.block_size as u64;
    let addressable = 12 + ptrs + ptrs * ptrs + ptrs * ptrs * ptrs;
    let countable = u32::MAX as u64 / (bs / 512);
    let limit = addressable.min(countable) * bs;
    if sb.rev_level == 0 {
        limit.min(i32::MAX as u64)
    } else {
        limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_old_and_new() {
        for (major, minor) in [(1, 3), (8, 17), (255, 255), (259, 65537), (4095, 1 << 19)] {
            let mut inode = Inode::default();
            encode_rdev(&mut inode.block, major, minor);
            assert_eq!(decode_rdev(&inode), (major, minor));
        }
    }

    #[test]
    fn a_device_that_is_not_ext2_is_refused() {
        let dev = crate::MemDevice::zeroed(1 << 20);
        assert_eq!(
            InodeManager::mount(dev, MountOptions::default()).err(),
            Some(Errno::EINVAL)
        );
        assert_eq!(
            InodeManager::mount(crate::MemDevice::zeroed(100), MountOptions::default()).err(),
            Some(Errno::EIO)
        );
    }
}
