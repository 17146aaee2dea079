//! The file manager (seed 003's file process): names, directories, links
//! and open files, on top of the inode manager. It reaches the disk only
//! through [`InodeManager`]'s public methods.
//!
//! Clients name files by [`Handle`]: the inode number and the generation
//! the inode had when the handle was made. An inode freed and reused gets a
//! new generation, so an old handle is refused with `ESTALE` rather than
//! reaching someone else's file.

mod dir;
mod exchange;
mod names;
mod ops;
mod path;
mod unnamed;

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

pub use self::dir::DirEntry;
pub use self::ops::{Owner, SetAttr};
pub use self::path::{MAX_SYMLINKS, Search};
use crate::device::BlockDevice;
use crate::disk::inode::{FileType, Inode, ROOT_INO};
use crate::error::{Errno, Result};
use crate::inode::{Change, InodeManager, MountOptions, Segment, StatFs, Stats, decode_rdev};
use crate::time::Timestamp;

/// A client's name for a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle {
    pub ino: u32,
    pub generation: u32,
}

/// What `stat` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub ino: u32,
    pub generation: u32,
    pub kind: FileType,
    /// Type and permission bits, as in `st_mode`.
    pub mode: u16,
    pub links: u16,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Space held, data and indirect blocks, in 512-byte units.
    pub blocks: u64,
    pub block_size: u32,
    pub atime: Timestamp,
    pub mtime: Timestamp,
    pub ctime: Timestamp,
    /// Major and minor number of a device file.
    pub rdev: (u32, u32),
}

/// A day: with relatime, reading updates the access time at most this often
/// (or when it is older than the modification or change time).
const RELATIME_SECS: i64 = 24 * 3600;

pub struct FileManager<D> {
    inodes: InodeManager<D>,
    /// Open counts, for inodes some client has opened.
    open: BTreeMap<u32, u32>,
    /// Inodes whose last link went while they were open: freed at the
    /// last close.
    orphans: BTreeSet<u32>,
    /// Unnamed files (`unnamed.rs`) that may still get a first name.
    linkable: BTreeSet<u32>,
    names: names::NameCache,
}

impl<D: BlockDevice> FileManager<D> {
    /// Mounts the file system on `dev` (see [`InodeManager::mount`]).
    pub fn mount(dev: D, opts: MountOptions) -> Result<FileManager<D>> {
        Ok(FileManager {
            inodes: InodeManager::mount(dev, opts)?,
            open: BTreeMap::new(),
            orphans: BTreeSet::new(),
            linkable: BTreeSet::new(),
            names: names::NameCache::default(),
        })
    }

    /// Frees the orphans, commits everything and marks the file system
    /// clean.
    pub fn unmount(mut self) -> Result<D> {
        for ino in core::mem::take(&mut self.orphans) {
            self.names.drop_dir(ino);
            self.inodes.release(ino)?;
        }
        self.inodes.unmount()
    }

    /// The inode manager below, for a caller that uses its interface
    /// directly (and for tests).
    pub fn inodes(&mut self) -> &mut InodeManager<D> {
        &mut self.inodes
    }

    /// The time stamped on every change from now on (the library has no
    /// clock).
    pub fn set_time(&mut self, t: Timestamp) {
        self.inodes.set_time(t);
    }

    pub fn root(&mut self) -> Result<Handle> {
        let inode = self.inodes.get(ROOT_INO)?;
        Ok(Handle {
            ino: ROOT_INO,
            generation: inode.generation,
        })
    }

    /// The inode behind a handle, if the handle is still good.
    pub(crate) fn inode(&mut self, h: Handle) -> Result<Inode> {
        if h.ino == 0 || h.ino > self.inodes.inodes_count() {
            return Err(Errno::ESTALE);
        }
        let inode = self.inodes.get(h.ino)?;
        if inode.generation != h.generation || (inode.links == 0 && !self.orphans.contains(&h.ino)) {
            return Err(Errno::ESTALE);
        }
        self.inodes.check(&inode)?;
        Ok(inode)
    }

    /// A handle's inode, which must be a directory.
    pub(crate) fn dir_inode(&mut self, h: Handle) -> Result<Inode> {
        let inode = self.inode(h)?;
        if !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(inode)
    }

    /// A directory that may still take and give names: not one removed
    /// while open (its inode lives on with no links), which, as on Linux,
    /// has no entries to find, list or add (`ENOENT`).
    pub(crate) fn live_dir(&mut self, h: Handle) -> Result<Inode> {
        let inode = self.dir_inode(h)?;
        if inode.links == 0 {
            return Err(Errno::ENOENT);
        }
        Ok(inode)
    }

    /// A handle for inode `ino`, found in a directory: a live inode the
    /// library can use, or `EIO`.
    pub(crate) fn handle_of(&mut self, ino: u32) -> Result<(Handle, Inode)> {
        let inode = self.inodes.get(ino)?;
        if inode.links == 0 {
            return Err(Errno::EIO);
        }
        self.inodes.check(&inode)?;
        Ok((
            Handle {
                ino,
                generation: inode.generation,
            },
            inode,
        ))
    }

    pub fn stat(&mut self, h: Handle) -> Result<Stat> {
        let inode = self.inode(h)?;
        Ok(self.stat_of(h, &inode))
    }

    fn stat_of(&self, h: Handle, inode: &Inode) -> Stat {
        let kind = inode.kind().unwrap_or(FileType::Regular);
        let rdev = match kind {
            FileType::CharDevice | FileType::BlockDevice => decode_rdev(inode),
            _ => (0, 0),
        };
        Stat {
            ino: h.ino,
            generation: h.generation,
            kind,
            mode: inode.mode,
            links: inode.links,
            uid: inode.uid,
            gid: inode.gid,
            size: inode.size,
            blocks: inode.sectors as u64,
            block_size: self.inodes.block_size(),
            atime: inode.atime,
            mtime: inode.mtime,
            ctime: inode.ctime,
            rdev,
        }
    }

    /// Notes that a client opened the file: if its last link goes while
    /// it is open, the inode lives on until the last close.
    pub fn open(&mut self, h: Handle) -> Result<()> {
        self.inode(h)?;
        *self.open.entry(h.ino).or_insert(0) += 1;
        Ok(())
    }

    pub fn close(&mut self, h: Handle) -> Result<()> {
        let count = self.open.get_mut(&h.ino).ok_or(Errno::EINVAL)?;
        *count -= 1;
        if *count == 0 {
            self.open.remove(&h.ino);
            self.linkable.remove(&h.ino);
            if self.orphans.remove(&h.ino) {
                self.names.drop_dir(h.ino);
                self.inodes.release(h.ino)?;
            }
        }
        Ok(())
    }

    /// A regular file's inode, for reading or writing its data.
    fn file_inode(&mut self, h: Handle) -> Result<Inode> {
        let inode = self.inode(h)?;
        match inode.kind() {
            Some(FileType::Regular) => Ok(inode),
            Some(FileType::Directory) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Reads from `off` into `buf`; returns the bytes read (0 at the end).
    pub fn read(&mut self, h: Handle, off: u64, buf: &mut [u8]) -> Result<usize> {
        let inode = self.file_inode(h)?;
        let n = self.inodes.read(h.ino, off, buf)?;
        self.accessed(h.ino, &inode)?;
        Ok(n)
    }

    /// Updates the access time the way Linux's default `relatime` does.
    fn accessed(&mut self, ino: u32, inode: &Inode) -> Result<()> {
        let now = self.inodes.now();
        let due =
            inode.atime <= inode.mtime || inode.atime <= inode.ctime || now.secs - inode.atime.secs >= RELATIME_SECS;
        if due && !self.inodes.read_only() && now != inode.atime {
            self.inodes.change(
                ino,
                &Change {
                    atime: Some(now),
                    ..Change::default()
                },
            )?;
        }
        Ok(())
    }

    /// Writes `data` at `off`; returns the bytes written, fewer than asked
    /// only when the disk filled up (see [`InodeManager::write`]).
    pub fn write(&mut self, h: Handle, off: u64, data: &[u8]) -> Result<usize> {
        self.file_inode(h)?;
        self.inodes.write(h.ino, off, data)
    }

    /// Writes `data` at the end of the file; returns where it went and how
    /// much was written.
    pub fn append(&mut self, h: Handle, data: &[u8]) -> Result<(u64, usize)> {
        let inode = self.file_inode(h)?;
        let n = self.inodes.write(h.ino, inode.size, data)?;
        Ok((inode.size, n))
    }

    pub fn truncate(&mut self, h: Handle, size: u64) -> Result<()> {
        self.file_inode(h)?;
        self.inodes.truncate(h.ino, size)
    }

    /// Allocates the blocks of bytes `off..off + len` ahead (fallocate; see
    /// [`InodeManager::allocate`]).
    pub fn allocate(&mut self, h: Handle, off: u64, len: u64, keep_size: bool) -> Result<()> {
        self.inode(h)?;
        self.inodes.allocate(h.ino, off, len, keep_size)
    }

    /// Frees the blocks of bytes `off..off + len`, which then read as zeros
    /// (fallocate's punch; see [`InodeManager::punch_hole`]).
    pub fn punch_hole(&mut self, h: Handle, off: u64, len: u64) -> Result<()> {
        self.inode(h)?;
        self.inodes.punch_hole(h.ino, off, len)
    }

    /// lseek's SEEK_DATA or SEEK_HOLE (see
    /// [`InodeManager::seek_data_or_hole`]).
    pub fn seek_data_or_hole(&mut self, h: Handle, off: u64, data: bool) -> Result<Option<u64>> {
        self.inode(h)?;
        self.inodes.seek_data_or_hole(h.ino, off, data)
    }

    /// The device ranges behind bytes `off..off + len` of a file, for a
    /// server that hands the blocks to the reader itself (no copy here).
    pub fn map_read(&mut self, h: Handle, off: u64, len: u64) -> Result<Vec<Segment>> {
        self.map_read_as(h, off, len, true)
    }

    /// `map_read`, with the access time left alone unless `touch` (a
    /// reader that opened the file with Linux's O_NOATIME).
    pub fn map_read_as(&mut self, h: Handle, off: u64, len: u64, touch: bool) -> Result<Vec<Segment>> {
        let inode = self.file_inode(h)?;
        let segments = self.inodes.map(h.ino, off, len)?;
        if touch {
            self.accessed(h.ino, &inode)?;
        }
        Ok(segments)
    }

    /// Allocates the blocks behind bytes `off..off + len`; the caller
    /// writes into them, then calls [`FileManager::commit_write`].
    pub fn map_write(&mut self, h: Handle, off: u64, len: u64) -> Result<Vec<Segment>> {
        self.file_inode(h)?;
        self.inodes.map_write(h.ino, off, len)
    }

    pub fn commit_write(&mut self, h: Handle, off: u64, len: u64) -> Result<()> {
        self.file_inode(h)?;
        self.inodes.commit_write(h.ino, off, len)
    }

    pub fn statfs(&self) -> StatFs {
        self.inodes.statfs()
    }

    /// Makes everything written so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.inodes.sync()
    }

    /// Makes the file durable. The library does not track which blocks
    /// belong to which file, so this syncs the whole file system.
    pub fn fsync(&mut self, h: Handle) -> Result<()> {
        self.inode(h)?;
        self.inodes.sync()
    }

    pub fn stats(&self) -> Stats {
        self.inodes.stats()
    }

    /// The value of extended attribute `name` (prefix included).
    pub fn xattr_get(&mut self, h: Handle, name: &[u8]) -> Result<Vec<u8>> {
        self.inode(h)?;
        self.inodes.xattr_get(h.ino, name)
    }

    /// The full names of the file's extended attributes, in the block's
    /// order; an entry of a namespace the library does not serve is
    /// left out, as Linux leaves out one it has no handler for.
    pub fn xattr_list(&mut self, h: Handle) -> Result<Vec<Vec<u8>>> {
        self.inode(h)?;
        Ok(self
            .inodes
            .xattrs(h.ino)?
            .iter()
            .filter_map(|a| a.full_name())
            .collect())
    }

    /// Sets extended attribute `name`, or removes it (`value` `None`);
    /// see [`InodeManager::xattr_set`] for `flags` and the errors.
    pub fn xattr_set(&mut self, h: Handle, name: &[u8], value: Option<&[u8]>, flags: u32) -> Result<()> {
        self.inode(h)?;
        self.inodes.xattr_set(h.ino, name, value, flags)
    }
}
