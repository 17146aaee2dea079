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
use fsstack::{Stack, write_file};
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

/// Copies a program of the initial archive to the file system.
fn copy_from_archive(name: &str, to: &str) -> Result<usize, String> {
    let plate = sys::plate_find(&format!("bin/{name}")).map_err(|e| format!("bin/{name}: {e:?}"))?;
    let mut data = Vec::new();
    let mut buf = alloc::vec![0u8; 64 << 10];
    loop {
        let n = sys::plate_read(plate, data.len() as u64, &mut buf).map_err(|e| format!("{e:?}"))?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
    }
    write_file(to, &data, 64 << 10).map_err(|e| format!("{to}: {e}"))?;
    Ok(data.len())
}

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
    let stack = match Stack::start("root", 256, 0, false) {
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
    let data_bytes = off2fconv::read_file(&off)
        .ok()
        .and_then(|f1| off2f::Header::parse(&f1).ok().map(|h| h.data_area().1))
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
                // The header page, then the data area: never the text.
                Format::Off2f => exec.first_read == 4096 && exec.bytes_read == 4096 + data_bytes,
            };
            c.check(
                read_ok,
                &format!(
                    "{what}: exec read {} bytes ({} first)",
                    exec.bytes_read, exec.first_read
                ),
            );
            let faults_ok = match (policy, format) {
                (LoadPolicy::Eager, _) => info.faults.total() == 0,
                (_, Format::Elf) => copied > 0 && nvm == 0,
                (_, Format::Off2f) => copied == 0 && nvm > 0,
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
            Ok((status, _, info)) => c.check(
                status == 0 && info.faults.total() == 0,
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

tessera_rt::entry!(main);
