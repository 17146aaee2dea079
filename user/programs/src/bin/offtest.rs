//! OFF2F end to end (seed 001), run by `make test` in a boot of its own
//! with an NVM store: programs of the initial archive are copied to the
//! file system, converted there (file 1 under /off2f, text into the NVM
//! store), checked against their ELF files, and run from the file system
//! as ELF and as OFF2F, eager and demand, fresh and from the pool. Then
//! what must be refused is: files that cannot be converted, hostile
//! headers, a text file that is not the header's, the store to a process
//! without the right (devtest checks that no driver gets the NVM device).
//! Exits 0 if every check held.
//!
//!   offtest          everything
//!   offtest crash    stores a file until killed (the crash test's part)
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use fsstack::{Stack, copy_from_archive, write_file};
use tessera_rt::abi::{self, Error, LoadPolicy, NvmRecord, NvmStoreInfo, ProcInfo, SpawnOptions};
use tessera_rt::{println, sys};
use testdata::Rng;
use user_programs::fsexec::{self, Cache, Exec, Format};
use user_programs::off2fconv;

#[derive(Default)]
struct Checks {
    failed: u32,
    passed: u32,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
            println!("offtest: FAILED {what}");
        }
    }
}

/// The programs tried: what each proves run right (exit status 0).
const PROGRAMS: &[(&str, &[&str])] = &[
    // Arguments arrive intact.
    ("argcheck", &["x", "yy", "zzz"]),
    // Data has its initial value, BSS is zero (also from the pool).
    ("fresh", &[]),
    // 200 BSS pages touched: data and BSS faults beside the text's.
    ("pa200", &[]),
    // 16 MiB of text: files, plates and text files far larger than one
    // buffer the kernel copies.
    ("text16m", &[]),
];

fn nvm_file(name: &str) -> Option<NvmRecord> {
    sys::inspect_all::<NvmRecord>(0)
        .ok()?
        .into_iter()
        .find(|r| abi::name_str(&r.name) == name)
}

fn nvm_info() -> NvmStoreInfo {
    sys::inspect_all::<NvmStoreInfo>(0)
        .ok()
        .and_then(|v| v.first().copied())
        .unwrap_or_default()
}

fn run(path: &str, args: &[&str], policy: LoadPolicy, cache: Cache) -> Result<(u64, Exec, ProcInfo), String> {
    fsexec::run(path, args, &fsexec::options(policy), cache).map_err(|e| format!("{path}: {e}"))
}

/// `offtest crash`: stores text file `crash` again and again until the
/// host kills the machine (xtask's nvmcrash.rs judges the NVM image after);
/// version v is `(1 + v % 3)` MiB of the byte `v % 251 + 1`.
fn crash() -> i32 {
    for v in 1..=1000u64 {
        let data = alloc::vec![(v % 251) as u8 + 1; (1 + (v % 3) as usize) << 20];
        println!("offtest: storing {v}");
        if let Err(e) = sys::nvm_store("crash", &data) {
            println!("offtest: FAILED storing version {v}: {e:?}");
            return 1;
        }
    }
    println!("offtest: FAILED never killed");
    1
}

fn main(args: &[&str]) -> i32 {
    if args.get(1) == Some(&"crash") {
        return crash();
    }
    let mut c = Checks::default();
    if nvm_info().size == 0 {
        println!("offtest: FAILED the machine has no NVM store");
        return 1;
    }
    // The disk as slow as a SATA SSD (crate diskmodel): checked at the end.
    let stack = match Stack::start_modelled("root", "sata", 256, 0, false) {
        Ok(s) => s,
        Err(e) => {
            println!("offtest: FAILED storage servers: {e}");
            return 1;
        }
    };
    // The pool off while faults are counted: a pooled region comes back
    // with its pages present (`pool` below turns it on for itself).
    let off = abi::PoolSettings {
        reuse: 0,
        reduce: 0,
        unused_ns: 50_000_000,
        interval_ns: 50_000_000,
    };
    c.check(
        sys::pool_set(&off, &[]).is_ok() && sys::pool_flush().is_ok(),
        "pool off for the fault counts",
    );
    let _ = tessera_api::fs::client::mkdir("/bin", 0o755);
    // File 1 of each program under the same name in a directory of its
    // own: argv[0] is the file's name, the same for both formats.
    let _ = tessera_api::fs::client::mkdir("/off2f", 0o755);
    for &(name, args) in PROGRAMS {
        programs(&mut c, name, args);
    }
    pool(&mut c);
    held_while_replaced(&mut c);
    refusals(&mut c);
    hostile_headers(&mut c);
    paged_data(&mut c, &stack);
    let disk = stack.disk_stats();
    let (read, waited) = (
        fsstack::value(&disk, "blocks_read"),
        fsstack::value(&disk, "model_wait_ns"),
    );
    c.check(
        disk.lines().any(|l| l == "model sata") && read != u64::MAX && waited != u64::MAX && waited > 0,
        &format!("the disk waited as the sata model: {read} blocks read, {waited} ns waited"),
    );
    stack.stop();
    println!("offtest: {} checks passed, {} failed", c.passed, c.failed);
    i32::from(c.failed != 0)
}

/// One program: copied, converted, checked, converted again (nothing
/// changes), run both ways with both policies.
fn programs(c: &mut Checks, name: &str, args: &[&str]) {
    let (elf, off) = (format!("/bin/{name}"), format!("/off2f/{name}"));
    let text = off2fconv::default_text_name(&elf);
    let size = match copy_from_archive(name, &elf) {
        Ok(n) => n as u64,
        Err(e) => return c.check(false, &e),
    };
    match off2fconv::convert(&elf, &off, &text) {
        Ok(r) => c.check(
            r.file1_written && r.text_stored,
            &format!("{name}: first conversion writes both files"),
        ),
        Err(e) => return c.check(false, &e),
    }
    let again = off2fconv::convert(&elf, &off, &text);
    c.check(
        again.as_ref().is_ok_and(|r| !r.file1_written && !r.text_stored),
        &format!("{name}: converting again changes nothing ({again:?})"),
    );
    let checked = off2fconv::check(&elf, &off);
    c.check(checked.is_ok(), &format!("{name}: reverse check: {checked:?}"));
    // The pages of file 1 the data segments' bytes lie in: what the file
    // server supplies at faults (demand: those touched) or at creation.
    let data_pages = off2fconv::read_file(&off)
        .ok()
        .and_then(|f1| off2f::Header::parse(&f1).ok().map(|h| data_pages(&h)))
        .unwrap_or(u64::MAX);
    for policy in [LoadPolicy::Demand, LoadPolicy::Eager] {
        for (path, format) in [(&elf, Format::Elf), (&off, Format::Off2f)] {
            let what = format!("{name} as {} ({policy:?})", format.name());
            let (status, exec, info) = match run(path, args, policy, Cache::Fresh) {
                Ok(r) => r,
                Err(e) => {
                    c.check(false, &format!("{what}: {e}"));
                    continue;
                }
            };
            c.check(status == 0, &format!("{what}: exit status {status}"));
            c.check(exec.format == format, &format!("{what}: seen as {:?}", exec.format));
            let (copied, nvm, _) = fsexec::faults(&info);
            let read_ok = match format {
                Format::Elf => exec.bytes_read == size,
                // The header page alone: the data comes at faults, the
                // text never from the disk.
                Format::Off2f => exec.first_read == 4096 && exec.bytes_read == 4096,
            };
            c.check(
                read_ok,
                &format!(
                    "{what}: exec read {} bytes ({} first)",
                    exec.bytes_read, exec.first_read
                ),
            );
            let paged = info.faults.paged;
            let faults_ok = match (policy, format) {
                (LoadPolicy::Eager, Format::Elf) => info.faults.total() == 0 && paged == 0,
                // Every data page read at creation, none at a fault.
                (LoadPolicy::Eager, Format::Off2f) => info.faults.total() == 0 && paged == data_pages,
                (_, Format::Elf) => copied > 0 && nvm == 0 && paged == 0,
                // Data pages read as they are touched: some, never more
                // than the data faults or the data's pages.
                (_, Format::Off2f) => {
                    copied == 0
                        && nvm > 0
                        && paged <= info.faults.data.min(data_pages)
                        && (data_pages == 0 || paged > 0)
                }
            };
            c.check(faults_ok, &format!("{what}: faults {:?}", info.faults));
        }
    }
    // Loaded for the cache once (the fresh runs above made other plate
    // versions), a second exec of the unchanged file reads nothing.
    let first = fsexec::load(&off, Cache::Use);
    c.check(first.is_ok(), &format!("{name}: loaded for the cache ({first:?})"));
    let cached = fsexec::load(&off, Cache::Use);
    c.check(
        cached
            .as_ref()
            .is_ok_and(|e| e.bytes_read == 0 && e.format == Format::Off2f),
        &format!("{name}: an unchanged file is not read again ({cached:?})"),
    );
}

/// The pages of file 1 holding bytes of the data segments.
fn data_pages(h: &off2f::Header) -> u64 {
    h.segments()
        .filter(|s| s.place == off2f::Place::Data && s.filesz > 0)
        .map(|s| (s.vaddr % 4096 + s.filesz).div_ceil(4096))
        .sum()
}

/// A pooled space of an OFF2F program keeps its text region, which maps
/// the NVM pages: reused, it copies nothing, and it holds the text file
/// until the pool lets it go.
fn pool(c: &mut Checks) {
    let (off, text) = ("/off2f/fresh", off2fconv::default_text_name("/bin/fresh"));
    // Reuse without reduce: nothing leaves the pool while it is looked at,
    // however slowly the machine runs.
    let settings = abi::PoolSettings {
        reuse: 1,
        reduce: 0,
        unused_ns: 50_000_000,
        interval_ns: 50_000_000,
    };
    c.check(sys::pool_set(&settings, &[]).is_ok(), "pool: reuse on, reduce off");
    let _ = sys::pool_flush();
    let before = nvm_file(&text).map_or(u64::MAX, |r| r.users);
    c.check(
        before == 0,
        &format!("pool: nothing maps {text} after a flush ({before})"),
    );
    for round in 0..3 {
        match run(off, &[], LoadPolicy::Eager, Cache::Use) {
            // The pooled data region's pages went back to the file: the
            // first round reads them, the later ones find them in the
            // pooled program's page cache (no read), each copied for the
            // process, with their initial values (`fresh` checks them
            // after the previous round wrote its own).
            Ok((status, _, info)) => c.check(
                status == 0 && info.faults.total() == 0 && (info.faults.paged > 0) == (round == 0),
                &format!("pool: round {round}: status {status}, faults {:?}", info.faults),
            ),
            Err(e) => c.check(false, &e),
        }
    }
    let pooled = nvm_file(&text).map_or(0, |r| r.users);
    c.check(pooled > 0, "pool: the pooled program and space map the text file");
    let full = sys::inspect_all::<abi::PoolRecord>(0)
        .ok()
        .and_then(|v| v.into_iter().find(|r| r.kind == abi::PoolKind::Full as u64))
        .map_or(0, |r| r.hits);
    c.check(
        full >= 2,
        &format!("pool: rounds 2 and 3 took the pooled space ({full} hits)"),
    );
    let _ = sys::pool_flush();
    let after = nvm_file(&text).map_or(u64::MAX, |r| r.users);
    c.check(after == 0, &format!("pool: flushed, nothing maps the text ({after})"));
}

/// A running program's text survives its file's replacement: the store
/// never gives its pages to another file while it runs.
fn held_while_replaced(c: &mut Checks) {
    let elf = "/bin/sleeper";
    let off = "/off2f/sleeper";
    let text = off2fconv::default_text_name(elf);
    if let Err(e) = copy_from_archive("sleeper", elf).and_then(|_| off2fconv::convert(elf, off, &text)) {
        return c.check(false, &e);
    }
    let old = nvm_file(&text).map_or(0, |r| r.pages);
    let exec = match fsexec::load(off, Cache::Fresh) {
        Ok(e) => e,
        Err(e) => return c.check(false, &format!("sleeper: {e}")),
    };
    let options = fsexec::options(LoadPolicy::Demand);
    let pid = match sys::spawn(&exec.plate, &["300"], &options) {
        Ok(p) => p,
        Err(e) => return c.check(false, &format!("sleeper: spawn: {e:?}")),
    };
    sys::sleep_ns(50_000_000);
    // Replace it, then store a file of exactly its old size, which best fit
    // would put in the old pages were they free: int3 everywhere.
    let replaced = sys::nvm_store(&text, &alloc::vec![0x90u8; 4096]);
    let decoy = sys::nvm_store("decoy", &alloc::vec![0xccu8; old as usize * 4096]);
    c.check(
        replaced == Ok(true) && decoy == Ok(true),
        "sleeper: text replaced, decoy stored",
    );
    let info = nvm_info();
    c.check(
        info.orphaned_pages >= old,
        &format!(
            "sleeper: {} old pages still held ({} orphaned)",
            old, info.orphaned_pages
        ),
    );
    let mut end = ProcInfo::default();
    let status = sys::wait_info(pid, &mut end);
    c.check(status == Ok(0), &format!("sleeper ran on its old text: {status:?}"));
    let _ = sys::pool_flush();
    c.check(
        nvm_info().orphaned_pages == 0,
        "sleeper: its old pages are let go at its end",
    );
    // The file 1 now names a text that is no longer the store's.
    let stale = fsexec::load(off, Cache::Fresh)
        .map_err(|e| format!("{e}"))
        .and_then(|e| sys::spawn(&e.plate, &["1"], &options).map_err(|e| format!("{e:?}")));
    c.check(
        matches!(&stale, Err(e) if e.contains("BadProgram")),
        &format!("a file 1 whose text was replaced is refused: {stale:?}"),
    );
    let _ = sys::nvm_delete("decoy");
}

/// What cannot be converted or stored is refused with a reason, and
/// changes nothing.
fn refusals(c: &mut Checks) {
    let before = nvm_info().sequence;
    let r = off2fconv::convert("/hello.txt", "/hello.off", "hello.text");
    c.check(
        matches!(&r, Err(e) if e.contains("cannot convert")),
        &format!("a text file is no ELF: {r:?}"),
    );
    // hello with its second segment's file offset moved off its address's
    // page offset: text not page-aligned in the file.
    if let Ok(mut elf) = off2fconv::read_file("/bin/argcheck") {
        let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap_or([0; 8])) as usize;
        let at = phoff + 56 + 8;
        if elf.len() > at + 8 {
            let off = u64::from_le_bytes(elf[at..at + 8].try_into().unwrap_or([0; 8])) + 8;
            elf[at..at + 8].copy_from_slice(&off.to_le_bytes());
        }
        let _ = write_file("/bin/misaligned", &elf, 1 << 16);
        let r = off2fconv::convert("/bin/misaligned", "/bin/misaligned.off", "misaligned");
        c.check(
            matches!(&r, Err(e) if e.contains("cannot convert")),
            &format!("a segment off its page offset is refused: {r:?}"),
        );
        c.check(
            tessera_api::fs::client::stat("/bin/misaligned.off").is_err() && nvm_file("misaligned").is_none(),
            "a refused conversion writes nothing",
        );
    }
    c.check(
        sys::nvm_store("a/b", b"x") == Err(Error::Invalid) && sys::nvm_store("", b"x") == Err(Error::Invalid),
        "bad names are refused",
    );
    c.check(nvm_info().sequence == before, "refusals change nothing in the store");
    // Without the right: a child holding none.
    let options = SpawnOptions {
        rights: 0,
        ..SpawnOptions::DEFAULT
    };
    let status = sys::spawn("off2f", &["rm", "bin:fresh"], &options).and_then(sys::wait);
    c.check(
        status == Ok(1) && nvm_file("bin:fresh").is_some(),
        "no NVM right, no delete",
    );
}

/// File 1 headers with bytes changed (and their checksum made right, so
/// that the kernel's own checks are what stands): every one refused or
/// run as a process that may die alone; none harms the kernel.
fn hostile_headers(c: &mut Checks) {
    let Ok(file1) = off2fconv::read_file("/off2f/argcheck") else {
        return c.check(false, "hostile: no /off2f/argcheck");
    };
    let Ok(h) = off2f::Header::parse(&file1) else {
        return c.check(false, "hostile: /off2f/argcheck does not parse");
    };
    let (len, data_end) = (h.len(), 4096 + h.data_area().1 as usize);
    let mut rng = Rng(0x0ff2f);
    let (mut refused, mut ran) = (0, 0);
    for round in 0..300u64 {
        let mut page = file1[..data_end].to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(len as u64) as usize;
            page[at] ^= 1 << rng.below(8);
        }
        if round % 2 == 0 {
            // The checksum made right: the header's fields must be checked.
            page[160..168].fill(0);
            let crc = off2f::CRC64.checksum(&page[..len]);
            page[160..168].copy_from_slice(&crc.to_le_bytes());
        }
        let name = format!("fs/hostile{round}");
        if sys::plate_create(&name, round + 1, &page).is_err() {
            continue;
        }
        match sys::spawn(&name, &["x", "yy", "zzz"], &SpawnOptions::DEFAULT) {
            Ok(pid) => {
                ran += 1;
                sys::sleep_ns(2_000_000);
                let _ = sys::kill(pid);
                let _ = sys::wait(pid);
            }
            Err(_) => refused += 1,
        }
    }
    println!("offtest: hostile headers: {refused} refused, {ran} ran");
    // Every other one has a wrong checksum: at least those.
    c.check(refused >= 150, &format!("hostile headers: {refused} of 300 refused"));
    // The kernel still runs OFF2F programs.
    let ok = run("/off2f/argcheck", &["x", "yy", "zzz"], LoadPolicy::Demand, Cache::Fresh);
    c.check(
        matches!(ok, Ok((0, _, _))),
        "after hostile headers, /off2f/argcheck still runs",
    );
}

/// The pages the live processes hold (their own memory: the servers'
/// heaps and this program's may grow, which is no kernel leak), and each.
fn process_pages() -> (u64, Vec<(u64, u64)>) {
    let mut pids = [0u64; 64];
    let n = sys::proc_list(&mut pids).unwrap_or(0).min(64);
    let each: Vec<(u64, u64)> = pids[..n]
        .iter()
        .filter_map(|&pid| sys::proc_info(pid).ok().map(|p| (pid, p.resident_pages)))
        .collect();
    (each.iter().map(|(_, r)| r).sum(), each)
}

/// Frames free or held by processes as their memory, kernel heap in use
/// and processes, once the pool and the file server's kernel file caches
/// are empty and the kernel has settled (two looks alike).
fn footprint() -> (u64, u64, u64) {
    let mut last = (0, 0, 0);
    for _ in 0..100 {
        let _ = sys::pool_flush();
        // The caches of closed files are kept for their next open.
        let _ = tessera_api::fs::client::drop_pages();
        sys::sleep_ns(20_000_000);
        let i = sys::sys_info().unwrap_or_default();
        let now = (i.frames_free + process_pages().0, i.heap_used, i.processes);
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// File 1's data read at faults by the file server (its pager), and
/// what goes wrong with it: a file 1 cut short, a header page cut short,
/// a data area past the file's end, a text file missing from the store,
/// a file 1 changed after exec (its pages can no longer be read: the
/// process dies alone, an eager spawn is refused), a pager that is no
/// process. Twice, and the second round leaves nothing behind.
fn paged_data(c: &mut Checks, stack: &Stack) {
    let before_round = |c: &mut Checks| paged_round(c, stack);
    before_round(c);
    let before = footprint();
    before_round(c);
    let after = footprint();
    c.check(
        after.0 == before.0 && after.2 == before.2 && after.1.abs_diff(before.1) <= 1024,
        &format!(
            "paged data: frames/heap/processes {before:?} before, {after:?} after; \
             pages by process {:?}",
            process_pages().1
        ),
    );
}

fn paged_round(c: &mut Checks, stack: &Stack) {
    let Ok(file1) = off2fconv::read_file("/off2f/fresh") else {
        return c.check(false, "paged: no /off2f/fresh");
    };
    let Ok(h) = off2f::Header::parse(&file1) else {
        return c.check(false, "paged: /off2f/fresh does not parse");
    };
    let data_end = 4096 + h.data_area().1 as usize;
    let demand = fsexec::options(LoadPolicy::Demand);
    let eager = fsexec::options(LoadPolicy::Eager);
    let spawn_of = |path: &str, options: &SpawnOptions| {
        fsexec::load(path, Cache::Fresh)
            .map_err(|e| format!("{e}"))
            .and_then(|e| sys::spawn(&e.plate, &[], options).map_err(|e| format!("{e:?}")))
    };
    // A file 1 cut inside its data area, and one cut inside its header.
    let _ = write_file("/off2f/cut", &file1[..4096 + (data_end - 4096) / 2], 1 << 16);
    let cut = fsexec::load("/off2f/cut", Cache::Fresh);
    c.check(
        matches!(&cut, Err(e) if format!("{e}").contains("its header names")),
        &format!("paged: a file 1 cut short is refused: {cut:?}"),
    );
    let _ = write_file("/off2f/cut", &file1[..100], 1 << 16);
    let cut = fsexec::load("/off2f/cut", Cache::Fresh);
    c.check(
        matches!(&cut, Err(e) if format!("{e}").contains("bad OFF2F header")),
        &format!("paged: a header page cut short is refused: {cut:?}"),
    );
    // The kernel's own checks: a pager that says the file is shorter than
    // the header's data area, a head shorter than a page, no pager.
    let fs = tessera_api::fs::client::server().unwrap_or(0);
    let source = |size: u64, pager: u64| abi::PagerSource {
        pager,
        object: [0; 4],
        size,
    };
    let short = sys::plate_paged("fs/paged-short", 1, &file1[..4096], &source(data_end as u64 - 1, fs))
        .and_then(|_| sys::spawn("fs/paged-short", &[], &demand));
    c.check(
        short == Err(Error::BadProgram),
        &format!("paged: a data area past the file's end is refused: {short:?}"),
    );
    let head = sys::plate_paged("fs/paged-head", 1, &file1[..100], &source(data_end as u64, fs))
        .and_then(|_| sys::spawn("fs/paged-head", &[], &demand));
    c.check(
        head == Err(Error::BadProgram),
        &format!("paged: a head shorter than the header page is refused: {head:?}"),
    );
    let nobody = sys::plate_paged("fs/paged-nobody", 1, &file1[..4096], &source(data_end as u64, 1 << 40));
    c.check(
        nobody == Err(Error::NotFound),
        &format!("paged: a pager that is no process is refused: {nobody:?}"),
    );
    // The pager's entry called by a process itself, naming file 1 as
    // exec would: the file server answers only the kernel's calls, so no
    // file's bytes reach a process that never opened it.
    let forged = forged_page_in(fs, &file1);
    c.check(
        forged == Err(Error::Denied),
        &format!("paged: a process's own call to the pager's entry is refused: {forged:?}"),
    );
    // A text file missing from the store.
    let missing = off2fconv::convert("/bin/argcheck", "/off2f/argmiss", "argmiss")
        .and_then(|_| sys::nvm_delete("argmiss").map_err(|e| format!("{e:?}")))
        .and_then(|_| spawn_of("/off2f/argmiss", &demand));
    c.check(
        matches!(&missing, Err(e) if e.contains("NotFound")),
        &format!("paged: a text file missing from the store is refused: {missing:?}"),
    );
    // File 1 written again (the same bytes, a new time) after exec read
    // its header: the file server no longer takes it for the file exec
    // saw, and the process dies alone at its first data fault.
    let errors_before = fsstack::value(&stack.fs_stats(), "page_in_errors");
    let _ = write_file("/off2f/changed", &file1, 1 << 16);
    let changed = fsexec::load("/off2f/changed", Cache::Fresh).map_err(|e| format!("{e}"));
    sys::sleep_ns(2_000_000);
    let _ = write_file("/off2f/changed", &file1, 1 << 16);
    let status = changed
        .as_ref()
        .map_err(|e| e.clone())
        .and_then(|e| sys::spawn(&e.plate, &[], &demand).map_err(|e| format!("{e:?}")))
        .and_then(|pid| sys::wait(pid).map_err(|e| format!("{e:?}")));
    c.check(
        status == Ok(abi::KILLED_STATUS),
        &format!("paged: a file 1 changed after exec kills its process alone: {status:?}"),
    );
    let refused = changed
        .as_ref()
        .map_err(|e| e.clone())
        .and_then(|e| sys::spawn(&e.plate, &[], &eager).map_err(|e| format!("{e:?}")));
    c.check(
        refused.is_err(),
        &format!("paged: ... and an eager spawn of it is refused: {refused:?}"),
    );
    let errors = fsstack::value(&stack.fs_stats(), "page_in_errors");
    c.check(
        errors != u64::MAX && errors > errors_before,
        &format!("paged: the file server refused the page-ins ({errors_before} -> {errors})"),
    );
    // Read again, the file runs; a server's reply (a file read) lands in
    // a data page still in file 1.
    let again = run(
        "/off2f/changed",
        &["read", "/off2f/fresh"],
        LoadPolicy::Demand,
        Cache::Fresh,
    );
    c.check(
        matches!(&again, Ok((0, _, i)) if i.faults.paged > 0),
        &format!("paged: loaded afresh, it runs and reads into its data: {again:?}"),
    );
    for f in ["/off2f/cut", "/off2f/changed", "/off2f/argmiss"] {
        let _ = tessera_api::fs::client::unlink(f);
    }
}

/// Calls file server `fs` on its pager entry for the first page of
/// `/off2f/fresh` (whose bytes are `file1`) as the kernel would: the
/// result, and Err(Invalid) if the reply held any of the file's bytes.
fn forged_page_in(fs: u64, file1: &[u8]) -> Result<usize, Error> {
    let st = tessera_api::fs::client::stat("/off2f/fresh").map_err(|_| Error::NotFound)?;
    let object = tessera_api::fs::pager_object(st.ino, st.size as u64, st.mtime);
    let mut msg = Vec::new();
    for w in object.iter().chain(&[0, 4096]) {
        msg.extend_from_slice(&w.to_le_bytes());
    }
    let mut page = alloc::vec![0u8; 4096];
    let n = sys::call(fs, abi::PAGER_ENTRY, &msg, &mut page)?;
    if n > 0 && page[..n] == file1[..n] {
        return Err(Error::Invalid);
    }
    Ok(n)
}

tessera_rt::entry!(main);
