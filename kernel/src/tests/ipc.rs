//! Servers and rendezvous: everything rvtest checks from user mode, and a
//! stress of 100,000 calls from four clients on several CPUs that must
//! leave nothing behind.

use abi::SpawnOptions;
use alloc::format;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::{frames, heap};

/// Runs `program` with `args` (NUL-separated) on `cpu` and returns its
/// exit status.
fn run_on(program: &str, args: &[u8], cpu: u64) -> Result<u64, alloc::string::String> {
    let options = SpawnOptions {
        cpu,
        ..SpawnOptions::DEFAULT
    };
    let pid = resource::proc::spawn::spawn(program, args, &options, KERNEL_PID).map_err(|e| format!("{e:?}"))?;
    proc::wait(KERNEL_PID, pid).map_err(|e| format!("{e:?}"))
}

fn run(args: &[u8]) -> Result<u64, alloc::string::String> {
    run_on("rvtest", args, abi::ANY_CPU)
}

pub fn rendezvous_servers_and_requests() -> TestResult {
    let status = run(b"")?;
    ensure!(status == 0, "rvtest exited with {status:#x}");
    Ok(())
}

/// AnT's rings (ringtest checks them from user mode); a process's rings go
/// back with it: the second run leaves the frames and the heap as they were.
pub fn request_and_result_rings() -> TestResult {
    ensure!(run_on("ringtest", b"", abi::ANY_CPU)? == 0, "ringtest failed");
    let footprint = || {
        resource::pool::flush();
        ipc::rendezvous::flush_free_calls();
        kcore::computation::reap_all();
        (frames::stats().free, heap::stats().used, proc::count())
    };
    let before = footprint();
    ensure!(run_on("ringtest", b"", abi::ANY_CPU)? == 0, "ringtest failed again");
    let after = footprint();
    ensure!(
        after.0 == before.0 && after.2 == before.2 && super::heap_back(before.1, after.1),
        "{before:?} before, {after:?} after"
    );
    Ok(())
}

pub fn stress_of_100000_calls_leaks_nothing() -> TestResult {
    // Warm up with a short run, then measure around the full one.
    ensure!(run(b"stress\x001000\x00")? == 0, "warm-up failed");
    resource::pool::flush();
    ipc::rendezvous::flush_free_calls();
    kcore::computation::reap_all();
    let before = (frames::stats().free, heap::stats().used, proc::count());
    ensure!(run(b"stress\x0025000\x00")? == 0, "stress failed");
    resource::pool::flush();
    ipc::rendezvous::flush_free_calls();
    kcore::computation::reap_all();
    let after = (frames::stats().free, heap::stats().used, proc::count());
    ensure!(
        after.0 == before.0 && after.2 == before.2 && super::heap_back(before.1, after.1),
        "{before:?} before, {after:?} after"
    );
    ensure!(
        ipc::rendezvous::CALLS.load(core::sync::atomic::Ordering::Relaxed) >= 100_000,
        "fewer calls than expected"
    );
    Ok(())
}

/// batchtest, then again with its batches a hundred times over: the second
/// run (the first fills the free lists) leaves the frames, the heap and the
/// process count as they were, a batch whose caller was killed while its
/// members were out included.
pub fn batch_requests_and_distribution_server() -> TestResult {
    let footprint = || {
        resource::pool::flush();
        ipc::rendezvous::flush_free_calls();
        kcore::computation::reap_all();
        (frames::stats().free, heap::stats().used, proc::count())
    };
    let status = run_on("batchtest", b"", abi::ANY_CPU)?;
    ensure!(status == 0, "batchtest exited with {status:#x}");
    let before = footprint();
    let status = run_on("batchtest", b"100\0", abi::ANY_CPU)?;
    ensure!(status == 0, "batchtest 100 exited with {status:#x}");
    let after = footprint();
    ensure!(
        after.0 == before.0 && after.2 == before.2 && super::heap_back(before.1, after.1),
        "{before:?} before, {after:?} after"
    );
    Ok(())
}

/// `name`'s record among the inspector's servers.
pub fn server(name: &str) -> Result<abi::ServerRecord, alloc::string::String> {
    let mut page = syscall::inspect::Page::first().map_err(|e| format!("{e:?}"))?;
    syscall::inspect::servers(&mut page);
    page.items()
        .iter()
        .find(|s| abi::name_str(&s.name) == name)
        .copied()
        .ok_or_else(|| format!("'{name}' is not among the servers"))
}

fn client(calls: &str, cpu: u64) -> Result<u64, alloc::string::String> {
    run_on("rvtest", format!("client\0{calls}\0placed\0").as_bytes(), cpu)
}

pub fn servers_placed_by_boot_file_and_command() -> TestResult {
    use crate::placement::{Placement, parse, start};
    use abi::Error;
    // The boot file's syntax, good and bad lines.
    ensure!(parse("  # nothing") == Ok(None), "comment line");
    ensure!(
        parse("echo cpu 2 a b")
            == Ok(Some(Placement {
                server: "echo",
                cpu: 2,
                args: b"a\0b\0".to_vec()
            })),
        "pinned line with arguments"
    );
    ensure!(
        parse("relay")
            == Ok(Some(Placement {
                server: "relay",
                cpu: abi::ANY_CPU,
                args: alloc::vec::Vec::new()
            })),
        "unpinned line"
    );
    ensure!(parse("echo cpu two") == Err(Error::Invalid), "bad CPU accepted");
    ensure!(parse("echo cpu") == Err(Error::Invalid), "missing CPU accepted");
    ensure!(start("echo cpu 64") == Err(Error::Invalid), "offline CPU accepted");
    ensure!(
        start("no-such-server cpu 1") == Err(Error::NotFound),
        "missing program started"
    );

    // A server placed on CPU 1 serves a client on CPU 0 there, and the
    // inspector shows where it is and what it did.
    let server = start("echo cpu 1 placed")
        .map_err(|e| format!("{e:?}"))?
        .ok_or("no pid")?;
    ensure!(client("100", 0)? == 0, "client failed");
    let s = self::server("placed")?;
    ensure!(
        s.pid == server && s.affinity == 1 && s.last_cpu == 1 && s.accepted == 100 && s.answered == 100 && s.held == 0,
        "after 100 calls on CPU 1: {s:?}"
    );

    // The console's `place` command moves it at run time: to CPU 2, or
    // back to CPU 0 on a machine with two.
    let to = if kcore::cpu::online_count() > 2 { 2 } else { 0 };
    ensure!(
        run_on("shell", format!("-c\0place placed {to}\0").as_bytes(), abi::ANY_CPU)? == 0,
        "shell failed"
    );
    ensure!(client("10", 0)? == 0, "client failed after the move");
    let moved = self::server("placed")?;
    ensure!(
        moved.affinity == to && moved.last_cpu == to && moved.accepted == 110 && moved.answered == 110,
        "after the move to CPU {to}: {moved:?}"
    );

    proc::kill(server).map_err(|e| format!("{e:?}"))?;
    proc::wait(KERNEL_PID, server).map_err(|e| format!("{e:?}"))?;
    ensure!(self::server("placed").is_err(), "dead server still listed");
    Ok(())
}
