//! Virtual space (Tender's 仮想空間): one page-table tree whose lower half
//! holds user regions and whose upper half is the kernel's, shared by copy
//! of the kernel's top-level entries. Regions are attached at page-aligned
//! addresses; a page of an attached region is mapped when it is present,
//! and a fault on a page that is not yet present is resolved here.

use super::USER_TOP;
use super::region::{Kind, Region};
use crate::mm::frames::{self, OutOfMemory};
use crate::mm::layout::{BLOCK_PAGES, BLOCK_SIZE, PAGE_SIZE, phys_to_virt};
use crate::mm::paging::{self, flags};
use crate::mm::quota::{Account, Charge};
use crate::mm::tlb;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use restable::ResId;

/// A space as the kernel shares it: its resource entry, the process
/// running in it, and page faults each hold one; faults lock only theirs.
pub type SpaceRef = Arc<crate::sync::IrqMutex<VirtualSpace>>;

/// Where anonymous placements (`find_free`) end: under the largest stack
/// a Linux program may have and its guard gap, so that no mapping ever
/// lands where its stack grows.
const ANON_LIMIT: u64 = super::USER_STACK_TOP - super::LINUX_STACK_MAX - super::STACK_GUARD_GAP;

/// A region attached at an address (Tender: a virtual user space). While
/// attached, the space holds the region; its resource identifiers stay
/// valid and name it.
pub struct Attached {
    pub base: u64,
    pub region: Region,
    /// The region's identifier (a VirtualRegion resource).
    pub region_id: ResId,
    /// The attachment's identifier (a VirtualUserSpace resource).
    pub link_id: ResId,
    /// The page-table entry of a one-page region, once `remap` found it:
    /// an exchange rewrites it without walking the tree. Only for the
    /// space the attachment is in (cleared when it leaves).
    entry: Option<paging::Entry>,
    /// Whether it is mapped by one page-directory entry per block (its
    /// frames are in blocks and its address is a block's: `wants_blocks`)
    /// rather than one entry per page.
    blocks: bool,
    /// Where the file it maps ends, for a Linux file mapping (its pages
    /// wholly past the end are never mapped: a touch is SIGBUS).
    pub file_end: super::region::FileEnd,
}

impl Attached {
    pub fn end(&self) -> u64 {
        self.base + self.region.size()
    }
    /// Whether it should be mapped block by block: true whenever it can.
    #[inline(always)]
    fn wants_blocks(&self) -> bool {
        self.region.in_blocks() && self.base.is_multiple_of(BLOCK_SIZE) && !self.region.is_device()
    }

    /// Drops the translations of its range from this CPU and the other
    /// CPUs of `cpus`, as it is mapped now (one per block, or per page).
    #[inline(always)]
    fn shoot_down(&self, cpus: u64) {
        if self.blocks {
            tlb::shootdown_blocks(self.base, (self.region.pages() / BLOCK_PAGES) as u64, cpus);
        } else {
            tlb::shootdown_cpus(self.base, self.region.pages() as u64, cpus);
        }
    }

    /// Drops its pages wholly past its file's end: their translations,
    /// on every CPU of `cpus`, then a private mapping's copies of them
    /// (Linux's truncation takes those too); frames others share (the
    /// shared server's object of a MAP_SHARED mapping) stay theirs.
    fn drop_past_end(&mut self, root: u64, cpus: u64) {
        let pages = self.region.pages();
        let first = self.file_end.first_past(pages);
        if first == pages {
            return;
        }
        self.region.taint();
        paging::unmap_range(root, self.base + first as u64 * PAGE_SIZE, pages - first);
        self.shoot_down(cpus);
        self.entry = None;
        for i in first..pages {
            self.region.discard(i);
        }
    }

    fn pte_flags(&self) -> u64 {
        // A page of a PROT_NONE region mapped all the same (a fork's copy
        // of one with content) stays out of user mode's reach.
        let mut f = if self.region.no_access { 0 } else { flags::USER };
        if self.region.writable {
            f |= flags::WRITABLE;
        }
        if !self.region.executable {
            f |= flags::NO_EXECUTE;
        }
        if self.region.is_device() {
            f |= flags::NO_CACHE | flags::WRITE_THROUGH;
        }
        f
    }
}

/// Where an attachment goes: at an address, or at the first free place
/// from a hint (where a process's last such placement ended), which then
/// moves past it. The one way a free place is found and taken.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    Address(u64),
    Free(&'a AtomicU64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceError {
    OutOfMemory,
    /// Whoever pays for the space's page tables is over its limit.
    OverLimit,
    /// The range is not page aligned, not in user space, or overlaps a region.
    BadRange,
}

impl From<OutOfMemory> for SpaceError {
    fn from(_: OutOfMemory) -> Self {
        SpaceError::OutOfMemory
    }
}

impl From<paging::MapError> for SpaceError {
    fn from(e: paging::MapError) -> Self {
        match e {
            paging::MapError::OutOfMemory => SpaceError::OutOfMemory,
            _ => SpaceError::BadRange,
        }
    }
}

/// Why a user access could not be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultError {
    /// No region covers the address.
    Unmapped,
    /// The access breaks the region's protection (write to text, execute data).
    Protection,
    /// The address is the guard page under the stack.
    StackOverflow,
    OutOfMemory,
    /// The page's bytes are in a file: its pager must supply them (a
    /// message the caller sends once it holds no lock).
    PageIn(super::region::PageRequest),
    /// The pager could not supply the page (the file is gone, changed or
    /// short, the pager ended or refused).
    PageInFailed,
    /// The page lies wholly past the end of the file its Linux mapping
    /// maps (`Attached::file_end`): SIGBUS, as on Linux.
    PastEnd,
}

impl FaultError {
    /// What an unresolved page fault at `addr` was, for the message that
    /// ends the process (error code as the CPU gave it).
    pub fn describe(self, addr: u64, error_code: u64) -> &'static str {
        match self {
            FaultError::StackOverflow => "stack overflow",
            FaultError::OutOfMemory => "out of memory while paging in",
            FaultError::PageIn(_) | FaultError::PageInFailed => "its page could not be read from its file",
            FaultError::PastEnd => "access past the end of its file",
            FaultError::Protection if error_code & 16 != 0 => "execute of non-executable memory",
            FaultError::Protection if error_code & 2 != 0 => "write to read-only memory",
            FaultError::Protection => "protection violation",
            FaultError::Unmapped if addr < 0x1000 => "null pointer dereference",
            FaultError::Unmapped if addr >= super::USER_END => "access to kernel memory",
            FaultError::Unmapped => "access to unmapped memory",
        }
    }
}

/// What a resolved fault made present, for the per-process counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    pub kind: Kind,
    /// An NVM page was mapped in place: no frame, no copy (seed 001's
    /// step Y), a fault category of its own.
    pub nvm: bool,
    /// The page was read from a file by its pager.
    pub paged: bool,
}

/// A place in a space's list of attachments. An attachment keeps its slot
/// while it is attached, so whoever knows the slot (a container does) finds
/// it in one step however many regions the space holds; slots left free
/// are chained and reused first. The attachment itself is boxed: a move to
/// another space (an ICA's re-attachment) hands over a pointer, not the
/// hundred bytes of the attachment.
enum Slot {
    Used(Box<Attached>),
    Free { next: usize },
}

/// `Box::new` that hands the attachment back when memory is short instead
/// of stopping the kernel (an attach is a request a process can make).
/// The attachment comes by value and goes back by value only when memory is
/// short: a large error variant costs nothing the call does not cost anyway.
#[allow(clippy::result_large_err)]
fn boxed(a: Attached) -> Result<Box<Attached>, Attached> {
    let layout = core::alloc::Layout::new::<Attached>();
    // SAFETY: `Attached` is not zero-sized, so the layout is valid for `alloc`.
    let p = unsafe { alloc::alloc::alloc(layout) }.cast::<Attached>();
    if p.is_null() {
        return Err(a);
    }
    // SAFETY: `p` is a fresh allocation of `Attached`'s layout from the global
    // allocator, written once here and then owned by the box alone.
    unsafe {
        p.write(a);
        Ok(Box::from_raw(p))
    }
}

/// End of the free-slot chain; as a slot hint, "look for it".
pub const NO_SLOT: usize = usize::MAX;

pub struct VirtualSpace {
    root: u64,
    slots: Vec<Slot>,
    /// First free slot (`NO_SLOT`: none) and the number of attachments.
    free: usize,
    attached: usize,
    /// Bounds that let a range be found free without looking at every
    /// region (a process may hold hundreds of containers): no region below
    /// the anonymous-area limit (`ANON_LIMIT`) ends above `low_top`, and no
    /// region reaching beyond that limit starts below `high_bottom`. Raised
    /// (lowered) on attach; left as they are when an attachment leaves (a
    /// bound that is too wide is still true, and a move or exchange is then
    /// not slowed by a look at every region), and made tight again by the
    /// first check that has to look at every region anyway, so that a space
    /// that held many containers, or comes back from the pool, does not
    /// fall back to scanning for ever.
    low_top: u64,
    high_bottom: u64,
    /// CPUs that may hold translations of this space (bit per CPU index),
    /// kept by the scheduler through the process that runs in the space.
    pub active_cpus: Arc<AtomicU64>,
    /// The last page table `entry` found: 2 MiB number and the table's
    /// address. Containers moved in one after another land side by side,
    /// so their entries are mostly in the same table; tables go only with
    /// the whole tree, so a table once found stays valid.
    leaf: (u64, u64),
    /// The box of an attachment that left, for the next one to come: a
    /// container that leaves and one that comes (a MOVE's send, a
    /// receive) then cost the kernel's heap nothing.
    spare: Option<Box<MaybeUninit<Attached>>>,
    /// The slot `region_at` last found an address in, tried first: calls
    /// on one word or buffer (a futex's key, above all) come back to the
    /// same region, which a look at every attachment finds at a cost that
    /// grows with the regions. Only a guess: the slot is checked (in use,
    /// covering the address) before it is believed, so no attach, detach
    /// or move has to keep it. Atomic only because `region_at` reads the
    /// space shared.
    last_hit: AtomicUsize,
    /// The process whose memory this space is (its pid; 0: none). A space
    /// outlives its process (the pool reuses it), so whoever reaches it
    /// for a process checks, under this lock, that it is still that
    /// process's: its end unbinds it first thing (see `bind`).
    user: u64,
    /// The processes the space is lent to besides its user (Linux vfork
    /// children, each running in its parent's memory until it execs or
    /// ends; 0: a free place). Each reaches the space as its own memory
    /// too, and one becomes its user if the user ends first (`hand_over`).
    borrowers: [u64; MAX_BORROWERS],
    /// Page tables of the user half made since the space was made (the
    /// root not counted): they go only with the whole tree.
    tables: usize,
    /// What those made while someone paid for the space cost, charged to
    /// it (its maker, or the process it is the memory of): operations that
    /// would make more are refused once the account is over its limit.
    table_charge: Charge,
    /// Every range an attachment has had since the space was made, in
    /// 2 MiB units, sorted and apart: the space makes page tables only on
    /// the way to its attachments' pages, so its tables are all on the way
    /// to these ranges, and its end frees them by walking only there. A
    /// tiny process's tables hold a few entries in thousands; looking at
    /// every entry was half of the end of a forked copy that exec throws
    /// away. `spans_lost`: too many, or no memory to note one: the end
    /// looks at every entry.
    spans: Vec<(u64, u64)>,
    spans_lost: bool,
    /// How far down a Linux program's stack may grow (its RLIMIT_STACK
    /// read at exec; 0: it does not grow): the fault path extends the
    /// stack region under the 64 KiB stack down to here, so that a
    /// program that never goes deep pays for no list of its pages.
    stack_floor: u64,
}

/// Processes one space is lent to at once (a vfork child's own vfork
/// child, other threads' children): beyond, a fork copies instead.
pub const MAX_BORROWERS: usize = 4;

/// Ranges a space notes before it looks at every page-table entry at its
/// end instead: a process with containers scattered over its space.
const MAX_SPANS: usize = 16;
/// The unit of `spans`: what one page table maps.
const SPAN_SHIFT: u32 = 21;

impl VirtualSpace {
    pub fn new() -> Result<VirtualSpace, OutOfMemory> {
        let root = frames::alloc_zeroed(1)?;
        let kernel = paging::kernel_root();
        // SAFETY: both are page-table frames reached through the direct map;
        // the kernel's top-level entries never change after boot.
        unsafe {
            let src = phys_to_virt(kernel) as *const u64;
            let dst = phys_to_virt(root) as *mut u64;
            core::ptr::copy_nonoverlapping(src.add(256), dst.add(256), 256);
        }
        Ok(VirtualSpace {
            root,
            slots: Vec::new(),
            free: NO_SLOT,
            attached: 0,
            low_top: 0,
            high_bottom: u64::MAX,
            active_cpus: Arc::new(AtomicU64::new(0)),
            leaf: (u64::MAX, 0),
            spare: None,
            last_hit: AtomicUsize::new(NO_SLOT),
            user: 0,
            borrowers: [0; MAX_BORROWERS],
            tables: 0,
            table_charge: Charge::NONE,
            spans: Vec::new(),
            spans_lost: false,
            stack_floor: 0,
        })
    }

    /// How far down a Linux program's stack may grow (0: not at all).
    pub fn stack_floor(&self) -> u64 {
        self.stack_floor
    }

    /// Sets how far down the stack region under the 64 KiB stack may grow
    /// at faults (page-aligned; 0: never).
    pub fn set_stack_floor(&mut self, floor: u64) {
        self.stack_floor = floor & !(PAGE_SIZE - 1);
    }

    /// The slot of the stack region (the one that ends at the stack's top).
    fn stack_slot(&self) -> Option<usize> {
        self.slots.iter().position(
            |s| matches!(s, Slot::Used(a) if a.region.kind == Kind::Stack && a.end() == super::USER_STACK_TOP),
        )
    }

    /// Grows the stack region down over `addr`, as Linux's VM_GROWSDOWN:
    /// never below the floor, nor within a guard gap of the highest other
    /// mapping under it. At least doubles it, so that a program going deep
    /// frame by frame grows it a few times, not once per page. Its new
    /// pages are absent: nothing is mapped, the page tables stay as they
    /// are, and the pages are filled at their first touch as any other.
    fn grow_stack(&mut self, addr: u64) -> Result<(), FaultError> {
        let i = self.stack_slot().ok_or(FaultError::Unmapped)?;
        let (base, end) = self.at(i).map_or((0, 0), |a| (a.base, a.end()));
        if self.stack_floor == 0 || addr < self.stack_floor || addr >= base {
            return Err(FaultError::Unmapped);
        }
        let page = addr & !(PAGE_SIZE - 1);
        // The highest mapping under the stack, and the gap kept above it.
        let below = self
            .regions()
            .filter(|a| a.end() <= base)
            .map(|a| a.end())
            .max()
            .unwrap_or(0);
        let lowest = self.stack_floor.max(below.saturating_add(super::STACK_GUARD_GAP));
        if page < lowest {
            return Err(FaultError::StackOverflow);
        }
        let new_base = page.min(base.saturating_sub(end - base)).max(lowest);
        let extra = ((base - new_base) / PAGE_SIZE) as usize;
        let a = self.at(i).ok_or(FaultError::Unmapped)?;
        a.region.grow_front(extra).map_err(|_| FaultError::OutOfMemory)?;
        a.base = new_base;
        // A one-page attachment's kept entry was its old first page's.
        a.entry = None;
        self.high_bottom = self.high_bottom.min(new_base);
        self.note_span(new_base, base - new_base);
        Ok(())
    }

    /// Gives the stack region back the size it had before it grew
    /// (`pages`): what it grew over is unmapped and its frames go, so that
    /// a pooled space's next program starts as the program was composed.
    /// False if it could not (no memory for its shorter list of frames).
    pub fn shrink_stack(&mut self, pages: usize) -> bool {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        let Some(i) = self.stack_slot() else { return true };
        let Some(a) = self.at(i) else { return true };
        let extra = a.region.pages().saturating_sub(pages);
        if extra == 0 {
            return true;
        }
        let base = a.base;
        let unmap = || {
            paging::unmap_range(root, base, extra);
            tlb::shootdown_cpus(base, extra as u64, cpus);
        };
        if a.region.drop_front(extra, unmap).is_err() {
            return false;
        }
        a.base += extra as u64 * PAGE_SIZE;
        true
    }

    /// Notes that `base..base + len` may get page tables (see `spans`);
    /// called before anything is mapped there.
    #[inline]
    fn note_span(&mut self, base: u64, len: u64) {
        if len == 0 || self.spans_lost {
            return;
        }
        let lo = base >> SPAN_SHIFT;
        let hi = (base.saturating_add(len - 1) >> SPAN_SHIFT) + 1;
        // Nearly always inside one noted already: a pooled space comes back
        // with its layout, containers move to the same few places.
        if self.spans.iter().any(|&(l, h)| l <= lo && hi <= h) {
            return;
        }
        self.add_span(lo, hi);
    }

    #[cold]
    fn add_span(&mut self, mut lo: u64, mut hi: u64) {
        // Those it touches or overlaps become one with it.
        let first = self.spans.partition_point(|&(_, h)| h < lo);
        let mut last = first;
        while last < self.spans.len() && self.spans[last].0 <= hi {
            lo = lo.min(self.spans[last].0);
            hi = hi.max(self.spans[last].1);
            last += 1;
        }
        if last > first {
            self.spans.drain(first + 1..last);
            self.spans[first] = (lo, hi);
            return;
        }
        if self.spans.len() >= MAX_SPANS || self.spans.try_reserve(1).is_err() {
            self.spans_lost = true;
            self.spans = Vec::new();
            return;
        }
        self.spans.insert(first, (lo, hi));
    }

    /// The page tables `Drop` frees by the noted ranges (None: it would
    /// look at every entry): for a test that checks them against the
    /// whole tree's count, `table_pages`.
    pub fn tables_by_spans(&self) -> Option<usize> {
        if self.spans_lost {
            return None;
        }
        let mut n = 0;
        walk_spans(self.root, 3, 0, &self.spans, &mut |_| n += 1);
        Some(n)
    }

    pub fn root(&self) -> u64 {
        self.root
    }

    /// Makes the space process `pid`'s memory, its page tables from now on
    /// paid by `account` if nobody pays for them yet; false if it is
    /// another's already (one space is never two processes' at once).
    pub fn bind(&mut self, pid: u64, account: &Arc<Account>) -> bool {
        if self.user != 0 {
            return false;
        }
        self.user = pid;
        self.pay_tables(account);
        true
    }

    /// Its process has begun to end: from now on nobody reaches the space
    /// as that process's memory. Its page tables stop counting against
    /// whoever paid: the space is now taken apart, or pooled, and the
    /// pool's memory is the kernel's, bounded by the pool's own rules.
    pub fn unbind(&mut self) {
        self.user = 0;
        self.borrowers = [0; MAX_BORROWERS];
        self.table_charge = Charge::NONE;
    }

    /// Lends the space to process `pid` besides its user; false if it has
    /// no user, `pid` holds it already, or it is lent to as many as it
    /// may be.
    pub fn lend(&mut self, pid: u64) -> bool {
        if self.user == 0 || pid == 0 || self.holds(pid) {
            return false;
        }
        match self.borrowers.iter_mut().find(|b| **b == 0) {
            Some(free) => {
                *free = pid;
                true
            }
            None => false,
        }
    }

    /// Its borrower `pid` gives it back (an exec or an end); false if
    /// `pid` is not one of its borrowers.
    pub fn give_back(&mut self, pid: u64) -> bool {
        match self.borrowers.iter_mut().find(|b| pid != 0 && **b == pid) {
            Some(b) => {
                *b = 0;
                true
            }
            None => false,
        }
    }

    /// Whether it is lent to anyone.
    pub fn is_lent(&self) -> bool {
        self.borrowers.iter().any(|&b| b != 0)
    }

    /// Whether the space is process `pid`'s memory: its user's, or a
    /// borrower's.
    #[inline(always)]
    pub fn holds(&self, pid: u64) -> bool {
        pid != 0 && (self.user == pid || self.borrowers.contains(&pid))
    }

    /// Its user has begun to end while it is lent: a borrower becomes its
    /// user (as Linux's memory lives on with the tasks holding it) and is
    /// returned; None when it is not lent (the caller unbinds).
    pub fn hand_over(&mut self) -> Option<u64> {
        let next = self.borrowers.iter_mut().find(|b| **b != 0)?;
        self.user = core::mem::take(next);
        Some(self.user)
    }

    /// Page tables made from now on are charged to `account`, unless
    /// someone pays already (a space's maker pays for its whole life).
    pub fn pay_tables(&mut self, account: &Arc<Account>) {
        if self.table_charge.account().is_none() {
            self.table_charge = Charge::on(Some(account));
        }
    }

    /// Page tables of the user half made so far (the root not counted).
    pub fn tables_made(&self) -> usize {
        self.tables
    }

    /// Counts (and charges) the page tables made since `before`
    /// (`paging::user_tables_made` at the start of the operation).
    #[inline(always)]
    fn settle(&mut self, before: u64) {
        let made = paging::user_tables_made() - before;
        if made != 0 {
            self.tables += made as usize;
            self.table_charge.grow_anyway(made * PAGE_SIZE);
        }
    }

    /// The process whose memory the space is (0: none).
    #[inline(always)]
    pub fn user(&self) -> u64 {
        self.user
    }

    /// The attached regions, in no particular order.
    pub fn regions(&self) -> impl Iterator<Item = &Attached> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Used(a) => Some(&**a),
            Slot::Free { .. } => None,
        })
    }

    fn regions_mut(&mut self) -> impl Iterator<Item = &mut Attached> {
        self.slots.iter_mut().filter_map(|s| match s {
            Slot::Used(a) => Some(&mut **a),
            Slot::Free { .. } => None,
        })
    }

    pub fn region_count(&self) -> usize {
        self.attached
    }

    /// The page-table entry of `va` in this tree, through the last table
    /// found when `va` lies in the same 2 MiB.
    #[inline(always)]
    fn entry(&mut self, va: u64) -> Option<paging::Entry> {
        let big = va >> 21;
        if self.leaf.0 != big {
            self.leaf = (big, paging::Entry::leaf(self.root, va)?);
        }
        Some(paging::Entry::in_table(self.leaf.1, va))
    }

    /// The attachment in slot `i`, if that slot is in use.
    fn at(&mut self, i: usize) -> Option<&mut Attached> {
        match self.slots.get_mut(i) {
            Some(Slot::Used(a)) => Some(a),
            _ => None,
        }
    }

    /// The slot of attachment `link_id`: `hint` when it is there (one step),
    /// else found by looking.
    #[inline(always)]
    pub fn slot_of(&self, link_id: ResId, hint: usize) -> Option<usize> {
        self.used(link_id, hint).map(|(i, _)| i)
    }

    /// The slot of attachment `link_id` and the attachment, found as
    /// `slot_of` finds it.
    #[inline(always)]
    fn used(&self, link_id: ResId, hint: usize) -> Option<(usize, &Attached)> {
        if let Some(Slot::Used(a)) = self.slots.get(hint)
            && a.link_id == link_id
        {
            return Some((hint, a));
        }
        let i = self.find_slot(link_id)?;
        match &self.slots[i] {
            Slot::Used(a) => Some((i, a)),
            Slot::Free { .. } => None,
        }
    }

    #[cold]
    fn find_slot(&self, link_id: ResId) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| matches!(s, Slot::Used(a) if a.link_id == link_id))
    }

    /// The attachment `link_id` (slot `hint` if it is there).
    pub fn attachment_mut(&mut self, link_id: ResId, hint: usize) -> Option<&mut Attached> {
        let i = self.slot_of(link_id, hint)?;
        self.at(i)
    }

    /// Attaches `region` at `base`, mapping the pages it already has. On
    /// failure the region is handed back.
    pub fn attach(
        &mut self,
        base: u64,
        mut region: Region,
        region_id: ResId,
        link_id: ResId,
    ) -> Result<usize, (SpaceError, Region)> {
        match self.check_range(base, &region) {
            Ok(()) => {}
            Err(e) => return Err((e, region)),
        }
        if !self.table_charge.has_room() {
            return Err((SpaceError::OverLimit, region));
        }
        // Its pages get new entries, without what the old ones knew.
        region.taint();
        let attached = Attached {
            base,
            region,
            region_id,
            link_id,
            entry: None,
            blocks: false,
            file_end: super::region::FileEnd::default(),
        };
        let mut attached = match self.spare.take() {
            Some(shell) => Box::write(shell, attached),
            None => boxed(attached).map_err(|a| (SpaceError::OutOfMemory, a.region))?,
        };
        self.note_span(base, attached.region.size());
        let t0 = paging::user_tables_made();
        if attached.wants_blocks() {
            let cpus = self.active_cpus.load(Ordering::Acquire);
            let r = map_blocks(self.root, cpus, &mut self.leaf, &mut attached);
            self.settle(t0);
            if let Err(e) = r {
                // The range was free: what this call mapped is all there is.
                paging::unmap_range(self.root, base, attached.region.pages());
                return Err((e, attached.region));
            }
        } else if let Err((e, done)) = {
            // A fork's copy maps its frames read-only: the first write to
            // each finds out whether it must copy.
            let f = if attached.region.is_forked() {
                attached.pte_flags() & !flags::WRITABLE
            } else {
                attached.pte_flags()
            };
            let mapped = paging::map_range(self.root, base, attached.region.frames(), f);
            self.settle(t0);
            mapped
        } {
            // The range was free: what this call mapped is all there is.
            paging::unmap_range(self.root, base, done);
            return Err((e.into(), attached.region));
        }
        // A one-page attachment (an ICA, a small container) keeps its entry
        // from the start: its first move or exchange then needs no walk.
        if attached.region.pages() == 1 {
            attached.entry = self.entry(base);
        }
        Ok(self.push(attached))
    }

    /// `attach` where `at` says; returns the address and the slot.
    pub fn attach_at(
        &mut self,
        at: At,
        region: Region,
        region_id: ResId,
        link_id: ResId,
    ) -> Result<(u64, usize), (SpaceError, Region)> {
        let Some((base, _)) = self.place(at, region.size()) else {
            return Err((SpaceError::OutOfMemory, region));
        };
        self.attach(base, region, region_id, link_id).map(|slot| (base, slot))
    }

    /// The address `at` names for `len` bytes, and whether it is known to
    /// be free (a free place moves its hint past it).
    #[inline(always)]
    pub fn place(&mut self, at: At, len: u64) -> Option<(u64, bool)> {
        match at {
            At::Address(base) => Some((base, false)),
            At::Free(hint) => {
                // Whole blocks go where a block starts: memory in blocks is
                // then mapped (and exchanged) one entry per block.
                let from = hint.load(Ordering::Relaxed);
                let from = if len.is_multiple_of(BLOCK_SIZE) {
                    from.checked_next_multiple_of(BLOCK_SIZE)?
                } else {
                    from
                };
                let base = self.find_free(from, len)?;
                hint.store(base + len, Ordering::Relaxed);
                Some((base, true))
            }
        }
    }

    /// Adds an attachment whose range was checked (so that a slot is there
    /// for it), keeping the free-range bounds; returns its slot.
    #[inline]
    fn push(&mut self, a: Box<Attached>) -> usize {
        if a.end() <= ANON_LIMIT {
            self.low_top = self.low_top.max(a.end());
        } else {
            self.high_bottom = self.high_bottom.min(a.base);
        }
        self.attached += 1;
        if self.free == NO_SLOT {
            self.slots.push(Slot::Used(a));
            return self.slots.len() - 1;
        }
        let i = self.free;
        if let Slot::Free { next } = core::mem::replace(&mut self.slots[i], Slot::Used(a)) {
            self.free = next;
        }
        i
    }

    /// Takes the attachment out of slot `i` (which is in use), keeping the
    /// free-range bounds.
    fn take(&mut self, i: usize) -> Box<Attached> {
        let Slot::Used(mut a) = core::mem::replace(&mut self.slots[i], Slot::Free { next: self.free }) else {
            unreachable!("slot {i} taken twice");
        };
        self.free = i;
        self.attached -= 1;
        a.entry = None;
        a
    }

    /// Whether `base..end` overlaps no region: by the bounds when they
    /// suffice, else by looking at every region (and making the bounds
    /// tight on the way).
    fn is_free(&mut self, base: u64, end: u64) -> bool {
        if self.within_bounds(base, end) {
            return true;
        }
        let (mut low_top, mut high_bottom, mut overlap) = (0, u64::MAX, false);
        for a in self.regions() {
            if a.end() <= ANON_LIMIT {
                low_top = low_top.max(a.end());
            } else {
                high_bottom = high_bottom.min(a.base);
            }
            overlap |= base < a.end() && a.base < end;
        }
        (self.low_top, self.high_bottom) = (low_top, high_bottom);
        !overlap
    }

    /// Whether the bounds alone say `base..end` is free.
    #[inline(always)]
    fn within_bounds(&self, base: u64, end: u64) -> bool {
        base >= self.low_top && end <= ANON_LIMIT.min(self.high_bottom)
    }

    /// Room for one more attachment (a free slot, or space for one).
    #[inline(always)]
    fn reserve_slot(&mut self) -> Result<(), SpaceError> {
        if self.free == NO_SLOT {
            self.slots.try_reserve(1).map_err(|_| SpaceError::OutOfMemory)?;
        }
        Ok(())
    }

    /// Whether `region` fits at `base`, with room for one more slot.
    fn check_range(&mut self, base: u64, region: &Region) -> Result<(), SpaceError> {
        let end = base.checked_add(region.size()).ok_or(SpaceError::BadRange)?;
        if !base.is_multiple_of(PAGE_SIZE) || base == 0 || end > USER_TOP || region.pages() == 0 {
            return Err(SpaceError::BadRange);
        }
        if !self.is_free(base, end) {
            return Err(SpaceError::BadRange);
        }
        self.reserve_slot()
    }

    /// Detaches the attachment `link_id` and returns its region.
    pub fn detach(&mut self, link_id: ResId) -> Option<Region> {
        self.detach_hinted(link_id, NO_SLOT)
    }

    /// `detach`, looking in slot `hint` first (where a container's record
    /// says its attachment is).
    pub fn detach_hinted(&mut self, link_id: ResId, hint: usize) -> Option<Region> {
        let i = self.slot_of(link_id, hint)?;
        let mut a = self.take(i);
        a.region.taint();
        paging::unmap_range(self.root, a.base, a.region.pages());
        a.shoot_down(self.active_cpus.load(Ordering::Acquire));
        Some(self.keep_spare(a).region)
    }

    /// The attachment out of its box, which the space keeps for its next
    /// attach (`spare`) if it has none yet.
    fn keep_spare(&mut self, a: Box<Attached>) -> Attached {
        let raw = Box::into_raw(a);
        // SAFETY: `raw` came from a box just given up: valid, aligned and
        // initialised, read once here; the allocation is then owned, as
        // uninitialised memory of the same layout, by `shell` alone.
        let (value, shell) = unsafe { (raw.read(), Box::from_raw(raw.cast::<MaybeUninit<Attached>>())) };
        if self.spare.is_none() {
            self.spare = Some(shell);
        }
        value
    }

    /// Rewrites the page-table entries of attachment `index` after its frames
    /// changed (a physical-memory exchange), and drops the stale
    /// translations from every CPU that runs this space.
    fn remap(&mut self, index: usize) -> Result<(), SpaceError> {
        let Some(Slot::Used(a)) = self.slots.get_mut(index) else {
            return Err(SpaceError::BadRange);
        };
        rewrite(self.root, &self.active_cpus, &mut self.leaf, a)
    }

    /// Exchanges the physical pages of attachment `link_id` (in slot `hint`
    /// if it is there) with those of a region outside any space (a
    /// container in a box). No data is copied. On failure (no memory for
    /// a page table, when memory in blocks is exchanged for memory that is
    /// not) both keep their own pages.
    #[inline(always)]
    pub fn exchange_with(&mut self, link_id: ResId, hint: usize, other: &mut Region) -> Result<(), SpaceError> {
        let i = self.slot_of(link_id, hint).ok_or(SpaceError::BadRange)?;
        let Some(Slot::Used(a)) = self.slots.get_mut(i) else {
            return Err(SpaceError::BadRange);
        };
        a.region.exchange_frames(other).map_err(|_| SpaceError::BadRange)?;
        let r = rewrite(self.root, &self.active_cpus, &mut self.leaf, a);
        if r.is_err() {
            undo_exchange(self.root, &self.active_cpus, &mut self.leaf, a, other);
        }
        r
    }

    /// Exchanges the physical pages of two attachments of this space.
    pub fn exchange_within(&mut self, a: ResId, b: ResId) -> Result<(), SpaceError> {
        let i = self.slot_of(a, NO_SLOT).ok_or(SpaceError::BadRange)?;
        let j = self.slot_of(b, NO_SLOT).ok_or(SpaceError::BadRange)?;
        if i == j {
            return Ok(());
        }
        let (lo, hi) = (i.min(j), i.max(j));
        let (left, right) = self.slots.split_at_mut(hi);
        let (Slot::Used(x), Slot::Used(y)) = (&mut left[lo], &mut right[0]) else {
            return Err(SpaceError::BadRange);
        };
        exchange_frames(x, y)?;
        let r = self.remap(i).and_then(|()| self.remap(j));
        if r.is_err() {
            // Both keep their own pages (see `exchange_with`).
            let (left, right) = self.slots.split_at_mut(hi);
            if let (Slot::Used(x), Slot::Used(y)) = (&mut left[lo], &mut right[0]) {
                let _ = exchange_frames(x, y);
            }
            let _ = self.remap(i);
            let _ = self.remap(j);
        }
        r
    }

    /// Exchanges the physical pages of attachment `a` of this space with
    /// attachment `b` of `other` (two processes' containers).
    pub fn exchange_between(&mut self, a: ResId, other: &mut VirtualSpace, b: ResId) -> Result<(), SpaceError> {
        let i = self.slot_of(a, NO_SLOT).ok_or(SpaceError::BadRange)?;
        let j = other.slot_of(b, NO_SLOT).ok_or(SpaceError::BadRange)?;
        let (x, y) = self.at(i).zip(other.at(j)).ok_or(SpaceError::BadRange)?;
        exchange_frames(x, y)?;
        let r = self.remap(i).and_then(|()| other.remap(j));
        if r.is_err() {
            // Both keep their own pages (see `exchange_with`).
            if let Some((x, y)) = self.at(i).zip(other.at(j)) {
                let _ = exchange_frames(x, y);
            }
            let _ = self.remap(i);
            let _ = other.remap(j);
        }
        r
    }

    /// Moves attachment `link_id` (in slot `hint` if it is there) out of
    /// this space into `to` at `base` without touching the data: this
    /// space's entries are cleared (and shot down), the other space's
    /// written. AnT's re-attachment of an ICA. `free`: `base` is known to
    /// be free in `to`. Returns its slot in `to`.
    pub fn move_to(
        &mut self,
        link_id: ResId,
        hint: usize,
        to: &mut VirtualSpace,
        base: u64,
        free: bool,
    ) -> Result<usize, SpaceError> {
        let (i, a) = self.used(link_id, hint).ok_or(SpaceError::BadRange)?;
        if free {
            // The range is free; only a slot has to be there for it.
            to.reserve_slot()?;
        } else {
            to.check_range(base, &a.region)?;
        }
        let entry = a.entry;
        let mut a = self.take(i);
        a.region.taint();
        let old = a.base;
        let pages = a.region.pages();
        let mapping = match entry {
            // SAFETY: the entry was found in this space's tree, which lives
            // as long as the space.
            Some(e) => Some(unsafe { e.take() }),
            None => {
                paging::unmap_range(self.root, old, pages);
                None
            }
        };
        a.shoot_down(self.active_cpus.load(Ordering::Acquire));
        a.base = base;
        // One page: its entry in `to` is found once and kept for the next
        // move or exchange (a missing table is made by `remap_range`). The
        // mapping moves as it was (same frame, same rights).
        let one = match *a.region.frames() {
            [pa] => to
                .entry(base)
                .map(|e| (e, mapping.unwrap_or_else(|| paging::pte(pa, a.pte_flags())))),
            _ => None,
        };
        let mapped = match one {
            Some((e, value)) => {
                // SAFETY: the entry was just found in `to`'s tree, which
                // lives as long as that space.
                unsafe { e.put(value) };
                a.entry = Some(e);
                Ok(())
            }
            None => {
                to.note_span(base, a.region.size());
                let t0 = paging::user_tables_made();
                let r = map_anew(to.root, to.active_cpus.load(Ordering::Acquire), &mut to.leaf, &mut a);
                to.settle(t0);
                r
            }
        };
        if let Err(e) = mapped {
            // Put it back where it was (the slot it left is the first free
            // one): nothing is lost.
            paging::unmap_range(to.root, base, pages);
            a.base = old;
            let _ = map_anew(
                self.root,
                self.active_cpus.load(Ordering::Acquire),
                &mut self.leaf,
                &mut a,
            );
            self.push(a);
            return Err(e);
        }
        Ok(to.push(a))
    }

    /// A fork's copy of attachment `link_id`'s region, copy-on-write
    /// (`Region::fork_copy`), its pages made read-only here and the old
    /// translations dropped from every CPU running this space (its other
    /// threads may be writing them). None if no such attachment, or its
    /// region is not `forkable`.
    pub fn fork_region(&mut self, link_id: ResId) -> Option<Result<Region, OutOfMemory>> {
        self.fork_region_at(link_id, NO_SLOT)
    }

    /// `fork_region`, looking in slot `hint` first.
    pub fn fork_region_at(&mut self, link_id: ResId, hint: usize) -> Option<Result<Region, OutOfMemory>> {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        let a = self.attachment_mut(link_id, hint)?;
        if !a.region.forkable() {
            return None;
        }
        let copy = a.region.fork_copy();
        if copy.is_ok() && a.region.writable {
            paging::write_protect_range(root, a.base, a.region.pages());
            a.shoot_down(cpus);
        }
        Some(copy)
    }

    /// Empties every attachment for an ended fork's space to be kept for
    /// its parent's next fork (`reattach`): each region lets go of its
    /// pages (`Region::release_all`) and its translations go, on every CPU
    /// of the space; the attachments, their slots, the page tables and
    /// the space's layout stay. What no CPU may reach any more is then
    /// only empty tables.
    pub fn empty_for_reuse(&mut self) {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        for a in self.regions_mut() {
            paging::unmap_range(root, a.base, a.region.pages());
            a.shoot_down(cpus);
            a.entry = None;
            a.blocks = false;
            a.file_end = super::region::FileEnd::default();
            a.region.release_all();
        }
    }

    /// Puts `region` (a fork's copy of a parent's region at `base`) in
    /// the place of the emptied attachment (`empty_for_reuse`) of the
    /// same address and size, mapping its pages as `attach` would: the
    /// attachment, its resource identifiers and the page tables on the way
    /// are reused, not made anew. Returns the attachment's identifiers and
    /// the region it held (empty), or gives `region` back (no such
    /// attachment, memory in blocks, or no memory for a page table).
    #[allow(clippy::result_large_err)]
    pub fn reattach(&mut self, base: u64, region: Region) -> Result<(ResId, ResId, Region), Region> {
        let root = self.root;
        // (Its pages are not looked at: an emptied attachment holds none,
        // and one that held some would let them go as its region goes.)
        let slot = self.slots.iter().position(
            |s| matches!(s, Slot::Used(a) if a.base == base && a.region.pages() == region.pages() && !a.blocks),
        );
        let Some(Slot::Used(a)) = slot.and_then(|i| self.slots.get_mut(i)) else {
            return Err(region);
        };
        let mut old = core::mem::replace(&mut a.region, region);
        // Its pages get new entries, without what the old ones knew.
        a.region.taint();
        a.entry = None;
        a.file_end = super::region::FileEnd::default();
        if a.wants_blocks() {
            core::mem::swap(&mut a.region, &mut old);
            return Err(old);
        }
        // A fork's copy maps its frames read-only: the first write to
        // each finds out whether it must copy (as `attach`).
        let f = if a.region.is_forked() {
            a.pte_flags() & !flags::WRITABLE
        } else {
            a.pte_flags()
        };
        let t0 = paging::user_tables_made();
        let mapped = paging::map_range(root, base, a.region.frames(), f);
        if let Err((_, done)) = mapped {
            paging::unmap_range(root, base, done);
            core::mem::swap(&mut a.region, &mut old);
            self.settle(t0);
            return Err(old);
        }
        let (ids, one) = ((a.link_id, a.region_id), a.region.pages() == 1);
        self.settle(t0);
        if one {
            let e = self.entry(base);
            if let Some(Slot::Used(a)) = slot.and_then(|i| self.slots.get_mut(i)) {
                a.entry = e;
            }
        }
        Ok((ids.0, ids.1, old))
    }

    /// Page-table pages of the user half (the memory a space holds beyond
    /// its regions), the root included.
    pub fn table_pages(&self) -> usize {
        1 + count_tables(self.root, 3)
    }

    /// Linux's mprotect over `start..end` (page-aligned, every page of it
    /// attached): an anonymous region it covers whole gets the rights
    /// (`none`: PROT_NONE), its pages unmapped so that the next access
    /// maps them anew; one it covers in part keeps its rights (a region is
    /// not split), except that a PROT_NONE one opened in part is opened
    /// whole, writable (a thread's stack below its guard page). Other
    /// regions (program text and data, files) keep theirs.
    pub fn protect(&mut self, start: u64, end: u64, writable: bool, executable: bool, none: bool) {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        for a in self.regions_mut().filter(|a| a.base < end && start < a.end()) {
            let whole = start <= a.base && a.end() <= end;
            let r = &mut a.region;
            if whole && r.kind == Kind::Heap && !a.blocks {
                (r.writable, r.executable, r.no_access) = (writable, executable, none);
            } else if r.no_access && !none {
                (r.writable, r.no_access) = (true, false);
                r.executable |= executable;
            } else {
                continue;
            }
            r.taint();
            paging::unmap_range(root, a.base, a.region.pages());
            a.shoot_down(cpus);
            // Its entry is found again when a fault maps the page.
            a.entry = None;
        }
    }

    /// Lets the pages of `start..end` go (MADV_DONTNEED) in the private
    /// regions that are not copies of files (`Region::discard` says which
    /// pages stay): each drops its translations of the range, on every
    /// CPU, before its frames go, so no CPU writes a freed frame.
    pub fn discard(&mut self, start: u64, end: u64) {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        for a in self.regions_mut().filter(|a| a.base < end && start < a.end()) {
            if a.region.linux.of_file() || a.region.fork_shares {
                continue;
            }
            let first = ((start.max(a.base) - a.base) / PAGE_SIZE) as usize;
            let last = ((end.min(a.end()) - a.base) / PAGE_SIZE) as usize;
            // A region in blocks keeps its frames (zeroed in place): its
            // translations stay valid.
            if !a.region.in_blocks() {
                paging::unmap_range(root, a.base + first as u64 * PAGE_SIZE, last - first);
                a.shoot_down(cpus);
                a.entry = None;
            }
            for i in first..last {
                a.region.discard(i);
            }
        }
    }

    /// Marks the Linux mapping that starts at `base` as a map of a file
    /// (`Attached::file_end`, `LinuxMarks::set_may`): `may_write` and
    /// `may_exec` the most mprotect may open it to, `end` where its file
    /// ends, if kept. Refused (`BadRange`) for an address where no
    /// anonymous mapping starts, one in blocks, or limits its protection
    /// already breaks (a writable mapping never to be written).
    pub fn mark_file_map(
        &mut self,
        base: u64,
        may_write: bool,
        may_exec: bool,
        end: super::region::FileEnd,
    ) -> Result<(), SpaceError> {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        let Some(a) = self.regions_mut().find(|a| a.base == base) else {
            return Err(SpaceError::BadRange);
        };
        let r = &a.region;
        let open = !r.no_access;
        if r.kind != Kind::Heap
            || r.in_blocks()
            || (open && r.writable && !may_write)
            || (open && r.executable && !may_exec)
        {
            return Err(SpaceError::BadRange);
        }
        a.region.linux.set_may(may_write, may_exec);
        a.file_end = end;
        a.drop_past_end(root, cpus);
        // A private copy of a file named by its end: its pages are the
        // file's from now on (`Region::keep_file_pages`), which a write
        // to the file reaches (`file_written`); read-only until written.
        // Should there be no room to count them, it stays a copy, as
        // every private mapping was before.
        if end.file != 0 && !a.region.fork_shares && a.region.keep_file_pages().is_ok_and(|n| n > 0) {
            paging::write_protect_range(root, a.base, a.region.pages());
            a.shoot_down(cpus);
        }
        Ok(())
    }

    /// A write of `data` to file `file` at byte `offset`: the pages of
    /// its private mappings that are still the file's (never written by
    /// the process) get the bytes, as Linux's page cache would. Returns
    /// how many pages took some.
    pub fn file_written(&mut self, file: u64, offset: u64, data: &[u8]) -> usize {
        let Some(last) = offset.checked_add(data.len() as u64) else {
            return 0;
        };
        if file == 0 || data.is_empty() {
            return 0;
        }
        let mut written = 0;
        for a in self.regions_mut().filter(|a| a.file_end.file == file) {
            // The region's pages in file bytes: [from, to).
            let pages = a.region.pages() as u64;
            let Some(from) = a.file_end.first.checked_mul(PAGE_SIZE) else {
                continue;
            };
            let to = pages
                .checked_mul(PAGE_SIZE)
                .and_then(|n| from.checked_add(n))
                .unwrap_or(u64::MAX);
            let (lo, hi) = (offset.max(from), last.min(to));
            let mut at = lo;
            while at < hi {
                let index = ((at - from) / PAGE_SIZE) as usize;
                let in_page = (at % PAGE_SIZE) as usize;
                let n = (PAGE_SIZE - at % PAGE_SIZE).min(hi - at) as usize;
                let piece = &data[(at - offset) as usize..(at - offset) as usize + n];
                if a.region.write_file_page(index, in_page, piece) {
                    written += 1;
                }
                at += n as u64;
            }
        }
        written
    }

    /// Gives attachment `link_id` the file end `end` (a part of a file
    /// mapping, a fork's copy of one), dropping its pages past it.
    pub fn set_file_end_of(&mut self, link_id: ResId, end: super::region::FileEnd) {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        if let Some(a) = self.attachment_mut(link_id, 0) {
            a.file_end = end;
            a.drop_past_end(root, cpus);
        }
    }

    /// The Linux mappings of file `file` (`Attached::file_end`) now end at
    /// `pages` pages of it (truncated or extended): the pages wholly
    /// past the end are dropped, so that their next touch is SIGBUS.
    /// Returns how many mappings it changed.
    pub fn set_file_end(&mut self, file: u64, pages: u64) -> usize {
        if file == 0 {
            return 0;
        }
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        let mut changed = 0;
        for a in self.regions_mut().filter(|a| a.file_end.file == file) {
            a.file_end.pages = pages;
            a.drop_past_end(root, cpus);
            changed += 1;
        }
        changed
    }

    /// Whether every page of `start..end` is in an attached region.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        while at < end {
            match self.region_at(at) {
                Some(a) => at = a.end(),
                None => return false,
            }
        }
        true
    }

    pub fn region_at(&self, addr: u64) -> Option<&Attached> {
        match self.slots.get(self.slot_holding(addr)?) {
            Some(Slot::Used(a)) => Some(a),
            _ => None,
        }
    }

    /// The slot of the attachment that holds `addr`: `last_hit` first, then
    /// a look at every slot (which `last_hit` then remembers). A process
    /// touching its memory page after page faults in one region again and
    /// again; the look at every slot was a tenth of such a fault.
    #[inline(always)]
    fn slot_holding(&self, addr: u64) -> Option<usize> {
        let holds = |s: &Slot| matches!(s, Slot::Used(a) if addr >= a.base && addr < a.end());
        let hint = self.last_hit.load(Ordering::Relaxed);
        if self.slots.get(hint).is_some_and(holds) {
            return Some(hint);
        }
        let i = self.slots.iter().position(holds)?;
        self.last_hit.store(i, Ordering::Relaxed);
        Some(i)
    }

    /// Resolves a fault at `addr`: maps the page if the region allows the
    /// access, allocating and filling it if it is not yet present. Returns
    /// the kind of region, for the per-process fault counters.
    pub fn resolve_fault(&mut self, addr: u64, write: bool, exec: bool) -> Result<Resolved, FaultError> {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        // One search of the attachments: each branch that maps the page
        // (which takes the space mutably) uses `a` no more after it.
        let found = self.slot_holding(addr);
        let Some(Slot::Used(a)) = found.and_then(|i| self.slots.get_mut(i)) else {
            // Below the stack, within its limit: it grows, then the fault
            // is resolved there as any other.
            if self.stack_floor != 0 && addr >= self.stack_floor && addr < super::USER_STACK_TOP {
                self.grow_stack(addr)?;
                return self.resolve_fault(addr, write, exec);
            }
            let below_stack = self
                .regions()
                .any(|a| a.region.kind == Kind::Stack && addr < a.base && addr >= a.base - PAGE_SIZE);
            return Err(if below_stack {
                FaultError::StackOverflow
            } else {
                FaultError::Unmapped
            });
        };
        if (write && !a.region.writable) || (exec && !a.region.executable) || a.region.no_access {
            return Err(FaultError::Protection);
        }
        let index = ((addr - a.base) / PAGE_SIZE) as usize;
        // Never mapped there while the file is too short (`set_file_end`
        // unmaps such pages as the end moves down).
        if a.file_end.past(index) {
            return Err(FaultError::PastEnd);
        }
        let va = a.base + index as u64 * PAGE_SIZE;
        // A write to a page a fork shared (a copy of its own if others
        // still hold the frame, else the frame made writable), or the first
        // write to its file's cached page (a copy of its own in place of the
        // cache's, which stays counted as mapped until the shootdown). Other
        // CPUs running this space drop the read-only translation, whose
        // frame others may write now.
        let broken = if write && a.region.is_forked() && a.region.frame(index).is_some() {
            Some(a.region.break_fork(index).map(|pa| (pa, None)))
        } else if write && a.region.is_cow(index) {
            Some(a.region.break_cow(index))
        } else {
            None
        };
        if let Some(r) = broken {
            let (pa, _cached) = r.map_err(|_| FaultError::OutOfMemory)?;
            let f = a.pte_flags();
            let kind = a.region.kind;
            self.map_one(va, pa, f)?;
            tlb::shootdown_cpus(va, 1, cpus);
            return Ok(Resolved {
                kind,
                nvm: false,
                paged: false,
            });
        }
        if a.region.frame(index).is_some()
            && let Some((_, f)) = paging::translate(root, va)
        {
            // Present and mapped. If the entry grants the access, this CPU
            // faulted on an older translation of the page it still held
            // (seen at 4 CPUs: a new thread's first instruction fetch from
            // text another CPU had mapped): drop it and let the access run
            // again. Otherwise the fault was a protection violation the
            // checks above did not foresee.
            let grants =
                f & flags::USER != 0 && (!write || f & flags::WRITABLE != 0) && (!exec || f & flags::NO_EXECUTE == 0);
            if !grants {
                return Err(FaultError::Protection);
            }
            paging::flush_local(va);
            return Ok(Resolved {
                kind: a.region.kind,
                nvm: false,
                paged: false,
            });
        }
        if let Some(req) = a.region.page_request(index) {
            // Its file's page, if cached: no message, no I/O (a page cache
            // hit); mapped read-only, or copied now for a write.
            let Some(mut pa) = a.region.map_cached(index).filter(|&pa| pa != 0) else {
                return Err(FaultError::PageIn(req));
            };
            let mut f = a.pte_flags();
            let mut _cached = None;
            if write {
                (pa, _cached) = a.region.break_cow(index).map_err(|_| FaultError::OutOfMemory)?;
            } else if a.region.is_cow(index) {
                f &= !flags::WRITABLE;
            }
            let kind = a.region.kind;
            self.map_one(va, pa, f)?;
            return Ok(Resolved {
                kind,
                nvm: false,
                paged: false,
            });
        }
        let pa = a.region.populate(index).map_err(|_| FaultError::OutOfMemory)?;
        let mut f = a.pte_flags();
        if a.region.fork_shared(index) {
            f &= !flags::WRITABLE;
        }
        let (f, resolved) = (
            f,
            Resolved {
                kind: a.region.kind,
                nvm: a.region.borrowed(index).is_some(),
                paged: false,
            },
        );
        self.map_one(va, pa, f)?;
        Ok(resolved)
    }

    /// Gives the page at `addr` the frame `pa` its pager filled for `req`
    /// and maps it, if that page still wants it; else frees `pa` (another
    /// fault supplied it first, or the region went).
    pub fn supply(&mut self, addr: u64, pa: u64, req: &super::region::PageRequest) -> Result<Resolved, FaultError> {
        let root = self.root;
        let Some(a) = self.regions_mut().find(|a| addr >= a.base && addr < a.end()) else {
            super::region::PageFrame::free_raw(pa);
            return Err(FaultError::Unmapped);
        };
        let index = ((addr - a.base) / PAGE_SIZE) as usize;
        let va = a.base + index as u64 * PAGE_SIZE;
        let resolved = Resolved {
            kind: a.region.kind,
            nvm: false,
            paged: true,
        };
        let pa = match a.region.supply(index, pa, req) {
            Ok(pa) if pa != 0 => pa,
            Ok(_) => return Err(FaultError::OutOfMemory),
            Err(pa) => {
                super::region::PageFrame::free_raw(pa);
                return Ok(Resolved {
                    paged: false,
                    ..resolved
                });
            }
        };
        // The file's cached page: read-only until the region writes it.
        let mut f = a.pte_flags();
        if a.region.is_cow(index) {
            f &= !flags::WRITABLE;
        }
        let _ = root;
        self.map_one(va, pa, f)?;
        Ok(resolved)
    }

    /// The attachment holding `addr`.
    fn at_addr(&mut self, addr: u64) -> Option<&mut Attached> {
        self.regions_mut().find(|a| addr >= a.base && addr < a.end())
    }

    /// Maps user page `va` to `pa` with `f`, its tables charged.
    #[inline(always)]
    fn map_one(&mut self, va: u64, pa: u64, f: u64) -> Result<(), FaultError> {
        // Through the last leaf table found when `va` is in its 2 MiB (a
        // process touching its memory page after page faults there page
        // after page): no walk, and no table made, so none to pay for.
        if let Some(e) = self.entry(va) {
            // SAFETY: an entry of this space's tree, which lives as long
            // as the space (and `entry` forgets a table a block replaced).
            unsafe { e.set(pa, f) };
            return Ok(());
        }
        if !self.table_charge.has_room() {
            return Err(FaultError::OutOfMemory);
        }
        let t0 = paging::user_tables_made();
        let mapped = paging::remap(self.root, va, pa, f);
        self.settle(t0);
        mapped.map(|_| ()).map_err(|_| FaultError::OutOfMemory)
    }

    /// Maps the file's cached page at `addr`, read-only, if the page is
    /// its pager's to supply and its file's cache has it (no message):
    /// what the fault resolved, for the counters.
    pub fn map_cached(&mut self, addr: u64) -> Option<Resolved> {
        let a = self.at_addr(addr)?;
        let index = ((addr - a.base) / PAGE_SIZE) as usize;
        let va = a.base + index as u64 * PAGE_SIZE;
        let pa = a.region.map_cached(index).filter(|&pa| pa != 0)?;
        let mut f = a.pte_flags();
        if a.region.is_cow(index) {
            f &= !flags::WRITABLE;
        }
        let kind = a.region.kind;
        self.map_one(va, pa, f).ok()?;
        Some(Resolved {
            kind,
            nvm: false,
            paged: false,
        })
    }

    /// Whether some attachment's pages are a pager's to fill: one look at
    /// each region, nothing collected. (A count kept as regions come and
    /// go made each attach and detach dearer: an ICA's remap by 28
    /// instructions of 495.)
    pub fn has_paged(&self) -> bool {
        self.regions().any(|a| a.region.is_paged())
    }

    /// The pages of the space a pager has yet to supply, a few at a time,
    /// in `from..to`: (address, request) into `out`, and where to look
    /// next (`u64::MAX`: nowhere). A space with no such region costs one
    /// look at its regions (`has_paged`).
    pub fn pending_pages(
        &self,
        (from, to): (u64, u64),
        out: &mut Vec<(u64, super::region::PageRequest)>,
        max: usize,
    ) -> u64 {
        if !self.has_paged() {
            return u64::MAX;
        }
        let mut sorted: Vec<&Attached> = self
            .regions()
            .filter(|a| a.region.is_paged() && a.end() > from && a.base < to)
            .collect();
        sorted.sort_unstable_by_key(|a| a.base);
        for a in sorted {
            for i in 0..a.region.pages() {
                let va = a.base + i as u64 * PAGE_SIZE;
                if va + PAGE_SIZE <= from || va >= to {
                    continue;
                }
                if out.len() == max {
                    return va;
                }
                if let Some(req) = a.region.page_request(i) {
                    out.push((va, req));
                }
            }
        }
        u64::MAX
    }

    /// Prepares a reused space for a new process: writable regions get their
    /// initial content back (nothing of the previous process survives), and
    /// with `eager` every page of every region is made present and mapped.
    pub fn refresh(&mut self, eager: bool) -> Result<(), OutOfMemory> {
        let t0 = paging::user_tables_made();
        let done = self.refill(eager);
        self.settle(t0);
        done
    }

    fn refill(&mut self, eager: bool) -> Result<(), OutOfMemory> {
        let root = self.root;
        let cpus = self.active_cpus.load(Ordering::Acquire);
        for a in self.regions_mut() {
            if a.region.is_forked() {
                // The frames it shared with a fork go (refilled at their
                // next touch); those left are its own, writable again.
                a.region.reset();
                paging::remap_range(root, a.base, a.region.frames(), a.pte_flags()).map_err(|_| OutOfMemory)?;
                a.shoot_down(cpus);
            } else if a.region.writable {
                // Only the pages written since the last refill (their
                // entries' dirty bits; cleared now) need their bytes again.
                let base = a.base;
                let mut cleared = false;
                // The leaf table of the last 2 MiB looked at (0: none).
                let mut leaf = (u64::MAX, 0);
                a.region.reset_unwritten(|i, pa| {
                    let va = base + i as u64 * PAGE_SIZE;
                    if leaf.0 != va >> 21 {
                        leaf = (va >> 21, paging::Entry::leaf(root, va).unwrap_or(0));
                    }
                    if leaf.1 == 0 {
                        return true;
                    }
                    cleared = true;
                    // SAFETY: an entry of this space's tree, which lives as
                    // long as the space.
                    unsafe { paging::Entry::in_table(leaf.1, va).take_dirty(pa) }
                });
                if cleared && cpus != 0 {
                    a.shoot_down(cpus);
                }
                if a.region.is_paged() {
                    // The pages that went back to the file lose their
                    // translations (their frames are free).
                    for i in 0..a.region.pages() {
                        if a.region.frame(i).is_none() {
                            paging::unmap(root, a.base + i as u64 * PAGE_SIZE);
                        }
                    }
                    a.shoot_down(cpus);
                }
            }
            if eager && !a.region.is_whole() {
                let f = a.pte_flags();
                for i in 0..a.region.pages() {
                    // A pager's pages come after, from outside the lock.
                    if a.region.frame(i).is_none() && a.region.page_request(i).is_none() {
                        let pa = a.region.populate(i)?;
                        paging::remap(root, a.base + i as u64 * PAGE_SIZE, pa, f).map_err(|_| OutOfMemory)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The frame behind user address `addr`, made present if its region
    /// allows the access.
    fn frame_for(&mut self, addr: u64, write: bool) -> Result<u64, FaultError> {
        let page = addr & !(PAGE_SIZE - 1);
        // Through the last leaf table found (`entry`) when the page is in
        // its 2 MiB: a futex's word and a pipe reader's buffer are found
        // again on every call, and a walk of the four levels was half the
        // cost. Memory mapped in blocks has no leaf table: walked.
        let entry = self.entry(page);
        let mapped = match entry {
            // SAFETY: an entry of this space's tree, which lives as long
            // as the space (and `entry` forgets a table a block replaced).
            Some(e) => unsafe { e.mapping() },
            None => paging::translate(self.root, page),
        };
        match mapped {
            Some((pa, f))
                if f & flags::NO_CACHE == 0 && f & flags::USER != 0 && (!write || f & flags::WRITABLE != 0) =>
            {
                if write && let Some(e) = entry {
                    // The kernel writes the page through the direct map:
                    // its entry says so, as a user write's would
                    // (`Region::reset_unwritten`). Memory in blocks has no
                    // such entry, and is refilled whole.
                    // SAFETY: as above.
                    unsafe { e.mark_dirty() };
                }
                Ok(pa)
            }
            _ => {
                let pa = self.frame_for_access(page, mapped, write)?;
                if write && let Some(e) = self.entry(page) {
                    // SAFETY: as above.
                    unsafe { e.mark_dirty() };
                }
                Ok(pa)
            }
        }
    }

    /// `frame_for` of a page its entry does not let the access through
    /// as it is (`mapped`: what the entry maps): made present, or copied
    /// at a write, where its region allows.
    fn frame_for_access(&mut self, page: u64, mapped: Option<(u64, u64)>, write: bool) -> Result<u64, FaultError> {
        match mapped {
            // A device's registers (mapped uncached) are not memory the
            // kernel copies to or from: they are outside the direct map, and
            // reading one may have effects.
            Some((_, f)) if f & flags::NO_CACHE != 0 => Err(FaultError::Protection),
            Some((pa, f)) if f & flags::USER != 0 && (!write || f & flags::WRITABLE != 0) => Ok(pa),
            // Perhaps its file's cached page, copied at its first write.
            Some((_, f)) if f & flags::USER != 0 && write => {
                self.resolve_fault(page, true, false)?;
                match paging::translate(self.root, page) {
                    Some((pa, f)) if f & flags::WRITABLE != 0 => Ok(pa),
                    _ => Err(FaultError::Protection),
                }
            }
            Some(_) => Err(FaultError::Protection),
            None => {
                self.resolve_fault(page, write, false)?;
                paging::translate(self.root, page)
                    .map(|(pa, _)| pa)
                    .ok_or(FaultError::Unmapped)
            }
        }
    }

    /// Copies `len` bytes at `src_addr` of `src` to `dst_addr` of `dst`,
    /// page piece by page piece through the direct map: one copy, with no
    /// buffer between (the rendezvous's data crossing, seed 003). A page not
    /// yet present is made present, as a fault would.
    pub fn copy_between(
        src: &mut VirtualSpace,
        src_addr: u64,
        dst: &mut VirtualSpace,
        dst_addr: u64,
        len: usize,
    ) -> Result<(), FaultError> {
        let mut done = 0;
        while done < len {
            let (s, d) = (src_addr + done as u64, dst_addr + done as u64);
            let (s_off, d_off) = ((s % PAGE_SIZE) as usize, (d % PAGE_SIZE) as usize);
            let n = (PAGE_SIZE as usize - s_off.max(d_off)).min(len - done);
            let from = src.frame_for(s, false)?;
            let to = dst.frame_for(d, true)?;
            // SAFETY: frames of the two spaces (locked by the caller, so they
            // stay), reached through the direct map; the piece stays inside
            // both pages, and two spaces never share a writable frame with a
            // readable one at once except through SHARE, where a copy between
            // them is still a copy between valid bytes.
            unsafe {
                core::ptr::copy(
                    (phys_to_virt(from) + s_off as u64) as *const u8,
                    (phys_to_virt(to) + d_off as u64) as *mut u8,
                    n,
                )
            };
            done += n;
        }
        Ok(())
    }

    /// The physical address behind user address `addr`, its page faulted
    /// in as a read would: how a word shared between spaces is known (a
    /// futex on MAP_SHARED memory).
    pub fn physical(&mut self, addr: u64) -> Result<u64, FaultError> {
        Ok(self.frame_for(addr, false)? + addr % PAGE_SIZE)
    }

    /// Makes every page of `len` bytes at `addr` present (and writable, with
    /// `write`), as faults would, or says why one cannot be: what a copy
    /// checks before it changes anything.
    pub fn prepare(&mut self, addr: u64, len: usize, write: bool) -> Result<(), FaultError> {
        let end = addr.checked_add(len as u64).ok_or(FaultError::Unmapped)?;
        let mut page = addr & !(PAGE_SIZE - 1);
        while page < end {
            self.frame_for(page, write)?;
            page += PAGE_SIZE;
        }
        Ok(())
    }

    /// Reads user memory of this space (from another process's context).
    pub fn copy_out(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), FaultError> {
        self.by_page(addr, buf.len(), false, |at, done, n| {
            // SAFETY: a frame of this space, reached through the direct map;
            // the copy stays inside its page.
            unsafe { core::ptr::copy_nonoverlapping(at as *const u8, buf[done..].as_mut_ptr(), n) };
        })
    }

    /// Writes user memory of this space (from another process's context).
    pub fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), FaultError> {
        self.by_page(addr, data.len(), true, |at, done, n| {
            // SAFETY: as in copy_out, for writing.
            unsafe { core::ptr::copy_nonoverlapping(data[done..].as_ptr(), at as *mut u8, n) };
        })
    }

    /// Goes through `len` bytes of this space's memory from `addr`, a page
    /// at a time, faulting each page in (for writing if `write`): `f` gets
    /// the kernel's address of each piece (through the direct map), where
    /// it starts in the whole, and its length.
    fn by_page(
        &mut self,
        addr: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(u64, usize, usize),
    ) -> Result<(), FaultError> {
        let mut done = 0;
        while done < len {
            let at = addr + done as u64;
            let off = at % PAGE_SIZE;
            let n = (PAGE_SIZE - off).min((len - done) as u64) as usize;
            let pa = self.frame_for(at, write)?;
            f(phys_to_virt(pa) + off, done, n);
            done += n;
        }
        Ok(())
    }

    /// Lowest free address of at least `len` bytes at or above `from`.
    /// Usually `from` is the top of what was placed so far, below every
    /// region of the anonymous area and above none: the bounds alone say
    /// so (inlined: the check is shorter than a call).
    #[inline(always)]
    pub fn find_free(&mut self, from: u64, len: u64) -> Option<u64> {
        if let Some(end) = from.checked_add(len)
            && self.within_bounds(from, end)
        {
            return Some(from);
        }
        self.find_free_slow(from, len)
    }

    #[cold]
    #[inline(never)]
    fn find_free_slow(&mut self, from: u64, len: u64) -> Option<u64> {
        let limit = ANON_LIMIT;
        let end = from.checked_add(len)?;
        if end <= limit && self.is_free(from, end) {
            return Some(from);
        }
        let mut at = from;
        let mut sorted: Vec<(u64, u64)> = self.regions().map(|a| (a.base, a.end())).collect();
        sorted.sort_unstable();
        for (b, e) in sorted {
            if e <= at {
                continue;
            }
            if b >= at + len {
                break;
            }
            at = e;
        }
        (at.checked_add(len)? <= limit).then_some(at)
    }

    pub fn resident_pages(&self) -> usize {
        self.regions().map(|a| a.region.resident_pages()).sum()
    }
}

impl Drop for VirtualSpace {
    fn drop(&mut self) {
        // Regions free their own frames; here go the page-table frames of the
        // user half. The caller has made sure no CPU runs on this tree.
        if self.spans_lost {
            free_tables(self.root, 3);
        } else {
            walk_spans(self.root, 3, 0, &self.spans, &mut |t| frames::free(t, 1));
        }
        frames::free(self.root, 1);
    }
}

/// Exchanges the frames of attachments `x` and `y` (whose entries the
/// caller then rewrites).
fn exchange_frames(x: &mut Attached, y: &mut Attached) -> Result<(), SpaceError> {
    x.region
        .exchange_frames(&mut y.region)
        .map_err(|_| SpaceError::BadRange)
}

/// Rewrites the page-table entries of attachment `a` of the space with
/// tree `root` (whose last leaf table found is `leaf`) after its frames
/// changed, and drops the stale translations from the CPUs in `cpus`.
/// Memory in blocks is rewritten one entry per block: what makes an
/// exchange of 2 MiB cost what one of 4 KiB does.
#[inline(always)]
fn rewrite(root: u64, cpus: &AtomicU64, leaf: &mut (u64, u64), a: &mut Attached) -> Result<(), SpaceError> {
    a.region.taint();
    if let [pa] = *a.region.frames() {
        if a.entry.is_none() {
            a.entry = paging::Entry::of(root, a.base);
        }
        match a.entry {
            // SAFETY: the entry was found in this space's tree, which
            // lives as long as the space (tables go only with it).
            Some(e) => unsafe { e.set(pa, a.pte_flags()) },
            None => paging::remap_range(root, a.base, a.region.frames(), a.pte_flags())?,
        }
    } else if a.blocks || a.wants_blocks() {
        return rewrite_blocks(root, cpus.load(Ordering::Acquire), leaf, a);
    } else {
        paging::remap_range(root, a.base, a.region.frames(), a.pte_flags())?;
    }
    tlb::shootdown_cpus(a.base, a.region.pages() as u64, cpus.load(Ordering::Acquire));
    Ok(())
}

/// `rewrite` for memory mapped in blocks before or after.
#[inline(never)]
fn rewrite_blocks(root: u64, cpus: u64, leaf: &mut (u64, u64), a: &mut Attached) -> Result<(), SpaceError> {
    // The translations to drop are those of the old mapping: per block if
    // it was one entry per block, else per page (which drops block
    // translations as well: a range of blocks is more pages than a
    // shootdown goes through one by one).
    let was_blocks = a.blocks;
    let r = if a.wants_blocks() {
        map_blocks(root, cpus, leaf, a)
    } else {
        map_pages(root, a)
    };
    if was_blocks && a.blocks {
        a.shoot_down(cpus);
    } else {
        tlb::shootdown_cpus(a.base, a.region.pages() as u64, cpus);
    }
    r
}

/// Maps attachment `a`, just placed at its address in the tree at `root`
/// (`cpus`, `leaf`: that space's), one entry per block or per page.
fn map_anew(root: u64, cpus: u64, leaf: &mut (u64, u64), a: &mut Attached) -> Result<(), SpaceError> {
    a.region.taint();
    if a.wants_blocks() {
        map_blocks(root, cpus, leaf, a)
    } else {
        a.blocks = false;
        paging::remap_range(root, a.base, a.region.frames(), a.pte_flags()).map_err(Into::into)
    }
}

/// Maps `a`, whose frames are in blocks, one page-directory entry per
/// block, replacing whatever mapped its range. A page table an entry
/// replaces (the range was mapped page by page) goes once the CPUs of
/// `cpus` have dropped the translations through it; `leaf` (the space's
/// last leaf table found) forgets it. Fails only for want of a table
/// above the directory, which an attached range has.
fn map_blocks(root: u64, cpus: u64, leaf: &mut (u64, u64), a: &mut Attached) -> Result<(), SpaceError> {
    a.region.taint();
    let flags = a.pte_flags();
    for (k, block) in a.region.frames().chunks_exact(BLOCK_PAGES).enumerate() {
        let va = a.base + k as u64 * BLOCK_SIZE;
        if let Some(table) = paging::set_block(root, va, block[0], flags)? {
            tlb::shootdown_cpus(va, BLOCK_PAGES as u64, cpus);
            if leaf.0 == va >> 21 {
                *leaf = (u64::MAX, 0);
            }
            frames::free(table, 1);
        }
    }
    a.blocks = true;
    Ok(())
}

/// Maps `a` one entry per page, replacing whatever mapped its range; a
/// block mapped by one entry gets a page table first. Fails for want of
/// memory for such a table: the block is then unmapped, and the caller
/// maps `a` again as it was (`undo_exchange`), which needs no memory.
fn map_pages(root: u64, a: &mut Attached) -> Result<(), SpaceError> {
    a.region.taint();
    if a.blocks {
        for k in 0..a.region.pages() / BLOCK_PAGES {
            let va = a.base + k as u64 * BLOCK_SIZE;
            if paging::is_block(root, va) {
                let table = frames::alloc_zeroed(1)?;
                paging::split_block(root, va, table);
            }
        }
        a.blocks = false;
    }
    paging::remap_range(root, a.base, a.region.frames(), a.pte_flags())?;
    Ok(())
}

/// Gives attachment `a` its own pages back from `other` after a failed
/// rewrite, and maps them as they were mapped before the exchange.
#[cold]
fn undo_exchange(root: u64, cpus: &AtomicU64, leaf: &mut (u64, u64), a: &mut Attached, other: &mut Region) {
    if a.region.exchange_frames(other).is_ok() {
        let _ = rewrite(root, cpus, leaf, a);
    }
}

fn count_tables(table: u64, level: u32) -> usize {
    let entries = phys_to_virt(table) as *const u64;
    let limit = if level == 3 { 256 } else { 512 };
    let mut n = 0;
    for i in 0..limit {
        // SAFETY: `table` is a page-table frame of this space.
        let e = unsafe { entries.add(i).read() };
        if e & flags::PRESENT != 0 && e & flags::HUGE == 0 {
            n += 1;
            if level > 1 {
                n += count_tables(e & 0x000f_ffff_ffff_f000, level - 1);
            }
        }
    }
    n
}

/// Calls `f` with every table below `table` (at `level`: 3 the root, 1 a
/// page directory) on the way to the ranges of `spans` (2 MiB units,
/// sorted and apart), once each, children before their parent; `first` is
/// the 2 MiB unit `table` begins at. Each range is met in order, so a
/// table two ranges reach (one page directory, say) is met once: an
/// entry is taken only past the last one taken.
fn walk_spans(table: u64, level: u32, first: u64, spans: &[(u64, u64)], f: &mut impl FnMut(u64)) {
    let entries = phys_to_virt(table) as *const u64;
    // Units of 2 MiB an entry at this level maps: 512^(level - 1).
    let shift = 9 * (level - 1);
    let limit = if level == 3 { 256 } else { 512 };
    let mut next = 0;
    for &(lo, hi) in spans {
        let end = first + ((limit as u64) << shift);
        if hi <= first || lo >= end {
            continue;
        }
        let from = ((lo.max(first) - first) >> shift) as usize;
        let to = ((hi.min(end) - 1 - first) >> shift) as usize;
        for i in from.max(next)..=to {
            // SAFETY: `table` is a page-table frame of this space, `i` an
            // index below its 512 entries.
            let e = unsafe { entries.add(i).read() };
            if e & flags::PRESENT == 0 || e & flags::HUGE != 0 {
                continue;
            }
            let t = e & 0x000f_ffff_ffff_f000;
            if level > 1 {
                walk_spans(t, level - 1, first + ((i as u64) << shift), spans, f);
            }
            f(t);
        }
        next = next.max(to + 1);
    }
}

/// Frees the user half's intermediate tables below `table` (not the leaves'
/// frames, which belong to regions).
fn free_tables(table: u64, level: u32) {
    let groups = phys_to_virt(table) as *const [u64; 8];
    let limit = if level == 3 { 256 } else { 512 };
    for g in 0..limit / 8 {
        // SAFETY: `table` is a page-table frame of this space.
        let group = unsafe { groups.add(g).read() };
        // A process's tables are nearly empty (a few regions in 256 TiB):
        // eight entries are looked at with one test, and skipped together.
        if group.iter().fold(0, |any, e| any | e) & flags::PRESENT == 0 {
            continue;
        }
        for e in group {
            if e & flags::PRESENT == 0 || e & flags::HUGE != 0 {
                continue;
            }
            let next = e & 0x000f_ffff_ffff_f000;
            if level > 1 {
                free_tables(next, level - 1);
            }
            frames::free(next, 1);
        }
    }
}
