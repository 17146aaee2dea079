//! A fork's copy of a space, copy-on-write (`VirtualSpace::fork_region`):
//! frames shared read-only until a write, counted so that each is freed
//! once, by its last holder, whatever order the holders go in (a chain of
//! forks, a parent ended before its child, a reuse by the pool), and a
//! fault that finds no memory is an error, not a panic.

use alloc::string::String;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::frames;
use kcore::mm::layout::PAGE_SIZE;
use kcore::mm::paging::{self, flags};
use kcore::vm::region::{Backing, Kind, Region};
use kcore::vm::space::{FaultError, VirtualSpace};
use kcore::vm::{STACK_GUARD_GAP, USER_STACK_SIZE, USER_STACK_TOP};
use restable::ResId;

const BASE: u64 = 0x4000_0000;
const PAGES: usize = 4;

fn link() -> ResId {
    ResId::new(1, 1, 1)
}

/// The frame behind `va` in `s`, the first word of its page (as the
/// region holds it) and whether the entry is writable.
fn word(s: &VirtualSpace, va: u64) -> Result<(u64, u64, bool), String> {
    let (pa, f) = paging::translate(s.root(), va).ok_or("page not mapped")?;
    let a = s.region_at(va).ok_or("no region")?;
    let mut w = [0u8; 8];
    ensure!(a.region.read_at((va - a.base) as usize, &mut w), "page not present");
    Ok((pa, u64::from_le_bytes(w), f & flags::WRITABLE != 0))
}

/// Writes `v` as the first word of the page `va` maps in `s` (writable:
/// the space's own frame).
fn put(s: &mut VirtualSpace, va: u64, v: u64) -> TestResult {
    let (_, _, writable) = word(s, va)?;
    ensure!(writable, "writing through a read-only entry");
    let a = s.attachment_mut(link(), 0).ok_or("no attachment")?;
    let at = (va - a.base) as usize;
    ensure!(a.region.write_at(at, &v.to_le_bytes()), "page not present");
    Ok(())
}

/// A space with a 4-page private region at `BASE`, page i holding i + 1.
fn parent() -> Result<VirtualSpace, String> {
    let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    let mut r = Region::new(Kind::Heap, PAGES, Backing::Zero, true, false).map_err(|_| "no memory")?;
    r.populate_all().map_err(|_| "no memory")?;
    for i in 0..PAGES {
        ensure!(
            r.write_at(i * PAGE_SIZE as usize, &(i as u64 + 1).to_le_bytes()),
            "write_at"
        );
    }
    s.attach(BASE, r, ResId::new(2, 1, 1), link())
        .map_err(|_| "attach failed")?;
    Ok(s)
}

/// `space`'s fork: a new space with its copy of the region.
fn fork(space: &mut VirtualSpace) -> Result<VirtualSpace, String> {
    let copy = space
        .fork_region(link())
        .ok_or("region not forkable")?
        .map_err(|_| "no memory to fork")?;
    let mut child = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    child
        .attach(BASE, copy, ResId::new(2, 1, 1), link())
        .map_err(|_| "attach failed")?;
    Ok(child)
}

/// `f`'s result while every free frame is taken, and all given back
/// after it.
fn without_free_frames<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let mut taken = alloc::vec::Vec::new();
    taken
        .try_reserve(frames::stats().free)
        .map_err(|_| "no heap for the list")?;
    while let Ok(pa) = frames::alloc(1) {
        taken.push(pa);
    }
    let r = f();
    for pa in taken {
        frames::free(pa, 1);
    }
    Ok(r)
}

fn va(i: usize) -> u64 {
    BASE + i as u64 * PAGE_SIZE
}

/// A chain of three holders, each writing, the middle one going first.
fn chain() -> TestResult {
    let mut p = parent()?;
    let (pa0, _, _) = word(&p, va(0))?;
    let mut c = fork(&mut p)?;
    for (name, s) in [("parent", &p), ("child", &c)] {
        let (pa, w, writable) = word(s, va(0))?;
        ensure!(
            pa == pa0 && w == 1 && !writable,
            "{name} after fork: frame {pa:#x} (was {pa0:#x}), word {w}, writable {writable}"
        );
    }
    // The parent writes: a copy of its own, the child keeps the frame.
    p.resolve_fault(va(0), true, false)
        .map_err(|_| "parent's write fault")?;
    put(&mut p, va(0), 100)?;
    let (ppa, pw, _) = word(&p, va(0))?;
    let (cpa, cw, _) = word(&c, va(0))?;
    ensure!(ppa != pa0 && pw == 100, "parent's copy: {ppa:#x} holds {pw}");
    ensure!(
        cpa == pa0 && cw == 1,
        "child sees {cw} in {cpa:#x} after the parent's write"
    );
    // The child, now the frame's only holder, writes in place.
    c.resolve_fault(va(0), true, false).map_err(|_| "child's write fault")?;
    let (cpa, _, writable) = word(&c, va(0))?;
    ensure!(cpa == pa0 && writable, "child's lone frame copied or not writable");
    // The child forks in turn; then it ends first (killed mid-chain).
    let mut g = fork(&mut c)?;
    drop(c);
    // Page 1 is still the parent's and the grandchild's: both copy or
    // keep it, each seeing 2.
    g.resolve_fault(va(1), true, false)
        .map_err(|_| "grandchild's write fault")?;
    put(&mut g, va(1), 201)?;
    p.resolve_fault(va(1), true, false)
        .map_err(|_| "parent's second write")?;
    let (_, pw1, _) = word(&p, va(1))?;
    let (_, gw1, _) = word(&g, va(1))?;
    ensure!(pw1 == 2 && gw1 == 201, "page 1: parent {pw1}, grandchild {gw1}");
    let (_, gw0, _) = word(&g, va(0))?;
    ensure!(gw0 == 1, "grandchild's page 0 holds {gw0}, not the child's 1");
    // A read fault after an unmap (mprotect's way) maps a shared page
    // read-only again.
    paging::unmap_range(g.root(), va(2), 1);
    paging::flush_local(va(2));
    g.resolve_fault(va(2), false, false)
        .map_err(|_| "grandchild's read fault")?;
    let (_, gw2, writable) = word(&g, va(2))?;
    ensure!(
        gw2 == 3 && !writable,
        "page 2 after a read fault: {gw2}, writable {writable}"
    );
    drop(p);
    drop(g);
    Ok(())
}

pub fn fork_shares_frames_until_written() -> TestResult {
    // Once for the heap to reach its size, then counted.
    chain()?;
    let before = frames::stats();
    chain()?;
    ensure!(
        frames::stats() == before,
        "frames not back after a chain of forks: {} free, were {}",
        frames::stats().free,
        before.free
    );
    Ok(())
}

/// A region that cannot be forked copy-on-write is left to the caller;
/// a forked one refuses to be shared or exchanged (which would hand its
/// frames to a third holder behind the count's back).
pub fn fork_refuses_what_it_cannot_share() -> TestResult {
    let mut shared = Region::new(Kind::Heap, 2, Backing::Zero, true, false).map_err(|_| "no memory")?;
    shared.fork_shares = true;
    ensure!(!shared.forkable(), "a MAP_SHARED region is forkable");
    let text = Region::new(Kind::Text, 2, Backing::Zero, false, true).map_err(|_| "no memory")?;
    ensure!(!text.forkable(), "text is forkable");
    let mut p = parent()?;
    let mut c = fork(&mut p)?;
    let Some(mut other) = Region::new(Kind::Heap, PAGES, Backing::Zero, true, false).ok() else {
        return Err("no memory".into());
    };
    ensure!(
        c.exchange_with(link(), 0, &mut other).is_err(),
        "a forked region exchanged its frames"
    );
    drop(other);
    // The parent goes before the child ever runs (ended mid-fork): the
    // child's pages are all its own now.
    drop(p);
    for i in 0..PAGES {
        c.resolve_fault(va(i), true, false).map_err(|_| "write fault")?;
        let (_, w, _) = word(&c, va(i))?;
        ensure!(w == i as u64 + 1, "page {i} holds {w} after the parent went");
    }
    Ok(())
}

/// A write fault with no memory for the copy fails (the process is then
/// ended with a message), and changes nothing; with memory back it works.
pub fn fork_fault_without_memory_is_an_error() -> TestResult {
    let mut p = parent()?;
    let c = fork(&mut p)?;
    let r = without_free_frames(|| p.resolve_fault(va(3), true, false))?;
    ensure!(r == Err(FaultError::OutOfMemory), "write fault with no memory: {r:?}");
    let (_, w, writable) = word(&p, va(3))?;
    ensure!(w == 4 && !writable, "page changed by a failed fault");
    p.resolve_fault(va(3), true, false)
        .map_err(|_| "fault with memory back")?;
    put(&mut p, va(3), 400)?;
    let (_, cw, _) = word(&c, va(3))?;
    ensure!(cw == 4, "child sees {cw} after the parent's write");
    Ok(())
}

/// A pooled space's refresh (its process ended) lets go of the frames it
/// shares with a fork instead of refilling them under the other's feet.
pub fn fork_survives_a_refresh() -> TestResult {
    let mut p = parent()?;
    let c = fork(&mut p)?;
    p.refresh(false).map_err(|_| "refresh failed")?;
    for i in 0..PAGES {
        let (_, w, _) = word(&c, va(i))?;
        ensure!(
            w == i as u64 + 1,
            "child's page {i} holds {w} after the parent's refresh"
        );
    }
    p.resolve_fault(va(0), true, false).map_err(|_| "write after refresh")?;
    let (_, w, writable) = word(&p, va(0))?;
    ensure!(w == 0 && writable, "refreshed page holds {w}, writable {writable}");
    Ok(())
}

/// A refresh refills only the pages written since the last one: each
/// way of writing says so, through the page's entry (the kernel's copy
/// sets its dirty bit as the processor would) or by marking the region
/// (a write through the region, an entry dropped by mprotect and made
/// again by a fault without its bit), so no write survives the reuse.
pub fn refresh_refills_every_written_page() -> TestResult {
    let mut s = parent()?;
    let dirty =
        |s: &VirtualSpace, i: usize| paging::translate(s.root(), va(i)).is_some_and(|(_, f)| f & flags::DIRTY != 0);
    let zero = |s: &VirtualSpace, round: u32| -> TestResult {
        for i in 0..PAGES {
            let (_, w, _) = word(s, va(i))?;
            ensure!(w == 0, "round {round}: page {i} holds {w} after the refresh");
            ensure!(!dirty(s, i), "round {round}: page {i}'s entry still says dirty");
        }
        Ok(())
    };
    // The first refresh trusts nothing (the region was just attached).
    s.refresh(true).map_err(|_| "refresh failed")?;
    zero(&s, 1)?;
    s.copy_in(va(1), &11u64.to_le_bytes()).map_err(|_| "copy_in")?;
    ensure!(dirty(&s, 1) && !dirty(&s, 2), "the kernel's write left no mark");
    s.refresh(true).map_err(|_| "refresh failed")?;
    zero(&s, 2)?;
    // mprotect drops the entries; the faults make them anew, clean.
    s.copy_in(va(2), &22u64.to_le_bytes()).map_err(|_| "copy_in")?;
    s.protect(BASE, va(PAGES), true, false, false);
    for i in 0..PAGES {
        s.resolve_fault(va(i), false, false)
            .map_err(|_| "fault after mprotect")?;
    }
    ensure!(!dirty(&s, 2), "the fault's new entry has its dirty bit");
    s.refresh(true).map_err(|_| "refresh failed")?;
    zero(&s, 3)?;
    put(&mut s, va(3), 33)?;
    s.refresh(true).map_err(|_| "refresh failed")?;
    zero(&s, 4)
}

/// mremap's hand-over (`Region::move_pages_from`): the frames change
/// hands, bytes and all; a range past either end (or overflowing) and a
/// present target page are refused with nothing moved. MADV_DONTNEED's
/// `discard` of a page a fork shares lets go of this region's hold only,
/// so the other holder keeps its bytes. Every frame comes back at the end.
pub fn regions_hand_pages_over() -> TestResult {
    let free = frames::stats().free;
    {
        let page = PAGE_SIZE as usize;
        let mut from = Region::new(Kind::Heap, PAGES, Backing::Zero, true, false).map_err(|_| "no memory")?;
        from.populate_all().map_err(|_| "no memory")?;
        for i in 0..PAGES {
            ensure!(from.write_at(i * page, &(i as u64 + 10).to_le_bytes()), "write_at");
        }
        let before: alloc::vec::Vec<u64> = from.frames().to_vec();
        let mut to = Region::new(Kind::Heap, PAGES + 2, Backing::Zero, true, false).map_err(|_| "no memory")?;
        ensure!(
            !to.move_pages_from(&mut from, 3, 0, 2),
            "a range past the source's end moved"
        );
        ensure!(
            !to.move_pages_from(&mut from, 0, PAGES + 1, 2),
            "a range past the target's end moved"
        );
        ensure!(
            !to.move_pages_from(&mut from, usize::MAX, 0, 2),
            "an overflowing range moved"
        );
        ensure!(from.frames() == &before[..], "a refused move changed the source");
        ensure!(to.move_pages_from(&mut from, 1, 0, 2), "the move was refused");
        ensure!(
            to.frame(0) == Some(before[1]) && to.frame(1) == Some(before[2]),
            "the frames did not change hands"
        );
        ensure!(
            from.frame(1).is_none() && from.frame(2).is_none(),
            "the source kept them"
        );
        let mut w = [0u8; 8];
        ensure!(
            to.read_at(page, &mut w) && u64::from_le_bytes(w) == 12,
            "the bytes did not move"
        );
        to.populate(2).map_err(|_| "no memory")?;
        ensure!(!to.move_pages_from(&mut from, 0, 2, 1), "moved onto a present page");
        ensure!(from.frame(0) == Some(before[0]), "a refused move took a frame");

        let child = from.fork_copy().map_err(|_| "no memory")?;
        from.discard(0);
        ensure!(from.frame(0).is_none(), "the discarded page is still present");
        ensure!(
            child.read_at(0, &mut w) && u64::from_le_bytes(w) == 10,
            "the fork's page lost its bytes"
        );
        to.discard(1);
        ensure!(to.frame(1).is_none(), "a moved page was not discarded");
        drop(child);
    }
    let after = frames::stats().free;
    ensure!(after == free, "frames leaked: {} free before, {} after", free, after);
    Ok(())
}

/// A space with a Linux program's stack as spawn composes it (16 pages at
/// the top) that may grow down to `limit` bytes below the top.
fn stack_space(limit: u64) -> Result<VirtualSpace, String> {
    let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    let pages = (USER_STACK_SIZE / PAGE_SIZE) as usize;
    let r = Region::new(Kind::Stack, pages, Backing::Zero, true, false).map_err(|_| "no memory")?;
    s.attach(USER_STACK_TOP - USER_STACK_SIZE, r, ResId::new(2, 1, 1), link())
        .map_err(|_| "attach failed")?;
    s.set_stack_floor(USER_STACK_TOP - limit);
    Ok(s)
}

/// Where the stack region begins now, and its pages.
fn stack_extent(s: &VirtualSpace) -> Result<(u64, usize), String> {
    let a = s.region_at(USER_STACK_TOP - PAGE_SIZE).ok_or("no stack region")?;
    ensure!(a.end() == USER_STACK_TOP, "stack region ends at {:#x}", a.end());
    Ok((a.base, a.region.pages()))
}

/// A Linux program's stack grows at faults below it down to its limit and
/// no further; a mapping under it (MAP_FIXED) stops it a guard gap above;
/// a fork copies it grown, and the copy grows on its own; no memory for
/// the growth is an error, not a panic; the end gives it back its size.
pub fn fork_of_a_grown_stack_and_its_limits() -> TestResult {
    const MIB: u64 = 1 << 20;
    let top = USER_STACK_TOP;
    let small = (USER_STACK_SIZE / PAGE_SIZE) as usize;
    let mut p = stack_space(8 * MIB)?;
    // Past the limit, and far below it: nothing changes.
    for addr in [top - 8 * MIB - 1, top - 8 * MIB - PAGE_SIZE, 0x1000, top - 64 * MIB] {
        let r = p.resolve_fault(addr, true, false);
        ensure!(r.is_err(), "fault at {addr:#x} past the limit: {r:?}");
    }
    ensure!(
        stack_extent(&p)? == (top - USER_STACK_SIZE, small),
        "grew on a refused fault"
    );
    // A fault 1 MiB down grows it there (at least doubling it).
    p.resolve_fault(top - MIB, true, false)
        .map_err(|_| "fault 1 MiB down")?;
    let (base, pages) = stack_extent(&p)?;
    ensure!(
        base <= top - MIB && base >= top - 8 * MIB && pages as u64 * PAGE_SIZE == top - base,
        "grown to {base:#x}, {pages} pages"
    );
    // At the limit exactly: the lowest page.
    p.resolve_fault(top - 8 * MIB, true, false)
        .map_err(|_| "fault at the limit")?;
    ensure!(stack_extent(&p)?.0 == top - 8 * MIB, "not grown to the limit");
    let deep = top - 3 * MIB;
    p.resolve_fault(deep, true, false).map_err(|_| "fault 3 MiB down")?;
    {
        let a = p.attachment_mut(link(), 0).ok_or("no attachment")?;
        let at = (deep - a.base) as usize;
        ensure!(a.region.write_at(at, &77u64.to_le_bytes()), "deep page not present");
    }
    // A fork while grown: the copy has the parent's bytes where they were
    // and grows on its own.
    let copy = p
        .fork_region(link())
        .ok_or("stack not forkable")?
        .map_err(|_| "no memory to fork")?;
    let mut c = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    c.attach(top - 8 * MIB, copy, ResId::new(2, 1, 1), link())
        .map_err(|_| "attach of the copy failed")?;
    c.set_stack_floor(p.stack_floor());
    let (_, w, writable) = word(&c, deep)?;
    ensure!(w == 77 && !writable, "child reads {w} (writable {writable})");
    c.resolve_fault(deep, true, false).map_err(|_| "child's write")?;
    put(&mut c, deep, 78)?;
    ensure!(word(&p, deep)?.1 == 77, "the parent's byte changed");
    // Shrunk back (the end of the process): the pages it grew over go.
    ensure!(p.shrink_stack(small), "shrink failed");
    ensure!(stack_extent(&p)? == (top - USER_STACK_SIZE, small), "not shrunk");
    ensure!(
        paging::translate(p.root(), deep).is_none(),
        "a page it grew over stays mapped"
    );
    ensure!(word(&c, deep)?.1 == 78, "the child's byte went with the parent's");
    drop(c);

    // A mapping placed right under where the stack grows (MAP_FIXED): the
    // stack stops a guard gap above it.
    let mut s = stack_space(8 * MIB)?;
    let fixed = top - 4 * MIB;
    let r = Region::new(Kind::Heap, 1, Backing::Zero, true, false).map_err(|_| "no memory")?;
    s.attach(fixed, r, ResId::new(3, 1, 1), ResId::new(3, 1, 1))
        .map_err(|_| "attach under the stack failed")?;
    let gap_top = fixed + PAGE_SIZE + STACK_GUARD_GAP;
    let r = s.resolve_fault(gap_top - PAGE_SIZE, true, false);
    ensure!(r == Err(FaultError::StackOverflow), "fault in the guard gap: {r:?}");
    let r = s.resolve_fault(fixed - PAGE_SIZE, true, false);
    ensure!(r.is_err(), "fault under the mapping: {r:?}");
    s.resolve_fault(gap_top, true, false)
        .map_err(|_| "fault above the gap")?;
    ensure!(stack_extent(&s)?.0 == gap_top, "grown to {:#x}", stack_extent(&s)?.0);
    // A mapping right against the stack: it cannot grow at all.
    let mut t = stack_space(8 * MIB)?;
    let r = Region::new(Kind::Heap, 1, Backing::Zero, true, false).map_err(|_| "no memory")?;
    t.attach(
        top - USER_STACK_SIZE - PAGE_SIZE,
        r,
        ResId::new(3, 1, 1),
        ResId::new(3, 1, 1),
    )
    .map_err(|_| "attach against the stack failed")?;
    let r = t.resolve_fault(top - USER_STACK_SIZE - 2 * PAGE_SIZE, true, false);
    ensure!(r.is_err(), "fault under a mapping against the stack: {r:?}");
    // A native program's stack (no floor) never grows.
    let mut n = stack_space(8 * MIB)?;
    n.set_stack_floor(0);
    let r = n.resolve_fault(top - MIB, true, false);
    ensure!(
        r.is_err() && stack_extent(&n)?.1 == small,
        "a stack without a floor grew: {r:?}"
    );

    // No memory for the growth or its page: an error, and with memory
    // back the same fault works.
    let mut g = stack_space(8 * MIB)?;
    let r = without_free_frames(|| g.resolve_fault(top - 2 * MIB, true, false))?;
    ensure!(r == Err(FaultError::OutOfMemory), "growth with no memory: {r:?}");
    g.resolve_fault(top - 2 * MIB, true, false)
        .map_err(|_| "growth with memory back")?;
    Ok(())
}

/// Where the kept-copy test writes in a sleeper's memory: inside its top
/// stack page, below its arguments.
const AT: u64 = USER_STACK_TOP - 4096 + 512;

fn read_of(pid: u64) -> Result<[u8; 64], abi::Error> {
    let mut b = [0u8; 64];
    ipc::process::read_user_of(pid, kcore::uaccess::UserRange::new(AT, 64)?, &mut b).map(|()| b)
}

fn write_of(pid: u64, bytes: &[u8; 64]) -> Result<(), String> {
    super::ok(ipc::process::write_user_of(
        pid,
        super::ok(kcore::uaccess::UserRange::new(AT, 64))?,
        bytes,
    ))
}

/// A fork of `parent` (calls to `sup`) that faults at once and waits for
/// ever in the call that takes its fault to `sup`, until killed; and the
/// space it got.
fn forked(parent: u64, sup: u64) -> Result<(u64, ResId), String> {
    let p = ipc::process::get(parent).ok_or("parent gone")?;
    let regs = abi::linux::Regs {
        rip: 0x1000,
        rsp: USER_STACK_TOP - 2048,
        rflags: 0x202,
        ..abi::linux::Regs::default()
    };
    let child = super::ok(resource::proc::spawn::fork(&p, regs, sup, 4242, 0))?;
    let space = ipc::process::get(child).ok_or("child gone")?.space_id();
    Ok((child, space))
}

fn end_forked(child: u64, sup: u64) -> Result<u64, String> {
    let _ = ipc::process::kill(child);
    super::ok(ipc::process::wait(sup, child))
}

fn kept_round() -> TestResult {
    let (one, two, three): ([u8; 64], [u8; 64], [u8; 64]) = (
        core::array::from_fn(|i| i as u8),
        core::array::from_fn(|i| !(i as u8)),
        core::array::from_fn(|i| i as u8 ^ 0x5a),
    );
    // (Copies other tests' forks left count as they are.)
    let base = resource::pool::forks_kept();
    let sup = super::live()?;
    let parent = super::live()?;
    write_of(parent, &one)?;
    let (first, space) = forked(parent, sup)?;
    // Each writes its own copy now: neither sees the other's bytes.
    write_of(parent, &two)?;
    write_of(first, &three)?;
    let (first_sees, parent_sees) = (read_of(first), read_of(parent));
    end_forked(first, sup)?;
    // The next fork takes the first one's space, emptied, and sees the
    // parent's bytes as they are now, none of the first child's.
    let (second, again) = forked(parent, sup)?;
    let second_sees = read_of(second);
    write_of(second, &one)?;
    let parent_after = read_of(parent);
    end_forked(second, sup)?;
    let kept = resource::pool::forks_kept();
    // Its parent ended first: the copy is not kept for anyone.
    let (third, _) = forked(parent, sup)?;
    super::end(parent);
    let third_sees = read_of(third);
    end_forked(third, sup)?;
    let kept_for_none = resource::pool::forks_kept();
    // A parent that ends takes the copy kept for it along.
    let other = super::live()?;
    let (fourth, _) = forked(other, sup)?;
    end_forked(fourth, sup)?;
    let kept_for_other = resource::pool::forks_kept();
    super::end(other);
    let kept_at_end = resource::pool::forks_kept();
    super::end(sup);
    ensure!(
        (kept, kept_for_none, kept_for_other, kept_at_end) == (base + 1, base, base + 1, base),
        "copies kept: {kept} for the parent, {kept_for_none} once it ended, \
         {kept_for_other} for another, {kept_at_end} once that ended"
    );
    ensure!(
        first_sees == Ok(three) && parent_sees == Ok(two),
        "after the fork the child reads {first_sees:?}, the parent {parent_sees:?}"
    );
    ensure!(
        again == space,
        "the second fork's space {again:?} is not the first's {space:?}"
    );
    ensure!(
        second_sees == Ok(two) && parent_after == Ok(two),
        "the second child reads {second_sees:?}, the parent then {parent_after:?}"
    );
    ensure!(third_sees == Ok(two), "the third child reads {third_sees:?}");
    Ok(())
}

/// An ended fork's copy is kept for its parent's next fork (the pool's
/// reuse, `pool::take_fork`): the next child gets its space back,
/// refilled with the parent's memory as it is then, with nothing of the
/// earlier child's; copy-on-write stays exact both ways; and once the
/// parent is gone and the pool flushed nothing stays behind.
pub fn fork_copies_are_kept_for_the_next_fork() -> TestResult {
    if !resource::pool::reuse_enabled() {
        return Ok(());
    }
    // Warm up (tables, the pool), then nothing may stay behind.
    kept_round()?;
    resource::pool::flush();
    kcore::computation::reap_all();
    let before = (resource::counts().map(|(_, n)| n), frames::stats().free);
    kept_round()?;
    resource::pool::flush();
    kcore::computation::reap_all();
    let after = (resource::counts().map(|(_, n)| n), frames::stats().free);
    ensure!(
        after == before,
        "resources and free frames {before:?} before, {after:?} after"
    );
    Ok(())
}
