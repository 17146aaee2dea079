//! Four-level x86_64 page tables: walking, mapping, unmapping, translating.
//! Tables live in frames and are reached through the direct map. This module
//! knows nothing about processes; Tender's virtual space resource (a later
//! layer) owns one root and uses these functions.

use super::frames::{self, OutOfMemory};
use super::layout::{self, BLOCK_PAGES, BLOCK_SIZE, PAGE_SIZE, phys_to_virt};
use crate::sync::IrqMutex;
use core::sync::atomic::Ordering;
use platform::memmap::{MemoryMap, RegionKind};

pub mod flags {
    pub const PRESENT: u64 = 1;
    pub const WRITABLE: u64 = 1 << 1;
    pub const USER: u64 = 1 << 2;
    pub const WRITE_THROUGH: u64 = 1 << 3;
    pub const NO_CACHE: u64 = 1 << 4;
    pub const HUGE: u64 = 1 << 7;
    pub const GLOBAL: u64 = 1 << 8;
    pub const ACCESSED: u64 = 1 << 5;
    pub const DIRTY: u64 = 1 << 6;
    pub const NO_EXECUTE: u64 = 1 << 63;
}
use flags::*;

const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    OutOfMemory,
    AlreadyMapped,
    /// A 2 MiB or 1 GiB page covers the address.
    HugePage,
    NotCanonical,
}

impl From<OutOfMemory> for MapError {
    fn from(_: OutOfMemory) -> Self {
        MapError::OutOfMemory
    }
}

fn table(pa: u64) -> &'static mut [u64; 512] {
    // SAFETY: `pa` is a page-table frame owned by some page-table tree, reached
    // through the direct map; callers serialise changes to a tree.
    unsafe { &mut *(phys_to_virt(pa) as *mut [u64; 512]) }
}

fn index(va: u64, level: u32) -> usize {
    ((va >> (12 + 9 * level)) & 511) as usize
}

fn canonical(va: u64) -> bool {
    let top = va >> 47;
    top == 0 || top == 0x1ffff
}

/// Page tables made for the large allocations' range (`large.rs`): they
/// stay, as all the kernel's do, and count as the heap's size.
pub static LARGE_TABLES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Page tables made for user spaces on this CPU so far: an operation on a
/// space (run with interrupts off, on one CPU) knows how many it made by
/// reading this before and after.
#[inline(always)]
pub fn user_tables_made() -> u64 {
    crate::cpu::this_cpu().user_tables.load(Ordering::Relaxed)
}

/// The table at level `stop` (0: page tables, 1: page directories) on the
/// way to `va` in the tree at `root`, allocating missing tables above it
/// when `create` is set.
#[inline(always)]
fn table_for(root: u64, va: u64, stop: u32, create: bool) -> Result<Option<u64>, MapError> {
    if !canonical(va) {
        return Err(MapError::NotCanonical);
    }
    let user = va < 0x0000_8000_0000_0000;
    let mut pa = root;
    for level in (stop + 1..=3).rev() {
        let entry = &mut table(pa)[index(va, level)];
        if *entry & PRESENT == 0 {
            if !create {
                return Ok(None);
            }
            let new = frames::alloc_zeroed(1)?;
            *entry = new | PRESENT | WRITABLE | if user { USER } else { 0 };
            if user {
                crate::cpu::this_cpu().user_tables.fetch_add(1, Ordering::Relaxed);
            } else if (layout::LARGE_BASE..layout::LARGE_BASE + layout::LARGE_SIZE).contains(&va) {
                LARGE_TABLES.fetch_add(1, Ordering::Relaxed);
            }
        } else if *entry & HUGE != 0 {
            return Err(MapError::HugePage);
        }
        pa = *entry & ADDR_MASK;
    }
    Ok(Some(pa))
}

/// The leaf entry for `va` in the tree at `root`, allocating missing tables
/// when `create` is set. Every table on the way is there nearly always (a
/// page table serves 512 pages): that case takes the straight walk of
/// `leaf_table`, inlined into the caller; the loop that may allocate runs
/// only when a table is missing or a huge page is in the way.
#[inline(always)]
fn walk(root: u64, va: u64, create: bool) -> Result<Option<&'static mut u64>, MapError> {
    if canonical(va)
        && let Some(pt) = leaf_table(root, va)
    {
        // SAFETY: entry `index(va, 0)` (below 512) of a page table of this
        // tree, reached through the direct map, as `table` reaches it.
        return Ok(Some(unsafe { &mut *pt.add(index(va, 0)) }));
    }
    walk_making(root, va, create)
}

/// `walk` when some table on the way is missing (made if `create` is set)
/// or is a huge page.
#[cold]
#[inline(never)]
fn walk_making(root: u64, va: u64, create: bool) -> Result<Option<&'static mut u64>, MapError> {
    Ok(table_for(root, va, 0, create)?.map(|pa| &mut table(pa)[index(va, 0)]))
}

/// Maps the 4 KiB page at `va` to frame `pa` with `flags` (PRESENT implied).
/// The caller flushes TLBs if it replaced a mapping another CPU may cache;
/// a new mapping needs no flush.
#[inline]
pub fn map(root: u64, va: u64, pa: u64, flags: u64) -> Result<(), MapError> {
    let entry = walk(root, va, true)?.ok_or(MapError::OutOfMemory)?;
    if *entry & PRESENT != 0 {
        return Err(MapError::AlreadyMapped);
    }
    *entry = pte(pa, flags);
    Ok(())
}

/// The entry that maps frame `pa` with `flags`.
#[inline]
pub fn pte(pa: u64, flags: u64) -> u64 {
    (pa & ADDR_MASK) | flags | PRESENT
}

/// Replaces whatever maps `va` and returns the old entry (0 if none).
/// Inlined always: on a page fault's path the call and its saved
/// registers were a third of the mapping.
#[inline(always)]
pub fn remap(root: u64, va: u64, pa: u64, flags: u64) -> Result<u64, MapError> {
    let entry = walk(root, va, true)?.ok_or(MapError::OutOfMemory)?;
    let old = *entry;
    *entry = pte(pa, flags);
    Ok(old)
}

/// The page table (level 0) that holds `va`'s entry, when every table on
/// the way exists and none is a huge page: the usual case when a mapped
/// range is rewritten, in a few instructions a level (no allocation path,
/// no per-level branches beyond the one check).
#[inline]
fn leaf_table(root: u64, va: u64) -> Option<*mut u64> {
    let mut pa = root;
    for level in [3, 2, 1] {
        let entry = table(pa)[index(va, level)];
        if entry & (PRESENT | HUGE) != PRESENT {
            return None;
        }
        pa = entry & ADDR_MASK;
    }
    Some(phys_to_virt(pa) as *mut u64)
}

/// The page table that holds `va`'s entry, made if missing (the slow path
/// of `leaf_table`).
#[cold]
#[inline(never)]
fn leaf_table_create(root: u64, va: u64) -> Result<*mut u64, MapError> {
    let pte = walk_making(root, va, true)?.ok_or(MapError::OutOfMemory)? as *mut u64;
    // SAFETY: `pte` is entry `index(va, 0)` of its page table; stepping back
    // to the table's first entry stays inside the table.
    Ok(unsafe { pte.sub(index(va, 0)) })
}

/// Maps `frames.len()` consecutive pages from `va` to the given frames
/// (replacing whatever was there; 0 unmaps). Walks the tree once per page
/// table rather than once per page, so remapping a large region costs a
/// few instructions a page (the physical-memory exchange depends on it).
#[inline]
pub fn remap_range(root: u64, va: u64, frames: &[u64], flags: u64) -> Result<(), MapError> {
    // One page (a small container's exchange or move): no loop, and none
    // of the loop's set-up.
    if let [pa] = *frames
        && canonical(va)
        && let Some(pt) = leaf_table(root, va)
    {
        let value = if pa == 0 { 0 } else { pte(pa, flags) };
        // SAFETY: entry `index(va, 0)` (below 512) of a page table of this tree.
        unsafe { pt.add(index(va, 0)).write(value) };
        return Ok(());
    }
    remap_pages(root, va, frames, flags)
}

/// The entry of one address in a tree, found once and kept by a caller
/// that rewrites it often (a one-page container's exchange: the walk is
/// most of the rewrite). Page tables are freed only with their whole tree,
/// so the entry stays where it is as long as the tree does.
#[derive(Clone, Copy)]
pub struct Entry(u64);

impl Entry {
    /// The entry for `va`, when every table on the way exists.
    pub fn of(root: u64, va: u64) -> Option<Entry> {
        if !canonical(va) {
            return None;
        }
        leaf_table(root, va).map(|pt| Entry(pt as u64 + index(va, 0) as u64 * 8))
    }

    /// The entry for `va` in page table `pt` (the direct-map address
    /// `leaf` gave for an address in the same 2 MiB).
    #[inline]
    pub fn in_table(pt: u64, va: u64) -> Entry {
        Entry(pt + index(va, 0) as u64 * 8)
    }

    /// The page table (its direct-map address) that holds `va`'s entry,
    /// when every table on the way exists.
    #[inline]
    pub fn leaf(root: u64, va: u64) -> Option<u64> {
        if !canonical(va) {
            return None;
        }
        leaf_table(root, va).map(|pt| pt as u64)
    }

    /// Maps the entry's page to `pa` (0: unmaps it) with `flags`.
    ///
    /// # Safety
    /// The tree the entry was found in must still exist.
    #[inline]
    pub unsafe fn set(self, pa: u64, flags: u64) {
        let value = if pa == 0 { 0 } else { pte(pa, flags) };
        // SAFETY: the caller's promise, as `put`'s.
        unsafe { self.put(value) };
    }

    /// Unmaps the entry's page and returns the mapping it held (frame and
    /// flags, without the accessed and dirty bits, which were the old
    /// place's), for `put` to give to another entry.
    ///
    /// # Safety
    /// The tree the entry was found in must still exist.
    #[inline]
    pub unsafe fn take(self) -> u64 {
        // SAFETY: an entry of a live page table (the caller's promise).
        let value = unsafe { (self.0 as *mut u64).replace(0) };
        value & !(ACCESSED | DIRTY)
    }

    /// Writes `value` (a mapping `take` returned, or 0) into the entry.
    ///
    /// # Safety
    /// The tree the entry was found in must still exist.
    #[inline]
    pub unsafe fn put(self, value: u64) {
        // SAFETY: an entry of a live page table (the caller's promise).
        unsafe { (self.0 as *mut u64).write(value) };
    }

    /// Sets the entry's dirty bit, as the processor does at a write through
    /// it: the kernel wrote its page through the direct map.
    ///
    /// # Safety
    /// The tree the entry was found in must still exist.
    #[inline]
    pub unsafe fn mark_dirty(self) {
        // SAFETY: an entry of a live page table (the caller's promise),
        // aligned; atomic, as the processor may set its bits meanwhile.
        let e = unsafe { &*(self.0 as *const core::sync::atomic::AtomicU64) };
        // Set already (the page written before): nothing to lock for.
        if e.load(Ordering::Relaxed) & (PRESENT | DIRTY) == PRESENT {
            e.fetch_or(DIRTY, Ordering::Relaxed);
        }
    }

    /// Whether the page may have been written through the entry since its
    /// dirty bit was last cleared, which this clears: true unless the
    /// entry maps frame `pa` with the bit clear. A CPU that still holds
    /// the translation may write without setting the bit again: the
    /// caller drops it from every CPU before the space runs.
    ///
    /// # Safety
    /// The tree the entry was found in must still exist.
    #[inline]
    pub unsafe fn take_dirty(self, pa: u64) -> bool {
        // SAFETY: as `mark_dirty`.
        let e = unsafe { &*(self.0 as *const core::sync::atomic::AtomicU64) };
        // A clean entry is left as it is, a dirty one cleared by one
        // locked `and` (a `fetch_and` whose old value is used is a loop of
        // compare-and-exchange): the value read says all the caller needs.
        let value = e.load(Ordering::Relaxed);
        if value & DIRTY != 0 {
            e.fetch_and(!DIRTY, Ordering::Relaxed);
        }
        value & PRESENT == 0 || value & ADDR_MASK != pa || value & DIRTY != 0
    }

    /// The frame and flags the entry maps, as `translate` gives them for
    /// its page; None if it maps nothing.
    ///
    /// # Safety
    /// The tree the entry was found in must still exist.
    #[inline]
    pub unsafe fn mapping(self) -> Option<(u64, u64)> {
        // SAFETY: an entry of a live page table (the caller's promise).
        let value = unsafe { (self.0 as *const u64).read() };
        (value & PRESENT != 0).then_some((value & ADDR_MASK, value & !ADDR_MASK))
    }
}

/// The page-directory entry for `va` (the one that maps the block `va` is
/// in, or points to its page table), making the tables above it when
/// `create` is set.
fn directory_entry(root: u64, va: u64, create: bool) -> Result<Option<*mut u64>, MapError> {
    Ok(table_for(root, va, 1, create)?.map(|pa| &mut table(pa)[index(va, 1)] as *mut u64))
}

/// Maps the block (`BLOCK_SIZE`, aligned) at `va` to the block of frames
/// at `pa` (aligned too; 0 unmaps it) with one entry. Returns the page
/// table that entry pointed to, if it did: it maps nothing now, and the
/// caller frees it once no CPU can walk it any more (after the TLB
/// shootdown of the block's pages).
pub fn set_block(root: u64, va: u64, pa: u64, flags: u64) -> Result<Option<u64>, MapError> {
    debug_assert!(va.is_multiple_of(BLOCK_SIZE) && pa.is_multiple_of(BLOCK_SIZE));
    let entry = directory_entry(root, va, true)?.ok_or(MapError::OutOfMemory)?;
    // SAFETY: an entry of a page directory of this tree.
    let old = unsafe { entry.read() };
    let value = if pa == 0 {
        0
    } else {
        (pa & ADDR_MASK) | flags | PRESENT | HUGE
    };
    // SAFETY: as above.
    unsafe { entry.write(value) };
    Ok((old & (PRESENT | HUGE) == PRESENT).then_some(old & ADDR_MASK))
}

/// Whether one entry maps the whole block `va` is in.
pub fn is_block(root: u64, va: u64) -> bool {
    match directory_entry(root, va, false) {
        // SAFETY: an entry of a page directory of this tree.
        Ok(Some(e)) => (unsafe { e.read() }) & (PRESENT | HUGE) == PRESENT | HUGE,
        _ => false,
    }
}

/// Gives the block `va` is in, mapped by one entry, the page table
/// `table` instead (a zeroed frame, which the tree owns from now on): its
/// pages are then unmapped until the caller maps them one by one.
pub fn split_block(root: u64, va: u64, table: u64) {
    if let Ok(Some(e)) = directory_entry(root, va, false) {
        let user = va < 0x0000_8000_0000_0000;
        // SAFETY: an entry of a page directory of this tree.
        unsafe { e.write(table | PRESENT | WRITABLE | if user { USER } else { 0 }) };
        if user {
            crate::cpu::this_cpu().user_tables.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `remap_range` for any number of pages.
#[inline(never)]
fn remap_pages(root: u64, va: u64, frames: &[u64], flags: u64) -> Result<(), MapError> {
    let flags = flags | PRESENT;
    let mut i = 0;
    while i < frames.len() {
        let at = va + i as u64 * PAGE_SIZE;
        // Once a table: a range cannot leave the canonical half in the
        // middle of a page table.
        if !canonical(at) {
            return Err(MapError::NotCanonical);
        }
        let first = index(at, 0);
        let pt = match leaf_table(root, at) {
            Some(pt) => pt,
            None => leaf_table_create(root, at)?,
        };
        // Entries left in this page table.
        let n = (512 - first).min(frames.len() - i);
        for (k, &pa) in frames[i..i + n].iter().enumerate() {
            let value = if pa == 0 { 0 } else { (pa & ADDR_MASK) | flags };
            // SAFETY: `pt` is a page table of this tree and `first + k`
            // stays below 512.
            unsafe { pt.add(first + k).write(value) };
        }
        i += n;
    }
    Ok(())
}

/// Maps `frames.len()` consecutive pages from `va` to the given frames (0:
/// left alone) into entries that must be empty, one walk per page table.
/// On failure, also returns how many pages were dealt with before it: the
/// caller clears those.
pub fn map_range(root: u64, va: u64, frames: &[u64], flags: u64) -> Result<(), (MapError, usize)> {
    let flags = flags | PRESENT;
    let mut i = 0;
    while i < frames.len() {
        let at = va + i as u64 * PAGE_SIZE;
        if !canonical(at) {
            return Err((MapError::NotCanonical, i));
        }
        let first = index(at, 0);
        let n = (512 - first).min(frames.len() - i);
        let chunk = &frames[i..i + n];
        // Tables are made only where there is something to map.
        if chunk.iter().any(|&pa| pa != 0) {
            let pt = match leaf_table(root, at) {
                Some(pt) => pt,
                None => leaf_table_create(root, at).map_err(|e| (e, i))?,
            };
            for (k, &pa) in chunk.iter().enumerate() {
                if pa == 0 {
                    continue;
                }
                // SAFETY: `pt` is a page table of this tree and `first + k`
                // stays below 512.
                let pte = unsafe { pt.add(first + k) };
                // SAFETY: as above.
                if unsafe { pte.read() } & PRESENT != 0 {
                    return Err((MapError::AlreadyMapped, i + k));
                }
                // SAFETY: as above.
                unsafe { pte.write((pa & ADDR_MASK) | flags) };
            }
        }
        i += n;
    }
    Ok(())
}

/// Clears the entries of `pages` consecutive pages from `va` (one walk per
/// page table; missing tables are skipped; a block the range covers whole
/// and one entry maps is cleared with that entry).
#[inline]
pub fn unmap_range(root: u64, va: u64, pages: usize) {
    if pages == 1 {
        if canonical(va)
            && let Some(pt) = leaf_table(root, va)
        {
            // SAFETY: entry `index(va, 0)` (below 512) of a page table of this tree.
            unsafe { pt.add(index(va, 0)).write(0) };
        }
        return;
    }
    unmap_pages(root, va, pages);
}

/// Walks `pages` consecutive pages from `va` one page table at a time:
/// `entry` gets each entry of a leaf table that is there, `missing` the
/// first address and length of a part whose leaf table is not.
#[inline(always)]
fn each_leaf_entry(
    root: u64,
    va: u64,
    pages: usize,
    mut entry: impl FnMut(&mut u64),
    mut missing: impl FnMut(u64, usize),
) {
    let mut i = 0;
    while i < pages {
        let at = va + i as u64 * PAGE_SIZE;
        let first = index(at, 0);
        let n = (512 - first).min(pages - i);
        match canonical(at).then(|| leaf_table(root, at)).flatten() {
            Some(pt) => {
                for k in first..first + n {
                    // SAFETY: entries `first..first + n` (below 512) of one
                    // page table of this tree, one borrowed at a time.
                    entry(unsafe { &mut *pt.add(k) });
                }
            }
            None => missing(at, n),
        }
        i += n;
    }
}

/// `unmap_range` for any number of pages.
#[inline(never)]
fn unmap_pages(root: u64, va: u64, pages: usize) {
    each_leaf_entry(
        root,
        va,
        pages,
        |e| *e = 0,
        |at, n| {
            if n == BLOCK_PAGES && is_block(root, at) {
                let _ = set_block(root, at, 0, 0);
            }
        },
    );
}

/// Makes the pages mapped among `pages` consecutive pages from `va`
/// read-only (a fork's copy-on-write), one walk per page table; missing
/// tables are skipped. The caller shoots the old translations down.
pub fn write_protect_range(root: u64, va: u64, pages: usize) {
    each_leaf_entry(root, va, pages, |e| *e &= !WRITABLE, |_, _| {});
}

/// Makes the mapped pages among `pages` pages from kernel address `va`
/// not present, each entry keeping the frame it mapped, for
/// `kernel_take_retired` to give back once no CPU can still use the old
/// translations (after their shootdown): the frames need no list of
/// their own meanwhile.
pub fn kernel_retire(va: u64, pages: usize) {
    with_kernel_root(|root| each_leaf_entry(root, va, pages, |e| *e &= !PRESENT, |_, _| {}));
}

/// Clears the entries `kernel_retire` left among `pages` pages from `va`,
/// giving `f` the frame each one kept.
pub fn kernel_take_retired(va: u64, pages: usize, mut f: impl FnMut(u64)) {
    with_kernel_root(|root| {
        each_leaf_entry(
            root,
            va,
            pages,
            |e| {
                let pa = core::mem::take(e) & ADDR_MASK;
                if pa != 0 {
                    f(pa);
                }
            },
            |_, _| {},
        )
    });
}

/// Removes the mapping of `va`; returns the frame it mapped. The caller
/// flushes the TLBs (locally, or with a shootdown).
pub fn unmap(root: u64, va: u64) -> Option<u64> {
    let pte = walk(root, va, false).ok().flatten()?;
    if *pte & PRESENT == 0 {
        return None;
    }
    let pa = *pte & ADDR_MASK;
    *pte = 0;
    Some(pa)
}

/// Physical address and flags that `va` maps to, huge pages included.
pub fn translate(root: u64, va: u64) -> Option<(u64, u64)> {
    if !canonical(va) {
        return None;
    }
    let mut pa = root;
    for level in (0..=3).rev() {
        let entry = table(pa)[index(va, level)];
        if entry & PRESENT == 0 {
            return None;
        }
        if level == 0 || entry & HUGE != 0 {
            let page = 1u64 << (12 + 9 * level);
            let base = entry & ADDR_MASK & !(page - 1);
            return Some((base + (va & (page - 1)), entry & !ADDR_MASK));
        }
        pa = entry & ADDR_MASK;
    }
    None
}

/// The kernel's own tree. Its top half is shared by every virtual space.
static KERNEL_ROOT: IrqMutex<u64> = IrqMutex::new(0);

pub fn kernel_root() -> u64 {
    *KERNEL_ROOT.lock()
}

/// Runs `f` on the kernel tree with the lock that serialises its changes.
pub fn with_kernel_root<R>(f: impl FnOnce(u64) -> R) -> R {
    let root = KERNEL_ROOT.lock();
    f(*root)
}

/// Builds the kernel's final page tables and switches to them:
/// - the direct map of all physical memory with 2 MiB pages, write-back for
///   RAM and uncached for device holes (APIC, I/O APIC, PCI windows);
/// - the kernel image with 4 KiB pages: text read-only and executable,
///   rodata read-only, data and bss writable and never executable;
/// - empty tables for every other kernel slot, so the top-level entries never
///   change after boot.
pub fn init_kernel_tables(memmap: &MemoryMap) -> Result<(), MapError> {
    let root = frames::alloc_zeroed(1)?;
    for slot in layout::KERNEL_SLOTS.iter().chain(core::iter::once(&511)) {
        table(root)[*slot] = frames::alloc_zeroed(1)? | PRESENT | WRITABLE;
    }

    const TWO_MB: u64 = 2 << 20;
    // RAM, and everything below 4 GiB (where the APIC, I/O APIC and 32-bit
    // PCI windows are). Reserved ranges far above RAM (QEMU lists the AMD
    // HyperTransport hole at 1 TiB) are not mapped: a device there is mapped
    // when its driver asks for it.
    let top = memmap
        .regions()
        .iter()
        .filter(|r| r.kind != RegionKind::Reserved)
        .map(|r| r.end())
        .max()
        .unwrap_or(0)
        .clamp(4 << 30, 512 << 30)
        .next_multiple_of(TWO_MB);
    let is_ram = |pa: u64| {
        memmap
            .regions()
            .iter()
            .any(|r| r.kind != RegionKind::Reserved && r.base < pa + TWO_MB && r.end() > pa)
    };
    let pdpt = table(root)[256] & ADDR_MASK;
    let mut pa = 0;
    while pa < top {
        let gib = (pa >> 30) as usize;
        if table(pdpt)[gib] & PRESENT == 0 {
            table(pdpt)[gib] = frames::alloc_zeroed(1)? | PRESENT | WRITABLE;
        }
        let pd = table(pdpt)[gib] & ADDR_MASK;
        let cache = if is_ram(pa) { 0 } else { NO_CACHE | WRITE_THROUGH };
        table(pd)[((pa >> 21) & 511) as usize] = pa | PRESENT | WRITABLE | HUGE | GLOBAL | NO_EXECUTE | cache;
        pa += TWO_MB;
    }

    let mut va = layout::image::start();
    while va < layout::image::end() {
        let f = if va < layout::image::rodata() {
            GLOBAL
        } else if va < layout::image::data() {
            GLOBAL | NO_EXECUTE
        } else {
            GLOBAL | NO_EXECUTE | WRITABLE
        };
        map(root, va, va - layout::KERNEL_VMA, f)?;
        va += PAGE_SIZE;
    }

    // SAFETY: the new tree maps the running code, its stack (the image's bss)
    // and the direct map exactly where the boot tables did.
    unsafe { load_root(root) };
    *KERNEL_ROOT.lock() = root;
    Ok(())
}

/// Makes `[base, base + size)` (2 MiB aligned, below 512 GiB) write-back
/// memory in the direct map, as RAM is: memory that is not the frame
/// allocator's but that the kernel and processes use as memory (the
/// pseudo-NVM). At boot, before other CPUs run and before any virtual
/// space copies the kernel's top level.
pub fn map_direct_memory(base: u64, size: u64) -> Result<(), MapError> {
    const TWO_MB: u64 = 2 << 20;
    let end = base.checked_add(size).ok_or(MapError::NotCanonical)?;
    if !base.is_multiple_of(TWO_MB) || !size.is_multiple_of(TWO_MB) || end > 512 << 30 {
        return Err(MapError::NotCanonical);
    }
    with_kernel_root(|root| {
        let pdpt = table(root)[256] & ADDR_MASK;
        let mut pa = base;
        while pa < end {
            let gib = (pa >> 30) as usize;
            if table(pdpt)[gib] & PRESENT == 0 {
                table(pdpt)[gib] = frames::alloc_zeroed(1)? | PRESENT | WRITABLE;
            }
            let pd = table(pdpt)[gib] & ADDR_MASK;
            table(pd)[((pa >> 21) & 511) as usize] = pa | PRESENT | WRITABLE | HUGE | GLOBAL | NO_EXECUTE;
            flush_local(phys_to_virt(pa));
            pa += TWO_MB;
        }
        Ok(())
    })
}

/// Switches this CPU to the tree at `root`.
///
/// # Safety
/// The tree must map the currently running code and stack.
pub unsafe fn load_root(root: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { core::arch::asm!("mov cr3, {}", in(reg) root, options(nostack)) };
}

/// Flushes one page from this CPU's TLB.
pub fn flush_local(va: u64) {
    x86_64::instructions::tlb::flush(x86_64::VirtAddr::new_truncate(va));
}

/// Flushes every non-global translation of this CPU.
pub fn flush_local_all() {
    // SAFETY: reloading CR3 with its own value only drops cached translations.
    unsafe {
        let (frame, flags) = x86_64::registers::control::Cr3::read_raw();
        x86_64::registers::control::Cr3::write_raw(frame, flags);
    }
}

/// Maps `pages` fresh frames at kernel address `va`. On failure every page
/// mapped so far is returned.
pub fn map_kernel_pages(va: u64, pages: u64, flags: u64) -> Result<(), MapError> {
    with_kernel_root(|root| {
        for i in 0..pages {
            let result = frames::alloc(1)
                .map_err(MapError::from)
                .and_then(|pa| map(root, va + i * PAGE_SIZE, pa, flags).inspect_err(|_| frames::free(pa, 1)));
            if let Err(e) = result {
                for j in 0..i {
                    if let Some(pa) = unmap(root, va + j * PAGE_SIZE) {
                        frames::free(pa, 1);
                    }
                }
                return Err(e);
            }
        }
        Ok(())
    })
}
