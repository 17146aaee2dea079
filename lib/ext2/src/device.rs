//! The block device below the file system (seed 003's buffer process).
//!
//! The file system never keeps a private copy of block data: it borrows a
//! block from the device for the duration of a closure. A block cache
//! implements the trait by handing out its own page; [`MemDevice`] hands out
//! a slice of its vector.
//!
//! `size` is the file system's block size (1024 to 65536 bytes) and block `n`
//! is the bytes `n * size .. (n + 1) * size`. It is the same for every call
//! after mount; only mount's first read, of the superblock, uses block 1 of
//! 1024 bytes.

use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use crate::error::{Errno, Result};

/// Where the file system reads and writes blocks.
pub trait BlockDevice {
    /// Lends block `n` for reading.
    fn read_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&[u8])) -> Result<()>;

    /// Lends block `n`, holding its current contents, for changing part of it.
    fn write_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()>;

    /// Lends block `n` for changing bytes `part` of it, and none outside
    /// them: a device that sends on only what changed looks there alone.
    fn write_part(&mut self, n: u64, size: usize, part: Range<usize>, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let _ = part;
        self.write_block(n, size, f)
    }

    /// Lends block `n` for overwriting all of it: its previous contents need
    /// not be read (the closure writes every byte).
    fn fill_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.write_block(n, size, f)
    }

    /// Every write issued before the barrier reaches the disk before any
    /// write issued after it. The file system calls it where a crash must not
    /// find a pointer on disk before what it points to (see the crate docs).
    fn barrier(&mut self) -> Result<()> {
        self.sync()
    }

    /// Every write issued so far is on the disk when this returns.
    fn sync(&mut self) -> Result<()>;
}

/// A disk in memory: the image is a vector of bytes. Host tests load image
/// files into it; in Tessera it can serve a RAM disk.
pub struct MemDevice {
    data: Vec<u8>,
    /// Every write so far is in `data`; the count only shows that the file
    /// system asked.
    pub syncs: u64,
    pub barriers: u64,
}

impl MemDevice {
    pub fn new(data: Vec<u8>) -> MemDevice {
        MemDevice {
            data,
            syncs: 0,
            barriers: 0,
        }
    }

    /// A zeroed disk of `len` bytes.
    pub fn zeroed(len: usize) -> MemDevice {
        MemDevice::new(vec![0; len])
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.data
    }

    fn range(&self, n: u64, size: usize) -> Result<core::ops::Range<usize>> {
        let start = n.checked_mul(size as u64).ok_or(Errno::EIO)?;
        let end = start.checked_add(size as u64).ok_or(Errno::EIO)?;
        if end > self.data.len() as u64 {
            return Err(Errno::EIO);
        }
        Ok(start as usize..end as usize)
    }
}

impl BlockDevice for MemDevice {
    fn read_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let r = self.range(n, size)?;
        f(&self.data[r]);
        Ok(())
    }

    fn write_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let r = self.range(n, size)?;
        f(&mut self.data[r]);
        Ok(())
    }

    /// Holds the library to its word in debug builds (the host tests): a
    /// byte changed outside `part` would be lost by a device that sends on
    /// `part` alone.
    fn write_part(&mut self, n: u64, size: usize, part: Range<usize>, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let r = self.range(n, size)?;
        let block = &mut self.data[r];
        let before = cfg!(debug_assertions).then(|| block.to_vec());
        f(block);
        if let Some(was) = before {
            let outside = |i: &usize| !part.contains(i);
            let stray = (0..size).filter(outside).find(|&i| block[i] != was[i]);
            assert_eq!(stray, None, "block {n}: changed outside {part:?}");
        }
        Ok(())
    }

    fn barrier(&mut self) -> Result<()> {
        self.barriers += 1;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.syncs += 1;
        Ok(())
    }
}
