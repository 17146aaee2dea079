//! The one door to the block device: every block the library touches goes
//! through here, so the counts a server reports are complete.

use crate::device::BlockDevice;
use crate::error::Result;

/// What went through the device and through the library's hands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Blocks lent for reading.
    pub blocks_read: u64,
    /// Blocks lent for writing (changed in part or overwritten).
    pub blocks_written: u64,
    /// Bytes of file data the library copied between a device block and a
    /// caller's buffer (`read` and `write`; the mapped path copies none).
    pub bytes_copied: u64,
    pub barriers: u64,
    pub syncs: u64,
    /// Inconsistencies met and stepped around: a block freed twice, a
    /// pointer out of range met while freeing, an inode marked free in the
    /// bitmap but in use.
    pub inconsistencies: u64,
}

pub(crate) struct Disk<D> {
    pub dev: D,
    pub block_size: usize,
    pub stats: Stats,
}

impl<D: BlockDevice> Disk<D> {
    pub fn read(&mut self, n: u64, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.stats.blocks_read += 1;
        self.dev.read_block(n, self.block_size, f)
    }

    pub fn write(&mut self, n: u64, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.stats.blocks_written += 1;
        self.dev.write_block(n, self.block_size, f)
    }

    /// `write`, for a closure that changes bytes `part` of the block only.
    pub fn write_part(&mut self, n: u64, part: core::ops::Range<usize>, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.stats.blocks_written += 1;
        self.dev.write_part(n, self.block_size, part, f)
    }

    pub fn fill(&mut self, n: u64, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.stats.blocks_written += 1;
        self.dev.fill_block(n, self.block_size, f)
    }

    pub fn barrier(&mut self) -> Result<()> {
        self.stats.barriers += 1;
        self.dev.barrier()
    }

    pub fn sync(&mut self) -> Result<()> {
        self.stats.syncs += 1;
        self.dev.sync()
    }

    /// Reads the little-endian u32 at index `i` of block `n`.
    pub fn read_u32(&mut self, n: u64, i: usize) -> Result<u32> {
        let mut v = 0;
        self.read(n, &mut |b| v = crate::disk::u32_at(b, 4 * i))?;
        Ok(v)
    }

    /// Writes the little-endian u32 at index `i` of block `n`.
    pub fn write_u32(&mut self, n: u64, i: usize, v: u32) -> Result<()> {
        self.write_part(n, 4 * i..4 * i + 4, &mut |b| crate::disk::put_u32(b, 4 * i, v))
    }
}
