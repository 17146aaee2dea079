//! The block cache's protocol (seed 003's buffer process), served to one
//! client: the file server.
//!
//! Addresses are device bytes; a request never crosses a page (the file
//! system's blocks, 1 to 4 KiB, each lie inside one).
//!
//! Metadata, which the file server reads and changes itself:
//! - `READ` {offset u64, len u32, 0 u32} → the bytes (one copy, cache to
//!   file server).
//! - `WRITE` {offset u64, len u32, 0 u32} then the bytes.
//! - `WRITE_MANY`: WRITE's records one after another, each padded to 8
//!   bytes (at most `MAX_BATCH` bytes in all): the changes of one request
//!   in one call.
//! - `BARRIER`: every write before reaches the disk before any after it
//!   (the ext2 library's write order rests on it).
//! - `SYNC`: every write so far is on the disk when the reply comes.
//!
//! File data, which the file server never touches (seed 003's pointer
//! passing, seed 002's direct return): the file server writes a *plan*
//! (where on the device the bytes are) into the plan area, a container the
//! two share, then passes the client's own call on:
//! - `FILE_READ`: the client's READ call, *forwarded*; the cache copies the
//!   planned pieces from its pages straight into the client's buffer, each
//!   where its `src` says (the one copy of the data), ends the call with
//!   their total and the client wakes up. The plan is
//!   in the slot whose key is the call's rid. The status is the bytes
//!   delivered; a failure ends the call with `Busy` (the client then asks
//!   the file server's `ERRNO`, which reports EIO).
//! - `FILE_WRITE`: a nested call *by reference* to the client's WRITE call:
//!   the cache reads the data straight from the client's message into its
//!   pages (the one copy) and replies to the file server (16 bytes: the
//!   bytes stored before anything failed, and the error, 0 if none), which
//!   then commits the write. The plan is in slot 0.
//!
//! A READ's plan may also say where its pages go in the kernel's file
//! cache ([`PublishTo`]): after the reply, the cache publishes from its own
//! pages (`file_cache(PUBLISH_FOR)`, which the file server let it do) those
//! it held before the READ and that were read since they came: one copy,
//! not two through the file server and a round trip, and none for a page
//! a reader streams from the disk once.
//!
//! Others: `OPEN` (claims the cache; the caller must have granted the cache
//! first, which then shares the plan area into it; reply [`OpenReply`]),
//! `CLOSE`, `STATS` (text, `name value` per line), and two any process may
//! call: `TICK` (the periodic flush: writes back what is dirty) and `DROP`
//! (writes back, then forgets every page: the next reads are cold, for
//! tests and benchmarks).

use crate::wire::{Reader, Writer};
use core::sync::atomic::{AtomicU64, Ordering};

pub const NAME: &str = "cache";
/// The cache's unit: a page of the device.
pub const PAGE: usize = 4096;

pub const OPEN: u64 = 0;
pub const READ: u64 = 1;
pub const WRITE: u64 = 2;
pub const BARRIER: u64 = 3;
pub const SYNC: u64 = 4;
pub const FILE_READ: u64 = 5;
pub const FILE_WRITE: u64 = 6;
pub const STATS: u64 = 7;
pub const CLOSE: u64 = 8;
pub const TICK: u64 = 9;
pub const DROP: u64 = 10;
pub const WRITE_MANY: u64 = 11;
/// Pieces of pages for the file server's own use (the pages it publishes
/// in the kernel's file caches): the message is up to [`MAX_PIECES`]
/// headers (offset, length: each inside one page), the reply the pieces
/// back to back, as many as were read before one failed (none: an error).
pub const READ_MANY: u64 = 12;
/// Most pieces of a `READ_MANY`.
pub const MAX_PIECES: usize = 64;
pub const ENTRIES: u64 = (1 << 13) - 1;

/// Longest `WRITE_MANY` message.
pub const MAX_BATCH: usize = 16 * 1024;

/// Header of READ and WRITE.
pub const HEADER: usize = 16;

pub fn encode_header(offset: u64, len: u32, buf: &mut [u8]) -> usize {
    Writer::new(buf).u64(offset).u32(len).u32(0).len()
}

/// Where the record after one at `at` of `len` data bytes starts in a
/// `WRITE_MANY` message.
pub fn next_record(at: usize, len: usize) -> usize {
    (at + HEADER + len).next_multiple_of(8)
}

pub fn decode_header(msg: &[u8]) -> Option<(u64, u32)> {
    let mut r = Reader::new(msg);
    let offset = r.u64()?;
    let len = r.u32()?;
    Some((offset, len))
}

/// What OPEN tells the file server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenReply {
    /// The device's size in bytes.
    pub device_bytes: u64,
    /// The plan area's container id in the file server.
    pub plan_area: u64,
}

impl OpenReply {
    pub const LEN: usize = 16;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0; Self::LEN];
        Writer::new(&mut b).u64(self.device_bytes).u64(self.plan_area);
        b
    }

    pub fn decode(b: &[u8]) -> Option<OpenReply> {
        let mut r = Reader::new(b);
        Some(OpenReply {
            device_bytes: r.u64()?,
            plan_area: r.u64()?,
        })
    }
}

/// Pages of the plan area.
pub const PLAN_PAGES: u64 = 16;
/// Words per slot: a slot is a page.
pub const SLOT_WORDS: usize = PAGE / 8;
pub const SLOTS: usize = PLAN_PAGES as usize;
/// Segments a plan holds.
pub const MAX_SEGMENTS: usize = (SLOT_WORDS - 2) / 2;
/// The slot of FILE_WRITE's plan (the file server waits for that call, so
/// there is one at a time); the others hold FILE_READ plans.
pub const WRITE_SLOT: usize = 0;

/// A piece of a transfer: `len` bytes at device byte `dev`, which are bytes
/// `src..src + len` of the client's message (a write) or reply (a read).
/// It lies inside one page of the device and one block of the file system.
/// `fresh`: the block was just allocated for this write, so if the data
/// cannot be read from the client the cache zeroes it rather than leave
/// whatever the block held before (a block already in the file is left as
/// it was).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Segment {
    pub dev: u64,
    pub len: u32,
    pub src: u32,
    pub fresh: bool,
}

const FRESH: u64 = 1 << 63;

/// Where a READ's pages go in the kernel's file cache: the pages of its
/// plan, from the file's page `first_page` on, into cache `cache` of a
/// file of `size` bytes, if no revoke came since `generation` (the low
/// half of the cache's, read as the plan was made). Only a plan whose
/// pieces are whole pages one after another (the last may end at the
/// file's end) carries one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublishTo {
    pub cache: u64,
    pub first_page: u32,
    pub generation: u32,
    pub size: u64,
}

/// In a slot's word 1: the last three words hold a [`PublishTo`].
const PUBLISHES: u64 = 1 << 63;
/// Segments of a plan that carries a [`PublishTo`] at most.
pub const MAX_PUBLISHED_SEGMENTS: usize = (SLOT_WORDS - 5) / 2;

/// One slot of the plan area. Word 0 is the key (0: free), word 1 the
/// number of segments, then two words per segment. The writer fills the
/// segments, then publishes the key (release); the reader takes the key
/// (acquire), reads, then frees the slot (release).
pub struct Slot<'a>(&'a [AtomicU64]);

impl<'a> Slot<'a> {
    /// Slot `i` of a plan area (`None` if the area is too small).
    pub fn of(area: &'a [AtomicU64], i: usize) -> Option<Slot<'a>> {
        area.get(i * SLOT_WORDS..(i + 1) * SLOT_WORDS).map(Slot)
    }

    pub fn key(&self) -> u64 {
        self.0[0].load(Ordering::Acquire)
    }

    /// Writes a plan and publishes it under `key` (non-zero). The slot must
    /// be free (the writer owns it until it publishes).
    pub fn publish(&self, key: u64, segments: &[Segment]) {
        self.publish_with(key, segments, None);
    }

    /// `publish`, with where the pages go in the kernel's file cache (left
    /// out of a plan too long to hold it too).
    pub fn publish_with(&self, key: u64, segments: &[Segment], to: Option<PublishTo>) {
        let n = segments.len().min(MAX_SEGMENTS);
        let to = to.filter(|_| n <= MAX_PUBLISHED_SEGMENTS);
        if let Some(t) = to {
            self.0[SLOT_WORDS - 3].store(t.cache, Ordering::Relaxed);
            self.0[SLOT_WORDS - 2].store(t.first_page as u64 | (t.generation as u64) << 32, Ordering::Relaxed);
            self.0[SLOT_WORDS - 1].store(t.size, Ordering::Relaxed);
        }
        for (i, s) in segments[..n].iter().enumerate() {
            self.0[2 + 2 * i].store(s.dev, Ordering::Relaxed);
            let fresh = if s.fresh { FRESH } else { 0 };
            self.0[3 + 2 * i].store(fresh | ((s.len as u64) << 32) | s.src as u64, Ordering::Relaxed);
        }
        let flag = if to.is_some() { PUBLISHES } else { 0 };
        self.0[1].store(n as u64 | flag, Ordering::Relaxed);
        self.0[0].store(key, Ordering::Release);
    }

    /// Reads the plan published under `key` into `out` and frees the slot;
    /// returns how many segments it had (`None` if the key is not there).
    pub fn take(&self, key: u64, out: &mut [Segment]) -> Option<usize> {
        self.take_with(key, out).map(|(n, _)| n)
    }

    /// `take`, with where the pages go in the kernel's file cache, if the
    /// plan says.
    pub fn take_with(&self, key: u64, out: &mut [Segment]) -> Option<(usize, Option<PublishTo>)> {
        if key == 0 || self.key() != key {
            return None;
        }
        let head = self.0[1].load(Ordering::Relaxed);
        let n = ((head & !PUBLISHES) as usize).min(MAX_SEGMENTS).min(out.len());
        let to = (head & PUBLISHES != 0 && n <= MAX_PUBLISHED_SEGMENTS).then(|| {
            let at = self.0[SLOT_WORDS - 2].load(Ordering::Relaxed);
            PublishTo {
                cache: self.0[SLOT_WORDS - 3].load(Ordering::Relaxed),
                first_page: at as u32,
                generation: (at >> 32) as u32,
                size: self.0[SLOT_WORDS - 1].load(Ordering::Relaxed),
            }
        });
        for (i, s) in out[..n].iter_mut().enumerate() {
            let w = self.0[3 + 2 * i].load(Ordering::Relaxed);
            *s = Segment {
                dev: self.0[2 + 2 * i].load(Ordering::Relaxed),
                len: ((w & !FRESH) >> 32) as u32,
                src: w as u32,
                fresh: w & FRESH != 0,
            };
        }
        self.0[0].store(0, Ordering::Release);
        Some((n, to))
    }

    /// Frees the slot without reading it (a plan whose call never came).
    pub fn clear(&self) {
        self.0[0].store(0, Ordering::Release);
    }
}
