//! File caches: the pages of one file that its file server publishes in
//! the kernel, so that a client reads them with one system call and one
//! copy, with no rendezvous (issue 17: a cached 4 KiB read through the
//! file server and the block cache cost nearly three times Linux's).
//!
//! A file server makes a cache per open file (per inode: the processes
//! that open it share it) and pays for its pages. It is the only writer of
//! its files, so it knows when pages change: it revokes them before it
//! answers the request that changes them (a write, a truncate), and the
//! pages a reader copies are always the file's bytes at some moment of
//! the read. It publishes a page after it served it (`publish`), and says
//! which processes may read the cache (`grant`: those it opened the file
//! for). A read that finds every page it needs present is served here
//! (`read`); anything else (a page not there, a hole, a page past what
//! the cache may hold, a process not granted) is a miss, which the reader
//! sends to the file server as before.
//!
//! The owner may also say the file's size (`set_size`), so that a read at
//! or past the end is answered here with no page; a revoke that reaches
//! the page the size ends in forgets it (every change of size revokes
//! from the old end or the new), until the owner says it again.
//!
//! The owner may keep the file's attributes here too (`set_attrs`: its
//! Linux `struct stat`, as the owner answers fstat), which a Linux
//! process's fstat of a descriptor bound to the cache then reads
//! (`stat_from`) with no rendezvous. The owner forgets them (or says them
//! anew) before it answers any request that changes them, as it revokes
//! pages; a revoke forgets them too, since every change of the bytes
//! changes the times, so a write costs no call more.
//!
//! Pages are never changed in place: a page is published whole and
//! revoked whole. A reader takes references to its pages under the
//! cache's lock and copies after it, where a fault may sleep; a revoke
//! meanwhile only makes the page go when the reader is done, and the
//! reader's bytes are those of before the revoke, as a read that came
//! first. When the owner ends, its caches are emptied and their ids go:
//! readers miss, and the file server's absence is reported the old way.

use super::mediator::{NO_IDS, Need, Outcome, invoke, only};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::file_cache::{LAST, MAX_PAGES, MAX_READERS, PAGE, PUBLISH_MAX_PAGES, STAT_LEN};
use abi::{Error, ResInfo, ResOp};
use alloc::sync::Arc;
use alloc::vec::Vec;
use kcore::mm::quota::Charge;
use kcore::sync::IrqMutex;
use kcore::uaccess::{MAX_COPY, UserRange};
use kcore::vm::region::FilledPage;

static TABLE: IrqMutex<ResTable<Arc<FileCache>>> = IrqMutex::new(table(Kind::FileCache));

/// Pages one read takes references to at most (64 pages from anywhere in
/// a page): a longer read goes to the file server, or asks in parts.
const MAX_READ_PAGES: usize = 65;

pub struct FileCache {
    inner: IrqMutex<Inner>,
}

/// A published page: its bytes, never changed.
struct Page {
    data: FilledPage,
}

struct Inner {
    /// Page index → the page, if present (grown to the highest published).
    pages: Vec<Option<Arc<Page>>>,
    present: u64,
    /// The file's last page and where the file ends, if that page is
    /// present (published as the last).
    end: Option<(u64, u64)>,
    /// Where the file ends, as its owner said (`set_size`), whether or not
    /// the last page is present.
    size: Option<u64>,
    /// The file's `struct stat`, as its owner said it (`set_attrs`), until
    /// a change forgets it. Inline, so that the cache's own charge holds it.
    attrs: Option<[u8; STAT_LEN]>,
    readers: Vec<u64>,
    /// The one process besides the owner that may publish (`PUBLISH_FOR`),
    /// 0 for none.
    publisher: u64,
    /// Advanced by every revoke: a publisher's pages read before it are
    /// refused after it.
    generation: u64,
    /// The pages' memory and the index's, on the owner.
    charge: Charge,
    /// Emptied for good: its owner ended or deleted it.
    dead: bool,
}

impl Inner {
    fn index_bytes(len: usize) -> u64 {
        (len * size_of::<Option<Arc<Page>>>()) as u64
    }

    /// Every page goes (and their charge).
    fn empty(&mut self) -> Vec<Option<Arc<Page>>> {
        let index = Self::index_bytes(self.pages.capacity());
        let pages = core::mem::take(&mut self.pages);
        self.charge
            .shrink(self.present * (PAGE + size_of::<Page>() as u64) + index);
        self.present = 0;
        self.end = None;
        self.size = None;
        self.attrs = None;
        pages
    }
}

/// `file_cache(CREATE)`: an empty cache owned by `owner`.
pub fn create(owner: u64) -> Result<ResId, Error> {
    invoke(owner, ResOp::CreateFileCache, NO_IDS, || {
        let cost = super::cost::<Arc<FileCache>>(size_of::<FileCache>() as u64);
        let charge = super::charge(owner, cost)?;
        let pages_charge = super::charge(owner, 0)?;
        let cache = kcore::mm::heap::try_arc(FileCache {
            inner: IrqMutex::new(Inner {
                pages: Vec::new(),
                present: 0,
                end: None,
                size: None,
                attrs: None,
                readers: Vec::new(),
                publisher: 0,
                generation: 0,
                charge: pages_charge,
                dead: false,
            }),
        })
        .map_err(|_| Error::NoMemory)?;
        super::insert_charged(&mut TABLE.lock(), owner, charge, cache)
    })
}

/// An owner's operation on cache `id`, through the mediator: `work` gets
/// the cache if `caller` owns it.
fn control<T: Outcome>(
    caller: u64,
    id: ResId,
    work: impl FnOnce(Arc<FileCache>) -> Result<T, Error>,
) -> Result<T, Error> {
    invoke(
        caller,
        ResOp::FileCacheControl,
        only(id, Need::Owned(Kind::FileCache)),
        || work(super::owned(&TABLE.lock(), id, caller)?.value.clone()),
    )
}

/// `file_cache(PUBLISH)`: pages from `index` of cache `id` hold the `len`
/// bytes of the caller's memory at `addr`, a page each (up to
/// `PUBLISH_MAX_PAGES`; the last may be short only at the file's end: one
/// call for a READ's pages, where a call a page cost as much again as the
/// copy). Returns the pages published: those before the first that
/// failed (none: that page's error).
pub fn publish(caller: u64, id: ResId, index: u64, addr: u64, len: u64) -> Result<u64, Error> {
    let end_here = len & LAST != 0;
    let len = len & !LAST;
    if len == 0 || len > PUBLISH_MAX_PAGES * PAGE {
        return Err(Error::Invalid);
    }
    control(caller, id, |cache| {
        let pages = len.div_ceil(PAGE);
        for i in 0..pages {
            let n = (len - i * PAGE).min(PAGE);
            let last = i + 1 == pages && (end_here || n < PAGE);
            if let Err(e) = publish_one(
                &cache,
                index.saturating_add(i),
                addr.saturating_add(i * PAGE),
                n,
                last,
                None,
            ) {
                return if i == 0 { Err(e) } else { Ok(i) };
            }
        }
        Ok(pages)
    })
}

/// `file_cache(PUBLISH_FOR)`: `publish` by the process the owner named
/// (`set_publisher`), of pages from `at & 0xffff_ffff` if no revoke came
/// since generation `at >> 32` (Busy otherwise: the bytes may be those of
/// before a change). The pages are charged to the owner, as its own. A
/// page present already is left as it is (the same bytes). Returns the
/// pages published, and in the high half how many of them were present.
pub fn publish_for(caller: u64, id: ResId, at: u64, addr: u64, len: u64) -> Result<u64, Error> {
    let end_here = len & LAST != 0;
    let len = len & !LAST;
    if len == 0 || len > PUBLISH_MAX_PAGES * PAGE {
        return Err(Error::Invalid);
    }
    let (index, generation) = (at & 0xffff_ffff, at >> 32);
    invoke(
        caller,
        ResOp::FileCacheControl,
        only(id, Need::Live(Kind::FileCache)),
        || {
            let cache = TABLE.lock().get(id).map_err(super::id_error)?.value.clone();
            let pages = len.div_ceil(PAGE);
            // The pages present already, from the first, in one look (a
            // READ of pages read again has them all).
            let first_absent = {
                let g = cache.inner.lock();
                publishable(&g, caller, Some(generation))?;
                let to = (index + pages).min(g.pages.len() as u64);
                (index..to).take_while(|&i| g.pages[i as usize].is_some()).count() as u64
            };
            let mut present = first_absent;
            for i in first_absent..pages {
                let n = (len - i * PAGE).min(PAGE);
                let last = i + 1 == pages && (end_here || n < PAGE);
                let page = index + i;
                let from = addr.saturating_add(i * PAGE);
                match publish_one(&cache, page, from, n, last, Some((caller, generation))) {
                    Ok(copied) => present += !copied as u64,
                    Err(e) if i == 0 => return Err(e),
                    Err(_) => return Ok(i | present << 32),
                }
            }
            Ok(pages | present << 32)
        },
    )
}

/// Whether `caller` may publish into a cache now: alive, and for a
/// publisher's page (`generation`: what it read) the one the owner named,
/// with no revoke since.
fn publishable(g: &Inner, caller: u64, generation: Option<u64>) -> Result<(), Error> {
    if g.dead {
        return Err(Error::NotFound);
    }
    match generation {
        None => Ok(()),
        Some(_) if g.publisher == 0 || g.publisher != caller => Err(Error::Denied),
        Some(want) if want != g.generation & 0xffff_ffff => Err(Error::Busy),
        Some(_) => Ok(()),
    }
}

/// `file_cache(PUBLISHER)`: process `pid` (0: none) may publish into
/// cache `id` with `publish_for`.
pub fn set_publisher(caller: u64, id: ResId, pid: u64) -> Result<(), Error> {
    control(caller, id, |cache| {
        let mut g = cache.inner.lock();
        if g.dead {
            return Err(Error::NotFound);
        }
        g.publisher = pid;
        Ok(())
    })
}

/// `file_cache(GENERATION)`: cache `id`'s generation, which a revoke
/// advances.
pub fn generation(caller: u64, id: ResId) -> Result<u64, Error> {
    control(caller, id, |cache| Ok(cache.inner.lock().generation & 0xffff_ffff))
}

/// Page `index` of `cache` holds the `len` bytes at `addr` (`last`: the
/// file ends there); `by`: a publisher's page, the process and the
/// generation it read the bytes in (`publish_for`).
fn publish_one(
    cache: &FileCache,
    index: u64,
    addr: u64,
    len: u64,
    last: bool,
    by: Option<(u64, u64)>,
) -> Result<bool, Error> {
    if index >= MAX_PAGES {
        return Err(Error::Limit);
    }
    if let Some((caller, generation)) = by {
        let g = cache.inner.lock();
        publishable(&g, caller, Some(generation))?;
        // A page present is these bytes already (a change would have
        // revoked it): a publisher's READ of pages read again (a Linux
        // program's `read`, which always comes through the servers) costs
        // no copy.
        if g.pages.get(index as usize).is_some_and(Option::is_some) {
            return Ok(false);
        }
    }
    // The bytes first, outside the lock (reading them may fault).
    let data = FilledPage::from_user(UserRange::new(addr, len as usize)?)?;
    let page = kcore::mm::heap::try_arc(Page { data }).map_err(|_| Error::NoMemory)?;
    let old = {
        let mut guard = cache.inner.lock();
        let g = &mut *guard;
        match by {
            Some((caller, generation)) => publishable(g, caller, Some(generation))?,
            None => publishable(g, 0, None)?,
        }
        let at = index as usize;
        if g.pages.len() <= at {
            // The index grows in steps, charged as it grows.
            let want = (at + 1).next_power_of_two().max(16).min(MAX_PAGES as usize);
            let more = Inner::index_bytes(want).saturating_sub(Inner::index_bytes(g.pages.capacity()));
            g.charge.grow(more).map_err(|_| Error::Limit)?;
            if g.pages.try_reserve_exact(want - g.pages.len()).is_err() {
                g.charge.shrink(more);
                return Err(Error::NoMemory);
            }
            g.pages.resize(want, None);
        }
        let old = g.pages[at].take();
        if old.is_none() {
            g.charge
                .grow(PAGE + size_of::<Page>() as u64)
                .map_err(|_| Error::Limit)?;
            g.present += 1;
        }
        g.pages[at] = Some(page);
        if g.size.is_some_and(|s| index * PAGE + len > s) {
            // Bytes past the size it said: it no longer holds.
            g.size = None;
        }
        if last {
            g.end = Some((index, index * PAGE + len));
        } else if g.end.is_some_and(|(p, _)| p <= index) {
            // A whole page at or past the known end: the file grew
            // (its owner should have revoked the short page); the end
            // is no longer known.
            g.end = None;
        }
        old
    };
    drop(old);
    Ok(true)
}

/// `file_cache(REVOKE)`: pages `first` to `first + count - 1` of cache
/// `id` go; returns how many were present.
pub fn revoke(caller: u64, id: ResId, first: u64, count: u64) -> Result<u64, Error> {
    control(caller, id, |cache| {
        let last = first.saturating_add(count).min(MAX_PAGES);
        // A change at or before the end, or right after it (the file
        // grows), moves the end: it is no longer known.
        {
            let mut g = cache.inner.lock();
            let to = first.saturating_add(count);
            if g.end.is_some_and(|(p, e)| to > p && first.saturating_mul(PAGE) <= e) {
                g.end = None;
            }
            if g.size.is_some_and(|s| first <= s / PAGE && to > s / PAGE) {
                g.size = None;
            }
            g.attrs = None;
            // A publisher's pages read before this are refused from now.
            g.generation = g.generation.wrapping_add(1);
        }
        // What goes is dropped after the lock, a page at a time.
        let mut gone = 0u64;
        let mut at = first;
        while at < last {
            let page = {
                let mut g = cache.inner.lock();
                let top = (g.pages.len() as u64).min(last);
                // To the next present page (none: done).
                let Some(i) = (at..top).find(|&i| g.pages[i as usize].is_some()) else {
                    break;
                };
                at = i + 1;
                g.present -= 1;
                g.charge.shrink(PAGE + size_of::<Page>() as u64);
                g.pages[i as usize].take()
            };
            drop(page);
            gone += 1;
        }
        Ok(gone)
    })
}

/// `file_cache(SIZE)`: the file of cache `id` is `size` bytes long.
pub fn set_size(caller: u64, id: ResId, size: u64) -> Result<(), Error> {
    control(caller, id, |cache| {
        let mut g = cache.inner.lock();
        if g.dead {
            return Err(Error::NotFound);
        }
        g.size = Some(size);
        Ok(())
    })
}

/// `file_cache_attr`: the file of cache `id` has the attributes at
/// `from` (a `struct stat`), or with none, they are no longer known.
pub fn set_attrs(caller: u64, id: ResId, from: Option<UserRange>) -> Result<(), Error> {
    // The bytes first, outside the cache's lock (reading them may fault).
    let attrs = match from {
        Some(from) if from.len() == STAT_LEN => {
            let mut b = [0u8; STAT_LEN];
            from.read(&mut b)?;
            Some(b)
        }
        Some(_) => return Err(Error::Invalid),
        None => None,
    };
    store_attrs(caller, id, attrs)
}

/// `set_attrs` of bytes the caller holds.
pub fn store_attrs(caller: u64, id: ResId, attrs: Option<[u8; STAT_LEN]>) -> Result<(), Error> {
    control(caller, id, |cache| {
        let mut g = cache.inner.lock();
        if g.dead {
            return Err(Error::NotFound);
        }
        g.attrs = attrs;
        Ok(())
    })
}

/// The attributes of `cache` into `reader`'s memory at `buf`, if `reader`
/// may read it and its owner said them. NotFound: not known here (the
/// file server answers); Fault: `buf` is not the reader's to write.
pub fn stat_from(cache: &FileCache, reader: u64, buf: u64) -> Result<(), Error> {
    let to = UserRange::new(buf, STAT_LEN)?;
    let attrs = {
        let g = cache.inner.lock();
        if g.dead || !g.readers.contains(&reader) {
            return Err(Error::NotFound);
        }
        g.attrs.ok_or(Error::NotFound)?
    };
    to.write(&attrs)
}

/// Whether cache `id` holds its file's attributes (for tests).
pub fn has_attrs(id: ResId) -> Result<bool, Error> {
    let cache = TABLE.lock().get(id).map_err(super::id_error)?.value.clone();
    let known = cache.inner.lock().attrs.is_some();
    Ok(known)
}

/// `file_cache(GRANT)`: process `pid` may read cache `id` (or, with
/// `allow` false, no longer).
pub fn grant(caller: u64, id: ResId, pid: u64, allow: bool) -> Result<(), Error> {
    control(caller, id, |cache| {
        let mut g = cache.inner.lock();
        let at = g.readers.iter().position(|&p| p == pid);
        match (at, allow) {
            (Some(_), true) => Ok(()),
            (Some(i), false) => {
                g.readers.swap_remove(i);
                Ok(())
            }
            (None, false) => Err(Error::NotFound),
            (None, true) => {
                if g.readers.len() >= MAX_READERS {
                    return Err(Error::Limit);
                }
                g.readers.try_reserve(1).map_err(|_| Error::NoMemory)?;
                g.readers.push(pid);
                Ok(())
            }
        }
    })
}

/// `file_cache_read`: `len` bytes of cache `id` from `offset` into the
/// caller's memory at `buf`, if process `caller` may read it and every
/// page they are on is present (only up to the file's end, if that is
/// within them). NotFound: a miss, which the file server answers.
pub fn read(caller: u64, id: ResId, offset: u64, buf: u64, len: usize) -> Result<usize, Error> {
    let cache = TABLE.lock().get(id).map_err(super::id_error)?.value.clone();
    read_from(&cache, caller, offset, buf, len)
}

/// The cache `id`, for supervisor `sup` to bind a descriptor of a Linux
/// process it serves to (`pipe::bind_file`): only one it was granted
/// (Denied otherwise), so that a stale or foreign id binds nothing.
pub fn for_binding(sup: u64, id: ResId) -> Result<Arc<FileCache>, Error> {
    let cache = TABLE.lock().get(id).map_err(super::id_error)?.value.clone();
    let g = cache.inner.lock();
    if g.dead || !g.readers.contains(&sup) {
        return Err(Error::Denied);
    }
    drop(g);
    Ok(cache)
}

/// `read` of `cache` for `reader` (a process it must have granted: a
/// native client, or a Linux process's supervisor).
pub fn read_from(cache: &FileCache, reader: u64, offset: u64, buf: u64, len: usize) -> Result<usize, Error> {
    let to = UserRange::new(buf, len.min(MAX_COPY))?;
    let want = to.len() as u64;
    // A read within one page (most small reads, an aligned 4 KiB one)
    // takes one reference: the array of the many-page read costs about
    // 400 instructions to fill and drop.
    let (page, n) = {
        let g = cache.inner.lock();
        let n = extent(&g, reader, offset, want)?;
        if n == 0 {
            return Ok(0);
        }
        let first = offset / PAGE;
        if (offset + n - 1) / PAGE != first {
            drop(g);
            return read_pages(cache, reader, offset, to);
        }
        let page = g
            .pages
            .get(first as usize)
            .and_then(Option::as_ref)
            .ok_or(Error::NotFound)?;
        (page.clone(), n as usize)
    };
    let at = (offset % PAGE) as usize;
    let bytes = page.data.bytes().get(at..at + n).ok_or(Error::NotFound)?;
    to.part(0, n)?.write(bytes)?;
    Ok(n)
}

/// How many of the `want` bytes at `offset` a read by `reader` gets: up
/// to the file's end if it is known (0 at or past it); NotFound if the
/// cache is gone or `reader` may not read it.
#[inline(always)]
fn extent(g: &Inner, reader: u64, offset: u64, want: u64) -> Result<u64, Error> {
    if g.dead || !g.readers.contains(&reader) {
        return Err(Error::NotFound);
    }
    let end = offset.saturating_add(want);
    Ok(match g.end.map(|(_, e)| e).or(g.size) {
        Some(e) if e <= offset => 0,
        Some(e) => end.min(e) - offset,
        None => want,
    })
}

/// `read_from` of a read over several pages.
#[inline(never)]
fn read_pages(cache: &FileCache, reader: u64, offset: u64, to: UserRange) -> Result<usize, Error> {
    let mut refs: [Option<Arc<Page>>; MAX_READ_PAGES] = [const { None }; MAX_READ_PAGES];
    let want = to.len() as u64;
    let first = offset / PAGE;
    let n = {
        let g = cache.inner.lock();
        let n = extent(&g, reader, offset, want)?;
        if n == 0 {
            return Ok(0);
        }
        let last = (offset + n - 1) / PAGE;
        if last - first >= MAX_READ_PAGES as u64 {
            return Err(Error::NotFound);
        }
        for (i, r) in (first..=last).zip(refs.iter_mut()) {
            let page = g
                .pages
                .get(i as usize)
                .and_then(Option::as_ref)
                .ok_or(Error::NotFound)?;
            // A short page that is not the known end's is a file that grew
            // after it was published: not served.
            if page.data.bytes().len() < PAGE as usize && i != last {
                return Err(Error::NotFound);
            }
            *r = Some(page.clone());
        }
        n as usize
    };
    let mut done = 0usize;
    for page in refs.iter().take_while(|r| r.is_some()).flatten() {
        let at = ((offset + done as u64) % PAGE) as usize;
        let k = (n - done).min(PAGE as usize - at);
        let bytes = page.data.bytes().get(at..at + k).ok_or(Error::NotFound)?;
        to.part(done, k)?.write(bytes)?;
        done += k;
    }
    Ok(done)
}

/// Pages present in cache `id` (for tests and statistics).
pub fn present(id: ResId) -> Result<u64, Error> {
    let cache = TABLE.lock().get(id).map_err(super::id_error)?.value.clone();
    let n = cache.inner.lock().present;
    Ok(n)
}

/// Empties a cache taken out of the table, for good.
fn kill(cache: &FileCache) {
    let pages = {
        let mut g = cache.inner.lock();
        g.dead = true;
        g.readers = Vec::new();
        g.publisher = 0;
        g.empty()
    };
    drop(pages);
}

pub struct FileCaches;

impl Resource for FileCaches {
    table_methods!(TABLE);

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |c| {
            let g = c.inner.lock();
            (g.charge.bytes(), g.present, [ResId::NONE; 3])
        })
    }

    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        let e = super::remove_owned(&mut TABLE.lock(), id, caller)?;
        kill(&e.value);
        drop(e);
        Ok(())
    }
}

/// Caches in the table (leak checks).
pub fn count() -> usize {
    TABLE.lock().len()
}
