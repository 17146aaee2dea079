//! The block cache (seed 003's buffer process; protocol
//! `tessera_api::cache`): `blockcache [name] [disk] [pages] [flush secs]`
//! caches `pages` pages (default 1024) of the block device served as
//! `disk`, for one client, the file server.
//!
//! - Pages are ICAs of `EXTENT` pages (the last may be shorter), each a
//!   run of slots: a miss moves an ICA to the disk server, naming the run
//!   of its pages to fill, which the device fills (by DMA, for a real
//!   device) as one request, and the ICA comes back; write-back moves the
//!   ICAs holding dirty pages there and back. No byte is copied between
//!   servers.
//! - LRU replacement; a sequential run of misses reads ahead, in a window
//!   that doubles up to four extents (1 MiB), into runs of consecutive
//!   slots of an ICA, each run one request to the device, all in flight
//!   together.
//! - Write-back: writes stay in the cache until `SYNC`, the periodic flush
//!   (a child process calls `TICK` every `flush secs`, default 5; 0: none),
//!   or a dirty page must make room. Barriers are kept (see lib/cachepages).
//! - File data goes from a page straight into the reader's buffer, or from
//!   the writer's message straight into a page: one copy, counted. A
//!   READ whose plan says where its pages go in the kernel's file cache
//!   (`cache::PublishTo`) also has them published from here, after the
//!   reply: one more copy, counted too (`published_bytes`).
//!
//! `blockcache tick <name> <secs>` is that child.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use cachepages::{Pages, pieces, requests};
use core::fmt::Write;
use tessera_api::block::{self, Disk, Piece};
use tessera_api::cache::{self, MAX_SEGMENTS, OpenReply, PAGE, PublishTo, Segment, Slot};
use tessera_rt::abi::file_cache::{LAST, PUBLISH_MAX_PAGES, op};
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::ica::{Ica, SharedWords};
use tessera_rt::sys::calls;
use tessera_rt::{println, sys};

/// Pages of an ICA of the cache: the longest read (256 KiB), which the
/// device does in one request.
const EXTENT: usize = 64;
/// Most extents one read fills: its requests go to the device together.
const MAX_FILL_PIECES: usize = 4;
/// Longest read-ahead, in pages beyond the one missed.
const MAX_WINDOW: u64 = (MAX_FILL_PIECES * EXTENT) as u64 - 1;
/// The smallest cache.
const MIN_PAGES: usize = 32;

#[derive(Default)]
struct Stats {
    hits: u64,
    misses: u64,
    /// Pages read beyond the one missed, and those of them used since.
    read_ahead: u64,
    read_ahead_used: u64,
    /// Whole pages overwritten without being read first.
    fills: u64,
    disk_reads: u64,
    disk_read_pages: u64,
    disk_writes: u64,
    /// Pages written back; earlier epochs' versions kept as shadows (a
    /// copy of the page inside the cache) when a later epoch wrote a page
    /// again; pages written back early for want of a slot for one.
    write_back_pages: u64,
    shadows: u64,
    ordered_write_backs: u64,
    flushes: u64,
    barriers: u64,
    syncs: u64,
    ticks: u64,
    pages_lost: u64,
    meta_reads: u64,
    meta_read_bytes: u64,
    meta_writes: u64,
    meta_write_bytes: u64,
    /// File data: bytes copied from a page into a reader's buffer, and
    /// from a writer's message into a page (each byte once).
    file_reads: u64,
    file_read_bytes: u64,
    file_writes: u64,
    file_write_bytes: u64,
    /// A READ's pages published in the kernel's file cache (bytes copied
    /// there), and publishing calls the kernel refused (a revoke since the
    /// plan, the owner's limit).
    published_pages: u64,
    published_bytes: u64,
    publish_refused: u64,
    /// Time (TSC cycles) a read from the disk kept the cache waiting, and
    /// publishing took: where a cold read's time goes besides the copy.
    read_wait_cycles: u64,
    publish_cycles: u64,
    refused: u64,
}

struct Cache {
    disk: Disk,
    /// The device's size in pages.
    device_pages: u64,
    pages: Pages,
    /// The pages of slots `i * EXTENT ..`; `None` while at the disk server.
    extents: Vec<Option<Ica>>,
    slots: usize,
    epoch: u64,
    /// Read-ahead: where a sequential reader's next miss is expected, and
    /// how far to read ahead then.
    next_expected: u64,
    window: u64,
    client: Option<u64>,
    plans: SharedWords,
    read_plan: Vec<Segment>,
    /// Per piece of the READ being answered: its page's slot if the page
    /// had been read before (`seen_before`).
    seen: Vec<Option<usize>>,
    /// WRITE_MANY's message, kept between calls.
    batch: Vec<u8>,
    stats: Stats,
}

/// What the next `endr` replies with.
enum Reply {
    Own(usize),
    /// Bytes of a slot's page: the one copy of file data or metadata.
    Page(usize, usize, usize),
    /// The call is already ended: accept the next.
    Ended,
}

impl Cache {
    fn page_bytes(&self, s: usize) -> Result<&[u8], Error> {
        let ica = self.extents[s / EXTENT].as_ref().ok_or(Error::Busy)?;
        let at = (s % EXTENT) * PAGE;
        ica.as_slice().get(at..at + PAGE).ok_or(Error::Busy)
    }

    fn page_bytes_mut(&mut self, s: usize) -> Result<&mut [u8], Error> {
        let ica = self.extents[s / EXTENT].as_mut().ok_or(Error::Busy)?;
        let at = (s % EXTENT) * PAGE;
        ica.as_mut_slice().get_mut(at..at + PAGE).ok_or(Error::Busy)
    }

    /// A slot to fill, writing back the oldest epoch while every slot is
    /// dirty.
    fn alloc(&mut self, skip: &[usize]) -> Result<usize, Error> {
        loop {
            if let Some(s) = self.pages.victim(skip) {
                return Ok(s);
            }
            if self.pages.dirty_count() == 0 {
                return Err(Error::NoMemory);
            }
            self.write_back_oldest()?;
        }
    }

    /// Up to `n` consecutive slots of one extent to fill: (first, how many).
    fn alloc_run(&mut self, n: usize) -> Result<(usize, usize), Error> {
        loop {
            if let Some(run) = self.pages.victim_run(n, EXTENT) {
                return Ok(run);
            }
            if self.pages.dirty_count() == 0 {
                return Err(Error::NoMemory);
            }
            self.write_back_oldest()?;
        }
    }

    /// Moves the ICAs holding `slots` (in device order from `first`; each
    /// extent one piece of consecutive slots) to the disk server for a
    /// READ or WRITE and takes them back; an ICA that does not come back
    /// retires its slots.
    fn transfer(&mut self, write: bool, first: u64, slots: &[usize]) -> Result<(), Error> {
        let parts = pieces(slots, EXTENT);
        let mut moving: Vec<Piece> = Vec::with_capacity(parts.len());
        let mut ids: Vec<(u64, usize)> = Vec::with_capacity(parts.len());
        for &(e, at, pages) in &parts {
            match self.extents[e].take() {
                Some(ica) => {
                    ids.push((ica.id(), e));
                    moving.push(Piece { ica, at, pages });
                }
                None => {
                    // Never asked for: the pieces are made from distinct
                    // extents, all at home between transfers.
                    for p in moving {
                        if let Some(&(_, e)) = ids.iter().find(|&&(id, _)| id == p.ica.id()) {
                            self.extents[e] = Some(p.ica);
                        }
                    }
                    return Err(Error::Busy);
                }
            }
        }
        let result = if write {
            self.disk.write(first, &mut moving)
        } else {
            self.disk.read(first, &mut moving)
        };
        for p in moving {
            if let Some(&(_, e)) = ids.iter().find(|&&(id, _)| id == p.ica.id()) {
                self.extents[e] = Some(p.ica);
            }
        }
        for &(_, e) in &ids {
            if self.extents[e].is_none() {
                for s in e * EXTENT..((e + 1) * EXTENT).min(self.slots) {
                    self.stats.pages_lost += 1;
                    self.pages.retire(s);
                }
            }
        }
        result
    }

    /// Writes back the dirty pages of the oldest epoch, then flushes the
    /// device: the next epoch's writes reach it only after these.
    fn write_back_oldest(&mut self) -> Result<(), Error> {
        let Some((_, pages)) = self.pages.oldest_dirty(u64::MAX) else {
            return Ok(());
        };
        let max = (self.disk.geometry.max_blocks as usize).max(1);
        for (first, slots) in requests(&pages, EXTENT, max, block::MAX_PIECES) {
            self.transfer(true, first, &slots).map_err(|_| Error::Busy)?;
            self.stats.disk_writes += 1;
            self.stats.write_back_pages += slots.len() as u64;
            for s in slots {
                self.pages.mark_clean(s);
            }
        }
        self.disk.flush().map_err(|_| Error::Busy)?;
        self.stats.flushes += 1;
        Ok(())
    }

    fn write_back_up_to(&mut self, epoch: u64) -> Result<(), Error> {
        while self.pages.oldest_dirty(epoch).is_some() {
            self.write_back_oldest()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), Error> {
        self.write_back_up_to(u64::MAX)?;
        self.disk.flush().map_err(|_| Error::Busy)?;
        self.stats.flushes += 1;
        Ok(())
    }

    /// The slot holding device page `page`, read from the disk if it is
    /// not cached, unless `whole` (the caller overwrites all of it).
    fn slot(&mut self, page: u64, whole: bool) -> Result<usize, Error> {
        if page >= self.device_pages {
            return Err(Error::Invalid);
        }
        if let Some(s) = self.pages.lookup(page) {
            self.hit(s);
            return Ok(s);
        }
        if whole {
            let s = self.alloc(&[])?;
            self.pages.assign(s, page, false);
            self.stats.fills += 1;
            return Ok(s);
        }
        self.fill(page)
    }

    /// Slot `s` is used: counted, and the most recently used.
    fn hit(&mut self, s: usize) {
        self.stats.hits += 1;
        if core::mem::take(&mut self.pages.slots[s].ahead) {
            self.stats.read_ahead_used += 1;
        }
        self.pages.touch(s);
    }

    /// Reads page `page` and, for a sequential reader, the pages after it.
    fn fill(&mut self, page: u64) -> Result<usize, Error> {
        self.stats.misses += 1;
        let ahead = if page == self.next_expected {
            let w = self.window;
            self.window = (self.window * 2).clamp(4, MAX_WINDOW);
            w
        } else {
            self.window = 4;
            0
        };
        let limit = (self.disk.geometry.max_blocks as u64).max(1);
        let mut n = 1;
        while n < 1 + ahead && n < limit && page + n < self.device_pages && self.pages.lookup(page + n).is_none() {
            n += 1;
        }
        // The run of one extent is one request to the device; a longer
        // read takes runs of several, their requests in flight together.
        let mut slots: Vec<usize> = Vec::with_capacity(n as usize);
        let mut extents: Vec<usize> = Vec::with_capacity(MAX_FILL_PIECES);
        while (slots.len() as u64) < n && extents.len() < MAX_FILL_PIECES {
            let (start, got) = match self.alloc_run(n as usize - slots.len()) {
                Ok(run) => run,
                Err(e) if slots.is_empty() => return Err(e),
                Err(_) => break,
            };
            if extents.contains(&(start / EXTENT)) {
                // An extent travels whole, in one piece: this run waits.
                for s in start..start + got {
                    self.pages.unused(s);
                }
                break;
            }
            extents.push(start / EXTENT);
            slots.extend(start..start + got);
        }
        let got = slots.len();
        let t0 = sys::rdtsc();
        let result = self.transfer(false, page, &slots);
        self.stats.read_wait_cycles += sys::rdtsc() - t0;
        self.stats.disk_reads += 1;
        if result.is_err() {
            for &s in &slots {
                if self.extents[s / EXTENT].is_some() {
                    self.pages.unused(s);
                }
            }
            return Err(Error::Busy);
        }
        let got = got as u64;
        self.stats.disk_read_pages += got;
        self.stats.read_ahead += got - 1;
        self.next_expected = page + got;
        for (i, &s) in slots.iter().enumerate().rev() {
            // A slot of an extent that did not come back is retired.
            if self.extents[s / EXTENT].is_some() {
                self.pages.assign(s, page + i as u64, i > 0);
            }
        }
        self.pages.lookup(page).ok_or(Error::Busy)
    }

    /// Slot `s` is about to be written: if a barrier stands between it
    /// and its pending writes, their version is kept in a shadow (or, with
    /// no slot to spare, written back first with everything before it).
    fn before_write(&mut self, s: usize) -> Result<(), Error> {
        let Some(e) = self.pages.older_version(s, self.epoch) else {
            return Ok(());
        };
        if let Some(shadow) = self.pages.victim(&[s]) {
            if self.copy_page(s, shadow).is_ok() {
                self.pages.shadow(s, shadow);
                self.stats.shadows += 1;
                return Ok(());
            }
            self.pages.unused(shadow);
        }
        let before = self.stats.write_back_pages;
        self.write_back_up_to(e)?;
        self.stats.ordered_write_backs += self.stats.write_back_pages - before;
        Ok(())
    }

    /// Copies slot `from`'s page into slot `to` (a shadow's one copy).
    fn copy_page(&mut self, from: usize, to: usize) -> Result<(), Error> {
        let (ef, et) = (from / EXTENT, to / EXTENT);
        let (af, at) = ((from % EXTENT) * PAGE, (to % EXTENT) * PAGE);
        if ef == et {
            let ica = self.extents[ef].as_mut().ok_or(Error::Busy)?;
            ica.as_mut_slice().copy_within(af..af + PAGE, at);
            return Ok(());
        }
        let mut dst = self.extents[et].take().ok_or(Error::Busy)?;
        let copied = match self.extents[ef].as_ref() {
            Some(src) => {
                dst.as_mut_slice()[at..at + PAGE].copy_from_slice(&src.as_slice()[af..af + PAGE]);
                Ok(())
            }
            None => Err(Error::Busy),
        };
        self.extents[et] = Some(dst);
        copied
    }

    /// Checks a metadata request's range: inside the device and one page.
    fn range(&self, offset: u64, len: u32) -> Result<(u64, usize, usize), Error> {
        let len = len as usize;
        let page = offset / PAGE as u64;
        let off = (offset % PAGE as u64) as usize;
        if len == 0 || off + len > PAGE || page >= self.device_pages {
            return Err(Error::Invalid);
        }
        Ok((page, off, len))
    }

    /// WRITE_MANY: each record as a WRITE; stops at the first that fails.
    fn meta_write_many(&mut self, info: &AccInfo, rid: u64) -> Result<Reply, Error> {
        let len = info.len as usize;
        if len > cache::MAX_BATCH {
            return Err(Error::Invalid);
        }
        let mut msg = core::mem::take(&mut self.batch);
        msg.resize(len, 0);
        let applied = if len <= info.inline.len() {
            msg.copy_from_slice(&info.inline[..len]);
            Ok(())
        } else {
            sys::rv_read(rid, 0, &mut msg).map(drop)
        }
        .and_then(|()| self.apply_batch(&msg));
        self.batch = msg;
        applied.map(|()| Reply::Own(0))
    }

    /// READ_MANY: the pieces into the caller's reply buffer, back to
    /// back; one call where a READ a piece was 64 round trips. Stops at
    /// the first piece that fails (a bad range, no room left in the
    /// buffer); fails if that is the first.
    fn read_many(&mut self, info: &AccInfo, rid: u64) -> Result<Reply, Error> {
        let len = info.len as usize;
        if len == 0 || !len.is_multiple_of(cache::HEADER) || len > cache::MAX_PIECES * cache::HEADER {
            return Err(Error::Invalid);
        }
        let mut msg = [0u8; cache::MAX_PIECES * cache::HEADER];
        let msg = &mut msg[..len];
        if len <= info.inline.len() {
            msg.copy_from_slice(&info.inline[..len]);
        } else {
            sys::rv_read(rid, 0, msg)?;
        }
        let mut done = 0u64;
        for h in msg.chunks(cache::HEADER) {
            let Some((offset, n)) = cache::decode_header(h) else {
                break;
            };
            let Ok((page, off, n)) = self.range(offset, n) else {
                break;
            };
            let Ok(s) = self.slot(page, false) else { break };
            let Ok(bytes) = self.page_bytes(s) else { break };
            if sys::rv_write(rid, done, &bytes[off..off + n]) != Ok(n as u64) {
                break;
            }
            done += n as u64;
            self.stats.meta_reads += 1;
            self.stats.meta_read_bytes += n as u64;
        }
        if done == 0 {
            return Err(Error::Invalid);
        }
        sys::endr_len(rid, done)?;
        Ok(Reply::Ended)
    }

    fn apply_batch(&mut self, msg: &[u8]) -> Result<(), Error> {
        let mut at = 0;
        while at < msg.len() {
            let (offset, len) = cache::decode_header(&msg[at..]).ok_or(Error::Invalid)?;
            let data = msg.get(at + cache::HEADER..at + cache::HEADER + len as usize);
            let (page, off, len) = self.range(offset, len)?;
            let data = data.ok_or(Error::Invalid)?;
            let s = self.slot(page, off == 0 && len == PAGE)?;
            self.before_write(s)?;
            self.page_bytes_mut(s)?[off..off + len].copy_from_slice(data);
            self.pages.mark_dirty(s, self.epoch);
            self.stats.meta_writes += 1;
            self.stats.meta_write_bytes += len as u64;
            at = cache::next_record(at, len);
        }
        Ok(())
    }

    fn meta_write(&mut self, info: &AccInfo, rid: u64) -> Result<Reply, Error> {
        let (offset, len) = cache::decode_header(&info.inline).ok_or(Error::Invalid)?;
        let (page, off, len) = self.range(offset, len)?;
        if (info.len as usize) < cache::HEADER + len {
            return Err(Error::Invalid);
        }
        let whole = off == 0 && len == PAGE;
        let fresh = whole && self.pages.lookup(page).is_none();
        let s = self.slot(page, whole)?;
        self.before_write(s)?;
        let dst = &mut self.page_bytes_mut(s)?[off..off + len];
        if cache::HEADER + len <= info.inline.len() {
            dst.copy_from_slice(&info.inline[cache::HEADER..cache::HEADER + len]);
        } else if let Err(e) = sys::rv_read(rid, cache::HEADER as u64, dst) {
            // A page taken without reading holds another page's bytes.
            if fresh {
                self.pages.forget(s);
            }
            return Err(e);
        }
        self.pages.mark_dirty(s, self.epoch);
        self.stats.meta_writes += 1;
        self.stats.meta_write_bytes += len as u64;
        Ok(Reply::Own(0))
    }

    /// A client's READ, forwarded by the file server: its plan is the slot
    /// keyed by the call's rid. A plan of one piece at the start of the
    /// buffer is the reply itself; a longer one is written into the
    /// buffer piece by piece, each where it belongs, and the call ended
    /// with the total (or with the pieces before one that failed).
    fn file_read(&mut self, rid: u64) -> Result<Reply, Error> {
        // The plan's buffer is kept between calls: made afresh, a plan's
        // worth of pieces costs more to clear than a cached read to serve.
        let mut segs = core::mem::take(&mut self.read_plan);
        segs.resize(MAX_SEGMENTS, Segment::default());
        let taken = (1..cache::SLOTS)
            .filter_map(|i| Slot::of(self.plans.words(), i))
            .find_map(|slot| slot.take_with(rid, &mut segs));
        let replied = match taken {
            Some((n, to)) => {
                let replied = self.deliver(rid, &segs[..n]);
                if let (Ok(_), Some(to)) = (&replied, to) {
                    let t0 = sys::rdtsc();
                    self.publish(&segs[..n], to);
                    self.stats.publish_cycles += sys::rdtsc() - t0;
                }
                replied
            }
            None => Err(Error::Busy),
        };
        self.read_plan = segs;
        replied
    }

    /// The slot of device page `page` if it was here before this READ and
    /// read since it came (not a page this reader's own misses brought).
    fn seen_before(&self, page: u64) -> Option<usize> {
        self.pages.lookup(page).filter(|&s| !self.pages.slots[s].ahead)
    }

    /// Publishes a READ's pages in the kernel's file cache from the slots
    /// that hold them (the file server let this process, and the kernel
    /// refuses pages read before a revoke): each run of consecutive slots
    /// of an extent, consecutive memory, with one call. Only pages read a
    /// second time go (`seen`, per piece): a file read once from the disk,
    /// as a sequential reader streams it, costs its one copy into the
    /// reader, not one more into the kernel (Linux's page cache fills by
    /// the DMA itself); the read after publishes what is read again.
    /// Stops at a page refused.
    fn publish(&mut self, segs: &[Segment], to: PublishTo) {
        let mut i = 0;
        while i < segs.len() {
            let Some((first, mut bytes)) = self.whole_page(segs, i, to) else {
                i += 1;
                continue;
            };
            let mut j = i + 1;
            while j < segs.len() && j - i < PUBLISH_MAX_PAGES as usize && bytes.is_multiple_of(PAGE) {
                match self.whole_page(segs, j, to) {
                    Some((s, n)) if s == first + (j - i) && s / EXTENT == first / EXTENT => {
                        bytes += n;
                        j += 1;
                    }
                    _ => break,
                }
            }
            let Ok(from) = self.page_bytes(first) else {
                return;
            };
            let page = to.first_page as u64 + i as u64;
            let last = if (page + (j - i) as u64) * PAGE as u64 >= to.size {
                LAST
            } else {
                0
            };
            let at = page | (to.generation as u64) << 32;
            let done = calls::file_cache(op::PUBLISH_FOR, to.cache, at, from.as_ptr() as u64, bytes as u64 | last);
            let Ok(done) = done else {
                self.stats.publish_refused += 1;
                return;
            };
            // Pages the kernel had already were not copied.
            let (done, present) = (done & 0xffff_ffff, done >> 32);
            self.stats.published_pages += done - present.min(done);
            self.stats.published_bytes += (bytes as u64)
                .min(done * PAGE as u64)
                .saturating_sub(present * PAGE as u64);
            if done < (j - i) as u64 {
                self.stats.publish_refused += 1;
                return;
            }
            i = j;
        }
    }

    /// The slot of piece `i` of a READ and its length, if the piece is the
    /// whole of its page at its place in the reply (the last may end at
    /// the file's end), was read before this READ, and is still cached.
    fn whole_page(&self, segs: &[Segment], i: usize, to: PublishTo) -> Option<(usize, usize)> {
        let s = self.seen.get(i).copied().flatten()?;
        let seg = segs[i];
        let len = seg.len as usize;
        let file_end = (to.first_page as u64 * PAGE as u64).checked_add(seg.src as u64 + len as u64) == Some(to.size);
        let placed = seg.dev.is_multiple_of(PAGE as u64) && seg.src as usize == i * PAGE;
        if !placed || !(len == PAGE || (len < PAGE && file_end)) {
            return None;
        }
        // Still that page's (a fill later in the READ may have taken it).
        (self.pages.slots[s].key == Some(seg.dev / PAGE as u64)).then_some((s, len))
    }

    /// Delivers a READ's pieces.
    fn deliver(&mut self, rid: u64, segs: &[Segment]) -> Result<Reply, Error> {
        self.seen.clear();
        if let [Segment { dev, len, src: 0, .. }] = *segs {
            let (page, off, len) = self.range(dev, len).map_err(|_| Error::Busy)?;
            let seen = self.seen_before(page);
            self.seen.push(seen);
            let s = self.slot(page, false).map_err(|_| Error::Busy)?;
            self.stats.file_reads += 1;
            self.stats.file_read_bytes += len as u64;
            return Ok(Reply::Page(s, off, len));
        }
        // Pieces that lie one after another in an extent's memory go to
        // the reader with one copy call (a READ of 64 pages read ahead in
        // order: one, where a call a page cost a system call each). A fill
        // may take slots, so a run goes before a page not cached is read.
        let mut done = 0u64;
        let mut run: Option<(usize, usize)> = None;
        for seg in segs {
            let Ok((page, off, len)) = self.range(seg.dev, seg.len) else {
                break;
            };
            let queued = run.map_or(0, |(_, n)| n);
            if seg.src as u64 != done + queued as u64 {
                break;
            }
            // One look-up a page: a hit is used here, a miss fills (after
            // the run so far went).
            let s = match self.pages.lookup(page) {
                Some(s) => {
                    self.seen.push((!self.pages.slots[s].ahead).then_some(s));
                    self.hit(s);
                    s
                }
                None => {
                    self.seen.push(None);
                    if !self.write_run(rid, &mut done, &mut run) {
                        break;
                    }
                    let Ok(s) = self.slot(page, false) else {
                        break;
                    };
                    s
                }
            };
            let at = s * PAGE + off;
            match run {
                Some((from, n)) if from + n == at && from / (EXTENT * PAGE) == s / EXTENT => {
                    run = Some((from, n + len))
                }
                _ => {
                    if !self.write_run(rid, &mut done, &mut run) {
                        break;
                    }
                    run = Some((at, len));
                }
            }
        }
        self.write_run(rid, &mut done, &mut run);
        if done == 0 {
            return Err(Error::Busy);
        }
        self.stats.file_reads += 1;
        self.stats.file_read_bytes += done;
        sys::endr_len(rid, done)?;
        Ok(Reply::Ended)
    }

    /// Copies a run of a READ's bytes (`(at, len)`: from byte `at` of the
    /// slots' memory, within one extent) into the reader's buffer at
    /// `done`, which it advances; whether it went (no run: true).
    fn write_run(&mut self, rid: u64, done: &mut u64, run: &mut Option<(usize, usize)>) -> bool {
        let Some((at, len)) = run.take() else {
            return true;
        };
        let Some(ica) = self.extents[at / (EXTENT * PAGE)].as_ref() else {
            return false;
        };
        let from = at % (EXTENT * PAGE);
        let Some(bytes) = ica.as_slice().get(from..from + len) else {
            return false;
        };
        if sys::rv_write(rid, *done, bytes) != Ok(len as u64) {
            return false;
        }
        *done += len as u64;
        true
    }

    /// The file server's nested call for a client's WRITE: the data comes
    /// from the client's message, the plan from the write slot. Replies
    /// with the bytes stored before anything failed and the error (0:
    /// none). After a failure, the plan's fresh blocks are zeroed, so none
    /// shows what it held before it was allocated; blocks already in the
    /// file keep what they have.
    fn file_write(&mut self, rid: u64, reply: &mut [u8]) -> Result<Reply, Error> {
        let slot = Slot::of(self.plans.words(), cache::WRITE_SLOT).ok_or(Error::Invalid)?;
        let mut segs = [Segment::default(); MAX_SEGMENTS];
        let n = slot.take(slot.key(), &mut segs).ok_or(Error::Invalid)?;
        let mut stored = 0u64;
        let mut error: Option<Error> = None;
        for seg in &segs[..n] {
            let (page, off, len) = self.range(seg.dev, seg.len)?;
            if error.is_some() && !seg.fresh {
                continue;
            }
            let s = match self.slot(page, off == 0 && len == PAGE) {
                Ok(s) => s,
                Err(e) => {
                    error.get_or_insert(e);
                    continue;
                }
            };
            if let Err(e) = self.before_write(s) {
                error.get_or_insert(e);
                continue;
            }
            let dst = &mut self.page_bytes_mut(s)?[off..off + len];
            if error.is_none() {
                match sys::rv_read(rid, seg.src as u64, dst) {
                    Ok(_) => stored += len as u64,
                    Err(e) => {
                        if seg.fresh {
                            dst.fill(0);
                        }
                        error = Some(e);
                    }
                }
            } else {
                dst.fill(0);
            }
            self.pages.mark_dirty(s, self.epoch);
        }
        self.stats.file_writes += 1;
        self.stats.file_write_bytes += stored;
        reply[..8].copy_from_slice(&stored.to_le_bytes());
        reply[8..16].copy_from_slice(&error.map_or(0, |e| e as u64).to_le_bytes());
        Ok(Reply::Own(16))
    }

    fn open(&mut self, caller: u64, reply: &mut [u8]) -> Result<Reply, Error> {
        if let Some(c) = self.client
            && c != caller
            && sys::alive(c)
        {
            return Err(Error::Busy);
        }
        // A new client starts with an empty plan area.
        for i in 0..cache::SLOTS {
            if let Some(s) = Slot::of(self.plans.words(), i) {
                s.clear();
            }
        }
        let plan_area = self.plans.share_with(caller)?;
        self.client = Some(caller);
        let r = OpenReply {
            device_bytes: self.device_pages * PAGE as u64,
            plan_area,
        };
        reply[..OpenReply::LEN].copy_from_slice(&r.encode());
        Ok(Reply::Own(OpenReply::LEN))
    }

    fn drop_all(&mut self) -> Result<(), Error> {
        self.sync()?;
        for s in self.pages.held() {
            self.pages.forget(s);
        }
        self.next_expected = u64::MAX;
        Ok(())
    }

    fn report(&self) -> String {
        let s = &self.stats;
        let mut o = String::new();
        let _ = write!(
            o,
            "pages {}\nheld {}\ndirty {}\nepoch {}\nhits {}\nmisses {}\nread_ahead {}\nread_ahead_used {}\n\
             fills {}\ndisk_reads {}\ndisk_read_pages {}\ndisk_writes {}\nwrite_back_pages {}\n\
             shadows {}\nordered_write_backs {}\nflushes {}\nbarriers {}\nsyncs {}\nticks {}\npages_lost {}\n\
             meta_reads {}\nmeta_read_bytes {}\nmeta_writes {}\nmeta_write_bytes {}\nfile_reads {}\n\
             file_read_bytes_copied {}\nfile_writes {}\nfile_write_bytes_copied {}\npublished_pages {}\n\
             published_bytes_copied {}\npublish_refused {}\nread_wait_ns {}\npublish_ns {}\nrefused {}\n",
            self.slots,
            self.pages.len(),
            self.pages.dirty_count(),
            self.epoch,
            s.hits,
            s.misses,
            s.read_ahead,
            s.read_ahead_used,
            s.fills,
            s.disk_reads,
            s.disk_read_pages,
            s.disk_writes,
            s.write_back_pages,
            s.shadows,
            s.ordered_write_backs,
            s.flushes,
            s.barriers,
            s.syncs,
            s.ticks,
            s.pages_lost,
            s.meta_reads,
            s.meta_read_bytes,
            s.meta_writes,
            s.meta_write_bytes,
            s.file_reads,
            s.file_read_bytes,
            s.file_writes,
            s.file_write_bytes,
            s.published_pages,
            s.published_bytes,
            s.publish_refused,
            sys::tsc_to_ns(s.read_wait_cycles),
            sys::tsc_to_ns(s.publish_cycles),
            s.refused
        );
        o
    }

    fn serve(&mut self, info: &AccInfo, rid: u64, reply: &mut [u8]) -> Result<Reply, Error> {
        let client = self.client == Some(info.caller);
        match info.entry {
            cache::OPEN => self.open(info.caller, reply),
            cache::READ if client => {
                let (offset, len) = cache::decode_header(&info.inline).ok_or(Error::Invalid)?;
                let (page, off, len) = self.range(offset, len)?;
                let s = self.slot(page, false)?;
                self.stats.meta_reads += 1;
                self.stats.meta_read_bytes += len as u64;
                Ok(Reply::Page(s, off, len))
            }
            cache::READ_MANY if client => self.read_many(info, rid),
            cache::WRITE if client => self.meta_write(info, rid),
            cache::WRITE_MANY if client => self.meta_write_many(info, rid),
            cache::BARRIER if client => {
                self.epoch += 1;
                self.stats.barriers += 1;
                Ok(Reply::Own(0))
            }
            cache::SYNC if client => {
                self.stats.syncs += 1;
                self.sync().map(|()| Reply::Own(0))
            }
            cache::FILE_READ => self.file_read(rid),
            cache::FILE_WRITE if client => self.file_write(rid, reply),
            cache::CLOSE if client => {
                self.client = None;
                Ok(Reply::Own(0))
            }
            cache::TICK => {
                if self.pages.dirty_count() > 0 {
                    self.stats.ticks += 1;
                    self.sync()?;
                }
                Ok(Reply::Own(0))
            }
            cache::DROP => self.drop_all().map(|()| Reply::Own(0)),
            cache::STATS => {
                let text = self.report();
                let n = text.len().min(reply.len());
                reply[..n].copy_from_slice(&text.as_bytes()[..n]);
                Ok(Reply::Own(n))
            }
            _ => {
                self.stats.refused += 1;
                Err(Error::Denied)
            }
        }
    }
}

/// The periodic flush: calls the cache's TICK every `secs` seconds. It is
/// the cache's child and ends soon after the cache does (it looks every
/// 50 ms whether it has been orphaned: no one else may kill it).
fn ticker(name: &str, secs: u64) -> i32 {
    let _ = sys::name_register(&alloc::format!("{name}-tick"), 1);
    let slice = 50_000_000;
    let mut waited = 0;
    loop {
        sys::sleep_ns(slice);
        waited += slice;
        if sys::proc_info(0).map_or(true, |p| p.parent == u64::MAX) {
            return 0;
        }
        if waited >= secs.max(1) * 1_000_000_000 {
            waited = 0;
            let Ok(pid) = sys::name_lookup(name) else { return 0 };
            if sys::call(pid, cache::TICK, &[], &mut []).is_err() {
                return 0;
            }
        }
    }
}

fn main(args: &[&str]) -> i32 {
    if let [_, "tick", name, secs] = args {
        return ticker(name, secs.parse().unwrap_or(5));
    }
    let name = args.get(1).copied().unwrap_or(cache::NAME);
    let disk_name = args.get(2).copied().unwrap_or(block::NAME);
    let count: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(1024).max(MIN_PAGES);
    let secs: u64 = args.get(4).and_then(|n| n.parse().ok()).unwrap_or(5);
    let disk = match Disk::open(disk_name) {
        Ok(d) => d,
        Err(e) => {
            println!("blockcache: cannot open disk '{disk_name}': {e:?}");
            return 1;
        }
    };
    let mut extents = Vec::with_capacity(count.div_ceil(EXTENT));
    let mut slots = 0;
    while slots < count {
        let n = (count - slots).min(EXTENT);
        match Ica::create(n as u64) {
            Ok(i) => extents.push(Some(i)),
            Err(e) => {
                println!("blockcache: {slots} pages only: {e:?}");
                break;
            }
        }
        slots += n;
    }
    if slots == 0 {
        return 1;
    }
    let plans = match SharedWords::create(cache::PLAN_PAGES) {
        Ok(p) => p,
        Err(e) => {
            println!("blockcache: no plan area: {e:?}");
            return 1;
        }
    };
    let mut c = Cache {
        device_pages: disk.geometry.blocks,
        disk,
        pages: Pages::new(slots),
        extents,
        slots,
        epoch: 0,
        next_expected: u64::MAX,
        window: 4,
        client: None,
        plans,
        read_plan: Vec::new(),
        seen: Vec::with_capacity(MAX_SEGMENTS),
        batch: Vec::new(),
        stats: Stats::default(),
    };
    if let Err(e) = sys::name_register(name, cache::ENTRIES) {
        println!("blockcache: cannot register '{name}': {e:?}");
        return 1;
    }
    if secs > 0 {
        let mut buf = [0u8; 24];
        let _ = sys::spawn_on(
            "blockcache",
            &["tick", name, sys::fmt_u64(secs, &mut buf)],
            tessera_rt::abi::ANY_CPU,
        );
    }
    let mut info = AccInfo::default();
    let mut own = [0u8; 1024];
    let mut rid = 0;
    let mut reply = Reply::Own(0);
    loop {
        if let Reply::Ended = reply {
            rid = 0;
        }
        let bytes: &[u8] = match reply {
            Reply::Own(n) => &own[..n],
            Reply::Ended => &own[..0],
            Reply::Page(s, off, len) => c.page_bytes(s).map_or(&[][..], |p| &p[off..off + len]),
        };
        rid = match sys::endr_acc(rid, bytes, cache::ENTRIES, &mut info) {
            Ok(r) => r,
            Err(_) if rid != 0 => {
                rid = 0;
                reply = Reply::Own(0);
                continue;
            }
            Err(_) => return 1,
        };
        reply = match c.serve(&info, rid, &mut own) {
            Ok(r) => r,
            Err(e) => {
                let _ = sys::rv_fail(rid, e);
                rid = 0;
                Reply::Own(0)
            }
        };
    }
}

tessera_rt::entry!(main);
