//! Large kernel allocations live in pages of their own (`kcore::mm::large`)
//! and give their frames back when freed, whatever context frees them:
//! lists made and dropped again and again, and a 1 GiB region forked
//! again and again (its list of frames is 2 MiB), leave free memory where
//! it was; failures are errors, and the lists stay charged to the process
//! that made them.

use super::{end, live_limited};
use alloc::string::String;
use alloc::vec::Vec;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::layout::PAGE_SIZE;
use kcore::mm::{frames, heap, large};
use kcore::sync::IrqMutex;
use kcore::vm::region::{Backing, Kind, Region};
use kcore::vm::space::VirtualSpace;
use restable::ResId;

/// Frames the rest of the kernel may take or give back meanwhile (the
/// pool's adjustment on an idle CPU): far below one list of 2 MiB.
const SLACK: usize = 64;

/// Entries of a list of 2 MiB: a 1 GiB region's frames.
const GIB_LIST: usize = 1 << 18;

/// Free frames and the large allocations' mapped pages, with every freed
/// range given back.
fn level() -> (usize, u64) {
    large::reclaim();
    (frames::stats().free, heap::stats().large.mapped)
}

fn close(before: (usize, u64), after: (usize, u64)) -> bool {
    before.0.abs_diff(after.0) <= SLACK && after.1 <= before.1 + SLACK as u64
}

/// `n` lists of `len` words, each word telling its list and index.
fn lists(n: usize, len: usize) -> Result<Vec<Vec<u64>>, String> {
    let mut all = Vec::new();
    for k in 0..n {
        let mut v: Vec<u64> = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| alloc::format!("no memory for list {k}"))?;
        v.extend((0..len as u64).map(|i| (k as u64) << 32 | i));
        all.push(v);
    }
    for (k, v) in all.iter().enumerate() {
        ensure!(
            v.iter().enumerate().all(|(i, &w)| w == (k as u64) << 32 | i as u64),
            "list {k} does not read back as written"
        );
    }
    Ok(all)
}

static HELD: IrqMutex<Option<Vec<u64>>> = IrqMutex::new(None);

/// Lists of 2 MiB made and freed many times, some freed with a lock held
/// (interrupts off: the release waits for a safe point), leave the free
/// frames and the heap's size where they were.
pub fn large_alloc_lists_give_their_frames_back() -> TestResult {
    drop(lists(8, GIB_LIST)?);
    let before = level();
    let heap_before = heap::stats().size;
    for round in 0..12 {
        let mut all = lists(8, GIB_LIST)?;
        let grown = heap::stats().size;
        ensure!(
            grown >= heap_before + 8 * GIB_LIST * 8,
            "round {round}: 16 MiB of lists, heap {heap_before} -> {grown} bytes"
        );
        // One freed where a shootdown cannot wait: it waits on the list.
        *HELD.lock() = all.pop();
        let waiting = {
            let mut held = HELD.lock();
            drop(held.take());
            heap::stats().large.waiting
        };
        ensure!(
            waiting >= GIB_LIST as u64 * 8 / PAGE_SIZE || kcore::cpu::online_count() > 1,
            "a list freed with interrupts off was not deferred ({waiting} pages waiting)"
        );
        drop(all);
        large::on_idle();
        ensure!(
            heap::stats().large.waiting == 0,
            "{} pages still waiting after a safe point",
            heap::stats().large.waiting
        );
    }
    let after = level();
    let heap_after = heap::stats().size;
    ensure!(
        close(before, after),
        "free frames, large pages mapped: {before:?} before, {after:?} after"
    );
    ensure!(
        heap_after <= heap_before + SLACK * PAGE_SIZE as usize,
        "the heap went from {heap_before} to {heap_after} bytes"
    );

    // A list that grows or shrinks within its pages stays where it is.
    let mut v: Vec<u64> = Vec::new();
    v.try_reserve_exact(5000).map_err(|_| "no memory")?;
    let at = v.as_ptr();
    v.shrink_to(4800);
    ensure!(v.as_ptr() == at, "shrinking within its pages moved a list");
    Ok(())
}

/// Asking for more than memory holds, or more than the range, is an
/// error, and leaves nothing behind.
pub fn large_alloc_failures_are_clean() -> TestResult {
    let before = level();
    let free = frames::stats().free;
    let mut v: Vec<u8> = Vec::new();
    let too_many = v.try_reserve_exact((free + 1024) * PAGE_SIZE as usize);
    ensure!(too_many.is_err(), "{} frames given with {free} free", free + 1024);
    let too_far = v.try_reserve_exact(1 << 40);
    ensure!(too_far.is_err(), "1 TiB given");
    let after = level();
    ensure!(
        close(before, after),
        "free frames, large pages mapped: {before:?} before, {after:?} after a refusal"
    );
    // Over its limit, a process's 1 GiB region (a list of 2 MiB) is refused.
    let small = live_limited(1 << 20, ::ipc::process::KERNEL_PID)?;
    let refused = resource::vregion::create(small, abi::RegionKind::Heap, 1 << 18, true, false);
    end(small);
    ensure!(refused == Err(abi::Error::Limit), "over its limit: {refused:?}");
    Ok(())
}

const BASE: u64 = 0x4000_0000;

fn link() -> ResId {
    ResId::new(1, 1, 1)
}

/// A space with a 1 GiB region, three pages of it written, forked and its
/// child written and ended twenty times: as fork14 does, but each child
/// gone before the next. Memory goes back each time; the region's list is
/// charged to its maker while it lives.
pub fn large_alloc_forks_of_1gib_regions_leave_no_trace() -> TestResult {
    let before = level();
    {
        let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
        let r = Region::new(Kind::Heap, GIB_LIST, Backing::Zero, true, false).map_err(|_| "no memory")?;
        s.attach(BASE, r, ResId::new(2, 1, 1), link())
            .map_err(|_| "attach failed")?;
        for p in [0, 1000, GIB_LIST - 1] {
            s.resolve_fault(BASE + p as u64 * PAGE_SIZE, true, false)
                .map_err(|e| alloc::format!("fault: {e:?}"))?;
        }
        for round in 0..20 {
            let copy = s
                .fork_region(link())
                .ok_or("region not forkable")?
                .map_err(|_| alloc::format!("round {round}: no memory to fork"))?;
            let mut child = VirtualSpace::new().map_err(|_| "no memory for a space")?;
            child
                .attach(BASE, copy, ResId::new(2, 1, 1), link())
                .map_err(|_| "attach failed")?;
            child
                .resolve_fault(BASE + 1000 * PAGE_SIZE, true, false)
                .map_err(|e| alloc::format!("child's fault: {e:?}"))?;
        }
    }
    let after = level();
    ensure!(
        close(before, after),
        "free frames, large pages mapped: {before:?} before, {after:?} after"
    );

    // The list is the maker's charge while the region lives.
    let maker = super::live()?;
    let p = ::ipc::process::get(maker).ok_or("process gone")?;
    let used = p.account().used();
    let region = resource::vregion::create(maker, abi::RegionKind::Heap, 1 << 18, true, false);
    let charged = p.account().used() - used;
    if let Ok(id) = region {
        let _ = resource::mediator::delete(maker, id);
    }
    let left = p.account().used() - used;
    drop(p);
    end(maker);
    ensure!(region.is_ok(), "a 1 GiB region: {region:?}");
    ensure!(
        charged >= (GIB_LIST * 8) as u64 && left == 0,
        "{charged} bytes charged for a 1 GiB region, {left} left after its deletion"
    );
    let last = level();
    ensure!(
        close(before, last),
        "free frames, large pages mapped: {before:?} before, {last:?} at the end"
    );
    Ok(())
}
