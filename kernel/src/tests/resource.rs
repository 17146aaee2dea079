//! Tender resources: independent kinds, the mediator's checks, composition
//! of processes, and the pool's reuse, add and reduce.

use super::process::run_with;
use abi::{Error, LoadPolicy, RegionKind, ResOp};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::{frames, heap};
use resource::mediator::{delete, query};
use resource::pool::{self, PoolKind};
use resource::vspace::{self, At};
use resource::{
    self, KERNEL, Kind, ResId, container, container_box, physmem, plate, process, program, vkspace, vregion,
};

/// A result for a test's message.
fn ok<T>(r: Result<T, Error>) -> Result<T, String> {
    r.map_err(|e| format!("{e:?}"))
}

fn region(pages: u64) -> Result<ResId, String> {
    ok(vregion::create(KERNEL, RegionKind::Data, pages, true, false))
}

fn attach(space: ResId, region: ResId, base: u64) -> Result<ResId, Error> {
    vspace::attach(KERNEL, space, region, At::Address(base)).map(|a| a.id)
}

fn pool_count(kind: PoolKind) -> usize {
    pool::report()[kind as usize].count
}

const MS: u64 = 1_000_000;

/// Changes the pool's settings, as the administrator's `pool_set` does.
fn change(f: impl FnOnce(&mut pool::Settings)) {
    let mut s = pool::settings();
    f(&mut s);
    pool::set(s);
}

/// One of the paper's configurations; `clear` forgets the add rules too.
fn mode(reuse: bool, reduce: bool, clear: bool) {
    change(|s| {
        s.reuse = reuse;
        s.reduce = reduce;
        if clear {
            s.add.clear();
        }
    });
}

/// Adds an add rule, for `program`'s plate if the kind needs one.
fn add(kind: PoolKind, program: &str, pages: usize, count: usize) -> TestResult {
    let key = if program.is_empty() {
        ResId::NONE
    } else {
        resource::proc::spawn::find_plate(program).map_err(|e| format!("{program}: {e:?}"))?
    };
    change(|s| {
        s.add.push(pool::Rule {
            kind,
            key,
            pages,
            count,
        })
    });
    Ok(())
}

pub fn resources_exist_independently() -> TestResult {
    let plate = ok(plate::find(KERNEL, "bin/tiny"))?;
    // A program with no process, a space with no process, a region with no space.
    let program = ok(program::create(KERNEL, plate))?;
    let space = ok(vspace::create(KERNEL))?;
    let region = region(3)?;
    let phys = ok(physmem::create(KERNEL, 5))?;
    // Attach, then detach: the region survives both.
    let link = ok(attach(space, region, 0x1000_0000))?;
    ensure!(
        delete(KERNEL, region).err() == Some(Error::Busy),
        "an attached region was deleted"
    );
    ensure!(
        delete(KERNEL, space).err() == Some(Error::Busy),
        "a space with a region attached was deleted"
    );
    ok(delete(KERNEL, link))?;
    for id in [region, space, program, phys] {
        delete(KERNEL, id).map_err(|e| format!("delete {id:?}: {e:?}"))?;
    }
    Ok(())
}

pub fn stale_forged_and_wrong_kind_ids_are_rejected() -> TestResult {
    let first = region(1)?;
    ok(delete(KERNEL, first))?;
    ensure!(query(KERNEL, first).err() == Some(Error::NotFound), "stale id accepted");
    let again = region(1)?;
    ensure!(
        again.index() == first.index() && again != first,
        "slot not reused with a new generation"
    );
    ensure!(
        query(KERNEL, first).err() == Some(Error::NotFound),
        "stale id accepted after reuse"
    );
    let forged = ResId::new(again.kind(), again.index(), again.generation() + 7);
    ensure!(
        delete(KERNEL, forged).err() == Some(Error::NotFound),
        "forged id accepted"
    );
    let space = ok(vspace::create(KERNEL))?;
    // A region id where a space is expected, and the reverse.
    ensure!(
        attach(again, space, 0x1000).err() == Some(Error::Invalid),
        "kinds not checked"
    );
    ensure!(
        query(KERNEL, ResId::from_raw(0xff00_0000_0000_0001)).err() == Some(Error::Invalid),
        "unknown kind accepted"
    );
    for id in [again, space] {
        ok(delete(KERNEL, id))?;
    }
    Ok(())
}

pub fn mediator_checks_before_any_change() -> TestResult {
    let space = ok(vspace::create(KERNEL))?;
    let region = region(2)?;
    let forged_space = ResId::new(space.kind(), space.index(), space.generation() + 1);
    let calls = resource::mediator::total_calls();
    ensure!(
        attach(forged_space, region, 0x2000).is_err(),
        "attach to a forged space"
    );
    // Nothing changed: the region is still detached and can be attached for real.
    let link = ok(attach(space, region, 0x2000))?;
    ensure!(resource::mediator::total_calls() == calls + 2, "operations not counted");
    let mut last = None;
    resource::mediator::trace(2, &mut |e| last = Some(*e));
    ensure!(
        last.is_some_and(|e| e.result == 0 && e.id == link.raw() && e.op == ResOp::Attach as u8),
        "trace does not end with the attach"
    );
    // A user process may not touch the kernel's resources.
    ensure!(
        delete(4242, link).err() == Some(Error::Denied),
        "another owner deleted a resource"
    );
    for id in [link, region, space] {
        ok(delete(KERNEL, id))?;
    }
    Ok(())
}

/// What an operation that needs a resource of one kind gives for an
/// identifier of it: `(caller, id) -> error`.
type Use<'a> = &'a dyn Fn(u64, ResId) -> Option<Error>;

/// For every kind, through the operations that name it: a forged
/// identifier (a live slot, another generation) finds nothing, one of
/// another kind is refused, another process may not change it, and a
/// stale one (the resource deleted or ended) finds nothing; none of it
/// changes anything.
pub fn every_kind_refuses_bad_ids() -> TestResult {
    const STRANGER: u64 = 4242;
    let kernel = resource::proc::KERNEL_PID;
    let sleeper = ok(resource::proc::spawn::spawn(
        "sleeper",
        b"60000\0",
        &abi::SpawnOptions::DEFAULT,
        kernel,
    ))?;
    let process = process::id_of(sleeper);
    let computation = ResId::from_raw(ok(query(KERNEL, process))?.links[2]);
    let plate = ok(plate::find(KERNEL, "bin/tiny"))?;
    let program = ok(program::create(KERNEL, plate))?;
    let space = ok(vspace::create(KERNEL))?;
    let loose = region(1)?;
    let attached = region(1)?;
    let link = ok(attach(space, attached, 0x4000_0000))?;
    let in_kernel = region(1)?;
    let area = ok(vkspace::create(KERNEL, in_kernel))?;
    let phys = ok(physmem::create(KERNEL, 1))?;
    let ctr = ok(container::create(sleeper, 1, 0))?;
    let bx = ok(container_box::create(KERNEL, 1, 1, 0, 2, 0))?;
    // A region of the kernel's, for an operation that needs one beside
    // the identifier under test.
    let spare = region(1)?;
    // A device the kernel holds (the `pc` machine's host bridge).
    let dev = ok(resource::device::find(0x8086, 0x1237, 0))?;
    // A pipe bound in the sleeper's table (it goes when the sleeper ends).
    let holder = ipc::process::get(sleeper).ok_or("no sleeper")?;
    let pipe = ok(resource::pipe::create(&holder, 0, 1, false, false))?;
    drop(holder);
    // A file cache the sleeper made (it goes when the sleeper ends).
    let cache = ok(resource::file_cache::create(sleeper))?;
    let kinds: [(ResId, Use); Kind::ALL.len()] = [
        (plate, &|c, id| program::create(c, id).err()),
        (program, &|c, id| program::segment(c, id, 0).err()),
        (process, &|c, id| process::start(c, id).err()),
        (computation, &|c, id| delete(c, id).err()),
        (space, &|c, id| {
            vspace::attach(c, id, spare, At::Address(0x5000_0000)).err()
        }),
        (loose, &|c, id| {
            vregion::clear(c, id, RegionKind::Heap, true, false).err()
        }),
        (link, &|c, id| delete(c, id).err()),
        (area, &|c, id| vkspace::write(c, id, b"x", b"").err()),
        (phys, &|c, id| delete(c, id).err()),
        (ctr, &|c, id| {
            container::push(c, id, KERNEL, 0, abi::ContainerMode::Copy).err()
        }),
        (bx, &|c, id| container_box::grant(c, id, 7, abi::BOX_SEND).err()),
        (dev, &|c, id| resource::device::read_config(c, id, 0, 4).err()),
        (pipe, &|c, id| resource::pipe::held(c, id).err()),
        (cache, &|c, id| resource::file_cache::revoke(c, id, 0, 1).err()),
    ];
    kcore::computation::reap_all();
    let before = resource::counts();
    for (id, use_it) in kinds {
        let kind = Kind::from_u64(id.kind() as u64).ok_or("no kind")?;
        let forged = ResId::new(id.kind(), id.index(), id.generation() + 7);
        let mut checks: Vec<(&str, Option<Error>, Error)> = alloc::vec![
            ("a forged id", use_it(KERNEL, forged), Error::NotFound),
            ("a forged id queried", query(KERNEL, forged).err(), Error::NotFound),
            ("a forged id deleted", delete(KERNEL, forged).err(), Error::NotFound),
            ("another process deleting", delete(STRANGER, id).err(), Error::Denied),
        ];
        // A plate or a program is anyone's to use (only its owner deletes
        // it).
        if !matches!(kind, Kind::Plate | Kind::Program) {
            checks.push(("another process", use_it(STRANGER, id), Error::Denied));
        }
        // An identifier of another kind where this kind is expected (the
        // operations on any kind go by the identifier's own kind).
        if !matches!(kind, Kind::Computation | Kind::VirtualUserSpace | Kind::PhysicalMemory) {
            let wrong = ResId::new(Kind::PhysicalMemory as u8, id.index(), id.generation());
            checks.push(("another kind's id", use_it(KERNEL, wrong), Error::Invalid));
        }
        for (what, got, want) in checks {
            ensure!(got == Some(want), "{kind:?}: {what} gave {got:?}, not {want:?}");
        }
        ensure!(
            query(KERNEL, id).is_ok(),
            "{kind:?}: a refused operation took the resource away"
        );
    }
    kcore::computation::reap_all();
    ensure!(
        resource::counts() == before,
        "a refused operation changed the resources"
    );
    // Stale: each deleted (or ended), then named again.
    let _ = resource::proc::kill(sleeper);
    let _ = resource::proc::wait(kernel, sleeper);
    for id in [link, attached, area, in_kernel, phys, bx, program, loose, spare, space] {
        delete(KERNEL, id).map_err(|e| format!("delete {id:?}: {e:?}"))?;
    }
    // (Plates go only when replaced, devices never.)
    for (id, use_it) in kinds
        .into_iter()
        .skip(1)
        .filter(|(id, _)| id.kind() != Kind::Device as u8)
    {
        let got = use_it(KERNEL, id);
        ensure!(got == Some(Error::NotFound), "a stale {id:?} gave {got:?}");
    }
    Ok(())
}

/// Every operation is counted under its own code: two operations that once
/// shared one are told apart.
pub fn operations_are_counted_under_their_own_codes() -> TestResult {
    let calls = |name: &str| {
        let mut n = 0;
        resource::mediator::counters(&mut |_, op, calls, _, _| {
            if op == name {
                n += calls;
            }
        });
        n
    };
    let (spaces, runs) = (calls("CreateSpace"), calls("CreatePhysical"));
    let space = ok(vspace::create(KERNEL))?;
    ensure!(
        calls("CreateSpace") == spaces + 1 && calls("CreatePhysical") == runs,
        "a space was counted as another operation"
    );
    ok(delete(KERNEL, space))?;
    let mut codes: Vec<&str> = resource::mediator::OP_NAMES.to_vec();
    codes.sort_unstable();
    codes.dedup();
    ensure!(codes.len() == ResOp::ALL.len(), "two operations share a name");
    Ok(())
}

pub fn process_built_step_by_step_from_user_mode() -> TestResult {
    let o = run_with("builder", &[], LoadPolicy::Eager)?;
    ensure!(o.status == 0, "builder exited with {}", o.status);
    Ok(())
}

pub fn pool_reuse_gives_fresh_processes() -> TestResult {
    mode(true, false, true);
    let hits = pool::report()[PoolKind::Full as usize].stats.hits;
    for _ in 0..3 {
        let o = run_with("fresh", &[], LoadPolicy::Eager)?;
        ensure!(o.status == 0, "a reused space leaked the previous process's memory");
        ensure!(
            o.faults.total() == 0,
            "eager process from the pool took faults {:?}",
            o.faults
        );
    }
    let after = pool::report()[PoolKind::Full as usize].stats.hits;
    ensure!(after >= hits + 2, "no reuse: {} full-space hits", after - hits);
    // basic: the pool is not used at all.
    mode(false, false, true);
    let before = pool::report();
    run_with("fresh", &[], LoadPolicy::Eager)?;
    let now = pool::report();
    ensure!(
        now.iter().zip(before.iter()).all(|(a, b)| a.stats.hits == b.stats.hits),
        "basic mode took from the pool"
    );
    mode(true, true, false);
    Ok(())
}

/// A demand-loaded process takes the pooled whole space too (every Linux
/// exec is one): an ended process's space does not pile up in the pool,
/// and the next process finds none of the previous one's memory.
pub fn pool_reuse_serves_demand_loading() -> TestResult {
    mode(true, false, true);
    pool::flush();
    let hits = pool::report()[PoolKind::Full as usize].stats.hits;
    for _ in 0..4 {
        let o = run_with("fresh", &[], LoadPolicy::Demand)?;
        ensure!(o.status == 0, "a reused space leaked the previous process's memory");
    }
    let after = pool::report()[PoolKind::Full as usize].stats.hits;
    ensure!(after >= hits + 3, "no reuse: {} full-space hits", after - hits);
    ensure!(
        pool_count(PoolKind::Full) <= 1 && pool_count(PoolKind::Space) == 0,
        "{} full spaces and {} spaces pooled after one process at a time",
        pool_count(PoolKind::Full),
        pool_count(PoolKind::Space)
    );
    pool::flush();
    mode(true, true, false);
    Ok(())
}

/// What is given back stops at `pool::MAX_KEPT` a list: one more is
/// refused (its giver deletes it), and the pool holds no more.
pub fn pool_given_back_is_bounded() -> TestResult {
    mode(true, false, true);
    pool::flush();
    let mut refused = None;
    for _ in 0..=pool::MAX_KEPT {
        let space = ok(vspace::create(KERNEL))?;
        if !pool::put_space(space) {
            refused = Some(space);
            break;
        }
    }
    let held = pool_count(PoolKind::Space);
    if let Some(space) = refused {
        ok(resource::mediator::delete(KERNEL, space))?;
    }
    pool::flush();
    mode(true, true, false);
    ensure!(
        refused.is_some() && held == pool::MAX_KEPT,
        "{held} spaces pooled, the one past the bound {}",
        if refused.is_some() { "refused" } else { "kept" }
    );
    Ok(())
}

pub fn pool_add_fills_to_the_setting() -> TestResult {
    mode(true, false, false);
    add(PoolKind::Full, "pa200", 0, 2)?;
    add(PoolKind::WorkArea, "", 0, 3)?;
    pool::add().map_err(|e| format!("add: {e:?}"))?;
    ensure!(
        pool_count(PoolKind::Full) >= 2 && pool_count(PoolKind::WorkArea) >= 3,
        "pool not filled"
    );
    let hits = pool::report()[PoolKind::Full as usize].stats.hits;
    let o = run_with("pa200", &[], LoadPolicy::Eager)?;
    ensure!(
        o.status == 0 && o.faults.total() == 0,
        "pa200 from an added space: {:#x} {:?}",
        o.status,
        o.faults
    );
    ensure!(
        pool::report()[PoolKind::Full as usize].stats.hits == hits + 1,
        "the added space was not used"
    );
    change(|s| s.add.clear());
    Ok(())
}

pub fn pool_reduce_follows_the_papers_rules() -> TestResult {
    mode(true, true, false);
    // T far longer than the burst can take on a loaded host: the first
    // pass must come before T for every space, however slow the waits.
    const T: u64 = 5_000 * MS;
    change(|s| s.unused_ns = T);
    // Keep the idle adjustment out of the way: the test drives the clock.
    change(|s| s.interval_ns = 100_000 * MS);
    pool::flush();
    // Ten pa800 at once: ten full spaces come back to the pool.
    let mut pids = alloc::vec::Vec::new();
    for _ in 0..10 {
        pids.push(
            resource::proc::spawn::spawn("pa800", &[], &abi::SpawnOptions::DEFAULT, resource::proc::KERNEL_PID)
                .map_err(|e| format!("{e:?}"))?,
        );
    }
    for pid in pids {
        ensure!(
            resource::proc::wait(resource::proc::KERNEL_PID, pid) == Ok(0),
            "pa800 failed"
        );
    }
    ensure!(
        pool_count(PoolKind::Full) >= 2,
        "only {} full spaces pooled",
        pool_count(PoolKind::Full)
    );
    let t0 = kcore::clock::nanos();
    let bytes_burst = pool::bytes();
    // First pass, before T: the surplus goes, one per program stays.
    pool::reduce(t0);
    ensure!(
        pool_count(PoolKind::Full) == 1,
        "{} full spaces after the first pass",
        pool_count(PoolKind::Full)
    );
    // Their parts came back: spaces (never reduced) and regions.
    let spaces = pool_count(PoolKind::Space);
    ensure!(spaces >= 1, "decomposed spaces were not pooled");
    // After T unused: the kept one goes too, and the large regions (BSS of
    // 800 pages) after another T; small regions and spaces stay.
    pool::reduce(t0 + T + 10 * MS);
    ensure!(pool_count(PoolKind::Full) == 0, "the kept full space outlived T");
    pool::reduce(t0 + 4 * T);
    let big_left = pool::report()[PoolKind::Region as usize].count;
    ensure!(pool_count(PoolKind::Space) >= spaces, "a virtual space was reduced");
    ensure!(
        pool::bytes() < bytes_burst / 4,
        "pool memory {} KiB after reduce, {} KiB at the burst",
        pool::bytes() / 1024,
        bytes_burst / 1024
    );
    let _ = big_left;
    change(|s| s.interval_ns = 50 * MS);
    Ok(())
}

fn footprint() -> ([usize; Kind::ALL.len()], usize, usize) {
    kcore::computation::reap_all();
    let counts = resource::counts().map(|(_, n)| n);
    (counts, frames::stats().free, heap::stats().used)
}

pub fn nothing_leaks_after_a_workload_and_a_flush() -> TestResult {
    mode(true, true, false);
    change(|s| s.interval_ns = 100_000 * MS);
    let workload = || -> TestResult {
        for prog in ["tiny", "pa200", "fresh", "builder", "argcheck"] {
            let args: &[&str] = if prog == "argcheck" { &["x", "yy", "zzz"] } else { &[] };
            run_with(prog, args, LoadPolicy::Eager)?;
            run_with(prog, args, LoadPolicy::Demand)?;
        }
        add(PoolKind::Full, "tiny", 0, 1)?;
        pool::add().map_err(|e| format!("{e:?}"))?;
        change(|s| s.add.clear());
        ensure!(pool::bytes() > 0, "the pool held nothing");
        pool::flush();
        Ok(())
    };
    // Warm up once (kernel lists reach their capacity), then measure.
    workload()?;
    let before = footprint();
    workload()?;
    let after = footprint();
    ensure!(
        after.0 == before.0 && after.1 == before.1 && super::heap_back(before.2, after.2),
        "resources/free frames/heap {before:?} before, {after:?} after"
    );
    change(|s| s.interval_ns = 50 * MS);
    Ok(())
}

/// A full space taken apart by reduce gives back its text region as pooled
/// text; read-only data is not text. A program started from that pooled
/// text must run (it used to get its read-only data as text and die
/// executing non-executable pages).
pub fn pooled_text_is_the_program_text() -> TestResult {
    let spawn_all = |n: usize| -> Result<(), String> {
        let mut pids = alloc::vec::Vec::new();
        for _ in 0..n {
            pids.push(
                resource::proc::spawn::spawn("hello", &[], &abi::SpawnOptions::DEFAULT, resource::proc::KERNEL_PID)
                    .map_err(|e| format!("{e:?}"))?,
            );
        }
        for pid in pids {
            let status = resource::proc::wait(resource::proc::KERNEL_PID, pid).map_err(|e| format!("{e:?}"))?;
            ensure!(status == 0, "hello ended with {status:#x}");
        }
        Ok(())
    };
    mode(true, true, false);
    change(|s| s.interval_ns = 100_000 * MS);
    pool::flush();
    spawn_all(3)?;
    // Keeps one full space and takes the others apart into the pool.
    pool::reduce(kcore::clock::nanos());
    ensure!(
        pool_count(PoolKind::Full) == 1,
        "{} full spaces",
        pool_count(PoolKind::Full)
    );
    ensure!(pool_count(PoolKind::Text) >= 1, "no pooled text");
    // The first takes the full space, the others the pooled text.
    spawn_all(3)?;
    change(|s| s.interval_ns = 50 * MS);
    pool::flush();
    Ok(())
}

/// A trace slot goes to one writer at a time, and never back to an older
/// entry: two writers of entries 256 apart cannot both fill it.
pub fn trace_slot_has_one_writer() -> TestResult {
    use core::sync::atomic::{AtomicU64, Ordering};
    use resource::mediator::claim;
    let seq = 1000;
    // Holding entry seq - 256, finished.
    let stamp = AtomicU64::new(2 * (seq - 256) + 2);
    ensure!(claim(&stamp, seq), "an idle slot with an older entry is taken");
    ensure!(
        stamp.load(Ordering::Relaxed) == 2 * seq + 1,
        "taken slots are marked odd"
    );
    ensure!(!claim(&stamp, seq + 256), "a slot being written is not taken again");
    ensure!(!claim(&stamp, seq - 256), "nor by an older writer");
    stamp.store(2 * seq + 2, Ordering::Relaxed);
    ensure!(
        !claim(&stamp, seq - 256),
        "a late older writer leaves a newer entry alone"
    );
    ensure!(!claim(&stamp, seq), "an entry is not written twice");
    ensure!(claim(&stamp, seq + 256), "the next lap takes the slot");
    Ok(())
}

/// The pool's settings as `pool_set` takes them are checked whole before
/// any applies: flags, interval, and each rule's kind, plate and size.
pub fn pool_settings_are_checked() -> TestResult {
    use abi::{MAX_POOL_RULES, PoolRule, PoolSettings};
    let good = PoolSettings {
        reuse: 1,
        reduce: 0,
        unused_ns: 7 * MS,
        interval_ns: 9 * MS,
    };
    let tiny = resource::proc::spawn::find_plate("tiny").map_err(|e| format!("{e:?}"))?;
    let rule = |kind: PoolKind, plate: u64, pages: u64| PoolRule {
        kind: kind as u64,
        plate,
        pages,
        count: 2,
    };
    let rules = [
        rule(PoolKind::WorkArea, 0, 0),
        rule(PoolKind::Region, 0, 16),
        rule(PoolKind::Full, tiny.raw(), 0),
    ];
    let s = pool::settings_from(&good, &rules).map_err(|e| format!("good settings: {e:?}"))?;
    ensure!(
        s.reuse && !s.reduce && s.unused_ns == 7 * MS && s.interval_ns == 9 * MS,
        "settings {s:?}"
    );
    ensure!(
        s.add[2]
            == pool::Rule {
                kind: PoolKind::Full,
                key: tiny,
                pages: 0,
                count: 2
            }
            && s.add[1].pages == 16,
        "rules {:?}",
        s.add
    );
    let check = |what: &str, settings: PoolSettings, rules: &[PoolRule], want: Error| -> TestResult {
        let got = pool::settings_from(&settings, rules).map(drop);
        ensure!(got == Err(want), "{what}: {got:?}, not {want:?}");
        Ok(())
    };
    check("reuse 2", PoolSettings { reuse: 2, ..good }, &[], Error::Invalid)?;
    check("reduce 7", PoolSettings { reduce: 7, ..good }, &[], Error::Invalid)?;
    check(
        "interval 0",
        PoolSettings { interval_ns: 0, ..good },
        &[],
        Error::Invalid,
    )?;
    let bad_kind = PoolRule { kind: 6, ..rules[0] };
    check("kind 6", good, &[bad_kind], Error::Invalid)?;
    check(
        "work area with a plate",
        good,
        &[rule(PoolKind::WorkArea, tiny.raw(), 0)],
        Error::Invalid,
    )?;
    check(
        "region of 0 pages",
        good,
        &[rule(PoolKind::Region, 0, 0)],
        Error::Invalid,
    )?;
    check(
        "region too large",
        good,
        &[rule(PoolKind::Region, 0, (1 << 18) + 1)],
        Error::Invalid,
    )?;
    check(
        "full with pages",
        good,
        &[rule(PoolKind::Full, tiny.raw(), 4)],
        Error::Invalid,
    )?;
    check(
        "full without a plate",
        good,
        &[rule(PoolKind::Full, 0, 0)],
        Error::Invalid,
    )?;
    let space = resource::vspace::create(KERNEL).map_err(|e| format!("{e:?}"))?;
    check(
        "full of a space",
        good,
        &[rule(PoolKind::Text, space.raw(), 0)],
        Error::Invalid,
    )?;
    resource::mediator::delete(KERNEL, space).map_err(|e| format!("{e:?}"))?;
    let forged = ResId::new(tiny.kind(), tiny.index(), tiny.generation() + 1);
    check(
        "full of a forged plate",
        good,
        &[rule(PoolKind::Full, forged.raw(), 0)],
        Error::NotFound,
    )?;
    let many = [rules[0]; MAX_POOL_RULES as usize + 1];
    check("too many rules", good, &many, Error::Limit)?;
    pool::settings_from(&good, &many[1..]).map_err(|e| format!("{MAX_POOL_RULES} rules: {e:?}"))?;
    Ok(())
}
