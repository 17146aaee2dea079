//! File data, which this server never copies (seed 003's pointer passing,
//! seed 002's copy-less transfer with direct return).
//!
//! A READ: the library maps the byte range to device blocks (`map_read`);
//! its pieces up to the first hole (each inside a page of the cache, at
//! most `MAX_READ` bytes in all) become a plan in the plan area, under the
//! call's rid, and the client's call is *forwarded* to the cache, which
//! copies each piece from its page into the client's buffer where it
//! belongs and ends the call with their total: one copy, and the client
//! wakes up from the cache. A hole is answered here, from a page of zeros (one copy);
//! the end of the file with nothing.
//!
//! A WRITE: the library allocates the blocks (`map_write`), the plan goes
//! into the write slot, and a nested call *by reference* to the client's
//! call lets the cache read the data straight from the client's message
//! into its pages (one copy); then the write is committed (the size and
//! times change) and the client gets its reply from here.

use crate::{End, Server};
use alloc::vec::Vec;
use tessera_api::cache::{self, MAX_SEGMENTS, PAGE, PublishTo, Segment, Slot};
use tessera_api::fs::{APPEND, Errno, FAILED, MAX_WRITE, MISSED, NOATIME};
use tessera_api::wire::Reader;
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::sys;

/// Most times a READ waits for a free plan slot (each a yield) before it
/// fails: only a cache that stopped serving holds every slot that long.
const SLOT_WAITS: u32 = 100_000;

/// Most bytes one READ delivers: a plan's worth of pages (a slot holds
/// `MAX_SEGMENTS` pieces, a piece per page with blocks of 4 KiB, per block
/// with 1 KiB), so that a long read costs one call per 256 KiB at most.
const MAX_READ: u64 = 64 * PAGE as u64;

/// Whether a READ's plan from file offset `off` is whole pages one after
/// another, in the reply's order (the last may end at the file's end,
/// `size`): the block cache can then publish each from the page it is on.
fn whole_pages(plan: &[Segment], off: u64, size: u64) -> bool {
    let page = PAGE as u64;
    off.is_multiple_of(page)
        && plan.len() <= cache::MAX_PUBLISHED_SEGMENTS
        && plan.iter().enumerate().all(|(i, s)| {
            let (src, len) = (s.src as u64, s.len as u64);
            s.dev.is_multiple_of(page) && src == i as u64 * page && (len == page || off + src + len == size)
        })
}

/// Zeros for holes.
pub static ZEROS: [u8; PAGE] = [0; PAGE];

impl Server {
    pub fn read(&mut self, info: &AccInfo, rid: u64) -> End {
        match self.plan_read(info, rid) {
            Ok(end) => end,
            Err(e) => {
                self.client(info.caller).errno = Some(e);
                End::Fail(FAILED)
            }
        }
    }

    fn plan_read(&mut self, info: &AccInfo, rid: u64) -> Result<End, Errno> {
        let mut r = Reader::new(&info.inline[..(info.len as usize).min(64)]);
        let (Some(fd), Some(flags), Some(off), Some(len)) = (r.u32(), r.u32(), r.u64(), r.u64()) else {
            return Err(Errno::EINVAL);
        };
        let f = self.client(info.caller).file(fd)?;
        if f.dir {
            return Err(Errno::EISDIR);
        }
        if !f.readable() {
            return Err(Errno::EBADF);
        }
        let len = len.min(info.reply_cap);
        // A miss of the kernel's cache: its pages go there for the next,
        // from the block cache's pages as it answers if the plan allows,
        // else through this server at its next request.
        let mut to = match flags & MISSED {
            0 => None,
            _ => self.cache_publish_to(f.handle, off),
        };
        let end = self.plan_as(rid, f.handle, off, len, flags & NOATIME == 0, &mut to);
        if flags & MISSED != 0 && to.is_none() {
            self.cache_missed(f.handle, off, len);
        }
        end
    }

    /// Answers call `rid` with `len` bytes of the file at `off`: one reply
    /// carries the pieces up to the first hole, at most `MAX_READ` bytes,
    /// each a page of the cache at most, which the cache writes into the
    /// caller's buffer where it belongs and then ends the call with their
    /// total (a pager's call: into the page the kernel gave it).
    pub fn plan(&mut self, rid: u64, handle: ext2fs::Handle, off: u64, len: u64) -> Result<End, Errno> {
        self.plan_as(rid, handle, off, len, true, &mut None)
    }

    /// `plan`, updating the access time only if `touch`, its pages going
    /// to the kernel's file cache as `to` says if they are whole pages
    /// (`to` is left `None` if they do not go).
    fn plan_as(
        &mut self,
        rid: u64,
        handle: ext2fs::Handle,
        off: u64,
        len: u64,
        touch: bool,
        to: &mut Option<PublishTo>,
    ) -> Result<End, Errno> {
        let len = len.min(MAX_READ);
        let wanted = to.take();
        if len == 0 {
            return Ok(End::Reply(0));
        }
        let fm = self.fm()?;
        let bs = fm.inodes().block_size() as u64;
        let segments = fm.map_read_as(handle, off, len, touch).map_err(crate::errno)?;
        let Some(first) = segments.first() else {
            return Ok(End::Reply(0));
        };
        if first.block.is_none() {
            let n = (first.len as usize).min(ZEROS.len());
            self.stats.hole_bytes += n as u64;
            return Ok(End::Zeros(n));
        }
        let mut plan = core::mem::take(&mut self.read_plan);
        plan.clear();
        let mut src = 0u64;
        'pieces: for seg in &segments {
            let Some(block) = seg.block else { break };
            let (mut dev, mut left) = (block * bs + seg.offset as u64, seg.len);
            while left > 0 {
                if plan.len() == MAX_SEGMENTS {
                    break 'pieces;
                }
                let piece = left.min(PAGE as u64 - dev % PAGE as u64);
                plan.push(Segment {
                    dev,
                    len: piece as u32,
                    src: src as u32,
                    fresh: false,
                });
                (dev, src, left) = (dev + piece, src + piece, left - piece);
            }
        }
        *to = wanted.filter(|t| whole_pages(&plan, off, t.size));
        let published = self.publish_read(rid, &plan, *to);
        self.read_plan = plan;
        let slot = published?;
        self.stats.forwarded_reads += 1;
        self.stats.forwarded_bytes += src;
        Ok(End::Forward(slot))
    }

    /// Publishes a READ's plan under its rid in a free slot; returns the
    /// slot.
    fn publish_read(&mut self, rid: u64, plan: &[Segment], to: Option<PublishTo>) -> Result<usize, Errno> {
        let slot = self.free_read_slot().ok_or(Errno::EIO)?;
        Slot::of(self.plans.words(), slot)
            .ok_or(Errno::EIO)?
            .publish_with(rid, plan, to);
        if to.is_some() {
            self.published.pages_delegated += plan.len() as u64;
        }
        Ok(slot)
    }

    fn free_read_slot(&self) -> Option<usize> {
        for _ in 0..SLOT_WAITS {
            let free = (1..cache::SLOTS).find(|&i| Slot::of(self.plans.words(), i).is_some_and(|s| s.key() == 0));
            if free.is_some() {
                return free;
            }
            sys::yield_now();
        }
        None
    }

    /// WRITE: replies (bytes or -errno, where they went).
    pub fn write(&mut self, info: &AccInfo, rid: u64, out: &mut [u8]) -> End {
        let (n, at) = match self.write_data(info, rid) {
            Ok((n, at)) => (n as i64, at),
            Err(e) => (-(e.0 as i64), 0),
        };
        out[..8].copy_from_slice(&n.to_le_bytes());
        out[8..16].copy_from_slice(&at.to_le_bytes());
        End::Reply(16)
    }

    fn write_data(&mut self, info: &AccInfo, rid: u64) -> Result<(u64, u64), Errno> {
        let client = self.client(info.caller);
        let ctx = client.write.ok_or(Errno::EBADF)?;
        let f = client.file(ctx.fd)?;
        if f.dir {
            return Err(Errno::EISDIR);
        }
        if !f.writable() {
            return Err(Errno::EBADF);
        }
        if ctx.end_ids {
            self.end_set_ids(f.handle)?;
            if let Some(w) = self.client(info.caller).write.as_mut() {
                w.end_ids = false;
            }
        }
        let cache_pid = self.cache;
        let fm = self.fm()?;
        let old_size = fm.stat(f.handle).map_err(crate::errno)?.size;
        let off = if ctx.flags & APPEND != 0 { old_size } else { ctx.offset };
        let len = (info.len as usize).min(MAX_WRITE) as u64;
        if len == 0 {
            return Ok((0, off));
        }
        self.sealed_write(f.handle, off, len, old_size)?;
        let fm = self.fm()?;
        let bs = fm.inodes().block_size() as u64;
        // Which blocks the write allocates: the holes before it, and all
        // past the end (the plan marks them fresh).
        let before = fm.inodes().map(f.handle.ino, off, len).map_err(crate::errno)?;
        let mut holes = Vec::new();
        let mut at = off;
        for seg in &before {
            if seg.block.is_none() {
                holes.push((at, at + seg.len));
            }
            at += seg.len;
        }
        holes.push((at.max(off), u64::MAX));
        self.sweep_if_short(len);
        let fm = self.fm()?;
        let mapped = fm.map_write(f.handle, off, len).map_err(crate::errno)?;
        // The plan: each mapped run cut at the cache's page boundaries and
        // at the blocks'. A write of MAX_WRITE bytes in blocks of 1 KiB is at
        // most 129 pieces, well inside a slot.
        let mut plan = [Segment::default(); MAX_SEGMENTS];
        let (mut n, mut src) = (0, 0u64);
        for seg in &mapped {
            let Some(block) = seg.block else {
                return Err(Errno::EIO);
            };
            let (mut dev, mut left) = (block * bs + seg.offset as u64, seg.len);
            while left > 0 {
                let piece = left.min(PAGE as u64 - dev % PAGE as u64).min(bs - dev % bs);
                if n == plan.len() {
                    return Err(Errno::EIO);
                }
                let file_at = off + src;
                plan[n] = Segment {
                    dev,
                    len: piece as u32,
                    src: src as u32,
                    fresh: holes.iter().any(|&(a, b)| file_at < b && a < file_at + piece),
                };
                (n, dev, src, left) = (n + 1, dev + piece, src + piece, left - piece);
            }
        }
        let covered = src;
        // Before a byte changes: the pages it writes, and from the old end
        // on if it writes past it (the last page's length changes, a gap
        // becomes a hole). Nothing else changes: a failed write's truncate
        // stays inside.
        if covered > 0 {
            let first = off.min(old_size) / PAGE as u64;
            let last = (off + covered - 1) / PAGE as u64;
            self.cache_revoke(f.handle, first, last - first + 1);
        }
        self.write_key += 1;
        let slot = Slot::of(self.plans.words(), cache::WRITE_SLOT).ok_or(Errno::EIO)?;
        slot.publish(self.write_key, &plan[..n]);
        // The allocation's changes reach the cache before the data does.
        self.dev().flush().map_err(crate::errno)?;
        let mut reply = [0u8; 16];
        let called = sys::call_by_ref(cache_pid, cache::FILE_WRITE, rid, &mut reply);
        let (stored, error) = match called {
            Ok(16) => (
                u64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8])).min(covered),
                u64::from_le_bytes(reply[8..].try_into().unwrap_or([0; 8])),
            ),
            _ => (0, Error::Busy as u64),
        };
        if called.is_err()
            && let Some(s) = Slot::of(self.plans.words(), cache::WRITE_SLOT)
        {
            s.clear();
        }
        let dev = self.dev();
        for seg in &plan[..n] {
            dev.invalidate(seg.dev, seg.dev + seg.len as u64);
        }
        let fm = self.fm()?;
        if stored > 0 {
            fm.commit_write(f.handle, off, stored).map_err(crate::errno)?;
        }
        if stored < covered && off + covered > old_size {
            // Blocks past what was stored must not stay beyond the end.
            fm.commit_write(f.handle, off, covered).map_err(crate::errno)?;
            fm.truncate(f.handle, old_size.max(off + stored))
                .map_err(crate::errno)?;
        }
        self.stats.writes += 1;
        self.stats.write_bytes += stored;
        if let Some(w) = self.client(info.caller).write.as_mut() {
            w.offset = off + stored;
        }
        if stored == 0 && error != 0 {
            return Err(match Error::from_u64(error) {
                Some(Error::Fault) => Errno::EFAULT,
                _ => Errno::EIO,
            });
        }
        Ok((stored, off))
    }
}
