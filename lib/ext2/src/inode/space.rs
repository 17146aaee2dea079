//! Space allocated ahead and given back (Linux's `fallocate`): the blocks
//! of a byte range allocated without data, and the blocks of a range
//! freed, leaving a hole.
//!
//! ext2 has no unwritten extents, so a block allocated ahead is written
//! with zeros when it is allocated: it then reads as zeros like a hole,
//! but holds its place on disk (the free count drops, `st_blocks` grows).

use super::InodeManager;
use super::data::Source;
use crate::device::BlockDevice;
use crate::disk::inode::{FileType, Inode, N_DIRECT};
use crate::error::{Errno, Result};

impl<D: BlockDevice> InodeManager<D> {
    /// Allocates the blocks behind bytes `off..off + len` of a regular
    /// file. Without `keep_size` the file grows to cover them. The blocks
    /// already there keep their bytes. If the disk fills part way, what
    /// was allocated stays (the size covers it) and the call fails with
    /// `ENOSPC`: no byte of the file is lost either way.
    pub fn allocate(&mut self, ino: u32, off: u64, len: u64, keep_size: bool) -> Result<()> {
        self.writable()?;
        let mut inode = self.regular(ino)?;
        let end = off.checked_add(len).ok_or(Errno::EFBIG)?;
        if len == 0 || end > self.max_file_size() {
            return Err(if len == 0 { Errno::EINVAL } else { Errno::EFBIG });
        }
        // The old last block's bytes past the end show once the size
        // grows over them.
        if !keep_size {
            self.zero_tail(&inode, end)?;
        }
        let mut done = 0;
        let result = self.fill_range(ino, &mut inode, off, end, Source::Zeros, &mut done);
        if !keep_size && done > 0 {
            self.grow_to(&mut inode, off + done);
        }
        inode.ctime = self.now;
        // Even a failed allocation may have linked blocks: the inode says so.
        self.put(ino, &inode)?;
        match result {
            Ok(()) if done >= end - off => Ok(()),
            Ok(()) => Err(Errno::ENOSPC),
            Err(e) => Err(e),
        }
    }

    /// Frees the blocks bytes `off..off + len` of a regular file cover
    /// whole and zeroes the parts of the blocks it covers in part: the
    /// range reads as zeros and holds no space. The size stays. Indirect
    /// blocks stay too, their pointers cleared (they may serve the range
    /// again).
    pub fn punch_hole(&mut self, ino: u32, off: u64, len: u64) -> Result<()> {
        self.writable()?;
        let mut inode = self.regular(ino)?;
        let end = off.saturating_add(len).min(self.max_file_size());
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        if off >= end {
            return Ok(());
        }
        let bs = self.block_size() as u64;
        let (first, last) = (off.div_ceil(bs), end / bs);
        if first > last {
            // Inside one block.
            self.zero_part(&inode, off, end)?;
        } else {
            self.zero_part(&inode, off, first * bs)?;
            self.zero_part(&inode, last * bs, end)?;
            self.free_range(&mut inode, first, last)?;
        }
        inode.mtime = self.now;
        inode.ctime = self.now;
        self.put(ino, &inode)?;
        self.maybe_commit()
    }

    fn regular(&mut self, ino: u32) -> Result<Inode> {
        let inode = self.get(ino)?;
        match inode.kind() {
            Some(FileType::Regular) => Ok(inode),
            Some(FileType::Directory) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Zeroes bytes `from..to` (within one block) if a block holds them.
    fn zero_part(&mut self, inode: &Inode, from: u64, to: u64) -> Result<()> {
        if from >= to {
            return Ok(());
        }
        let bs = self.block_size() as u64;
        if let (Some(p), _) = self.lookup_run(inode, from / bs, 1)? {
            let (a, b) = ((from % bs) as usize, (from % bs + (to - from)) as usize);
            self.disk.write(p, &mut |blk| blk[a..b].fill(0))?;
        }
        Ok(())
    }

    /// Frees the data blocks of logical blocks `first..last`, run by run
    /// (a run never spans two pointer blocks): each run's pointers are
    /// cleared in one write, then its blocks freed at the next commit.
    fn free_range(&mut self, inode: &mut Inode, first: u64, last: u64) -> Result<()> {
        let per_block = self.block_size() / 512;
        let mut l = first;
        while l < last {
            let (phys, run) = match self.lookup_run(inode, l, last - l) {
                Ok(r) => r,
                // Past the largest file: nothing there.
                Err(Errno::EFBIG) => return Ok(()),
                Err(e) => return Err(e),
            };
            let run = run.max(1).min(last - l);
            if let Some(p) = phys {
                self.clear_pointers(inode, l, run)?;
                for k in 0..run {
                    self.free_block_later(p + k);
                }
                inode.sectors = inode.sectors.saturating_sub(run as u32 * per_block);
            }
            l += run;
        }
        Ok(())
    }

    /// Clears the pointers of logical blocks `l..l + n`, which one pointer
    /// block (or the inode) holds and which all point somewhere.
    fn clear_pointers(&mut self, inode: &mut Inode, l: u64, n: u64) -> Result<()> {
        if l < N_DIRECT as u64 {
            for k in l..l + n {
                inode.block[k as usize] = 0;
            }
            return Ok(());
        }
        // The path exists (the blocks are mapped), so this allocates
        // nothing: it finds the pointer block.
        let goal = 0;
        match self.ensure_path(inode, l, goal)? {
            (Some((block, i)), room) if room >= n => self.disk.write(block, &mut |b| {
                b[4 * i..4 * (i + n as usize)].fill(0);
            }),
            _ => Err(Errno::EIO),
        }
    }
}

impl<D: BlockDevice> InodeManager<D> {
    /// lseek's SEEK_DATA (`data`) or SEEK_HOLE from `off` of a file of
    /// `size` bytes: the first byte at or after `off` a block holds (or a
    /// hole holds, the end of the file counting as one). None (lseek's
    /// ENXIO) at or past the end, or for data when only holes follow.
    pub fn seek_data_or_hole(&mut self, ino: u32, off: u64, data: bool) -> Result<Option<u64>> {
        let inode = self.get(ino)?;
        let size = inode.size;
        if off >= size {
            return Ok(None);
        }
        let bs = self.block_size() as u64;
        let last = (size - 1) / bs;
        let mut l = off / bs;
        while l <= last {
            let (phys, run) = self.lookup_run(&inode, l, last - l + 1)?;
            if phys.is_some() == data {
                return Ok(Some((l * bs).max(off)));
            }
            l += run.max(1);
        }
        Ok(if data { None } else { Some(size) })
    }
}
