//! Virtual region (Tender's 仮想領域): a run of pages with a backing and a
//! kind. Its frames are allocated either all at once (eager: Tender's
//! policy) or page by page at first touch (demand). A region owns its frames
//! and returns them when dropped, except pages of the NVM, which it maps in
//! place and only borrows.

use crate::mm::frames::{self, OutOfMemory};
use crate::mm::layout::{BLOCK_PAGES, BLOCK_SIZE, PAGE_SIZE, phys_to_virt};
use crate::mm::quota::Charge;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// What a region holds; page faults are counted by this.
pub use abi::RegionKind as Kind;

/// Where a region's initial content comes from.
#[derive(Debug, Clone)]
pub enum Backing {
    /// Zero-filled memory (BSS, stack, anonymous memory).
    Zero,
    /// Bytes of a program image: `bytes` fill the region from `offset` (the
    /// position of the segment's start within the first page); the rest of
    /// the region is zero.
    Image { bytes: crate::bytes::Slice, offset: usize },
    /// Pages of the NVM (an OFF2F program's text file), mapped in place:
    /// page i < `pages` of the region is the NVM page at physical address
    /// `base + i * PAGE_SIZE`, borrowed, never written (seed 001 fig. 3,
    /// step Y: no frame, no I/O, no copy); any page beyond is zero. Such a
    /// region is read-only.
    Nvm { base: u64, pages: usize },
    /// Bytes of a file a pager serves (an OFF2F program's data, in file
    /// 1 on the disk): the `len` bytes at `file_at` fill the region from
    /// `skew` (as `Image`); the rest is zero. A page holding some of them
    /// is not filled here: its fault is a message to the pager, which
    /// supplies the page (`supply`) into the file's page cache. The page
    /// is mapped read-only from the cache, copy-on-write: the first write
    /// gives the region a copy of its own, so writes stay private and
    /// the file (and every other process's view of it) is never written.
    Pager {
        source: Arc<PagedFile>,
        file_at: u64,
        skew: usize,
        len: u64,
    },
}

/// The pager of a region and the file it names (`abi::PagerSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagerRef {
    pub pid: u64,
    pub object: [u64; 4],
}

/// A file a pager serves, as the regions backed by it share it: the pages
/// read from it so far (the page cache), each a frame of its own that
/// regions map read-only and copy before writing. The frames go with the
/// last region or program that holds the file, or earlier, all at once,
/// when memory runs short and nothing maps them (`drop_cache`).
pub struct PagedFile {
    pub pager: PagerRef,
    cache: crate::sync::IrqMutex<Cache>,
}

/// A page of the file, as the cache holds it: by `(offset, len, at)` of
/// the request that filled it.
type PageKey = (u64, u32, u32);

struct CachedPage {
    pa: u64,
    /// Regions mapping it (or about to let go of a mapping: `CacheRef`).
    /// Only a page none maps may be freed before the file goes.
    maps: u32,
}

struct Cache {
    pages: alloc::collections::BTreeMap<PageKey, CachedPage>,
    /// What the cached pages cost, on the account of whoever asked for
    /// the file to be paged (`PagedFile::new`).
    charge: Charge,
}

/// What one cached page costs its payer: the frame and its share of the
/// map's nodes.
pub const CACHED_PAGE_COST: u64 = PAGE_SIZE + 64;

/// Room for a new key of the cache's map (a node, and parents it splits).
const CACHE_NODES: core::alloc::Layout = core::alloc::Layout::new::<[u64; 256]>();

/// What `PagedFile::keep` did with a page a pager filled.
enum Kept {
    /// The page cached for the same request: the new one is spare.
    Already(u64),
    /// The new page joined the cache.
    Now,
    /// The cache cannot take it (its payer's limit, or no heap for the
    /// map): the page stays the caller's own.
    Refused,
}

impl PagedFile {
    /// The file `pager` serves, its cached pages charged to `payer` (an
    /// empty charge on the payer's account; `Charge::NONE`: the kernel's).
    pub fn new(pager: PagerRef, payer: Charge) -> PagedFile {
        PagedFile {
            pager,
            cache: crate::sync::IrqMutex::new(Cache {
                pages: alloc::collections::BTreeMap::new(),
                charge: payer,
            }),
        }
    }

    /// The cached page `req` describes, counted as mapped once more.
    fn map_ref(&self, req: &PageRequest) -> Option<u64> {
        let mut c = self.cache.lock();
        let page = c.pages.get_mut(&key_of(req))?;
        page.maps += 1;
        Some(page.pa)
    }

    /// A mapping of cached page `key` gone.
    fn unmap(&self, key: PageKey) {
        if let Some(page) = self.cache.lock().pages.get_mut(&key) {
            page.maps = page.maps.saturating_sub(1);
        }
    }

    /// Keeps `pa`, filled for `req` (counted as mapped), unless a page for
    /// it is cached already or the cache cannot take it.
    fn keep(&self, req: &PageRequest, pa: u64) -> Kept {
        let mut c = self.cache.lock();
        let key = key_of(req);
        if let Some(page) = c.pages.get_mut(&key) {
            page.maps += 1;
            return Kept::Already(page.pa);
        }
        if !crate::mm::heap::room_for(CACHE_NODES) || c.charge.grow(CACHED_PAGE_COST).is_err() {
            return Kept::Refused;
        }
        c.pages.insert(key, CachedPage { pa, maps: 1 });
        Kept::Now
    }

    /// Pages cached.
    pub fn cached_pages(&self) -> usize {
        self.cache.lock().pages.len()
    }

    /// Frees the cached pages no region maps (memory running short); how
    /// many went. Their charge goes back to the payer; a later fault reads
    /// them again.
    pub fn drop_unmapped(&self) -> usize {
        let mut c = self.cache.lock();
        let before = c.pages.len();
        c.pages.retain(|_, page| {
            if page.maps == 0 {
                frames::free(page.pa, 1);
            }
            page.maps != 0
        });
        let n = before - c.pages.len();
        c.charge.shrink(n as u64 * CACHED_PAGE_COST);
        n
    }
}

fn key_of(req: &PageRequest) -> PageKey {
    (req.offset, req.len, req.at)
}

/// A region's mapping of a cached page it no longer counts as its own (it
/// took a copy at the first write): counted until this goes, which must
/// be once no page table maps the page any longer (after the shootdown).
pub struct CacheRef {
    file: Arc<PagedFile>,
    key: PageKey,
}

impl Drop for CacheRef {
    fn drop(&mut self) {
        self.file.unmap(self.key);
    }
}

impl core::fmt::Debug for PagedFile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PagedFile")
            .field("pager", &self.pager)
            .finish_non_exhaustive()
    }
}

impl Drop for PagedFile {
    fn drop(&mut self) {
        for page in self.cache.get_mut().pages.values() {
            frames::free(page.pa, 1);
        }
    }
}

/// What a pager is asked for one page: the `len` bytes of its file at
/// `offset`, to go at byte `at` of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub pager: PagerRef,
    pub offset: u64,
    pub len: u32,
    pub at: u32,
}

/// What keeps borrowed pages valid, whatever its owner makes it: a thin
/// pointer (the box inside holds the wide one), so that a region, which
/// travels by value in results, stays small.
pub type Keep = Arc<Box<dyn core::any::Any + Send + Sync>>;

/// A list of `pages` frames, frame i being `frame(i)`.
fn frame_list(pages: usize, frame: impl Fn(usize) -> u64) -> Result<Box<[u64]>, OutOfMemory> {
    let mut v = Vec::new();
    v.try_reserve_exact(pages).map_err(|_| OutOfMemory)?;
    v.extend((0..pages).map(frame));
    Ok(v.into_boxed_slice())
}

/// A copy of a list of frames (one copy of memory, not a loop per page:
/// a large region's share is made of it).
fn frame_list_of(frames: &[u64]) -> Result<Box<[u64]>, OutOfMemory> {
    let mut v = Vec::new();
    v.try_reserve_exact(frames.len()).map_err(|_| OutOfMemory)?;
    v.extend_from_slice(frames);
    Ok(v.into_boxed_slice())
}

/// Two regions of different sizes cannot exchange their frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeMismatch;

pub struct Region {
    pub kind: Kind,
    pub backing: Backing,
    pub writable: bool,
    pub executable: bool,
    /// Physical frame of each page, or 0 while not yet present (a boxed
    /// slice: the count never changes, and a region stays small).
    frames: Box<[u64]>,
    /// Set when the frames are shared with other regions (container SHARE
    /// mode): the last region to go frees them.
    shared: Option<Arc<SharedFrames>>,
    /// Set for a device's registers (a PCI BAR): the frames are the
    /// device's, not RAM the region owns; they are mapped uncached and
    /// never freed, filled, exchanged or copied.
    device: bool,
    /// A Linux MAP_SHARED mapping: a fork gives the child the same frames,
    /// not a copy.
    pub fork_shares: bool,
    /// A Linux PROT_NONE mapping: no access from user mode, and none for
    /// the kernel on its behalf (its pages are never made present for it).
    pub no_access: bool,
    /// What else the kernel keeps of a Linux mapping.
    pub linux: LinuxMarks,
    /// Set when the frames come in blocks: every run of `BLOCK_PAGES`
    /// pages from the start is one physically contiguous block aligned to
    /// `BLOCK_SIZE`, so that one page-directory entry can map it (and an
    /// exchange rewrite one entry for it, not 512).
    blocks: bool,
    /// What borrowed NVM pages stay valid by (their file, held in the
    /// store while any region maps it).
    keep: Option<Keep>,
    /// Pages that are their file's, mapped read-only until the region
    /// writes them (empty for a region that has none). In a region backed
    /// by a pager (`is_cow`): its file's cached pages, copied at the first
    /// write, never freed or written by the region. In a Linux private
    /// file mapping (`is_file_page`; never backed by a pager, so the two
    /// never meet in one region, which keeps it small): pages still
    /// holding the file's bytes as the process would read them from the
    /// file, each frame counted once more for that, so that, as in a
    /// forked region, the first write makes the page the region's own (a
    /// copy if another holds the frame). A write to the file reaches
    /// these in place (`write_file_page`), and every region that still
    /// maps the frame (a forked child's too) sees it.
    cow: Box<[bool]>,
    /// Whose its frames are, and what is known of their bytes (`Own`).
    own: Own,
}

/// Whose a region's frames are, and what is known of their bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Own {
    /// Its own, bytes unknown.
    Written,
    /// Its own, and set by `reset`: since then every present page holds
    /// its initial bytes unless a write through its page-table entry
    /// changed it, which that entry's dirty bit tells (`reset_unwritten`
    /// refills only such pages). Whatever else may change a page's bytes,
    /// or rewrite or drop its entry (losing the bit), makes it `Written`
    /// (`taint`): the kernel's writes through the direct map, a DMA
    /// address given out, frames shared, exchanged or moved, a new
    /// backing, a new mapping.
    Pristine,
    /// A fork shared its frames with another region (`fork_copy`): a
    /// frame whose count (`frames::is_shared`) says it has other holders
    /// is mapped read-only and copied at the first write; one it no
    /// longer has is made writable as it is. Each holder lets go of a
    /// frame with `frames::release`: the last one frees it.
    Forked,
}

/// What the kernel keeps of a Linux mapping on its region besides its
/// protection, in one byte (a region travels by value in results, and
/// stays small).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinuxMarks(u8);

impl LinuxMarks {
    const FILE: u8 = 1;
    const UNREADABLE: u8 = 2;
    const LOCKED: u8 = 4;
    const WIPE_ON_FORK: u8 = 8;
    const NEVER_WRITE: u8 = 16;
    const NEVER_EXEC: u8 = 32;

    /// A mapping of a file (its bytes copied in when mapped), not
    /// anonymous memory: madvise treats the two apart (MADV_DONTNEED
    /// would refill a file's page from the file, not with zeros).
    pub fn of_file(self) -> bool {
        self.0 & Self::FILE != 0
    }

    pub fn set_of_file(&mut self, on: bool) {
        self.set(Self::FILE, on);
    }

    /// A mapping asked for without PROT_READ (write or execute only):
    /// /proc/PID/maps says so, though an x86 page that may be written or
    /// executed may be read too.
    pub fn unreadable(self) -> bool {
        self.0 & Self::UNREADABLE != 0
    }

    pub fn set_unreadable(&mut self, on: bool) {
        self.set(Self::UNREADABLE, on);
    }

    /// Locked (mlock, mlockall, MAP_LOCKED): Tessera never pages out, so
    /// this is what VmLck counts and what madvise refuses to drop.
    pub fn locked(self) -> bool {
        self.0 & Self::LOCKED != 0
    }

    pub fn set_locked(&mut self, on: bool) {
        self.set(Self::LOCKED, on);
    }

    /// MADV_WIPEONFORK: a fork's child gets zero pages here, not a copy.
    pub fn wipe_on_fork(self) -> bool {
        self.0 & Self::WIPE_ON_FORK != 0
    }

    pub fn set_wipe_on_fork(&mut self, on: bool) {
        self.set(Self::WIPE_ON_FORK, on);
    }

    /// Whether mprotect may make it writable (Linux's VM_MAYWRITE): not a
    /// shared mapping of a file opened read-only, nor of a memfd sealed
    /// against future writes, whose writes would reach the file.
    pub fn may_write(self) -> bool {
        self.0 & Self::NEVER_WRITE == 0
    }

    /// Whether mprotect may make it executable (Linux's VM_MAYEXEC).
    pub fn may_exec(self) -> bool {
        self.0 & Self::NEVER_EXEC == 0
    }

    /// The most mprotect may open it to, for good (nothing lifts it).
    pub fn set_may(&mut self, write: bool, exec: bool) {
        self.set(Self::NEVER_WRITE, !write);
        self.set(Self::NEVER_EXEC, !exec);
    }

    fn set(&mut self, bit: u8, on: bool) {
        self.0 = if on { self.0 | bit } else { self.0 & !bit };
    }
}

/// Where the file a Linux mapping maps ends: a touch of a page wholly
/// past it is SIGBUS, as on Linux. The file is named by its supervisor,
/// which moves the end when the process truncates or extends the file
/// (`file` 0: not a file's mapping, no end). Kept by the attachment
/// (`space::Attached::file_end`), not the region, which stays small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileEnd {
    pub file: u64,
    /// The page of the file the region's first page maps.
    pub first: u64,
    /// The pages the file has (its size rounded up to the page).
    pub pages: u64,
}

impl FileEnd {
    /// Whether page `index` of the region lies wholly past the file's end.
    #[inline]
    pub fn past(&self, index: usize) -> bool {
        self.file != 0 && self.first.saturating_add(index as u64) >= self.pages
    }

    /// The first of a region's `pages` pages wholly past the end
    /// (`pages` if none is).
    pub fn first_past(&self, pages: usize) -> usize {
        if self.file == 0 {
            return pages;
        }
        usize::try_from(self.pages.saturating_sub(self.first)).map_or(pages, |f| f.min(pages))
    }

    /// The same file's end seen from a region whose first page is page
    /// `skip` of this one (a part cut out of it).
    pub fn for_part_at(self, skip: usize) -> FileEnd {
        FileEnd {
            first: self.first.saturating_add(skip as u64),
            ..self
        }
    }
}

/// Frames owned jointly by the regions that share them. A set made whole
/// (container SHARE, MAP_SHARED, SysV) never changes; a program's text
/// set (`into_joint`) starts with pages absent, and whichever holder
/// first needs a page fills it here once for all (`fill`): a slot goes
/// from 0 to its frame once, and never back while the set lives.
pub struct SharedFrames {
    frames: Box<[core::sync::atomic::AtomicU64]>,
    /// Who pays for the frames while any holder lives (a program's text:
    /// its plate's maker).
    _charge: Charge,
}

impl SharedFrames {
    fn new(list: &[u64], charge: Charge) -> Result<SharedFrames, OutOfMemory> {
        let mut v = Vec::new();
        v.try_reserve_exact(list.len()).map_err(|_| OutOfMemory)?;
        v.extend(list.iter().map(|&f| core::sync::atomic::AtomicU64::new(f)));
        Ok(SharedFrames {
            frames: v.into_boxed_slice(),
            _charge: charge,
        })
    }

    fn get(&self, index: usize) -> u64 {
        self.frames
            .get(index)
            .map_or(0, |f| f.load(core::sync::atomic::Ordering::Acquire))
    }

    fn len(&self) -> usize {
        self.frames.len()
    }

    /// The frame of page `index`, made and filled by `make` if no holder
    /// has yet. The page is filled before it is published, so no holder
    /// ever maps a frame another is still filling; of two that race, the
    /// loser frees its own and takes the winner's.
    fn fill(&self, index: usize, make: impl FnOnce() -> Result<u64, OutOfMemory>) -> Result<u64, OutOfMemory> {
        use core::sync::atomic::Ordering::{AcqRel, Acquire};
        let slot = self.frames.get(index).ok_or(OutOfMemory)?;
        let now = slot.load(Acquire);
        if now != 0 {
            return Ok(now);
        }
        let pa = make()?;
        match slot.compare_exchange(0, pa, AcqRel, Acquire) {
            Ok(_) => Ok(pa),
            Err(theirs) => {
                frames::free(pa, 1);
                Ok(theirs)
            }
        }
    }

    /// Pages some holder has filled.
    fn present(&self) -> usize {
        (0..self.frames.len()).filter(|&i| self.get(i) != 0).count()
    }
}

impl Drop for SharedFrames {
    fn drop(&mut self) {
        for f in self.frames.iter() {
            let f = f.load(core::sync::atomic::Ordering::Acquire);
            if f != 0 {
                frames::free(f, 1);
            }
        }
    }
}

impl Region {
    pub fn new(
        kind: Kind,
        pages: usize,
        backing: Backing,
        writable: bool,
        executable: bool,
    ) -> Result<Region, OutOfMemory> {
        let frames = frame_list(pages, |_| 0)?;
        Ok(Region {
            kind,
            backing,
            writable,
            executable,
            frames,
            shared: None,
            device: false,
            fork_shares: false,
            no_access: false,
            linux: LinuxMarks::default(),
            blocks: false,
            keep: None,
            cow: Box::default(),
            own: Own::Written,
        })
    }

    /// A region over a device's registers: `pages` pages of physical
    /// addresses from `base` (page-aligned), present from the start.
    pub fn device(base: u64, pages: usize, writable: bool) -> Result<Region, OutOfMemory> {
        let mut r = Region::new(Kind::Data, 0, Backing::Zero, writable, false)?;
        r.frames = frame_list(pages, |i| base + i as u64 * PAGE_SIZE)?;
        r.device = true;
        Ok(r)
    }

    /// Whether the region is a device's registers (mapped uncached).
    pub fn is_device(&self) -> bool {
        self.device
    }

    /// How many other regions map this one's frames (a SysV segment's
    /// attachments, seen from the region that keeps it): 0 until shared.
    pub fn sharers(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| Arc::strong_count(s) - 1)
    }

    /// Which set of shared frames the region maps (an identity, equal for
    /// every part `share_part` cut of one segment while any of them
    /// lives), and how many pages the whole set has.
    pub fn frame_set(&self) -> Option<(usize, usize)> {
        self.shared.as_ref().map(|s| (Arc::as_ptr(s) as usize, s.len()))
    }

    /// Whether the region maps NVM pages in place.
    pub fn is_nvm(&self) -> bool {
        matches!(self.backing, Backing::Nvm { .. })
    }

    /// What page `index` needs of the pager, if the pager fills it and it
    /// is not present yet.
    pub fn page_request(&self, index: usize) -> Option<PageRequest> {
        if self.frames.get(index).is_none_or(|&f| f != 0) {
            return None;
        }
        self.request_of(index)
    }

    /// What page `index` is of the pager's file, present or not.
    fn request_of(&self, index: usize) -> Option<PageRequest> {
        let Backing::Pager {
            source,
            file_at,
            skew,
            len,
        } = &self.backing
        else {
            return None;
        };
        let page = PAGE_SIZE as usize;
        let from = (index * page).max(*skew);
        let to = ((index + 1) * page).min(skew + *len as usize);
        (from < to).then(|| PageRequest {
            pager: source.pager,
            offset: file_at + (from - skew) as u64,
            len: (to - from) as u32,
            at: (from - index * page) as u32,
        })
    }

    /// Whether a pager fills some of the region's pages.
    pub fn is_paged(&self) -> bool {
        matches!(self.backing, Backing::Pager { .. })
    }

    /// Gives page `index` the frame `pa` a pager filled, if it still
    /// wants it (the same request): `pa` joins the file's page cache (or a
    /// page cached meanwhile is taken, and `pa` freed) and the page maps it
    /// copy-on-write. Returns the frame to map; else `pa` comes back, for
    /// the caller to free.
    pub fn supply(&mut self, index: usize, pa: u64, req: &PageRequest) -> Result<u64, u64> {
        self.taint();
        if self.page_request(index).as_ref() != Some(req) {
            return Err(pa);
        }
        let Backing::Pager { source, .. } = &self.backing else {
            return Err(pa);
        };
        match source.keep(req, pa) {
            Kept::Already(cached) => {
                frames::free(pa, 1);
                Ok(self.share_cached(index, cached))
            }
            Kept::Now => Ok(self.share_cached(index, pa)),
            Kept::Refused => {
                self.frames[index] = pa;
                Ok(pa)
            }
        }
    }

    /// Maps the file's cached page as page `index` (copy-on-write), if the
    /// page is not present and the file's cache has it: the frame.
    pub fn map_cached(&mut self, index: usize) -> Option<u64> {
        self.taint();
        let req = self.page_request(index)?;
        let Backing::Pager { source, .. } = &self.backing else {
            return None;
        };
        let pa = source.map_ref(&req)?;
        Some(self.share_cached(index, pa))
    }

    /// Makes cached page `pa` page `index`; the frame mapped (a copy of
    /// its own if there is no room to remember it as the cache's).
    fn share_cached(&mut self, index: usize, pa: u64) -> u64 {
        if self.cow.len() != self.frames.len() {
            let mut v = Vec::new();
            if v.try_reserve_exact(self.frames.len()).is_ok() {
                v.resize(self.frames.len(), false);
                self.cow = v.into_boxed_slice();
            }
        }
        match self.cow.get_mut(index) {
            Some(c) => {
                *c = true;
                self.frames[index] = pa;
                pa
            }
            None => {
                let own = frames::alloc(1).map_or(0, |own| {
                    copy_page(pa, own);
                    self.frames[index] = own;
                    own
                });
                // Never mapped: the count taken for it goes at once.
                drop(self.cache_ref(index));
                own
            }
        }
    }

    /// The count of cached page `index` that this region holds, as a
    /// `CacheRef` (None if the region is backed by no pager).
    fn cache_ref(&self, index: usize) -> Option<CacheRef> {
        let Backing::Pager { source, .. } = &self.backing else {
            return None;
        };
        let req = self.request_of(index)?;
        Some(CacheRef {
            file: source.clone(),
            key: key_of(&req),
        })
    }

    /// Whether page `index` maps its file's cached page (read-only).
    #[inline]
    pub fn is_cow(&self, index: usize) -> bool {
        self.is_paged() && self.cow.get(index).copied().unwrap_or(false)
    }

    /// The first write to a cached page: the region gets a copy of its
    /// own, which it may write. Returns its frame, and the cached page's
    /// count to let go of once no page table maps that any longer.
    pub fn break_cow(&mut self, index: usize) -> Result<(u64, Option<CacheRef>), OutOfMemory> {
        self.taint();
        if !self.is_cow(index) {
            return self.frame(index).ok_or(OutOfMemory).map(|f| (f, None));
        }
        let own = frames::alloc(1)?;
        copy_page(self.frames[index], own);
        self.frames[index] = own;
        self.cow[index] = false;
        Ok((own, self.cache_ref(index)))
    }

    /// Lets go of the cached pages it maps (the cache keeps them). Its
    /// page tables no longer map them: it is detached, or being reset.
    fn forget_cow(&mut self) {
        if !self.is_paged() {
            return;
        }
        for i in 0..self.cow.len() {
            if core::mem::take(&mut self.cow[i]) {
                self.frames[i] = 0;
                drop(self.cache_ref(i));
            }
        }
    }

    /// The NVM page that is page `index`, if the region borrows it.
    pub fn borrowed(&self, index: usize) -> Option<u64> {
        match self.backing {
            Backing::Nvm { base, pages } if index < pages => Some(base + index as u64 * PAGE_SIZE),
            _ => None,
        }
    }

    /// Maps NVM pages from `base` as the region's first `pages` pages
    /// (read-only; the rest zero), valid as long as `keep` lives: what was
    /// there before is let go.
    pub fn map_nvm(&mut self, kind: Kind, base: u64, pages: usize, executable: bool, keep: Keep) {
        self.retarget(kind, Backing::Nvm { base, pages }, false, executable);
        self.keep = Some(keep);
    }

    /// Lets go of every page: owned frames are freed, borrowed ones
    /// forgotten, shared ones left to the other regions that share them.
    fn release_frames(&mut self) {
        if self.device {
            return;
        }
        // Most regions mark no page (no cached or file page): both walks
        // of the marks, and the file pages' mark list's replacement, are
        // then nothing to do, and a container's delete skips them.
        if !self.cow.is_empty() {
            self.forget_cow();
            self.forget_file_pages();
        }
        if self.take_forked() {
            frames::release_all(&mut self.frames);
            return;
        }
        let shared = self.shared.take().is_some();
        if core::mem::take(&mut self.blocks) && !shared {
            // One run per block, as they were allocated.
            for i in (0..self.frames.len()).step_by(BLOCK_PAGES) {
                frames::free(self.frames[i], BLOCK_PAGES);
            }
            self.frames.fill(0);
            return;
        }
        // An emptied region (a fork's copy kept for the next fork, whose
        // place a new copy takes) holds none: eight looked at a time.
        let (whole, rest) = self.frames.as_chunks::<8>();
        if whole.iter().all(|c| c.iter().fold(0, |a, &f| a | f) == 0) && rest.iter().all(|&f| f == 0) {
            return;
        }
        for i in 0..self.frames.len() {
            let f = core::mem::take(&mut self.frames[i]);
            if f != 0 && !shared && self.borrowed(i).is_none() {
                frames::free(f, 1);
            }
        }
    }

    /// Lets go of every page now (`release_frames`), leaving a region of
    /// the same size, kind and rights with none present: what is left of
    /// an ended fork's copy kept for the next fork (`VirtualSpace::reattach`
    /// puts a new copy in its place).
    pub fn release_all(&mut self) {
        self.taint();
        self.release_frames();
        self.keep = None;
    }

    /// Puts `pages` absent pages before the first (a stack growing down):
    /// the pages there keep their frames at their new indices. Only a
    /// region whose frames are its own, page by page.
    pub fn grow_front(&mut self, pages: usize) -> Result<(), OutOfMemory> {
        self.taint();
        if self.device || self.blocks || self.shared.is_some() || self.keep.is_some() || !self.cow.is_empty() {
            return Err(OutOfMemory);
        }
        let total = self.frames.len().checked_add(pages).ok_or(OutOfMemory)?;
        let mut v = Vec::new();
        v.try_reserve_exact(total).map_err(|_| OutOfMemory)?;
        v.resize(pages, 0);
        v.extend_from_slice(&self.frames);
        self.frames = v.into_boxed_slice();
        Ok(())
    }

    /// Takes the first `pages` pages away (a stack that grew, back to its
    /// size at exec), letting go of their frames as `release_frames` does.
    /// `unmap` is called once nothing can fail any more, before the frames
    /// go: it drops their translations.
    pub fn drop_front(&mut self, pages: usize, unmap: impl FnOnce()) -> Result<(), OutOfMemory> {
        self.taint();
        if self.device || self.blocks || self.shared.is_some() || self.keep.is_some() || !self.cow.is_empty() {
            return Err(OutOfMemory);
        }
        let pages = pages.min(self.frames.len());
        let mut v = Vec::new();
        v.try_reserve_exact(self.frames.len() - pages)
            .map_err(|_| OutOfMemory)?;
        v.extend_from_slice(&self.frames[pages..]);
        unmap();
        let forked = self.is_forked();
        for f in self.frames[..pages].iter_mut().filter(|f| **f != 0) {
            let f = core::mem::take(f);
            if forked {
                frames::release(f);
            } else {
                frames::free(f, 1);
            }
        }
        self.frames = v.into_boxed_slice();
        Ok(())
    }

    pub fn pages(&self) -> usize {
        self.frames.len()
    }

    /// Whether the frames come in blocks (see `blocks`).
    #[inline(always)]
    pub fn in_blocks(&self) -> bool {
        self.blocks
    }

    /// Whether a region of `pages` can have its frames in blocks.
    pub fn fits_blocks(pages: usize) -> bool {
        pages != 0 && pages.is_multiple_of(BLOCK_PAGES)
    }

    pub fn size(&self) -> u64 {
        self.frames.len() as u64 * PAGE_SIZE
    }

    /// The frame of page `index`, if present.
    pub fn frame(&self, index: usize) -> Option<u64> {
        self.frames.get(index).copied().filter(|&f| f != 0)
    }

    pub fn resident_pages(&self) -> usize {
        self.frames.iter().filter(|&&f| f != 0).count()
    }

    /// Makes page `index` present: allocates a frame and fills it from the
    /// backing. Returns the frame (the existing one if already present).
    pub fn populate(&mut self, index: usize) -> Result<u64, OutOfMemory> {
        if let Some(f) = self.frame(index) {
            return Ok(f);
        }
        if index >= self.frames.len() {
            return Err(OutOfMemory);
        }
        if let Some(pa) = self.borrowed(index) {
            self.frames[index] = pa;
            return Ok(pa);
        }
        if self.page_request(index).is_some() {
            // Only its pager has its bytes (`supply`), or the file's cache
            // (`map_cached`), mapped read-only.
            return Err(OutOfMemory);
        }
        if let Some(set) = self.shared.clone() {
            // A program's text set: the page once for all its holders. (A
            // part of a set, whose indices are not the set's, has every
            // page present.)
            if set.len() != self.frames.len() {
                return Err(OutOfMemory);
            }
            let pa = set.fill(index, || {
                let pa = frames::alloc(1)?;
                self.fill(index, pa);
                Ok(pa)
            })?;
            self.frames[index] = pa;
            return Ok(pa);
        }
        let pa = frames::alloc(1)?;
        self.fill(index, pa);
        self.frames[index] = pa;
        Ok(pa)
    }

    /// Makes the region's frames a set its shares (`share`) hold jointly,
    /// its absent pages filled once for all of them at their first touch
    /// (`populate`): a program's text, which is never written (the region
    /// and every share of it are read-only, and stay so). `charge` pays
    /// for the frames until the last holder goes. Refused (nothing
    /// changed) for a writable region or one whose frames are not its own
    /// page by page.
    pub fn into_joint(&mut self, charge: Charge) -> Result<(), OutOfMemory> {
        if self.writable || !self.frames_movable() || self.is_forked() || !self.cow.is_empty() || self.keep.is_some() {
            return Err(OutOfMemory);
        }
        let set = crate::mm::heap::try_arc(SharedFrames::new(&self.frames, charge)?).map_err(|_| OutOfMemory)?;
        self.taint();
        self.shared = Some(set);
        Ok(())
    }

    /// Pages of the frames it shares that some holder has filled (none if
    /// it shares none).
    pub fn joint_pages(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.present())
    }

    /// Takes the pages of `set` that other holders filled and this region
    /// lacks (a text set of its size).
    fn sync_with(&mut self, set: &SharedFrames) {
        if set.len() != self.frames.len() {
            return;
        }
        for (i, f) in self.frames.iter_mut().enumerate() {
            if *f == 0 {
                *f = set.get(i);
            }
        }
    }

    /// Gives a pooled region a new use: kind, content and protection.
    /// Present frames are kept and `reset` refills them, except where NVM
    /// pages come or go: then every page is let go first (NVM pages are
    /// never filled, and a frame of its own is never taken for one).
    pub fn retarget(&mut self, kind: Kind, backing: Backing, writable: bool, executable: bool) {
        self.taint();
        // The file's cached pages are never refilled.
        self.forget_cow();
        let nvm = matches!(backing, Backing::Nvm { .. });
        // Frames it shares are others' content too: never refilled.
        if nvm || self.is_nvm() || self.shared.is_some() {
            self.release_frames();
            self.keep = None;
        }
        self.kind = kind;
        self.backing = backing;
        self.writable = writable && !nvm;
        self.executable = executable;
    }

    /// Refills every present page from the backing, so that nothing of a
    /// previous user survives a reuse. A page its pager fills is let go
    /// instead: it comes again from the file at its next fault.
    pub fn reset(&mut self) {
        self.reset_unwritten(|_, _| true);
    }

    /// `reset`, refilling only the pages `written` says may have been
    /// written since the last reset (it gets each present page's index and
    /// frame, and is asked of every such page so that it may note it clean
    /// again), when the region is `Own::Pristine`; all of them otherwise.
    pub fn reset_unwritten(&mut self, mut written: impl FnMut(usize, u64) -> bool) {
        if self.device {
            return;
        }
        // Frames others hold (a fork, a share) may have been written
        // through their entries, which say nothing here.
        let trusted = self.own == Own::Pristine && self.shared.is_none() && !self.blocks;
        self.forget_cow();
        self.unfork();
        // (The backing's kind once, not per page.)
        let (nvm, paged) = (self.is_nvm(), self.is_paged());
        if !nvm && !paged {
            // Every present page is the region's own to refill: one test
            // a page (a pooled process's heap and data, page after page).
            for index in 0..self.frames.len() {
                let pa = self.frames[index];
                if pa != 0 && (written(index, pa) || !trusted) {
                    self.fill(index, pa);
                }
            }
            self.own = Own::Pristine;
            return;
        }
        for index in 0..self.frames.len() {
            let pa = self.frames[index];
            if pa == 0 || (nvm && self.borrowed(index).is_some()) {
                continue;
            }
            if paged && self.request_of(index).is_some() {
                self.frames[index] = 0;
                frames::free(pa, 1);
            } else if written(index, pa) || !trusted {
                self.fill(index, pa);
            }
        }
        self.own = Own::Pristine;
    }

    /// Forgets that the region is `Own::Pristine`: something may have
    /// written its pages other than through the entries that map them now.
    #[inline]
    pub fn taint(&mut self) {
        if self.own == Own::Pristine {
            self.own = Own::Written;
        }
    }

    fn fill(&self, index: usize, pa: u64) {
        let page = phys_to_virt(pa) as *mut u8;
        // SAFETY: the frame belongs to this region and is reached through the
        // direct map; the copy stays inside the one page.
        unsafe {
            frames::zero_pages(page, 1);
            if let Backing::Image { bytes, offset } = &self.backing {
                let offset = *offset;
                let page_start = index * PAGE_SIZE as usize;
                let page_end = page_start + PAGE_SIZE as usize;
                // The image occupies [offset, offset + len) of the region.
                let from = page_start.max(offset);
                let to = page_end.min(offset + bytes.len());
                if from < to {
                    core::ptr::copy_nonoverlapping(
                        bytes.as_ptr().add(from - offset),
                        page.add(from - page_start),
                        to - from,
                    );
                }
            }
        }
    }

    /// Whether every page is present (one pass the compiler vectorises).
    #[inline]
    pub fn is_whole(&self) -> bool {
        !self.frames.iter().fold(false, |gap, &f| gap | (f == 0))
    }

    /// Makes every page present (eager loading), except those its pager
    /// must supply (`page_request`): the space maps those, read-only.
    pub fn populate_all(&mut self) -> Result<(), OutOfMemory> {
        // A container is always whole and is shared often: one pass
        // without an early exit (which the compiler vectorises) finds that.
        if self.is_whole() {
            return Ok(());
        }
        for i in 0..self.frames.len() {
            if self.frames[i] == 0 && self.page_request(i).is_none() {
                self.populate(i)?;
            }
        }
        Ok(())
    }

    /// Copies `data` into the region at byte `offset`, through the direct
    /// map (kernel use of a region: a work area). Every page it touches
    /// must be present; returns false (and writes nothing) otherwise.
    pub fn write_at(&mut self, offset: usize, data: &[u8]) -> bool {
        self.taint();
        self.copy_at(offset, data.len(), |page, at, i, n| {
            // SAFETY: the frame is this region's, present, reached through
            // the direct map, and `at..at + n` lies inside its page.
            unsafe { core::ptr::copy_nonoverlapping(data.as_ptr().add(i), page.add(at), n) };
        })
    }

    /// Copies bytes of the region at byte `offset` into `buf`, as `write_at`.
    pub fn read_at(&self, offset: usize, buf: &mut [u8]) -> bool {
        let len = buf.len();
        self.copy_at(offset, len, |page, at, i, n| {
            // SAFETY: as in `write_at`.
            unsafe { core::ptr::copy_nonoverlapping(page.add(at), buf.as_mut_ptr().add(i), n) };
        })
    }

    /// The kernel's view of `count` words of the region from byte `offset`
    /// (8-byte aligned, in present, physically contiguous pages): memory the
    /// kernel shares with a process that maps the region (AnT's rings),
    /// which either side may change at any time, hence atomic. None if the
    /// range is out of the region, misaligned, not present or not
    /// contiguous.
    fn words(&self, offset: usize, count: usize) -> Option<&[core::sync::atomic::AtomicU64]> {
        let page = PAGE_SIZE as usize;
        let end = offset.checked_add(count.checked_mul(8)?)?;
        if self.device || self.is_nvm() || !offset.is_multiple_of(8) || count == 0 || end > self.frames.len() * page {
            return None;
        }
        let first = self.frames[offset / page];
        let last_page = (end - 1) / page;
        for (i, &f) in self.frames[offset / page..=last_page].iter().enumerate() {
            if f == 0 || f != first + (i * page) as u64 {
                return None;
            }
        }
        let at = phys_to_virt(first) + (offset % page) as u64;
        // SAFETY: the words lie in frames of this region, present and
        // physically contiguous (so contiguous in the direct map too), which
        // the region holds (alone or with the regions sharing them) for as
        // long as `self` is borrowed; they are aligned, and every access to
        // them is atomic.
        Some(unsafe { core::slice::from_raw_parts(at as *const core::sync::atomic::AtomicU64, count) })
    }

    /// The region as memory shared word by word with a process that maps
    /// it (AnT's rings): its pages must be present and physically
    /// contiguous, checked once here; the area keeps the region (and so its
    /// frames) for as long as it lives.
    pub fn into_shared(self) -> Result<SharedArea, Region> {
        let count = self.frames.len() * PAGE_SIZE as usize / 8;
        let Some(base) = self.words(0, count).map(|w| w.as_ptr()) else {
            return Err(self);
        };
        Ok(SharedArea {
            _region: self,
            base,
            count,
        })
    }

    /// Calls `f(page, offset in page, offset in the caller's buffer, bytes)`
    /// for each piece of `offset..offset + len`, after checking every page.
    fn copy_at(&self, offset: usize, len: usize, mut f: impl FnMut(*mut u8, usize, usize, usize)) -> bool {
        let page = PAGE_SIZE as usize;
        let Some(end) = offset
            .checked_add(len)
            .filter(|&e| e <= self.frames.len() * page && !self.device && !self.is_nvm())
        else {
            return false;
        };
        if len == 0 {
            return true;
        }
        if (offset / page..=(end - 1) / page).any(|i| self.frames[i] == 0) {
            return false;
        }
        let mut done = 0;
        while done < len {
            let at = offset + done;
            let n = (page - at % page).min(len - done);
            f(phys_to_virt(self.frames[at / page]) as *mut u8, at % page, done, n);
            done += n;
        }
        true
    }
}

impl Region {
    /// A region over `pages` physically contiguous frames, all present and
    /// zeroed (AnT's ICA: contiguous so that devices and other cores can
    /// address it as one block).
    pub fn contiguous(kind: Kind, pages: usize) -> Result<Region, OutOfMemory> {
        let base = frames::alloc_zeroed(pages)?;
        let mut r = Region::new(kind, 0, Backing::Zero, true, false).inspect_err(|_| frames::free(base, pages))?;
        r.frames = frame_list(pages, |i| base + i as u64 * PAGE_SIZE).inspect_err(|_| frames::free(base, pages))?;
        r.blocks = Region::fits_blocks(pages) && base.is_multiple_of(BLOCK_SIZE);
        Ok(r)
    }

    /// A region of `pages` zeroed pages, all present, in blocks when
    /// `pages` is a multiple of a block and free blocks are there (a big
    /// container: its exchange then rewrites one entry per block); else
    /// page by page, as `populate_all` makes them.
    pub fn zeroed(kind: Kind, pages: usize) -> Result<Region, OutOfMemory> {
        let mut r = Region::new(kind, pages, Backing::Zero, true, false)?;
        if Region::fits_blocks(pages) {
            let mut done = 0;
            while done < pages {
                // The buddy allocator aligns a run to its size: a block.
                let Ok(pa) = frames::alloc_zeroed(BLOCK_PAGES) else {
                    break;
                };
                for (i, f) in r.frames[done..done + BLOCK_PAGES].iter_mut().enumerate() {
                    *f = pa + (i as u64) * PAGE_SIZE;
                }
                done += BLOCK_PAGES;
            }
            r.blocks = done == pages;
        }
        // Without blocks enough, the rest page by page (zero pages straight
        // from the allocator: nothing of `populate`'s backing to consult).
        for f in r.frames.iter_mut().filter(|f| **f == 0) {
            *f = frames::alloc_zeroed(1)?;
        }
        Ok(r)
    }

    /// Every frame of the region (after `populate_all`).
    pub fn frames(&self) -> &[u64] {
        &self.frames
    }

    /// Whether its frames are its own one by one (or a fork's, counted):
    /// the pages `move_pages_from` and `discard` may hand over or let go.
    fn frames_movable(&self) -> bool {
        !self.device && self.shared.is_none() && !self.blocks && !self.is_nvm() && !self.is_paged()
    }

    /// Moves `count` pages of `from`, from its page `at`, to this region's
    /// page `to` (mremap): the frames change hands, their bytes stay where
    /// they are. Both regions must be detached (no page table maps them).
    /// Returns false, nothing moved, when either region's frames are not
    /// its own one by one (in blocks, shared, a pager's, a device's, NVM),
    /// a range is out of bounds, or a target page is already present.
    pub fn move_pages_from(&mut self, from: &mut Region, at: usize, to: usize, count: usize) -> bool {
        self.taint();
        from.taint();
        let fits = |r: &Region, i: usize| i.checked_add(count).is_some_and(|e| e <= r.frames.len());
        if !self.frames_movable() || !from.frames_movable() || !fits(from, at) || !fits(self, to) {
            return false;
        }
        if self.frames[to..to + count].iter().any(|&f| f != 0) {
            return false;
        }
        // Frames a fork shares stay counted: this region lets go of them
        // as `from` would have (`release_frames`).
        // The file's pages stay the file's: their marks move with them.
        let marked = from.cow.get(at..at + count).is_some_and(|m| m.contains(&true));
        if marked && self.cow.len() != self.frames.len() {
            let mut v = Vec::new();
            if v.try_reserve_exact(self.frames.len()).is_err() {
                return false;
            }
            v.resize(self.frames.len(), false);
            self.cow = v.into_boxed_slice();
        }
        if from.is_forked() && from.frames[at..at + count].iter().any(|&f| f != 0) {
            self.own = Own::Forked;
        }
        for i in 0..count {
            self.frames[to + i] = core::mem::take(&mut from.frames[at + i]);
            if marked {
                self.cow[to + i] = core::mem::take(&mut from.cow[at + i]);
            }
        }
        true
    }

    /// Lets page `index` go (MADV_DONTNEED): its next touch finds a zero
    /// page (or the image's bytes), as a never-touched one. A page in a
    /// block is zeroed in place (blocks are freed whole); frames others
    /// share (MAP_SHARED, SysV, containers) and a pager's, a device's or
    /// NVM pages are left as they are. The caller drops the page's
    /// translations first.
    pub fn discard(&mut self, index: usize) {
        self.taint();
        let Some(pa) = self.frame(index) else { return };
        if self.fork_shares || self.device || self.shared.is_some() || self.is_nvm() || self.is_paged() {
            return;
        }
        if self.blocks {
            self.fill(index, pa);
            return;
        }
        self.unmark_file_page(index);
        self.frames[index] = 0;
        if self.is_forked() {
            frames::release(pa);
        } else {
            frames::free(pa, 1);
        }
    }

    /// Whether the region's frames are its own alone, RAM, and not a
    /// file's: only such frames may change hands. The conditions are
    /// combined without a branch each: every SWAP tests them for two
    /// regions, and all of them nearly always hold. A region with file
    /// pages (`is_file_page`) is always a fork's (`keep_file_pages`,
    /// `adopt_file_page`), so the last test refuses it too: its marks
    /// would otherwise come to name the other region's frames.
    #[inline(always)]
    fn frames_exchangeable(&self) -> bool {
        !matches!(self.backing, Backing::Nvm { .. } | Backing::Pager { .. })
            & self.shared.is_none()
            & !self.device
            & !self.is_forked()
    }

    /// Exchanges the physical pages of two regions of equal size (Tender's
    /// physical-memory exchange): only the frame lists change hands; the
    /// caller rewrites the page-table entries of whichever is attached.
    pub fn exchange_frames(&mut self, other: &mut Region) -> Result<(), SizeMismatch> {
        if self.frames.len() != other.frames.len() || !(self.frames_exchangeable() & other.frames_exchangeable()) {
            return Err(SizeMismatch);
        }
        self.taint();
        other.taint();
        core::mem::swap(&mut self.frames, &mut other.frames);
        core::mem::swap(&mut self.blocks, &mut other.blocks);
        Ok(())
    }

    /// A second region over the same frames (container SHARE mode). Both
    /// keep them alive; writes through one are seen through the other.
    pub fn share(&mut self) -> Result<Region, OutOfMemory> {
        self.taint();
        if self.device {
            return Err(OutOfMemory);
        }
        if self.is_nvm() {
            // The NVM pages are shared by mapping them again; the zero
            // pages past them are read-only, so a fresh zero page each is
            // the same content.
            let mut r = Region::new(
                self.kind,
                self.frames.len(),
                self.backing.clone(),
                false,
                self.executable,
            )?;
            for i in 0..self.frames.len() {
                r.frames[i] = self.borrowed(i).filter(|_| self.frames[i] != 0).unwrap_or(0);
            }
            r.keep = self.keep.clone();
            return Ok(r);
        }
        if self.is_paged() || self.is_forked() {
            // Its pages are its file's (cached, copy-on-write) or still in
            // it, or a fork's copy-on-write: writes through one would not
            // be seen through the other.
            return Err(OutOfMemory);
        }
        let set = match &self.shared {
            Some(s) => {
                // A set whole when made stays whole; a text set's pages
                // other holders filled since are this one's too (the rest
                // come at faults, from the set).
                let s = s.clone();
                self.sync_with(&s);
                s
            }
            None => {
                self.populate_all()?;
                let list = SharedFrames::new(&self.frames, Charge::NONE)?;
                let s = crate::mm::heap::try_arc(list).map_err(|_| OutOfMemory)?;
                self.shared = Some(s.clone());
                s
            }
        };
        let mut r = self.sibling(frame_list_of(&self.frames)?);
        r.shared = Some(set);
        r.fork_shares = self.fork_shares;
        r.blocks = self.blocks;
        Ok(r)
    }

    /// A region over pages `first..first + pages` of the frames this one
    /// shares (what is left mapped of a MAP_SHARED mapping or a segment
    /// once part of it is unmapped): like every sharer it keeps the whole
    /// set alive, and writes through it are seen through the others.
    /// Refused for a region that shares nothing, or a range not in it.
    pub fn share_part(&self, first: usize, pages: usize) -> Result<Region, OutOfMemory> {
        let set = self.shared.clone().ok_or(OutOfMemory)?;
        let end = first
            .checked_add(pages)
            .filter(|&e| pages > 0 && e <= self.frames.len())
            .ok_or(OutOfMemory)?;
        // A part fills no page from the set (its indices are not the
        // set's): only a part of pages present now.
        if self.frames[first..end].contains(&0) {
            return Err(OutOfMemory);
        }
        let mut r = self.sibling(frame_list_of(&self.frames[first..end])?);
        r.shared = Some(set);
        r.fork_shares = self.fork_shares;
        Ok(r)
    }

    /// A region of the same kind, backing and permissions over `frames`,
    /// nothing else shared or kept.
    fn sibling(&self, frames: Box<[u64]>) -> Region {
        Region {
            kind: self.kind,
            backing: self.backing.clone(),
            writable: self.writable,
            executable: self.executable,
            frames,
            shared: None,
            device: false,
            fork_shares: false,
            no_access: self.no_access,
            linux: self.linux,
            blocks: false,
            keep: None,
            cow: Box::default(),
            own: Own::Written,
        }
    }

    /// Whether a fork may give the region's frames to its copy
    /// copy-on-write (`fork_copy`): private memory of its own, page by
    /// page. Others are shared (MAP_SHARED, text) or copied whole at once
    /// (`duplicate`): a device's registers, NVM pages, a pager's file
    /// pages, frames already shared (SysV, containers' SHARE, AnT's
    /// rings) and memory in blocks (freed a block at a time).
    pub fn forkable(&self) -> bool {
        !self.device
            && !self.fork_shares
            && self.shared.is_none()
            && !self.blocks
            && !self.is_nvm()
            && !self.is_paged()
            && self.kind != Kind::Text
    }

    /// Whether a fork shares (some of) the region's frames.
    #[inline(always)]
    pub fn is_forked(&self) -> bool {
        self.own == Own::Forked
    }

    /// Takes back the frames' being a fork's (see `unfork`): whether they were.
    fn take_forked(&mut self) -> bool {
        let forked = self.is_forked();
        if forked {
            self.own = Own::Written;
        }
        forked
    }

    /// A fork's copy of the region: the same frames, each with one more
    /// holder, both regions then copying a page at its first write
    /// (`break_fork`). The caller makes this region's pages read-only
    /// where they are mapped. Fails (nothing changed) for want of memory
    /// or of room in a frame's count.
    pub fn fork_copy(&mut self) -> Result<Region, OutOfMemory> {
        self.taint();
        debug_assert!(self.forkable());
        let frames = frame_list_of(&self.frames)?;
        // The copy's pages that are the file's are so for it too, each
        // counted once more for that (`is_file_page`).
        let mut marks = Vec::new();
        let mut marked = Vec::new();
        if !self.cow.is_empty() {
            marks.try_reserve_exact(self.cow.len()).map_err(|_| OutOfMemory)?;
            marks.extend_from_slice(&self.cow);
            marked = frame_list(frames.len(), |i| if marks[i] { frames[i] } else { 0 })?.into_vec();
        }
        frames::share_all(&frames)?;
        if let Err(e) = frames::share_all(&marked) {
            for &f in frames.iter().filter(|&&f| f != 0) {
                frames::release(f);
            }
            return Err(e);
        }
        self.own = Own::Forked;
        let mut r = self.sibling(frames);
        r.own = Own::Forked;
        r.cow = marks.into_boxed_slice();
        Ok(r)
    }

    /// Whether page `index` is present in a frame a fork shares with
    /// other regions (mapped read-only).
    #[inline]
    pub fn fork_shared(&self, index: usize) -> bool {
        self.is_forked() && self.frame(index).is_some_and(frames::is_shared)
    }

    /// Makes the present pages of a Linux private file mapping, filled
    /// with the file's bytes, the file's pages (`is_file_page`): each frame
    /// counted once more, the region then a fork's (its pages read-only,
    /// copied or made its own at the first write). The caller makes its
    /// translations read-only. Refused (nothing changed) for a region
    /// `fork_copy` could not copy, one that has such pages already, and
    /// one a fork shares: its frames are another process's memory too,
    /// which a write to the file must not reach.
    pub fn keep_file_pages(&mut self) -> Result<usize, OutOfMemory> {
        if !self.forkable() || self.is_forked() || !self.cow.is_empty() || self.kind != Kind::Heap {
            return Err(OutOfMemory);
        }
        let mut marks = Vec::new();
        marks.try_reserve_exact(self.frames.len()).map_err(|_| OutOfMemory)?;
        marks.extend(self.frames.iter().map(|&f| f != 0));
        frames::share_all(&self.frames)?;
        self.own = Own::Forked;
        let kept = marks.iter().filter(|&&m| m).count();
        self.cow = marks.into_boxed_slice();
        Ok(kept)
    }

    /// Makes frame `pa`, another region's file page (`is_file_page`),
    /// page `index` (absent) of this one and its file page too: a part
    /// of a private file mapping that munmap or mprotect cut out keeps
    /// the file's pages. The frame is counted for both; false (nothing
    /// changed) without room for that.
    pub fn adopt_file_page(&mut self, index: usize, pa: u64) -> bool {
        if pa == 0 || self.frame(index).is_some() || index >= self.frames.len() || !self.forkable() {
            return false;
        }
        if self.cow.len() != self.frames.len() {
            let mut v = Vec::new();
            if v.try_reserve_exact(self.frames.len()).is_err() {
                return false;
            }
            v.resize(self.frames.len(), false);
            self.cow = v.into_boxed_slice();
        }
        if frames::share_all(&[pa]).is_err() {
            return false;
        }
        if frames::share_all(&[pa]).is_err() {
            frames::release(pa);
            return false;
        }
        self.frames[index] = pa;
        self.cow[index] = true;
        self.own = Own::Forked;
        true
    }

    /// Whether page `index` is still its file's page (see `cow`).
    #[inline]
    pub fn is_file_page(&self, index: usize) -> bool {
        !self.is_paged() && self.cow.get(index).copied().unwrap_or(false)
    }

    /// Page `index` is no longer its file's: the count taken for that goes.
    fn unmark_file_page(&mut self, index: usize) {
        if self.is_paged() {
            return;
        }
        if let Some(m) = self.cow.get_mut(index)
            && core::mem::take(m)
        {
            frames::release(self.frames[index]);
        }
    }

    /// No page is its file's any more (the region goes, or is reset).
    fn forget_file_pages(&mut self) {
        if self.is_paged() {
            return;
        }
        for i in 0..self.cow.len() {
            self.unmark_file_page(i);
        }
        self.cow = Box::default();
    }

    /// A write to the file reaching page `index`, if it is still the
    /// file's page: `data` at byte `at` of it (within the page). Whether
    /// it was.
    pub fn write_file_page(&mut self, index: usize, at: usize, data: &[u8]) -> bool {
        if !self.is_file_page(index) || at.checked_add(data.len()).is_none_or(|e| e > PAGE_SIZE as usize) {
            return false;
        }
        // SAFETY: a present frame of this region (a file page is never
        // absent), reached through the direct map; the copy stays inside
        // the page. Other holders of the frame map it read-only, as the
        // file's page it is.
        unsafe {
            core::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (phys_to_virt(self.frames[index]) + at as u64) as *mut u8,
                data.len(),
            )
        };
        true
    }

    /// A write to page `index` (present) of a forked region: a copy of
    /// its own if others hold its frame (which it lets go of), else the
    /// frame as it is. Returns the frame to map writable.
    pub fn break_fork(&mut self, index: usize) -> Result<u64, OutOfMemory> {
        self.taint();
        let pa = self.frame(index).ok_or(OutOfMemory)?;
        // Written: no longer the file's page (a copy if a fork's other
        // region still maps the frame, else the frame itself).
        self.unmark_file_page(index);
        if !frames::is_shared(pa) {
            return Ok(pa);
        }
        let own = frames::alloc(1)?;
        copy_page(pa, own);
        self.frames[index] = own;
        // Another holder may have let go meanwhile: then this frees it.
        frames::release(pa);
        Ok(own)
    }

    /// Lets go of the frames it shares with a fork's other regions (a
    /// reuse: they are absent again, refilled at their next touch), so
    /// that what is left is its own.
    fn unfork(&mut self) {
        self.forget_file_pages();
        if self.take_forked() {
            frames::release_shared(&mut self.frames);
        }
    }

    /// A new region with a copy of this one's content (container COPY mode).
    pub fn duplicate(&self) -> Result<Region, OutOfMemory> {
        if self.device {
            return Err(OutOfMemory);
        }
        let mut copy = Region::new(
            self.kind,
            self.frames.len(),
            Backing::Zero,
            self.writable,
            self.executable,
        )?;
        for (i, &src) in self.frames.iter().enumerate() {
            if src == 0 {
                continue;
            }
            // A frame of its own, not `populate`d: zeroing a page that is
            // overwritten whole at once doubled a copy's cost.
            let dst = frames::alloc(1)?;
            copy.frames[i] = dst;
            // SAFETY: two distinct frames, each a whole page in the direct map.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    phys_to_virt(src) as *const u8,
                    phys_to_virt(dst) as *mut u8,
                    PAGE_SIZE as usize,
                )
            };
        }
        // Its initial content is the original's (a forked process's data,
        // refilled from it if the copy is reused from the pool).
        copy.backing = self.backing.clone();
        copy.no_access = self.no_access;
        copy.linux = self.linux;
        Ok(copy)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // Shared frames go with the last region that holds them; a
        // device's are not RAM, nor are NVM pages.
        self.release_frames();
    }
}

/// A region's memory as words the kernel shares with a process
/// (`Region::into_shared`): loads and stores are atomic, since the process
/// may change any word at any time, and a value of plain data is read and
/// written word by word (each word as it was at one moment).
pub struct SharedArea {
    _region: Region,
    /// The first word, in the direct map, and how many there are.
    base: *const core::sync::atomic::AtomicU64,
    count: usize,
}

// SAFETY: the area only gives out shared references to atomics, which any
// CPU may use; the region it holds is not touched after creation.
unsafe impl Send for SharedArea {}
// SAFETY: as above.
unsafe impl Sync for SharedArea {}

impl SharedArea {
    #[inline(always)]
    pub fn words(&self) -> &[core::sync::atomic::AtomicU64] {
        // SAFETY: `into_shared` checked that the `count` words from `base`
        // lie in present, contiguous frames of the region this area holds,
        // which stay as long as `self`; every access to them is atomic.
        unsafe { core::slice::from_raw_parts(self.base, self.count) }
    }

    /// The word at byte `offset` (8-byte aligned).
    #[inline(always)]
    pub fn word(&self, offset: usize) -> Option<&core::sync::atomic::AtomicU64> {
        if !offset.is_multiple_of(8) {
            return None;
        }
        self.words().get(offset / 8)
    }

    /// A value of plain data made of whole words, read at byte `offset`.
    #[inline(always)]
    pub fn read<T: crate::uaccess::Pod>(&self, offset: usize) -> Option<T> {
        let n = core::mem::size_of::<T>();
        if !n.is_multiple_of(8) || !offset.is_multiple_of(8) {
            return None;
        }
        let words = self.words().get(offset / 8..offset / 8 + n / 8)?;
        let mut value = core::mem::MaybeUninit::<T>::uninit();
        for (i, w) in words.iter().enumerate() {
            let w = w.load(core::sync::atomic::Ordering::Relaxed);
            // SAFETY: `i * 8 + 8 <= n`: the write stays inside `value`.
            unsafe {
                value
                    .as_mut_ptr()
                    .cast::<u8>()
                    .add(i * 8)
                    .cast::<u64>()
                    .write_unaligned(w)
            };
        }
        // SAFETY: every byte was written above, and any bytes make a valid
        // T (it is Pod).
        Some(unsafe { value.assume_init() })
    }

    /// Writes `value` (plain data made of whole words) at byte `offset`;
    /// false (nothing written) if it does not fit.
    #[inline(always)]
    pub fn write<T: crate::uaccess::Pod>(&self, offset: usize, value: &T) -> bool {
        let n = core::mem::size_of::<T>();
        if !n.is_multiple_of(8) || !offset.is_multiple_of(8) {
            return false;
        }
        let Some(words) = self.words().get(offset / 8..offset / 8 + n / 8) else {
            return false;
        };
        for (i, w) in words.iter().enumerate() {
            // SAFETY: T is Pod (every byte initialised) and `i * 8 + 8 <= n`.
            let v = unsafe {
                (value as *const T as *const u8)
                    .add(i * 8)
                    .cast::<u64>()
                    .read_unaligned()
            };
            w.store(v, core::sync::atomic::Ordering::Relaxed);
        }
        true
    }
}

/// Copies frame `from` to frame `to`, a whole page.
fn copy_page(from: u64, to: u64) {
    // SAFETY: two distinct frames, each a whole page in the direct map;
    // `to` is the caller's alone.
    unsafe {
        core::ptr::copy_nonoverlapping(
            phys_to_virt(from) as *const u8,
            phys_to_virt(to) as *mut u8,
            PAGE_SIZE as usize,
        )
    };
}

/// A frame filled once from user memory and then only read: a file
/// cache's page. Not zeroed first (every byte it shows was copied in),
/// and a frame rather than heap memory, which grows by a step of fresh
/// frames at a time and would hold a read's pages after they go.
pub struct FilledPage {
    pa: u64,
    len: usize,
}

impl FilledPage {
    /// The bytes of `from` (a page at most) in a frame of their own.
    pub fn from_user(from: crate::uaccess::UserRange) -> Result<FilledPage, abi::Error> {
        if from.len() > PAGE_SIZE as usize {
            return Err(abi::Error::Invalid);
        }
        let pa = frames::alloc(1).map_err(|_| abi::Error::NoMemory)?;
        // Freed by its drop if the copy faults.
        let page = FilledPage { pa, len: from.len() };
        if !from.is_empty() {
            // SAFETY: the frame is this object's alone, a whole page in
            // the direct map, and the range fits in it.
            unsafe { from.read_raw(phys_to_virt(pa) as *mut u8) }?;
        }
        Ok(page)
    }

    /// The bytes copied in.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the frame is this object's for its life, its first `len`
        // bytes written once at creation and never again.
        unsafe { core::slice::from_raw_parts(phys_to_virt(self.pa) as *const u8, self.len) }
    }
}

impl Drop for FilledPage {
    fn drop(&mut self) {
        frames::free(self.pa, 1);
    }
}

/// One zeroed frame a pager fills before a region takes it (`supply`):
/// freed if it is dropped before.
pub struct PageFrame(u64);

impl PageFrame {
    pub fn new() -> Result<PageFrame, OutOfMemory> {
        frames::alloc_zeroed(1).map(PageFrame)
    }

    /// Copies `data` to byte `at` of the page; false (nothing written) if
    /// it does not fit.
    pub fn write(&mut self, at: usize, data: &[u8]) -> bool {
        if at.checked_add(data.len()).is_none_or(|end| end > PAGE_SIZE as usize) {
            return false;
        }
        // SAFETY: the frame is this object's alone, reached through the
        // direct map, and `at..at + data.len()` lies inside its page.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), (phys_to_virt(self.0) as *mut u8).add(at), data.len()) };
        true
    }

    /// The frame, now its taker's to free.
    pub fn into_raw(self) -> u64 {
        let pa = self.0;
        core::mem::forget(self);
        pa
    }

    /// Frees a frame `into_raw` gave that nobody took.
    pub fn free_raw(pa: u64) {
        frames::free(pa, 1);
    }
}

impl Drop for PageFrame {
    fn drop(&mut self) {
        frames::free(self.0, 1);
    }
}
