//! `offbench [short]`: OFF2F's exec experiments (seed 001 fig. 4, tables 1
//! and 2) on Tessera: a small, a medium and a huge program (`tiny`,
//! `text128k`, `text16m`: 5 KiB, 133 KiB and 16 MiB of text) run from
//! the file system as ELF and as OFF2F, on a RAM disk made as slow as each
//! disk model (`dk`, `sata`, `nvme`; see the ramdisk server), with demand
//! loading as the paper's systems, and with the resource pool off.
//!
//! `BENCH,off2f,<metric>,<model>/<program>/<format>,<value>,<unit>`:
//! `exec_cold` (the median of the runs; the block cache emptied before
//! each, so that every byte comes from the disk) and `exec_warm` (right
//! after, the file's blocks cached): from before the file is opened to
//! after the program's end, as the paper's fork to wait. Then, of the last
//! cold run: `bytes_read` at exec, `disk_bytes` (what the disk moved),
//! `faults_text` (text pages filled by a copy), `faults_nvm_text` (NVM
//! pages mapped in place) and `faults_other`. Times from the TSC (under
//! icount: instructions, plus the disk model's waits).
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use fsstack::{Stack, value, write_file};
use tessera_rt::abi::{self, LoadPolicy};
use tessera_rt::{println, sys};
use user_programs::fsexec::{self, Cache};
use user_programs::off2fconv;

const PROGRAMS: [&str; 3] = ["tiny", "text128k", "text16m"];
const MODELS: [&str; 3] = ["dk", "sata", "nvme"];
/// Block cache pages: room for the huge program, so that warm is warm.
const CACHE_PAGES: u32 = 8192;

fn line(metric: &str, param: &str, value: u64, unit: &str) {
    println!("BENCH,off2f,{metric},{param},{value},{unit}");
}

/// Copies a program of the initial archive to the file system.
fn copy_from_archive(name: &str, to: &str) -> Result<(), String> {
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
    write_file(to, &data, 64 << 10).map_err(|e| format!("{to}: {e}"))
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

fn one_model(model: &str, runs: usize) -> Result<(), String> {
    let stack = Stack::start_modelled("root", model, CACHE_PAGES, 0, false)?;
    let result = (|| {
        let _ = tessera_api::fs::client::mkdir("/bin", 0o755);
        let _ = tessera_api::fs::client::mkdir("/off2f", 0o755);
        for p in PROGRAMS {
            let (elf, off) = (format!("/bin/{p}"), format!("/off2f/{p}"));
            copy_from_archive(p, &elf).map_err(|e| format!("copying: {e}"))?;
            off2fconv::convert(&elf, &off, &text_name(p)).map_err(|e| format!("converting: {e}"))?;
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
                }
            }
        }
        Ok(())
    })();
    stack.stop();
    result
}

fn main(args: &[&str]) -> i32 {
    let short = args.contains(&"short");
    let runs = if short { 1 } else { 3 };
    let models: &[&str] = if short { &MODELS[2..] } else { &MODELS };
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
    for model in models {
        if let Err(e) = one_model(model, runs) {
            println!("BENCH-ERROR off2f {model}: {e}");
            failed = true;
        }
    }
    // The store keeps only what others put there.
    for p in PROGRAMS {
        let _ = sys::nvm_delete(&text_name(p));
    }
    if let Ok(c) = pool {
        let _ = sys::pool_set(&c.settings, &c.rules);
    }
    i32::from(failed)
}
tessera_rt::entry!(main);
