//! `offbench [short] [qemu:MODEL]`: OFF2F's exec experiments on Tessera, in a boot with
//! the machine's disk (an ext2 image on virtio-blk; the program needs the
//! device right). Seed 001 fig. 4, tables 1 and 2: a small, a medium and a
//! huge program (`tiny`, `text128k`, `text16m`: 5 KiB, 133 KiB and 16 MiB
//! of text) run from the file system as ELF and as OFF2F; fig. 5, tables
//! 3–5: a build's many programs run again and again (`offmake.rs`). The
//! virtio-blk driver makes the disk as slow as each disk model (`dk`,
//! `sata`, `nvme`; crate `diskmodel`); demand loading as the paper's
//! systems, and the resource pool off. `qemu:MODEL`: QEMU throttles the
//! disk as MODEL (plain TCG, `DISK_MODEL`), so the driver waits for none,
//! and the figures are MODEL's.
//!
//! `BENCH,off2f,<metric>,<model>/<program>/<format>,<value>,<unit>`:
//! `exec_cold` (the median of the runs; the block cache emptied before
//! each, so that every byte comes from the disk) and `exec_warm` (right
//! after, the file's blocks cached): from before the file is opened to
//! after the program's end, as the paper's fork to wait. Then, of the last
//! cold run: `bytes_read` at exec, `disk_bytes` (what the disk moved),
//! `faults_text` (text pages filled by a copy), `faults_nvm_text` (NVM
//! pages mapped in place) and `faults_other`; `pages_read_exec` (pages of
//! the file exec read) and `pages_read_faults` (pages read from the file
//! at faults: OFF2F's data, by the file server; ELF's whole file is read
//! at exec). Times from the TSC (under
//! icount: instructions, plus the disk model's waits).
//!
//! The build: `make_time,<model>/<format>` (the whole run, cold cache at
//! its start), `make_disk_wait` (of it, the disk model's waits),
//! `make_disk_bytes`, `make_bytes_read` (at exec, all programs),
//! `make_pages_read_faults` (from the files at faults, all programs); per
//! program, of the first model's runs (the counts do not depend on the
//! model): `make_execs,<program>`, `make_text_bytes`, `make_data_bytes`
//! and `make_faults_text|nvm_text|other,<program>/<format>`.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;
#[path = "../offmake.rs"]
mod offmake;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use fsstack::{Stack, VIRTIO, copy_from_archive, value};
use tessera_rt::abi::{self, LoadPolicy};
use tessera_rt::{println, sys};
use user_programs::fsexec::{self, Cache};
use user_programs::off2fconv;

const PROGRAMS: [&str; 3] = ["tiny", "text128k", "text16m"];
const MODELS: [&str; 3] = ["dk", "sata", "nvme"];
/// Block cache pages: room for the huge program, so that warm is warm
/// (and a build finds its programs again).
const CACHE_PAGES: u32 = 8192;

fn line(metric: &str, param: &str, value: u64, unit: &str) {
    println!("BENCH,off2f,{metric},{param},{value},{unit}");
}

/// The text file's name in the NVM store: the bench's own.
fn text_name(program: &str) -> String {
    format!("bench:{program}")
}

/// One exec, timed; the exit status must be 0.
fn exec(path: &str) -> Result<(u64, fsexec::Exec, tessera_rt::abi::ProcInfo), String> {
    let t0 = sys::rdtsc();
    let (status, e, info) = fsexec::run(path, &[], &fsexec::options(LoadPolicy::Demand), Cache::Fresh)
        .map_err(|e| format!("{path}: {e}"))?;
    let ns = sys::tsc_to_ns(sys::rdtsc() - t0);
    if status != 0 {
        return Err(format!("{path}: exit status {status}"));
    }
    Ok((ns, e, info))
}

/// Copies `program` to `dir`/bin and converts it to `dir`/off2f; (text,
/// data) bytes.
fn install(program: &str, dir: &str) -> Result<(u64, u64), String> {
    let (elf, off) = (format!("{dir}/bin/{program}"), format!("{dir}/off2f/{program}"));
    copy_from_archive(program, &elf).map_err(|e| format!("copying: {e}"))?;
    let c = off2fconv::convert(&elf, &off, &text_name(program)).map_err(|e| format!("converting: {e}"))?;
    let file1 = off2fconv::read_file(&off)?;
    let h = off2f::Header::parse(&file1).map_err(|e| format!("{off}: {e}"))?;
    Ok((c.text_bytes, h.data_area().1))
}

/// The build (fig. 5) as ELF and as OFF2F; per-program figures with `detail`.
fn build_runs(stack: &Stack, model: &str, detail: bool) -> Result<(), String> {
    let dir = "/make";
    for sub in ["", "/bin", "/off2f"] {
        let _ = tessera_api::fs::client::mkdir(&format!("{dir}{sub}"), 0o755);
    }
    let mut sizes = Vec::new();
    for (p, _) in offmake::PROGRAMS {
        sizes.push((p, install(p, dir)?));
    }
    for format in ["elf", "off2f"] {
        let bin = if format == "elf" { "bin" } else { "off2f" };
        let run = offmake::run(stack, &format!("{dir}/{bin}"))?;
        let param = format!("{model}/{format}");
        line("make_time", &param, run.ns, "ns");
        line("make_disk_wait", &param, run.model_wait_ns, "ns");
        line("make_disk_bytes", &param, run.disk_bytes, "bytes");
        let read: u64 = run.programs.values().map(|t| t.bytes_read).sum();
        line("make_bytes_read", &param, read, "bytes");
        let paged: u64 = run.programs.values().map(|t| t.pages_read_faults).sum();
        line("make_pages_read_faults", &param, paged, "pages");
        if !detail {
            continue;
        }
        for (p, t) in &run.programs {
            let param = format!("{p}/{format}");
            if format == "elf" {
                line("make_execs", p, t.execs, "count");
                if let Some((_, (text, data))) = sizes.iter().find(|(n, _)| n == p) {
                    line("make_text_bytes", p, *text, "bytes");
                    line("make_data_bytes", p, *data, "bytes");
                }
            }
            line("make_faults_text", &param, t.faults_text, "faults");
            line("make_faults_nvm_text", &param, t.faults_nvm_text, "faults");
            line("make_faults_other", &param, t.faults_other, "faults");
            line("make_pages_read_faults", &param, t.pages_read_faults, "pages");
        }
    }
    Ok(())
}

/// `model`'s figures; the driver waits as `wait` (`none`: QEMU throttles).
fn one_model(model: &str, wait: &str, runs: usize, detail: bool) -> Result<(), String> {
    let stack = Stack::start_modelled(VIRTIO, wait, CACHE_PAGES, 0, false)?;
    let result = (|| {
        let _ = tessera_api::fs::client::mkdir("/bin", 0o755);
        let _ = tessera_api::fs::client::mkdir("/off2f", 0o755);
        for p in PROGRAMS {
            let (elf, off) = (format!("/bin/{p}"), format!("/off2f/{p}"));
            install(p, "")?;
            for (format, path) in [("elf", &elf), ("off2f", &off)] {
                let param = format!("{model}/{p}/{format}");
                let mut times = Vec::new();
                let mut last = None;
                for _ in 0..runs {
                    if !stack.drop_cache() {
                        return Err(String::from("the block cache cannot be emptied"));
                    }
                    let before = value(&stack.disk_stats(), "device_bytes");
                    let (ns, e, info) = exec(path)?;
                    let moved = value(&stack.disk_stats(), "device_bytes").saturating_sub(before);
                    times.push(ns);
                    last = Some((e, info, moved));
                }
                times.sort_unstable();
                line("exec_cold", &param, times[times.len() / 2], "ns");
                let (warm, _, _) = exec(path)?;
                line("exec_warm", &param, warm, "ns");
                if let Some((e, info, moved)) = last {
                    let (text, nvm, other) = fsexec::faults(&info);
                    line("bytes_read", &param, e.bytes_read, "bytes");
                    line("disk_bytes", &param, moved, "bytes");
                    line("faults_text", &param, text, "faults");
                    line("faults_nvm_text", &param, nvm, "faults");
                    line("faults_other", &param, other, "faults");
                    line("pages_read_exec", &param, e.bytes_read.div_ceil(4096), "pages");
                    line("pages_read_faults", &param, info.faults.paged, "pages");
                }
            }
        }
        build_runs(&stack, model, detail)
    })();
    // The machine's disk is left consistent (the harness checks it).
    let synced = tessera_api::fs::client::sync();
    stack.stop();
    if let (Ok(()), Err(e)) = (&result, synced) {
        return Err(format!("sync: {e}"));
    }
    result
}

fn main(args: &[&str]) -> i32 {
    let short = args.contains(&"short");
    let runs = if short { 1 } else { 3 };
    let throttled = args.iter().find_map(|a| a.strip_prefix("qemu:"));
    let models: &[&str] = match throttled {
        Some(m) => match MODELS.iter().position(|x| *x == m) {
            Some(i) => &MODELS[i..=i],
            None => {
                println!("BENCH-ERROR off2f: no disk model '{m}' ({})", MODELS.join(", "));
                return 1;
            }
        },
        None if short => &MODELS[2..],
        None => &MODELS,
    };
    // The paper's systems have no resource pool: a pooled region would
    // come back with its text present and hide the faults measured here.
    let pool = user_programs::pool::current();
    let off = match &pool {
        Ok(c) => sys::pool_set(
            &abi::PoolSettings {
                reuse: 0,
                reduce: 0,
                ..c.settings
            },
            &[],
        )
        .and_then(|_| sys::pool_flush()),
        Err(e) => Err(*e),
    };
    if off.is_err() {
        println!("BENCH-ERROR off2f: the resource pool cannot be turned off (the system right)");
        return 1;
    }
    let mut failed = false;
    for (i, model) in models.iter().enumerate() {
        let wait = if throttled.is_some() { "none" } else { model };
        // Per-program figures once: of the first model (a throttled boot
        // runs one model; only `dk`'s gives them).
        let detail = i == 0 && throttled.is_none_or(|m| m == MODELS[0]);
        if let Err(e) = one_model(model, wait, runs, detail) {
            println!("BENCH-ERROR off2f {model}: {e}");
            failed = true;
        }
    }
    // The store keeps only what others put there.
    for p in PROGRAMS.iter().chain(offmake::PROGRAMS.iter().map(|(p, _)| p)) {
        let _ = sys::nvm_delete(&text_name(p));
    }
    if let Ok(c) = pool {
        let _ = sys::pool_set(&c.settings, &c.rules);
    }
    i32::from(failed)
}
tessera_rt::entry!(main);
