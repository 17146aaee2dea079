//! Text sharing (seed 000 §2.4.2 rule 3): every process of one program
//! maps the same frames of its read-only segments, filled once; a new
//! version of the program gets frames of its own; the text is paid for by
//! its plate's maker and its memory comes back once nothing maps it.

use super::{end, ok};
use alloc::string::String;
use alloc::vec::Vec;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::frames;
use resource::pool::{self, PoolKind};
use resource::{KERNEL, ResId, plate};

/// Processes started on this CPU, which kernel code does not leave until
/// it waits: none of them runs (or ends) before the test has looked.
fn spawn_here(path: &str, args: &[&str]) -> Result<u64, String> {
    let options = abi::SpawnOptions {
        cpu: kcore::cpu::this_cpu().index as u64,
        policy: abi::LoadPolicy::Eager as u64,
        ..abi::SpawnOptions::DEFAULT
    };
    ok(resource::proc::spawn::spawn(
        path,
        &super::args(args),
        &options,
        KERNEL_PID,
    ))
}

/// A process's read-only regions: address and frames of each.
type Text = Vec<(u64, Vec<u64>)>;

/// The frames of a process's read-only regions (by address), and the pages
/// it holds of its own: its other regions' present pages and its tables.
fn memory_of(pid: u64) -> Result<(Text, usize), String> {
    let p = proc::get(pid).ok_or("process gone")?;
    let space = p.space().ok_or("no space")?;
    let s = space.lock();
    let mut text = Vec::new();
    let mut own = s.table_pages();
    for a in s.regions() {
        if a.region.writable {
            own += a.region.resident_pages();
        } else {
            text.push((a.base, a.region.frames().to_vec()));
        }
    }
    Ok((text, own))
}

/// Keeps the idle adjustment (reduce every 50 ms) out of the way: the
/// tests look at what the pool keeps.
fn no_idle_reduce() {
    let mut s = pool::settings();
    s.interval_ns = 100_000_000_000;
    pool::set(s);
}

fn wait(pid: u64) -> Result<u64, String> {
    ok(proc::wait(KERNEL_PID, pid))
}

fn text_pages(text: &[(u64, Vec<u64>)]) -> usize {
    text.iter().map(|(_, f)| f.len()).sum()
}

/// Ten processes of one program at once map one set of text frames: each
/// after the first costs the memory of its own pages, not its text's; all
/// ended and the pool flushed, the memory is back where it was.
pub fn pool_text_frames_are_shared_by_every_process_of_a_program() -> TestResult {
    no_idle_reduce();
    const N: usize = 10;
    let round = || -> Result<(usize, usize, usize, usize), String> {
        pool::flush();
        let free0 = frames::stats().free;
        let first = spawn_here("text128k", &[])?;
        let free1 = frames::stats().free;
        let mut pids = alloc::vec![first];
        for _ in 1..N {
            pids.push(spawn_here("text128k", &[])?);
        }
        let free_n = frames::stats().free;
        let (text, own) = memory_of(first)?;
        ensure!(
            text_pages(&text) >= 32,
            "text128k maps {} read-only pages",
            text_pages(&text)
        );
        ensure!(
            text.iter().all(|(_, f)| f.iter().all(|&pa| pa != 0)),
            "an eager process's text has absent pages"
        );
        for &pid in &pids[1..] {
            let (other, _) = memory_of(pid)?;
            ensure!(other == text, "process {pid} maps text frames of its own");
        }
        for pid in pids {
            ensure!(wait(pid)? == 0, "text128k read a wrong byte of its shared text");
        }
        Ok((free0 - free1, free1 - free_n, text_pages(&text), own))
    };
    // Once to bring the kernel's lists to their size, then measured.
    round()?;
    kcore::computation::reap_all();
    pool::flush();
    let level = frames::stats().free;
    let (first, extra, text, own) = round()?;
    kcore::computation::reap_all();
    pool::flush();
    let back = frames::stats().free;
    kcore::println!(
        "text sharing: text128k {text} read-only pages; first process {first} frames, \
         {} more processes {extra} frames ({} each; {own} of its own pages)",
        N - 1,
        extra / (N - 1)
    );
    // Beyond its own pages, a process takes its kernel stack, its work
    // area and a few frames of the heap's; a text of its own would be 32
    // pages more.
    let slack = kcore::mm::stack::DEFAULT_PAGES as usize + 1 + 8;
    ensure!(
        extra < (N - 1) * (own + slack),
        "{} more processes took {extra} frames: more than their own pages ({own} each)",
        N - 1
    );
    ensure!(
        first >= text,
        "the first process took {first} frames for {text} pages of text"
    );
    ensure!(
        back == level,
        "{level} free frames before, {back} after every process ended"
    );
    Ok(())
}

/// A new version of a program (a new plate of the name) gets text frames
/// of its own; a process of the old one keeps running on the old.
pub fn pool_text_of_a_new_plate_version_is_new() -> TestResult {
    no_idle_reduce();
    let image = ok(plate::content(ok(resource::proc::spawn::find_plate("text128k"))?))?;
    let v1 = ok(plate::create(KERNEL, "t/textshare", 1, &image))?;
    let old = spawn_here("t/textshare", &[])?;
    let (old_text, _) = memory_of(old)?;
    let v2 = ok(plate::create(KERNEL, "t/textshare", 2, &image))?;
    ensure!(v1 != v2, "the new version is the old plate");
    let new = spawn_here("t/textshare", &[])?;
    let (new_text, _) = memory_of(new)?;
    ensure!(
        old_text
            .iter()
            .zip(&new_text)
            .all(|((_, a), (_, b))| a.iter().zip(b).all(|(x, y)| x != y)),
        "the new version maps the old version's text frames"
    );
    let again = spawn_here("t/textshare", &[])?;
    ensure!(
        memory_of(again)?.0 == new_text,
        "two processes of the new version do not share"
    );
    ensure!(memory_of(old)?.0 == old_text, "the old version's process lost its text");
    for pid in [old, new, again] {
        ensure!(wait(pid)? == 0, "a process of the program read a wrong byte");
    }
    pool::flush();
    Ok(())
}

/// A process's write to its text faults and kills it alone: the other
/// process of the program, mapping the same frames, runs on from them
/// unchanged (a write that got through would have zeroed the first byte
/// of `main`, which both run).
pub fn pool_shared_text_is_never_written() -> TestResult {
    let writer = spawn_here("faults", &["writetext"])?;
    let other = spawn_here("faults", &["none"])?;
    ensure!(
        memory_of(writer)?.0 == memory_of(other)?.0,
        "two processes of faults map different text"
    );
    ensure!(
        wait(writer)? == abi::KILLED_STATUS,
        "the write to shared text did not fault"
    );
    ensure!(
        wait(other)? == 2,
        "the other process of the program did not run its text"
    );
    let after = spawn_here("faults", &["none"])?;
    ensure!(wait(after)? == 2, "a later process of the program did not run its text");
    Ok(())
}

/// The plate's maker pays for its program's shared text while any
/// process (or the pool) keeps it, and gets it back once nothing does.
pub fn pool_text_is_paid_by_its_plates_maker() -> TestResult {
    no_idle_reduce();
    pool::flush();
    let maker = super::live()?;
    let account = proc::get(maker).ok_or("maker gone")?.account().clone();
    let image = ok(plate::content(ok(resource::proc::spawn::find_plate("text128k"))?))?;
    let made = plate::create(maker, "t/textpaid", 1, &image);
    let result = (|| -> TestResult {
        let _: ResId = ok(made)?;
        let before = account.used();
        let a = spawn_here("t/textpaid", &[])?;
        let b = spawn_here("t/textpaid", &[])?;
        let (text, _) = memory_of(a)?;
        let paid = account.used() - before;
        let pages = text_pages(&text) as u64;
        ensure!(
            paid >= pages * 4096 && paid < 2 * pages * 4096,
            "{paid} bytes charged for two processes' {pages} pages of shared text"
        );
        wait(a)?;
        wait(b)?;
        ensure!(
            pool::report()[PoolKind::Text as usize].count >= 1,
            "the text was not kept"
        );
        ensure!(
            account.used() - before == paid,
            "the kept text was not paid for any longer"
        );
        pool::flush();
        ensure!(
            account.used() == before,
            "{} bytes still charged after the text went",
            account.used() - before
        );
        Ok(())
    })();
    end(maker);
    result
}

/// The mechanism under shared text (`Region::into_joint`): a page is
/// filled once for every holder, a later share finds the pages filled
/// before it, nothing writable or absent is shared in part, a new use of
/// a share lets the set go without touching it, and the frames and their
/// charge go with the last holder, whichever it is.
pub fn pool_text_set_fills_each_page_once() -> TestResult {
    use kcore::mm::quota::{Account, Charge};
    use kcore::vm::region::{Backing, Kind, Region};
    let no_memory = |_| String::from("no memory");
    let round = || -> TestResult {
        let payer = Account::root(1 << 20);
        let mut master = Region::new(Kind::Text, 4, Backing::Zero, false, true).map_err(no_memory)?;
        let charge = Charge::new(Some(&payer), 4 * 4096).map_err(|_| "over the limit")?;
        ok(master.into_joint(charge).map_err(|_| abi::Error::Invalid))?;
        let mut a = master.share().map_err(no_memory)?;
        let mut b = master.share().map_err(no_memory)?;
        ensure!(a.frame(1).is_none(), "a share of a new text has a page present");
        let pa = a.populate(1).map_err(no_memory)?;
        ensure!(b.populate(1).map_err(no_memory)? == pa, "a page was filled twice");
        ensure!(master.joint_pages() == 1, "{} pages filled", master.joint_pages());
        let c = master.share().map_err(no_memory)?;
        ensure!(c.frame(1) == Some(pa), "a later share lacks a page filled before it");
        ensure!(a.share_part(0, 2).is_err(), "a part with absent pages was cut");
        let mut writable = Region::new(Kind::Heap, 2, Backing::Zero, true, false).map_err(no_memory)?;
        ensure!(
            writable.into_joint(Charge::NONE).is_err(),
            "a writable region's frames were made joint"
        );
        // A share given a new use lets go of the set: the page stays the
        // others', unchanged.
        a.retarget(Kind::Data, Backing::Zero, true, false);
        a.reset();
        ensure!(a.frame(1).is_none(), "a share given a new use kept the set's page");
        ensure!(b.frame(1) == Some(pa), "the other share lost the page");
        drop((a, master, c));
        ensure!(
            payer.used() == 4 * 4096,
            "the text's charge went before its last holder"
        );
        drop(b);
        ensure!(
            payer.used() == 0,
            "{} bytes charged after the last holder",
            payer.used()
        );
        Ok(())
    };
    round()?;
    let free = frames::stats().free;
    round()?;
    ensure!(
        frames::stats().free == free,
        "{free} free frames before, {} after",
        frames::stats().free
    );
    Ok(())
}
