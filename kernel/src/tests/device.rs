//! Devices as resources: devtest tries the device calls as a hostile
//! driver would (see user/programs/src/bin/devtest.rs); a second run leaves
//! the kernel's memory as the first left it.

use abi::SpawnOptions;
use alloc::format;
use alloc::string::String;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::{frames, heap};

fn devtest() -> Result<u64, String> {
    let options = SpawnOptions {
        rights: abi::rights::DEVICE,
        ..SpawnOptions::DEFAULT
    };
    let pid = resource::proc::spawn::spawn("devtest", b"", &options, KERNEL_PID).map_err(|e| format!("{e:?}"))?;
    proc::wait(KERNEL_PID, pid).map_err(|e| format!("{e:?}"))
}

pub fn devices_resist_a_hostile_driver() -> TestResult {
    let footprint = || {
        resource::pool::flush();
        ipc::rendezvous::flush_free_calls();
        kcore::computation::reap_all();
        (frames::stats().free, heap::stats().used)
    };
    ensure!(devtest()? == 0, "devtest failed");
    let before = footprint();
    ensure!(devtest()? == 0, "devtest failed the second time");
    let after = footprint();
    ensure!(
        after.0 == before.0 && after.1 <= before.1 + 1024,
        "frames/heap {before:?} before the second run, {after:?} after"
    );
    Ok(())
}
