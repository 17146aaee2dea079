//! The pages this server publishes in the kernel's file caches
//! (`abi::file_cache`), which its clients read with one system call and
//! one copy and no rendezvous.
//!
//! An open regular file has a cache, shared by everyone who has it open
//! and kept after the last close (for the next open, up to `MAX_IDLE`
//! files'); a client that opens it is granted the cache and learns its id
//! in OPEN's reply. A file's last link takes its cache (the file's pages
//! would be charged to this server for nothing), at once or with the last
//! reader's close; so does a truncate to 0 that no reader sees.
//!
//! A READ that says it missed the cache (`MISSED`) publishes the pages it
//! covers. When its plan is whole pages (blocks of 4 KiB, a read from a
//! page's start), the plan says so and the block cache publishes them
//! itself as it answers, from the pages that hold them, with one copy
//! (`file_cache(PUBLISHER)` lets it; the cache's generation in the plan
//! keeps a page read before a revoke out), but only pages it held before
//! that READ and that were read since: a file streamed from the disk once
//! is copied once, into its reader, and published at its second read.
//! Otherwise they are published at the next request: those wholly on
//! blocks (a hole stays a miss), read from the block cache into a page
//! here (one copy) and copied into the kernel (another).
//!
//! This server is the only writer of its files, so it keeps the caches
//! true by revoking, before it answers, the pages a write changes, and on
//! a change of size every page from the old end or the new, whichever
//! comes first. If the kernel refuses a page (its limit on this server's
//! memory), the cache takes no more until pages are revoked.
//!
//! A cache also holds the file's attributes (`file_cache_attr`: its
//! `struct stat`), from which the kernel answers a Linux process's fstat.
//! They are said when a FSTAT or STAT here finds them unknown, and
//! forgotten before the reply to any request that wrote the inode (the
//! library lists the inodes it wrote, whatever the operation: a write,
//! truncate, chmod, chown, utimensat, link, unlink, rename, an extended
//! attribute, the access time a READ here sets). Forgetting costs a call
//! only when they were known, and none after a write, whose revoke
//! forgets them in the kernel already; saying the whole record at every
//! change would cost a stat and a call per write.

use crate::clients::OpenFile;
use crate::{Server, errno};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use ext2fs::{FileType, Handle};
use tessera_api::cache::PublishTo;
use tessera_rt::abi::file_cache::{LAST, MAX_PAGES, PAGE, PUBLISH_MAX_PAGES, op};
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// Pages one READ publishes at most (a READ delivers 64 at most).
const MAX_PUBLISH: u64 = 64;
/// Caches of closed files kept.
const MAX_IDLE: usize = 64;

pub struct Cached {
    id: u64,
    /// Who has it open for reading, how many times (each granted).
    readers: Vec<(u64, u32)>,
    /// Pages published, one bit each (as far as the highest).
    present: Vec<u64>,
    /// The kernel refused a page: none until a revoke.
    full: bool,
    /// The kernel holds the file's attributes (`file_cache_attr`).
    attrs: bool,
    /// The block cache may publish its pages (`file_cache(PUBLISHER)`).
    delegated: bool,
}

impl Cached {
    fn has(&self, page: u64) -> bool {
        self.present
            .get((page / 64) as usize)
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }

    fn mark(&mut self, page: u64) {
        let i = (page / 64) as usize;
        if self.present.len() <= i {
            self.present.resize(i + 1, 0);
        }
        self.present[i] |= 1 << (page % 64);
    }

    /// The file's attributes changed: the kernel forgets its copy;
    /// whether it had one.
    fn forget_attrs(&mut self) -> bool {
        let had = core::mem::replace(&mut self.attrs, false);
        if had {
            let _ = calls::file_cache_attr(self.id, &[]);
        }
        had
    }
}

#[derive(Default)]
pub struct Published {
    caches: BTreeMap<Handle, Cached>,
    /// Caches of files no one has open, oldest first: kept for the next
    /// open, as a page cache keeps a closed file's pages.
    idle: VecDeque<Handle>,
    /// The last READ's range, published at the next request: by then the
    /// block cache has served it, and holds its pages (a page read for
    /// the kernel first would wait for the disk, one page at a time).
    pending: Option<(Handle, u64, u64)>,
    /// Caches whose attributes the kernel holds: while none does, a
    /// request's writes of inodes cost no look-up (a workload that never
    /// calls fstat, or only on files it does not change).
    known: usize,
    pub pages_published: u64,
    /// Bytes this server copied into the kernel (each also copied here
    /// from the block cache first).
    pub bytes_published: u64,
    /// Pages of READs whose plan had the block cache publish them.
    pub pages_delegated: u64,
    pub pages_revoked: u64,
    pub refused: u64,
}

impl Published {
    pub fn caches(&self) -> usize {
        self.caches.len()
    }

    /// Deletes the oldest idle caches until `keep` are left.
    fn trim(&mut self, keep: usize) {
        while self.idle.len() > keep {
            if let Some(h) = self.idle.pop_front() {
                self.delete(h);
            }
        }
    }

    /// `h`'s cache goes: its pages revoked, then the resource deleted
    /// through the mediator (its memory back on this server's budget).
    fn delete(&mut self, h: Handle) {
        let Some(c) = self.caches.remove(&h) else {
            return;
        };
        self.known -= c.attrs as usize;
        self.idle.retain(|&i| i != h);
        if self.pending.is_some_and(|(p, _, _)| p == h) {
            self.pending = None;
        }
        if let Ok(n) = calls::file_cache(op::REVOKE, c.id, 0, u64::MAX, 0) {
            self.pages_revoked += n;
        }
        let _ = sys::res_delete(c.id);
    }
}

impl Server {
    /// `f` was opened for `reader`: its cache (made if it is the first
    /// open), granted to `reader`; returns the cache's id, 0 if it has
    /// none (not open for reading, not a regular file, or the kernel
    /// would not make one: the reads then all come here).
    pub fn cache_open(&mut self, f: &OpenFile, reader: u64) -> u64 {
        let h = f.handle;
        // A program's open reads it once, at exec: no cache for it.
        if !f.readable() || f.dir || f.exec {
            return 0;
        }
        let Some(size) = self
            .fm()
            .ok()
            .and_then(|fm| fm.stat(h).ok())
            .and_then(|st| (st.kind == FileType::Regular).then_some(st.size))
        else {
            return 0;
        };
        let block_cache = self.cache;
        let p = &mut self.published;
        let c = match p.caches.get_mut(&h) {
            Some(c) => {
                p.idle.retain(|&i| i != h);
                c
            }
            None => {
                let Ok(id) = calls::file_cache(op::CREATE, 0, 0, 0, 0) else {
                    return 0;
                };
                let delegated = calls::file_cache(op::PUBLISHER, id, block_cache, 0, 0).is_ok();
                p.caches.entry(h).or_insert(Cached {
                    id,
                    readers: Vec::new(),
                    present: Vec::new(),
                    full: false,
                    attrs: false,
                    delegated,
                })
            }
        };
        match c.readers.iter_mut().find(|r| r.0 == reader) {
            Some(r) => r.1 += 1,
            None => {
                if calls::file_cache(op::GRANT, c.id, reader, 1, 0).is_err() {
                    // Not granted: its reads all come here.
                    if c.readers.is_empty() {
                        p.idle.push_back(h);
                        p.trim(MAX_IDLE);
                    }
                    return 0;
                }
                c.readers.push((reader, 1));
            }
        }
        // Its size, so that a read at the end needs no page (a write past
        // the end made the kernel forget it).
        let _ = calls::file_cache(op::SIZE, c.id, size, 0, 0);
        c.id
    }

    /// `f`, open for `reader`, was closed: it is no longer granted the
    /// cache if that was its last open of the file; with the last reader,
    /// the cache becomes idle, or goes if the file has no link left.
    pub fn cache_close(&mut self, f: &OpenFile, reader: u64) {
        if !f.readable() || f.dir || f.exec {
            return;
        }
        let h = f.handle;
        let p = &mut self.published;
        let Some(c) = p.caches.get_mut(&h) else {
            return;
        };
        let Some(i) = c.readers.iter().position(|r| r.0 == reader) else {
            return;
        };
        c.readers[i].1 -= 1;
        if c.readers[i].1 == 0 {
            // A process that closed the file reads it no more.
            c.readers.swap_remove(i);
            let _ = calls::file_cache(op::GRANT, c.id, reader, 0, 0);
            if c.readers.is_empty() {
                if self.cache_file_gone(h) {
                    // No name leads to it: no one opens it again.
                    self.published.delete(h);
                } else {
                    self.published.idle.push_back(h);
                    self.published.trim(MAX_IDLE);
                }
            }
        }
    }

    /// Whether `h` has no link left (an orphan kept by an open handle, or
    /// freed already).
    fn cache_file_gone(&mut self, h: Handle) -> bool {
        match self.fm() {
            Ok(fm) => !fm.stat(h).is_ok_and(|st| st.links > 0),
            Err(_) => false,
        }
    }

    /// A name of `h` went (an unlink, or a rename over it): with its last
    /// link, its cache goes now if no one reads it, else with the last
    /// reader's close.
    pub fn cache_unlinked(&mut self, h: Handle) {
        let idle = self.published.caches.get(&h).is_some_and(|c| c.readers.is_empty());
        if idle && self.cache_file_gone(h) {
            self.published.delete(h);
        }
    }

    /// Where the pages of a READ of `h` from `off` go if the block cache
    /// publishes them: a read from a page's start of a file with a cache
    /// that takes pages and lets the block cache publish.
    pub fn cache_publish_to(&mut self, h: Handle, off: u64) -> Option<PublishTo> {
        let page = off / PAGE;
        if !off.is_multiple_of(PAGE) || page >= MAX_PAGES {
            return None;
        }
        let id = match self.published.caches.get(&h) {
            Some(c) if c.delegated && !c.full => c.id,
            _ => return None,
        };
        let size = self.fm().ok()?.stat(h).ok()?.size;
        let generation = calls::file_cache(op::GENERATION, id, 0, 0, 0).ok()?;
        Some(PublishTo {
            cache: id,
            first_page: page as u32,
            generation: generation as u32,
            size,
        })
    }

    /// A READ of `len` bytes at `off` of `h` came here: its pages are
    /// published at the next request.
    pub fn cache_missed(&mut self, h: Handle, off: u64, len: u64) {
        self.cache_publish_pending();
        if self.published.caches.get(&h).is_some_and(|c| !c.full) {
            self.published.pending = Some((h, off, len));
        }
    }

    /// Publishes the last READ's pages, if any wait.
    pub fn cache_publish_pending(&mut self) {
        if let Some((h, off, len)) = self.published.pending.take() {
            self.cache_publish(h, off, len);
        }
    }

    /// Publishes the pages of `h` that `len` bytes at `off` are on (those
    /// not yet published, wholly on blocks, up to the file's end). Each is
    /// read as it is now: a change since the READ is in it.
    fn cache_publish(&mut self, h: Handle, off: u64, len: u64) {
        match self.published.caches.get(&h) {
            Some(c) if !c.full => {}
            _ => return,
        }
        let Ok(size) = self.fm().and_then(|fm| fm.stat(h).map_err(errno)).map(|st| st.size) else {
            return;
        };
        let end = off.saturating_add(len).min(size);
        if off >= end {
            return;
        }
        let (first, last) = (off / PAGE, ((end - 1) / PAGE).min(off / PAGE + MAX_PUBLISH - 1));
        // Where each page is on the device, then all of them from the
        // block cache in one READ_MANY (a round trip a page cost as much
        // as the cold read's disk time), then each run into the kernel
        // with one PUBLISH.
        let mut pages: Vec<(u64, usize)> = Vec::new();
        let mut pieces: Vec<(u64, u32)> = Vec::new();
        for page in first..=last.min(MAX_PAGES - 1) {
            if self.published.caches.get(&h).is_none_or(|c| c.has(page)) {
                continue;
            }
            let valid = (size - page * PAGE).min(PAGE) as usize;
            if self.page_pieces(h, page, valid, &mut pieces) {
                pages.push((page, valid));
            }
        }
        if pages.is_empty() {
            return;
        }
        let total: usize = pages.iter().map(|&(_, v)| v).sum();
        let mut buf = core::mem::take(&mut self.page_buf);
        buf.resize(total, 0);
        let got = self.dev().read_many(&pieces, &mut buf).unwrap_or(0);
        // Runs of consecutive pages, each published with one call.
        let (mut i, mut at) = (0usize, 0usize);
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j].0 == pages[j - 1].0 + 1 && j - i < PUBLISH_MAX_PAGES as usize {
                j += 1;
            }
            let bytes: usize = pages[i..j].iter().map(|&(_, v)| v).sum();
            if at + bytes > got {
                break;
            }
            let Some(c) = self.published.caches.get_mut(&h) else {
                break;
            };
            let first = pages[i].0;
            let last = if pages[j - 1].0.saturating_add(1) * PAGE >= size {
                LAST
            } else {
                0
            };
            let done = calls::file_cache(op::PUBLISH, c.id, first, buf[at..].as_ptr() as u64, bytes as u64 | last)
                .unwrap_or(0)
                .min((j - i) as u64);
            for page in first..first + done {
                c.mark(page);
            }
            self.published.pages_published += done;
            self.published.bytes_published += (bytes as u64).min(done * PAGE);
            if done < (j - i) as u64 {
                // The kernel's room for this server: the idle caches
                // give theirs back first, then this one stops growing.
                c.full = true;
                self.published.refused += 1;
                self.published.trim(0);
                break;
            }
            (i, at) = (j, at + bytes);
        }
        self.page_buf = buf;
    }

    /// Adds to `pieces` where page `page` of `h` (its first `valid`
    /// bytes) is on the device, if it lies wholly on blocks.
    fn page_pieces(&mut self, h: Handle, page: u64, valid: usize, pieces: &mut Vec<(u64, u32)>) -> bool {
        let Ok(fm) = self.fm() else {
            return false;
        };
        let bs = fm.inodes().block_size() as u64;
        // Pages published for later reads are no access of their own: the
        // read that asked for them touched the access time, or chose not to
        // (O_NOATIME).
        let Ok(segments) = fm.map_read_as(h, page * PAGE, valid as u64, false) else {
            return false;
        };
        let before = pieces.len();
        let mut at = 0usize;
        for seg in &segments {
            let Some(block) = seg.block else {
                pieces.truncate(before);
                return false;
            };
            let mut dev = block * bs + seg.offset as u64;
            let mut left = seg.len as usize;
            while left > 0 {
                let n = left.min(PAGE as usize - (dev % PAGE) as usize).min(valid - at);
                if n == 0 {
                    pieces.truncate(before);
                    return false;
                }
                pieces.push((dev, n as u32));
                (dev, at, left) = (dev + n as u64, at + n, left - n);
            }
        }
        if at != valid {
            pieces.truncate(before);
        }
        at == valid
    }

    /// Pages `first` to `first + count - 1` of `h` changed: revoked.
    pub fn cache_revoke(&mut self, h: Handle, first: u64, count: u64) {
        let Some(c) = self.published.caches.get_mut(&h) else {
            return;
        };
        if let Ok(n) = calls::file_cache(op::REVOKE, c.id, first, count, 0) {
            self.published.pages_revoked += n;
        }
        let last = first.saturating_add(count);
        if last >= MAX_PAGES {
            // To the end: the words past the first page go too.
            c.present.truncate(first.div_ceil(64) as usize);
        }
        // The kernel forgot the attributes with the pages.
        self.published.known -= core::mem::replace(&mut c.attrs, false) as usize;
        let top = (c.present.len() as u64 * 64).min(last);
        for page in first..top {
            if let Some(w) = c.present.get_mut((page / 64) as usize) {
                *w &= !(1 << (page % 64));
            }
        }
        c.full = false;
    }

    /// `stat`, the `struct stat` of `h` as FSTAT answers it now, goes to
    /// its cache if the kernel does not hold it.
    pub fn cache_attrs(&mut self, h: Handle, stat: &[u8]) {
        if let Some(c) = self.published.caches.get_mut(&h)
            && !c.attrs
        {
            c.attrs = calls::file_cache_attr(c.id, stat).is_ok();
            self.published.known += c.attrs as usize;
        }
    }

    /// Before a reply: the caches of the inodes the request wrote forget
    /// their attributes.
    pub fn cache_attrs_changed(&mut self) {
        let Ok(fm) = self.fm.as_mut() else {
            return;
        };
        let inodes = fm.inodes();
        let (list, all) = inodes.changed();
        if list.is_empty() && !all {
            return;
        }
        let p = &mut self.published;
        if p.known > 0 {
            let mut forgot = 0;
            let mut forget = |c: &mut Cached| forgot += c.forget_attrs() as usize;
            if all {
                p.caches.values_mut().for_each(&mut forget);
            } else {
                for &ino in list {
                    let of = Handle { ino, generation: 0 }..=Handle {
                        ino,
                        generation: u32::MAX,
                    };
                    p.caches.range_mut(of).for_each(|(_, c)| forget(c));
                }
            }
            p.known -= forgot;
        }
        inodes.forget_changed();
    }

    /// Every page of every cache goes; idle caches go too.
    pub fn cache_drop_all(&mut self) {
        self.published.pending = None;
        self.published.trim(0);
        let open: Vec<Handle> = self.published.caches.keys().copied().collect();
        for h in open {
            self.cache_revoke(h, 0, u64::MAX);
        }
    }

    /// `h`'s size changed from `old` to `new` (a truncate, or a write past
    /// the end): every page from the first end on. Emptied while no one
    /// reads it, the cache goes whole (the kernel keeps a revoked cache's
    /// index).
    pub fn cache_resized(&mut self, h: Handle, old: u64, new: u64) {
        if new == 0 && self.published.caches.get(&h).is_some_and(|c| c.readers.is_empty()) {
            self.published.delete(h);
        } else if old != new {
            self.cache_revoke(h, old.min(new) / PAGE, u64::MAX);
            if let Some(c) = self.published.caches.get(&h) {
                let _ = calls::file_cache(op::SIZE, c.id, new, 0, 0);
            }
        }
    }
}
