//! Containers of whole 2 MiB blocks (seed 004's exchange, flat in size):
//! mapped one page-directory entry per block where their address allows,
//! exchanged by rewriting that entry, and still right when memory in
//! blocks meets memory that is not (the mapping is split or joined), when
//! the address is not a block's, and when an ICA of blocks moves. Nothing
//! leaks, page tables included.

use super::{end, live, ok};
use abi::ContainerMode as M;
use alloc::format;
use alloc::string::String;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::frames;
use kcore::mm::layout::{BLOCK_PAGES, BLOCK_SIZE, PAGE_SIZE};
use kcore::mm::paging::{self, flags};
use resource::{self, ResId, container, container_box};

const PAGES: u64 = BLOCK_PAGES as u64;

/// The space a container is attached in, and its address there.
fn place(id: ResId) -> Result<(resource::vspace::SpaceRef, u64), String> {
    let (pid, _, base, _) = ok(container::in_process(id))?;
    let space = proc::get(pid).and_then(|p| p.space()).ok_or("no space")?;
    Ok((space, base))
}

/// How every page of a container is mapped: `Some(true)` all by block
/// entries, `Some(false)` all page by page, None if any page is unmapped
/// or the two are mixed.
fn mapping(id: ResId) -> Result<Option<bool>, String> {
    let (space, base) = place(id)?;
    let root = space.lock().root();
    let mut seen = None;
    for i in 0..PAGES {
        let Some((_, f)) = paging::translate(root, base + i * PAGE_SIZE) else {
            return Ok(None);
        };
        let block = f & flags::HUGE != 0;
        if seen.is_some_and(|s| s != block) {
            return Ok(None);
        }
        seen = Some(block);
    }
    Ok(seen)
}

/// Writes `tag + i` into the first word of page `i`, through the process's
/// own page tables.
fn fill(id: ResId, tag: u64) -> Result<(), String> {
    let (space, base) = place(id)?;
    let mut s = space.lock();
    for i in 0..PAGES {
        s.copy_in(base + i * PAGE_SIZE, &(tag + i).to_le_bytes())
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

fn holds(id: ResId, tag: u64) -> Result<bool, String> {
    let (space, base) = place(id)?;
    let mut s = space.lock();
    for i in 0..PAGES {
        let mut w = [0u8; 8];
        s.copy_out(base + i * PAGE_SIZE, &mut w).map_err(|e| format!("{e:?}"))?;
        if u64::from_le_bytes(w) != tag + i {
            return Ok(false);
        }
    }
    Ok(true)
}

fn expect(id: ResId, tag: u64, blocks: bool, what: &str) -> TestResult {
    ensure!(holds(id, tag)?, "{what}: the container does not hold its data");
    let m = mapping(id)?;
    ensure!(
        m == Some(blocks),
        "{what}: mapped {m:?}, expected {}",
        if blocks { "by blocks" } else { "page by page" }
    );
    Ok(())
}

/// One round of every case; the caller checks that rounds leak nothing.
fn round() -> TestResult {
    let (a, b) = (live()?, live()?);
    // Made in blocks and placed at a block: one entry per block.
    let c = ok(container::create(a, PAGES, 0))?;
    let r = ok(container::create(b, PAGES, 0))?;
    let (_, base) = place(c)?;
    ensure!(base.is_multiple_of(BLOCK_SIZE), "a 2 MiB container at {base:#x}");
    fill(c, 0x1000)?;
    fill(r, 0x2000)?;
    expect(c, 0x1000, true, "new")?;
    // Exchange between two processes rewrites the one entry of each.
    ok(container::exchange(KERNEL_PID, c, b, r))?;
    expect(c, 0x2000, true, "exchange")?;
    expect(r, 0x1000, true, "exchange")?;
    // SWAP through a box.
    let bx = ok(container_box::create(a, PAGES, 1, 1, 4, 0))?;
    ok(container_box::grant(a, bx, b, abi::BOX_RECEIVE))?;
    ok(container_box::send(a, c, bx, 0, M::Swap))?;
    ok(container_box::receive(
        b,
        container_box::Receive::new(bx, r, M::Swap).waiting(1_000_000),
    ))?;
    expect(r, 0x2000, true, "SWAP")?;
    // Memory that is not in blocks: a copy. Its container lies at a block
    // but is mapped page by page; an exchange with one in blocks swaps the
    // two forms (a block's entry split into a page table, and a page table
    // replaced by a block's entry), and another swaps them back.
    fill(c, 0x3000)?;
    ok(container_box::send(a, c, bx, 0, M::Copy))?;
    let d = ok(container_box::receive(
        b,
        container_box::Receive::new(bx, ResId::NONE, M::Copy).waiting(1_000_000),
    ))?
    .id;
    expect(d, 0x3000, false, "copy")?;
    ok(container::exchange(KERNEL_PID, r, b, d))?;
    expect(r, 0x3000, false, "exchange with a copy")?;
    expect(d, 0x2000, true, "exchange with a copy")?;
    ok(container::exchange(KERNEL_PID, r, b, d))?;
    expect(r, 0x2000, true, "exchange back")?;
    expect(d, 0x3000, false, "exchange back")?;
    // The same in one space.
    let e = ok(container::create(b, PAGES, 0))?;
    fill(e, 0x4000)?;
    ok(container::exchange(b, e, b, d))?;
    expect(e, 0x3000, false, "exchange in one space")?;
    expect(d, 0x4000, true, "exchange in one space")?;
    // At an address that is not a block's: page by page, whatever the
    // memory, and an exchange with one mapped by blocks keeps both forms.
    let odd = base + 64 * BLOCK_SIZE + PAGE_SIZE;
    let u = ok(container::create(a, PAGES, odd))?;
    fill(u, 0x5000)?;
    let v = ok(container::create(a, PAGES, 0))?;
    fill(v, 0x6000)?;
    expect(u, 0x5000, false, "at an odd address")?;
    ok(container::exchange(a, u, a, v))?;
    expect(u, 0x6000, false, "exchange at an odd address")?;
    expect(v, 0x5000, true, "exchange at an odd address")?;
    // An ICA of a block moves with its one entry.
    let ica = ok(container::create_ica(a, PAGES))?;
    fill(ica, 0x7000)?;
    expect(ica, 0x7000, true, "ICA")?;
    let (space_a, old) = place(ica)?;
    ok(container::move_ica(KERNEL_PID, ica, b, 0))?;
    expect(ica, 0x7000, true, "ICA moved")?;
    let root_a = space_a.lock().root();
    ensure!(
        paging::translate(root_a, old).is_none(),
        "the ICA is still mapped where it was"
    );
    // Deleting takes the block's entry away.
    let (space_d, at) = place(d)?;
    ok(resource::mediator::delete(KERNEL_PID, d))?;
    ensure!(
        paging::translate(space_d.lock().root(), at).is_none(),
        "a deleted container is still mapped"
    );
    let _ = resource::mediator::delete(KERNEL_PID, bx);
    end(a);
    end(b);
    Ok(())
}

pub fn big_containers_are_exchanged_by_blocks() -> TestResult {
    round()?;
    resource::pool::flush();
    kcore::computation::reap_all();
    let before = (resource::counts(), frames::stats().free);
    round()?;
    resource::pool::flush();
    kcore::computation::reap_all();
    let after = (resource::counts(), frames::stats().free);
    ensure!(after == before, "{before:?} before a round, {after:?} after");
    Ok(())
}
