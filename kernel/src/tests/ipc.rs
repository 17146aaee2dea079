//! Servers and rendezvous: everything rvtest checks from user mode, and a
//! stress of 100,000 calls from four clients on several CPUs that must
//! leave nothing behind.

use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::{frames, heap};
use crate::proc::{self, KERNEL_PID};
use abi::SpawnOptions;
use alloc::format;

fn run(args: &[u8]) -> Result<u64, alloc::string::String> {
    let pid = proc::spawn::spawn("rvtest", args, &SpawnOptions::DEFAULT, KERNEL_PID).map_err(|e| format!("{e:?}"))?;
    proc::wait(KERNEL_PID, pid).map_err(|e| format!("{e:?}"))
}

pub fn rendezvous_servers_and_requests() -> TestResult {
    let status = run(b"")?;
    ensure!(status == 0, "rvtest exited with {status:#x}");
    Ok(())
}

pub fn stress_of_100000_calls_leaks_nothing() -> TestResult {
    // Warm up with a short run, then measure around the full one.
    ensure!(run(b"stress\x001000\x00")? == 0, "warm-up failed");
    crate::resource::pool::flush();
    crate::sched::reap();
    let before = (frames::stats().free, heap::stats().used, proc::count());
    ensure!(run(b"stress\x0025000\x00")? == 0, "stress failed");
    crate::resource::pool::flush();
    crate::sched::reap();
    let after = (frames::stats().free, heap::stats().used, proc::count());
    // Queues and tables keep their high-water capacity, and four clients on
    // several CPUs reach a new high-water mark at random, so the heap may end
    // a few hundred bytes up. A leak of even one 16-byte object per call would
    // show as 1.6 MB here, so 4 KiB still catches every per-call leak.
    ensure!(
        after.0 == before.0 && after.2 == before.2 && after.1.abs_diff(before.1) <= 4096,
        "{before:?} before, {after:?} after"
    );
    ensure!(
        crate::ipc::rendezvous::CALLS.load(core::sync::atomic::Ordering::Relaxed) >= 100_000,
        "fewer calls than expected"
    );
    Ok(())
}

pub fn batch_requests_and_distribution_server() -> TestResult {
    let pid = proc::spawn::spawn("batchtest", b"", &SpawnOptions::DEFAULT, KERNEL_PID).map_err(|e| format!("{e:?}"))?;
    let status = proc::wait(KERNEL_PID, pid).map_err(|e| format!("{e:?}"))?;
    ensure!(status == 0, "batchtest exited with {status:#x}");
    Ok(())
}
