//! Hardening (issue 16): each finding as an attack that must be refused,
//! and the invariants that make its class impossible: only the kernel's
//! own compositions are pooled, nothing is given to a process that is
//! ending, kernel memory a process causes is charged and queues are
//! bounded, memory pressure empties the pool before anyone is refused,
//! box pages never carry another process's data, and a killed driver
//! leaves its device quiet.

use abi::{Error, SpawnOptions};
use alloc::format;
use alloc::string::String;
use ipc::process::{self as proc, KERNEL_PID};
use kcore::ensure;
use kcore::ktest::TestResult;
use resource::vspace::{self, At};
use resource::{KERNEL, vregion};

fn ok<T>(r: Result<T, Error>) -> Result<T, String> {
    r.map_err(|e| format!("{e:?}"))
}

/// Runs `path` with `args` holding `rights`; its exit status.
fn run_as(path: &str, args: &[&str], rights: u64) -> Result<u64, String> {
    let options = SpawnOptions {
        rights,
        ..SpawnOptions::DEFAULT
    };
    let pid = ok(resource::proc::spawn::spawn(
        path,
        &super::args(args),
        &options,
        KERNEL_PID,
    ))?;
    ok(proc::wait(KERNEL_PID, pid))
}

fn run(path: &str, args: &[&str]) -> Result<u64, String> {
    run_as(path, args, 0)
}

fn run_ok(path: &str, args: &[&str]) -> TestResult {
    let status = run(path, args)?;
    ensure!(status == 0, "{path} {args:?} exited with {status:#x}");
    Ok(())
}

pub fn the_highest_user_page_is_unusable() -> TestResult {
    run_ok("attack", &["top"])?;
    let space = ok(vspace::create(KERNEL))?;
    let region = ok(vregion::create(KERNEL, abi::RegionKind::Text, 1, false, true))?;
    let top = kcore::vm::USER_END - 4096;
    let got = vspace::attach(KERNEL, space, region, At::Address(top)).map(|a| a.id);
    if let Ok(link) = got {
        let _ = resource::mediator::delete(KERNEL, link);
    }
    let _ = resource::mediator::delete(KERNEL, region);
    let _ = resource::mediator::delete(KERNEL, space);
    ensure!(
        got == Err(Error::Invalid),
        "the kernel attached a region in the highest user page: {got:?}"
    );
    Ok(())
}

pub fn resources_are_described_to_their_owners() -> TestResult {
    // Some regions of the kernel's exist: the pool holds a composed space.
    run_ok("tiny", &[])?;
    run_ok("attack", &["query"])
}
