//! A file's bytes: read and write through the caller's buffer, or mapped
//! to device blocks for a caller that moves the data itself (the copy-less
//! path), and the blocks of directories lent out whole.

use alloc::vec::Vec;

use super::InodeManager;
use crate::device::BlockDevice;
use crate::disk::inode::{FileType, Inode, N_BLOCKS};
use crate::disk::superblock::RO_COMPAT_LARGE_FILE;
use crate::error::{Errno, Result};

/// A piece of a file's byte range: `len` bytes contiguous on the device
/// starting at byte `offset` of block `block`, or a hole (`None`) that
/// reads as zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub block: Option<u64>,
    pub offset: u32,
    pub len: u64,
}

impl<D: BlockDevice> InodeManager<D> {
    fn bs(&self) -> u64 {
        self.sb.block_size as u64
    }

    /// Reads up to `buf.len()` bytes from `off`, stopping at the end of the
    /// file. Holes read as zeros.
    pub fn read(&mut self, ino: u32, off: u64, buf: &mut [u8]) -> Result<usize> {
        let inode = self.get(ino)?;
        let end = inode.size.min(off.saturating_add(buf.len() as u64));
        if off >= end {
            return Ok(0);
        }
        let bs = self.bs();
        let mut pos = off;
        while pos < end {
            let l = pos / bs;
            let last = (end - 1) / bs;
            let (phys, run) = self.lookup_run(&inode, l, last - l + 1)?;
            let run_end = ((l + run) * bs).min(end);
            let dst = &mut buf[(pos - off) as usize..(run_end - off) as usize];
            match phys {
                None => dst.fill(0),
                Some(first) => {
                    let mut done = 0;
                    for k in 0..run {
                        let at = pos + done as u64;
                        let in_block = (at % bs) as usize;
                        let n = ((bs as usize) - in_block).min(dst.len() - done);
                        let part = &mut dst[done..done + n];
                        self.disk
                            .read(first + k, &mut |b| part.copy_from_slice(&b[in_block..in_block + n]))?;
                        done += n;
                    }
                    self.disk.stats.bytes_copied += done as u64;
                }
            }
            pos = run_end;
        }
        Ok((end - off) as usize)
    }

    /// The device ranges behind bytes `off..off + len` (stopping at the end
    /// of the file), for a caller that reads them itself.
    pub fn map(&mut self, ino: u32, off: u64, len: u64) -> Result<Vec<Segment>> {
        let inode = self.get(ino)?;
        let end = inode.size.min(off.saturating_add(len));
        self.segments(&inode, off, end)
    }

    fn segments(&mut self, inode: &Inode, off: u64, end: u64) -> Result<Vec<Segment>> {
        let bs = self.bs();
        let mut out: Vec<Segment> = Vec::new();
        let mut pos = off;
        while pos < end {
            let l = pos / bs;
            let last = (end - 1) / bs;
            let (phys, run) = self.lookup_run(inode, l, last - l + 1)?;
            let run_end = ((l + run) * bs).min(end);
            let seg = Segment {
                block: phys,
                offset: (pos % bs) as u32,
                len: run_end - pos,
            };
            // Runs that continue each other on the device (or holes that
            // follow holes) make one segment.
            match out.last_mut() {
                Some(prev)
                    if match (prev.block, seg.block) {
                        (None, None) => true,
                        (Some(a), Some(b)) => (a * bs + prev.offset as u64 + prev.len) == b * bs + seg.offset as u64,
                        _ => false,
                    } =>
                {
                    prev.len += seg.len
                }
                _ => out.push(seg),
            }
            pos = run_end;
        }
        Ok(out)
    }

    /// Writes `data` at `off`, allocating blocks for holes and growing the
    /// file. A write that runs out of space part way returns the bytes it
    /// wrote (and `ENOSPC` only if it wrote none).
    pub fn write(&mut self, ino: u32, off: u64, data: &[u8]) -> Result<usize> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        let end = self.check_extent(&inode, off, data.len() as u64)?;
        let mut written = 0;
        let result = self.fill_range(ino, &mut inode, off, end, Source::Bytes(data), &mut written);
        if written > 0 {
            self.grow_to(&mut inode, off + written);
            inode.mtime = self.now;
            inode.ctime = self.now;
        }
        // Even a failed write may have linked blocks: the inode says so.
        self.put(ino, &inode)?;
        match result {
            Err(e) if written == 0 => Err(e),
            _ => Ok(written as usize),
        }
    }

    /// The first half of a write through the copy-less path: allocates the
    /// blocks behind bytes `off..off + len` and returns where they are. The
    /// caller writes the data into those blocks itself, then calls
    /// [`InodeManager::commit_write`]. New blocks the range covers only in
    /// part are zeroed here; blocks it covers whole are left to the caller.
    /// If the disk fills part way, the segments cover the part that has its
    /// blocks (as `write` writes part); `ENOSPC` only if no byte has one.
    pub fn map_write(&mut self, ino: u32, off: u64, len: u64) -> Result<Vec<Segment>> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        let end = self.check_extent(&inode, off, len)?;
        let mut done = 0;
        let result = self.fill_range(ino, &mut inode, off, end, Source::Later, &mut done);
        self.put(ino, &inode)?;
        match result {
            Err(e) if done == 0 => Err(e),
            _ => self.segments(&inode, off, off + done),
        }
    }

    /// The second half of a mapped write: the data is in place; the file
    /// grows to cover it and its times change.
    pub fn commit_write(&mut self, ino: u32, off: u64, len: u64) -> Result<()> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        let end = self.check_extent(&inode, off, len)?;
        self.grow_to(&mut inode, end);
        inode.mtime = self.now;
        inode.ctime = self.now;
        self.put(ino, &inode)
    }

    /// Checks a write of `len` bytes at `off` against the largest file size
    /// and returns where it ends (cut short at the limit, as Linux does).
    pub(super) fn check_extent(&self, inode: &Inode, off: u64, len: u64) -> Result<u64> {
        match inode.kind() {
            Some(FileType::Regular | FileType::Symlink) => {}
            Some(FileType::Directory) => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        if len == 0 {
            return Ok(off);
        }
        if off >= self.max_file_size() {
            return Err(Errno::EFBIG);
        }
        Ok(off.saturating_add(len).min(self.max_file_size()))
    }

    /// Grows the size to `end` if it is beyond it, turning on `large_file`
    /// for a file past 2 GiB as Linux does.
    pub(super) fn grow_to(&mut self, inode: &mut Inode, end: u64) {
        if end > inode.size {
            inode.size = end;
        }
        if inode.size > i32::MAX as u64 && self.sb.ro_compat & RO_COMPAT_LARGE_FILE == 0 {
            self.sb.ro_compat |= RO_COMPAT_LARGE_FILE;
        }
    }

    /// Writes (or, for [`Source::Later`], makes room for) bytes
    /// `off..end`, counting the bytes done in `done`.
    pub(super) fn fill_range(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        off: u64,
        end: u64,
        src: Source,
        done: &mut u64,
    ) -> Result<()> {
        if off >= end {
            return Ok(());
        }
        self.zero_tail(inode, off)?;
        let bs = self.bs();
        let mut goal = self.goal_before(ino, inode, off / bs)?;
        while off + *done < end {
            let l = (off + *done) / bs;
            let (phys, run) = self.lookup_run(inode, l, (end - 1) / bs - l + 1)?;
            match phys {
                Some(first) => {
                    for k in 0..run {
                        let at = off + *done;
                        let in_block = (at % bs) as usize;
                        let n = (bs - in_block as u64).min(end - at) as usize;
                        if let Source::Bytes(data) = src {
                            self.copy_in(first + k, in_block, &data[*done as usize..][..n])?;
                        }
                        *done += n as u64;
                    }
                    goal = first + run;
                }
                None => {
                    let (first, n) = self.fill_hole(inode, l, run, goal, off, end, src, done)?;
                    goal = first + n;
                }
            }
        }
        Ok(())
    }

    /// Fills the hole at logical block `l` (of `run` blocks) as far as one
    /// indirect block's pointers go: the indirect blocks first (they need
    /// room too), then a run of data blocks, their contents, and the
    /// pointers to them in one write. Returns the run allocated.
    #[allow(clippy::too_many_arguments)]
    fn fill_hole(
        &mut self,
        inode: &mut Inode,
        l: u64,
        run: u64,
        goal: u64,
        off: u64,
        end: u64,
        src: Source,
        done: &mut u64,
    ) -> Result<(u64, u64)> {
        let bs = self.bs();
        let (leaf, room) = self.ensure_path(inode, l, goal)?;
        let per_block = self.sb.block_size / 512;
        let want = run.min(room).min((u32::MAX / per_block) as u64) as u32;
        inode.sectors.checked_add(want * per_block).ok_or(Errno::EFBIG)?;
        let (first, n) = self.alloc_blocks(goal, want)?;
        let mut at = off + *done;
        let mut contents = Ok(());
        for k in 0..n as u64 {
            let in_block = (at % bs) as usize;
            let len = (bs - in_block as u64).min(end - at) as usize;
            let step = match src {
                Source::Bytes(data) => {
                    let part = &data[(at - off) as usize..][..len];
                    self.disk.stats.bytes_copied += len as u64;
                    self.disk.fill(first + k, &mut |b| {
                        b[..in_block].fill(0);
                        b[in_block..in_block + len].copy_from_slice(part);
                        b[in_block + len..].fill(0);
                    })
                }
                // A block the caller fills only in part must read as
                // zeros elsewhere.
                Source::Later if len < bs as usize => self.disk.fill(first + k, &mut |b| b.fill(0)),
                Source::Later => Ok(()),
                // Space allocated ahead reads as zeros: ext2 has no
                // unwritten extents to say so without writing them.
                Source::Zeros => self.disk.fill(first + k, &mut |b| b.fill(0)),
            };
            if let Err(e) = step {
                contents = Err(e);
                break;
            }
            at += len as u64;
        }
        if let Err(e) = contents {
            // Nothing points to the run yet.
            self.free_blocks_now(first, n)?;
            return Err(e);
        }
        if inode.kind() != Some(FileType::Regular) {
            // A symlink's block, like a directory's, is metadata: its
            // contents go first.
            self.disk.barrier()?;
        }
        match leaf {
            None => {
                for k in 0..n as usize {
                    inode.block[l as usize + k] = first as u32 + k as u32;
                }
            }
            Some((block, i)) => self.disk.write(block, &mut |b| {
                for k in 0..n as usize {
                    crate::disk::put_u32(b, 4 * (i + k), first as u32 + k as u32);
                }
            })?,
        }
        inode.sectors += n * per_block;
        *done = at - off;
        Ok((first, n as u64))
    }

    /// Copies `src` into an existing block at `in_block`.
    fn copy_in(&mut self, block: u64, in_block: usize, src: &[u8]) -> Result<()> {
        if src.len() == self.bs() as usize {
            self.disk.fill(block, &mut |b| b.copy_from_slice(src))?;
        } else {
            self.disk
                .write(block, &mut |b| b[in_block..in_block + src.len()].copy_from_slice(src))?;
        }
        self.disk.stats.bytes_copied += src.len() as u64;
        Ok(())
    }

    /// Before a file grows past its end, zeroes the rest of its last block,
    /// so that what was beyond the old end reads as zeros.
    pub(super) fn zero_tail(&mut self, inode: &Inode, new_end: u64) -> Result<()> {
        let bs = self.bs();
        if new_end <= inode.size || inode.size.is_multiple_of(bs) {
            return Ok(());
        }
        if let (Some(p), _) = self.lookup_run(inode, inode.size / bs, 1)? {
            let from = (inode.size % bs) as usize;
            self.disk.write(p, &mut |b| b[from..].fill(0))?;
        }
        Ok(())
    }

    /// Where to look for a block for logical block `l`: after the block
    /// before it, else after the inode table of the inode's group.
    fn goal_before(&mut self, ino: u32, inode: &Inode, l: u64) -> Result<u64> {
        if l > 0
            && let (Some(p), _) = self.lookup_run(inode, l - 1, 1)?
        {
            return Ok(p + 1);
        }
        let g = ((ino - 1) / self.sb.inodes_per_group) as usize;
        Ok(self.groups[g].inode_table as u64 + self.sb.inode_table_blocks as u64)
    }

    /// Sets the size: shrinking frees every block past the new end (all
    /// levels of indirect blocks included), growing leaves a hole.
    pub fn truncate(&mut self, ino: u32, size: u64) -> Result<()> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        self.check_extent(&inode, 0, 0)?;
        if size > self.max_file_size() {
            return Err(Errno::EFBIG);
        }
        let mut result = Ok(());
        if size < inode.size {
            result = self.free_blocks_from(&mut inode, size.div_ceil(self.bs()));
        } else if size > inode.size {
            self.zero_tail(&inode, size)?;
        }
        inode.size = size;
        self.grow_to(&mut inode, size);
        inode.mtime = self.now;
        inode.ctime = self.now;
        self.put(ino, &inode)?;
        self.maybe_commit()?;
        result
    }

    /// Lends block `l` of a directory for reading.
    pub fn read_dir_block(&mut self, ino: u32, l: u64, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let block = self.dir_block(ino, l)?;
        self.disk.read(block, f)
    }

    /// Lends block `l` of a directory for changing.
    pub fn update_dir_block(&mut self, ino: u32, l: u64, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.writable()?;
        let block = self.dir_block(ino, l)?;
        self.disk.write(block, f)
    }

    /// Lends block `l` of a directory for changing bytes `part` of it, and
    /// none outside them (see [`BlockDevice::write_part`]).
    pub fn update_dir_part(
        &mut self,
        ino: u32,
        l: u64,
        part: core::ops::Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        self.writable()?;
        let block = self.dir_block(ino, l)?;
        self.disk.write_part(block, part, f)
    }

    fn dir_block(&mut self, ino: u32, l: u64) -> Result<u64> {
        let inode = self.get(ino)?;
        if l >= inode.size / self.bs() {
            return Err(Errno::EIO);
        }
        match self.lookup_run(&inode, l, 1)? {
            (Some(p), _) => Ok(p),
            // Directories have no holes.
            (None, _) => Err(Errno::EIO),
        }
    }

    /// Adds a block at the end of a directory, its contents written by `f`
    /// (whole) before anything points to it. Returns its logical number.
    pub fn append_dir_block(&mut self, ino: u32, f: &mut dyn FnMut(&mut [u8])) -> Result<u64> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        let bs = self.bs();
        let l = inode.size / bs;
        let per_block = self.sb.block_size / 512;
        inode.sectors.checked_add(4 * per_block).ok_or(Errno::EFBIG)?;
        let goal = self.goal_before(ino, &inode, l)?;
        let linked = self.ensure_path(&mut inode, l, goal).and_then(|_| {
            let (block, _) = self.alloc_blocks(goal, 1)?;
            let filled = self.disk.fill(block, f).and_then(|()| {
                self.disk.barrier()?;
                self.set_block(&mut inode, l, block)
            });
            if filled.is_err() {
                self.free_blocks_now(block, 1)?;
            }
            filled
        });
        if linked.is_ok() {
            inode.sectors += per_block;
            inode.size += bs;
        }
        // A new indirect block may be linked even if the rest failed.
        self.put(ino, &inode)?;
        linked.map(|()| l)
    }

    /// Stores a fast symlink's target in the inode itself.
    pub fn write_inline(&mut self, ino: u32, bytes: &[u8]) -> Result<()> {
        self.writable()?;
        let mut inode = self.get(ino)?;
        if bytes.len() >= 4 * N_BLOCKS {
            return Err(Errno::ENAMETOOLONG);
        }
        inode.set_inline(bytes);
        inode.size = bytes.len() as u64;
        self.put(ino, &inode)
    }
}

/// Where a write's bytes come from.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    Bytes(&'a [u8]),
    /// The caller writes them itself after mapping.
    Later,
    /// None: the range's holes get blocks of zeros, the blocks already
    /// there keep their bytes (fallocate).
    Zeros,
}
