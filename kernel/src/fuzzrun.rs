//! The long fuzz run (`fuzz=<calls>` on the command line, `fuzz_seed=<n>`
//! to pick the seeds): rounds of four `fuzz` processes at once, on every
//! CPU, drawing on each other's identifiers, half of them killed in the
//! middle of whatever call they make; after each round the kernel's
//! resource use (free frames, heap in use apart from the resource tables,
//! processes) is compared with what it was after the first round (a
//! warm-up: tables grow, kernel stacks get their page tables). Each round
//! prints one `FUZZ-ROUND` line; the run ends with `FUZZ-DONE` and the
//! machine's exit status says whether every round came back. The seeds
//! of a round follow from `fuzz_seed` alone, so a run is repeated by its
//! command line (what a killed fuzzer got through depends on timing).

use abi::SpawnOptions;
use alloc::format;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::mm::{frames, heap};
use kcore::println;

/// Calls each fuzzer of a round makes (if it is not killed first).
const CALLS_PER_FUZZER: u64 = 20_000;
/// Fuzzers of a round.
const FUZZERS: usize = 4;
/// How far the heap in use may differ after a round from the first
/// round's (a few kernel lists' capacities settle while it runs).
const HEAP_SLACK: usize = 16 << 10;

fn footprint() -> (usize, usize, usize) {
    resource::pool::flush();
    ipc::rendezvous::flush_free_calls();
    kcore::computation::reap_all();
    (
        frames::stats().free,
        heap::stats().used - resource::table_bytes(),
        proc::count(),
    )
}

fn next(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *seed >> 1
}

/// One round; how many calls its fuzzers were asked to make, or why it
/// went wrong.
fn round(seed: &mut u64) -> Result<u64, alloc::string::String> {
    let mut pids = alloc::vec::Vec::new();
    for _ in 0..FUZZERS {
        let args = format!("{CALLS_PER_FUZZER}\0{}\0", next(seed));
        let pid = resource::proc::spawn::spawn("fuzz", args.as_bytes(), &SpawnOptions::DEFAULT, KERNEL_PID)
            .map_err(|e| format!("spawn: {e:?}"))?;
        pids.push(pid);
    }
    for (i, &pid) in pids.iter().enumerate() {
        if i % 2 == 1 {
            sched::sleep_until(kcore::clock::nanos() + 2_000_000 + (next(seed) % 8) * 1_000_000);
            let _ = proc::kill(pid);
        }
    }
    for (i, &pid) in pids.iter().enumerate() {
        let status = proc::wait(KERNEL_PID, pid).map_err(|e| format!("wait: {e:?}"))?;
        if i % 2 == 0 && status != 0 {
            return Err(format!("fuzzer {pid} exited with {status:#x}"));
        }
    }
    Ok(CALLS_PER_FUZZER * FUZZERS as u64)
}

/// Runs rounds until `calls` calls were asked for; never returns.
pub fn run(calls: &str, seed: Option<&str>) -> ! {
    let calls: u64 = calls.parse().unwrap_or(1_000_000);
    let first: u64 = seed.and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut seed = first;
    let cpus = kcore::cpu::online_count();
    println!("FUZZ-BEGIN calls={calls} seed={first} cpus={cpus}");
    let t0 = kcore::clock::nanos();
    let mut asked = 0;
    let mut ok = true;
    let mut base = None;
    let mut rounds = 0u64;
    while asked < calls {
        match round(&mut seed) {
            Ok(n) => asked += n,
            Err(e) => {
                println!("FUZZ-ERROR round {rounds}: {e}");
                ok = false;
                break;
            }
        }
        rounds += 1;
        let now = footprint();
        let base = *base.get_or_insert(now);
        let back = now.0 == base.0 && now.2 == base.2 && now.1.abs_diff(base.1) <= HEAP_SLACK;
        println!(
            "FUZZ-ROUND {rounds} calls={asked} free_frames={} heap={} processes={} {}",
            now.0,
            now.1,
            now.2,
            if back { "back" } else { "LEAK" }
        );
        if !back {
            ok = false;
            break;
        }
    }
    let seconds = (kcore::clock::nanos() - t0) / 1_000_000_000;
    println!("FUZZ-DONE calls={asked} rounds={rounds} seed={first} cpus={cpus} seconds={seconds} ok={ok}");
    kcore::arch::x86_64::qemu_exit(ok)
}
