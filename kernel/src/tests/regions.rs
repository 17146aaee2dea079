//! `VirtualSpace::region_at` tries the slot it last found an address in
//! first: a guess that must never answer with a region that left, or one
//! that took its slot somewhere else.

use alloc::string::String;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::layout::PAGE_SIZE;
use kcore::vm::region::{Backing, Kind, Region};
use kcore::vm::space::VirtualSpace;
use restable::ResId;

const LOW: u64 = 0x4000_0000;
const HIGH: u64 = 0x5000_0000;
const ELSEWHERE: u64 = 0x6000_0000;
const PAGES: usize = 2;

fn link(n: u32) -> ResId {
    ResId::new(1, n, 1)
}

fn attach(s: &mut VirtualSpace, base: u64, n: u32) -> Result<usize, String> {
    let r = Region::new(Kind::Heap, PAGES, Backing::Zero, true, false).map_err(|_| "no memory")?;
    s.attach(base, r, ResId::new(2, n, 1), link(n))
        .map_err(|_| "attach failed".into())
}

/// Which attachment `region_at` names for `addr` (None: none).
fn found(s: &VirtualSpace, addr: u64) -> Option<ResId> {
    s.region_at(addr).map(|a| a.link_id)
}

pub fn region_lookup_survives_detach_and_reuse() -> TestResult {
    let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    let size = PAGES as u64 * PAGE_SIZE;
    let low = attach(&mut s, LOW, 1)?;
    let high = attach(&mut s, HIGH, 2)?;
    ensure!(low != high, "two attachments in one slot");
    ensure!(found(&s, HIGH + 8) == Some(link(2)), "high region not found");
    ensure!(
        found(&s, HIGH + size - 1) == Some(link(2)),
        "last byte of the high region"
    );
    ensure!(found(&s, HIGH + size).is_none(), "a region past the high one's end");
    ensure!(
        found(&s, LOW) == Some(link(1)),
        "low region not found after the high one"
    );
    ensure!(found(&s, LOW - 1).is_none(), "a region below the low one");
    // The high one leaves (its slot was the last hit again), and another
    // region takes its slot at another address.
    ensure!(found(&s, HIGH) == Some(link(2)), "high region not found again");
    ensure!(s.detach(link(2)).is_some(), "detach failed");
    ensure!(found(&s, HIGH).is_none(), "a detached region still found");
    let other = attach(&mut s, ELSEWHERE, 3)?;
    ensure!(
        other == high,
        "the freed slot was not reused (slot {other}, was {high})"
    );
    ensure!(
        found(&s, HIGH + 8).is_none(),
        "the old address finds the slot's new region"
    );
    ensure!(found(&s, ELSEWHERE + 8) == Some(link(3)), "new region not found");
    ensure!(found(&s, LOW + 8) == Some(link(1)), "low region lost");
    Ok(())
}

/// Frames free, counting those the kernel heap grew by as free (the heap
/// keeps what it grew to: no leak of the test's).
fn free_frames() -> usize {
    kcore::mm::frames::stats().free + kcore::mm::heap::stats().size / 4096
}

fn attach_zeroed(s: &mut VirtualSpace, base: u64, pages: usize, n: u32) -> Result<(), String> {
    let r = Region::zeroed(Kind::Heap, pages).map_err(|_| "no memory")?;
    s.attach(base, r, ResId::new(2, n, 1), link(n))
        .map(|_| ())
        .map_err(|_| alloc::format!("attach at {base:#x} failed"))
}

/// A space frees its page tables at its end by walking only the ranges
/// its attachments have had (`VirtualSpace::spans`): every table of the
/// tree must be met, once, whatever came and went. Checked against the
/// count of a walk of every entry, and by the frames that come back.
pub fn space_end_frees_every_table() -> TestResult {
    let before = free_frames();
    {
        let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
        let top = kcore::vm::USER_TOP & !(BLOCK - 1);
        // Low, across a 2 MiB and a 1 GiB boundary, a block mapped by one
        // directory entry, the top of the user half, and one that leaves
        // (its tables stay) before another lands in the same directory.
        attach_zeroed(&mut s, 0x40_0000, 3, 1)?;
        attach_zeroed(&mut s, 0x4000_0000 - 2 * PAGE_SIZE, 4, 2)?;
        attach_zeroed(&mut s, 0x1_0000_0000 - PAGE_SIZE, 2, 3)?;
        attach_zeroed(&mut s, 0x2_0000_0000, 512, 4)?;
        attach_zeroed(&mut s, top - 2 * BLOCK, 4, 5)?;
        attach_zeroed(&mut s, 0x7000_0000_0000, 1, 6)?;
        ensure!(s.detach(link(6)).is_some(), "detach failed");
        attach_zeroed(&mut s, 0x7000_0020_0000, 1, 7)?;
        let all = s.table_pages() - 1;
        ensure!(
            s.tables_by_spans() == Some(all),
            "the ranges reach {:?} tables, the tree has {all}",
            s.tables_by_spans()
        );
    }
    ensure!(
        free_frames() == before,
        "frames free {before} before the space, {} after its end",
        free_frames()
    );
    // Attachments scattered over more ranges than a space notes: its end
    // looks at every entry, and still frees every table.
    {
        let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
        for n in 0..40u32 {
            attach_zeroed(&mut s, 0x10_0000_0000 + n as u64 * 3 * BLOCK, 1, 10 + n)?;
        }
        ensure!(s.tables_by_spans().is_none(), "40 scattered ranges all noted");
    }
    ensure!(
        free_frames() == before,
        "frames free {before} before the scattered space, {} after its end",
        free_frames()
    );
    Ok(())
}

const BLOCK: u64 = 512 * PAGE_SIZE;

/// A supervisor's copy looks for pages a pager must supply only in a space
/// that has such a region (`VirtualSpace::has_paged`): the answer must
/// follow paged regions in and out, whatever else comes and goes, or a
/// copy would skip a page still in its file.
pub fn paged_regions_are_counted_in_and_out() -> TestResult {
    use kcore::mm::heap;
    use kcore::mm::quota::Charge;
    use kcore::vm::region::{PagedFile, PagerRef};
    let file = heap::try_arc(PagedFile::new(
        PagerRef {
            pid: 0,
            object: [1, 2, 3, 4],
        },
        Charge::NONE,
    ))
    .map_err(|_| "no heap for the file")?;
    let paged = |pages: usize| {
        let backing = Backing::Pager {
            source: file.clone(),
            file_at: 0,
            skew: 0,
            len: pages as u64 * PAGE_SIZE,
        };
        Region::new(Kind::Data, pages, backing, true, false).map_err(|_| "no memory for a paged region")
    };
    let pending = |s: &VirtualSpace, from: u64, to: u64| {
        let mut out = alloc::vec::Vec::new();
        s.pending_pages((from, to), &mut out, 16);
        out.len()
    };
    let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    attach(&mut s, LOW, 1)?;
    ensure!(!s.has_paged(), "a space of zero-filled memory finds a paged region");
    let (p1, p2) = (paged(3)?, paged(2)?);
    s.attach(HIGH, p1, ResId::new(2, 2, 1), link(2))
        .map_err(|_| "attach of a paged region failed")?;
    s.attach(ELSEWHERE, p2, ResId::new(2, 3, 1), link(3))
        .map_err(|_| "attach of a second paged region failed")?;
    let all = pending(&s, 0, u64::MAX);
    ensure!(s.has_paged() && all == 5, "two paged regions: {all} pages pending");
    // One leaves, then the zero-filled one: the other still counts.
    ensure!(s.detach(link(2)).is_some(), "detach of a paged region failed");
    ensure!(s.detach(link(1)).is_some(), "detach of the zero-filled region failed");
    let left = pending(&s, 0, u64::MAX);
    ensure!(
        s.has_paged() && left == 2,
        "one paged region left: {left} pages pending"
    );
    attach(&mut s, LOW, 4)?;
    ensure!(s.detach(link(3)).is_some(), "detach of the last paged region failed");
    let none = pending(&s, 0, u64::MAX);
    ensure!(
        !s.has_paged() && none == 0,
        "no paged region left: still found, {none} pages pending"
    );
    Ok(())
}
