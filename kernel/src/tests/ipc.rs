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

/// Kills a process that is not the kernel's child and waits until its
/// name has gone (it ends on its own CPU).
pub fn stop_server(pid: u64, name: &str) -> TestResult {
    proc::kill(pid).map_err(|e| format!("{e:?}"))?;
    let until = kcore::clock::nanos() + 2_000_000_000;
    while server(name).is_ok() {
        ensure!(kcore::clock::nanos() < until, "'{name}' still listed after its kill");
        sched::sleep_until(kcore::clock::nanos() + 1_000_000);
    }
    Ok(())
}

/// init starts the servers of a boot file on their CPUs (skipping the
/// lines it must refuse), a client on CPU 0 is served there, the shell
/// init starts moves the server with `place`, and the inspector's records
/// show each step.
pub fn servers_placed_by_boot_file_and_command() -> TestResult {
    // The file starts `echo cpu 1 placed` (see user/etc/servers.test.conf).
    let init_args = super::args(&["-s", "etc/servers.test.conf", "rvtest", "client", "100", "placed"]);
    let status = crate::run_init(&init_args, 0);
    ensure!(status == 0, "init and the client ended with {status:#x}");
    let s = server("placed")?;
    ensure!(
        s.alive == 1 && s.affinity == 1 && s.last_cpu == 1 && s.accepted == 100 && s.answered == 100 && s.held == 0,
        "after 100 calls on CPU 1: {s:?}"
    );

    // The console's `place` command moves it at run time: to CPU 2, or
    // back to CPU 0 on a machine with two.
    let to = if kcore::cpu::online_count() > 2 { 2 } else { 0 };
    let status = crate::run_init(
        &super::args(&["shell", "-c", &format!("place placed {to}")]),
        abi::ANY_CPU,
    );
    ensure!(status == 0, "shell ended with {status:#x}");
    ensure!(client("10", 0)? == 0, "client failed after the move");
    let moved = server("placed")?;
    ensure!(
        moved.affinity == to && moved.last_cpu == to && moved.accepted == 110 && moved.answered == 110,
        "after the move to CPU {to}: {moved:?}"
    );
    stop_server(s.pid, "placed")
}

/// Seed 003's knob: with `ipc_delay` set, every completed communication
/// waits that long. The same run of rvtest's stress, without and then with
/// the delay: the second takes longer by at least half the communications
/// times the delay (the host's noise is far below that).
pub fn every_communication_waits_the_set_delay() -> TestResult {
    const DELAY_NS: u64 = 500_000;
    let calls = || ipc::rendezvous::CALLS.load(core::sync::atomic::Ordering::Relaxed);
    let timed = |delay: u64| -> Result<(u64, u64), alloc::string::String> {
        let (n0, t0) = (calls(), kcore::clock::nanos());
        ipc::procnet::set_delays(delay, 0);
        let status = run(b"stress\x00100\x00");
        ipc::procnet::set_delays(0, 0);
        ensure!(status? == 0, "rvtest failed (delay {delay} ns)");
        Ok((calls() - n0, kcore::clock::nanos() - t0))
    };
    let (_, plain) = timed(0)?;
    let (n, slowed) = timed(DELAY_NS)?;
    ensure!(n > 100, "only {n} communications counted");
    ensure!(
        slowed >= plain + n * DELAY_NS / 2,
        "{n} communications took {slowed} ns with the delay, {plain} ns without"
    );
    Ok(())
}

/// A supervisor's return names a call it holds of a process it serves:
/// any other id, from any other process, is refused before anything is
/// accepted, by `caller_return_acc` as by `caller_return`.
pub fn a_return_names_a_call_its_supervisor_holds() -> TestResult {
    let stranger = super::live()?;
    let ps = proc::get(stranger).ok_or("gone")?;
    let mut got = alloc::vec::Vec::new();
    for rid in [0, 1, 12345, u64::MAX] {
        let alone = ipc::supervise::finish(&ps, rid, 7).err();
        let with_acc = ipc::supervise::finish_acc(&ps, rid, 7, abi::ACC_NOWAIT | 1).err();
        got.push((rid, alone, with_acc));
    }
    drop(ps);
    super::end(stranger);
    for (rid, alone, with_acc) in got {
        ensure!(
            alone.is_some(),
            "caller_return of call {rid:#x} by a stranger was taken"
        );
        ensure!(
            with_acc == alone,
            "caller_return_acc of call {rid:#x}: {with_acc:?}, caller_return: {alone:?}"
        );
    }
    Ok(())
}
