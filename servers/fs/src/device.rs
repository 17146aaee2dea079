//! The file server's block device: the block cache server, reached by
//! rendezvous, with a mirror of the metadata blocks the ext2 library reads
//! and changes (superblock, descriptors, bitmaps, inode tables, indirect
//! and directory blocks).
//!
//! The library lends itself a block for the length of a closure, often
//! many times per operation; a rendezvous per lending would cost more than
//! the operation. So the mirror keeps clean copies (LRU), and every change
//! is kept as only the bytes that changed (a bitmap bit, an inode) in a
//! batch that goes to the cache in one call (`WRITE_MANY`) before a
//! barrier, a sync, a read from the cache, and at the end of each request
//! (`flush`). Barriers and syncs go to the cache, which keeps them.
//!
//! File data never passes here (see `data.rs`). The one overlap, blocks
//! the library zeroes in part for a mapped write, is written through like
//! metadata; a mapped write then invalidates the mirror's copy of the
//! blocks the cache filled.

use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;
use ext2fs::{BlockDevice, Errno, Result};
use tessera_api::cache::{self, PAGE};
use tessera_rt::sys;

/// Blocks the mirror keeps.
const MIRROR: usize = 512;

struct Copy {
    data: Vec<u8>,
    used: u64,
}

#[derive(Default, Clone, Copy)]
pub struct DevStats {
    pub mirror_hits: u64,
    pub mirror_misses: u64,
    /// Metadata bytes brought from the cache, and sent to it.
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    /// WRITE_MANY calls that carried the writes.
    pub batches: u64,
    pub barriers: u64,
    pub syncs: u64,
}

pub struct CacheDevice {
    pub cache: u64,
    device_bytes: u64,
    /// By device byte offset.
    mirror: BTreeMap<u64, Copy>,
    clock: u64,
    before: Vec<u8>,
    /// Changes not yet sent: `WRITE_MANY`'s records.
    batch: Vec<u8>,
    pub stats: DevStats,
}

impl CacheDevice {
    pub fn new(cache: u64, device_bytes: u64) -> CacheDevice {
        CacheDevice {
            cache,
            device_bytes,
            mirror: BTreeMap::new(),
            clock: 0,
            before: Vec::new(),
            batch: Vec::with_capacity(cache::MAX_BATCH),
            stats: DevStats::default(),
        }
    }

    /// Where block `n` of `size` bytes is: inside the device and inside
    /// one page (blocks of more than a page are refused).
    fn place(&self, n: u64, size: usize) -> Result<u64> {
        let at = n.checked_mul(size as u64).ok_or(Errno::EIO)?;
        if size == 0 || size > PAGE || at % PAGE as u64 + size as u64 > PAGE as u64 {
            return Err(Errno::EINVAL);
        }
        if at.checked_add(size as u64).is_none_or(|end| end > self.device_bytes) {
            return Err(Errno::EIO);
        }
        Ok(at)
    }

    /// The mirror's copy of the block at `at`, brought from the cache if
    /// it has none (unless `fresh`: then a zeroed one, to be overwritten).
    fn copy(&mut self, at: u64, size: usize, fresh: bool) -> Result<&mut Vec<u8>> {
        self.clock += 1;
        let clock = self.clock;
        if self.mirror.get(&at).is_some_and(|c| c.data.len() == size) {
            self.stats.mirror_hits += 1;
        } else {
            self.stats.mirror_misses += 1;
            self.mirror.remove(&at);
            if self.mirror.len() >= MIRROR
                && let Some((&old, _)) = self.mirror.iter().min_by_key(|(_, c)| c.used)
            {
                self.mirror.remove(&old);
            }
            let mut data = vec![0u8; size];
            if !fresh {
                self.flush()?;
                let mut hdr = [0u8; cache::HEADER];
                cache::encode_header(at, size as u32, &mut hdr);
                match sys::call(self.cache, cache::READ, &hdr, &mut data) {
                    Ok(n) if n == size => {}
                    _ => return Err(Errno::EIO),
                }
                self.stats.read_bytes += size as u64;
            }
            self.mirror.insert(at, Copy { data, used: 0 });
        }
        let c = self.mirror.get_mut(&at).ok_or(Errno::EIO)?;
        c.used = clock;
        Ok(&mut c.data)
    }

    /// Adds bytes `from..to` of the copy at `at` to the batch for the
    /// cache.
    fn send(&mut self, at: u64, from: usize, to: usize) -> Result<()> {
        let len = to - from;
        let start = self.batch.len();
        if cache::next_record(start, len) > cache::MAX_BATCH {
            self.flush()?;
        }
        let start = self.batch.len();
        let data = &self.mirror.get(&at).ok_or(Errno::EIO)?.data[from..to];
        self.batch.resize(start + cache::HEADER, 0);
        cache::encode_header(at + from as u64, len as u32, &mut self.batch[start..]);
        self.batch.extend_from_slice(data);
        self.batch.resize(cache::next_record(start, len), 0);
        self.stats.writes += 1;
        self.stats.write_bytes += len as u64;
        Ok(())
    }

    /// Reads file data at device byte `at` (inside one page) straight from
    /// the cache into `buf`, past the mirror, which keeps metadata.
    pub fn read_data(&mut self, at: u64, buf: &mut [u8]) -> Result<()> {
        if at % PAGE as u64 + buf.len() as u64 > PAGE as u64 {
            return Err(Errno::EINVAL);
        }
        self.flush()?;
        let mut hdr = [0u8; cache::HEADER];
        cache::encode_header(at, buf.len() as u32, &mut hdr);
        match sys::call(self.cache, cache::READ, &hdr, buf) {
            Ok(n) if n == buf.len() => Ok(()),
            _ => Err(Errno::EIO),
        }
    }

    /// Reads pieces of file data (device byte, length: each inside one
    /// page) from the cache into `buf`, back to back, in calls of up to
    /// `cache::MAX_PIECES`: one round trip where a page was one. Returns
    /// the bytes read, fewer if a piece failed.
    pub fn read_many(&mut self, pieces: &[(u64, u32)], buf: &mut [u8]) -> Result<usize> {
        self.flush()?;
        let mut at = 0usize;
        let mut msg = [0u8; cache::MAX_PIECES * cache::HEADER];
        for part in pieces.chunks(cache::MAX_PIECES) {
            let want: usize = part.iter().map(|&(_, n)| n as usize).sum();
            let Some(dst) = buf.get_mut(at..at + want) else {
                return Err(Errno::EINVAL);
            };
            for (i, &(dev, n)) in part.iter().enumerate() {
                cache::encode_header(dev, n, &mut msg[i * cache::HEADER..]);
            }
            let got = sys::call(self.cache, cache::READ_MANY, &msg[..part.len() * cache::HEADER], dst).unwrap_or(0);
            self.stats.read_bytes += got as u64;
            at += got.min(want);
            if got < want {
                break;
            }
        }
        Ok(at)
    }

    /// Sends the batch of changes to the cache.
    pub fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let sent = sys::call(self.cache, cache::WRITE_MANY, &self.batch, &mut []);
        self.batch.clear();
        self.stats.batches += 1;
        if sent.is_err() {
            // The cache did not take them all: the copies are not what the
            // disk will hold.
            self.mirror.clear();
            return Err(Errno::EIO);
        }
        Ok(())
    }

    /// Forgets the copies of blocks in device bytes `from..to` (the cache
    /// wrote file data there itself).
    pub fn invalidate(&mut self, from: u64, to: u64) {
        let start = from.saturating_sub(PAGE as u64);
        let stale: Vec<u64> = self
            .mirror
            .range(start..to)
            .filter(|&(&at, c)| at + c.data.len() as u64 > from)
            .map(|(&at, _)| at)
            .collect();
        for at in stale {
            self.mirror.remove(&at);
        }
    }

    /// Forgets every copy (after a failure whose effect is unknown).
    pub fn forget_all(&mut self) {
        self.mirror.clear();
    }

    fn call(&mut self, entry: u64) -> Result<()> {
        self.flush()?;
        sys::call(self.cache, entry, &[], &mut [])
            .map(|_| ())
            .map_err(|_| Errno::EIO)
    }
}

/// The bytes `first..end` of `now` that differ from `was` (same length),
/// found a word at a time: a block of inodes or a bitmap usually changes
/// in a few bytes, and a byte at a time the search cost more than the
/// rest of the write.
fn changed(now: &[u8], was: &[u8]) -> Option<(usize, usize)> {
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
    let (n, w) = (now.chunks_exact(8), was.chunks_exact(8));
    let tail = n.remainder().iter().zip(w.remainder()).any(|(a, b)| a != b);
    let words = now.len() / 8;
    let first = n.zip(w).position(|(a, b)| word(a) != word(b));
    let first = match (first, tail) {
        (Some(i), _) => i * 8,
        (None, true) => words * 8,
        (None, false) => return None,
    };
    let end = if tail {
        now.len()
    } else {
        let last = now
            .chunks_exact(8)
            .zip(was.chunks_exact(8))
            .rposition(|(a, b)| word(a) != word(b))
            .unwrap_or(first / 8);
        (last + 1) * 8
    };
    Some((first, end))
}

impl BlockDevice for CacheDevice {
    fn read_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let at = self.place(n, size)?;
        f(self.copy(at, size, false)?);
        Ok(())
    }

    fn write_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let at = self.place(n, size)?;
        let mut before = core::mem::take(&mut self.before);
        let copy = self.copy(at, size, false)?;
        before.clear();
        before.extend_from_slice(copy);
        f(copy);
        let changed = changed(copy, &before);
        self.before = before;
        match changed {
            Some((first, end)) => self.send(at, first, end),
            None => Ok(()),
        }
    }

    /// `write_block`, with the copy and the search for what changed kept
    /// to `part`: a whole block's cost more than the rest of an inode's or
    /// a bitmap bit's write.
    fn write_part(&mut self, n: u64, size: usize, part: Range<usize>, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        if part.is_empty() || part.end > size {
            return self.write_block(n, size, f);
        }
        let at = self.place(n, size)?;
        let mut before = core::mem::take(&mut self.before);
        let copy = self.copy(at, size, false)?;
        before.clear();
        before.extend_from_slice(&copy[part.clone()]);
        f(copy);
        let changed = changed(&copy[part.clone()], &before);
        self.before = before;
        match changed {
            Some((first, end)) => self.send(at, part.start + first, part.start + end),
            None => Ok(()),
        }
    }

    fn fill_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let at = self.place(n, size)?;
        let copy = self.copy(at, size, true)?;
        f(copy);
        self.send(at, 0, size)
    }

    fn barrier(&mut self) -> Result<()> {
        self.stats.barriers += 1;
        self.call(cache::BARRIER)
    }

    fn sync(&mut self) -> Result<()> {
        self.stats.syncs += 1;
        self.call(cache::SYNC)
    }
}
