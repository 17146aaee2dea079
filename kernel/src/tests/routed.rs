//! A Linux process's calls to its supervisor (its system calls, faults
//! and stops) are the kernel's, and say so (`abi::ACC_ROUTED`): a call a
//! process makes to a supervisor's entries itself does not, so the
//! supervisor refuses to serve it as the process it serves.

use super::{Supervised, ok};
use abi::linux::entry;
use abi::{ACC_NOWAIT, ACC_ROUTED};
use ipc::port::Accepted;
use ipc::process as proc;
use ipc::rendezvous::acc;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::uaccess::UserRange;

/// The first call on `entry` of `server`'s port, waiting up to a second.
pub(super) fn first_on(server: u64, entry: u64) -> Result<Accepted, alloc::string::String> {
    let s = proc::get(server).ok_or("the server is gone")?;
    let until = kcore::clock::nanos() + 1_000_000_000;
    loop {
        match acc(&s, (1 << entry) | ACC_NOWAIT) {
            Ok(a) => return Ok(a),
            // (Sleeping: at one CPU the faulting process runs meanwhile.)
            Err(_) if kcore::clock::nanos() < until => sched::sleep_until(kcore::clock::nanos() + 1_000_000),
            Err(e) => return Err(alloc::format!("no call on entry {entry}: {e:?}")),
        }
    }
}

pub fn supervisor_calls_are_marked_routed() -> TestResult {
    let f = Supervised::new(4243)?;
    let (sup, stranger, child) = (f.sup, f.stranger, f.child.clone());
    // The kernel takes its fault to `sup`, and it waits there.
    let outcome = (|| -> TestResult {
        let child = child.clone()?;
        let routed = first_on(sup, entry::FAULT)?;
        ensure!(
            routed.flags() & ACC_ROUTED != 0,
            "the fault of process {child} came without ACC_ROUTED: {:#x}",
            routed.flags()
        );
        // The same entry, called by a process itself.
        let st = proc::get(stranger).ok_or("stranger gone")?;
        ok(ipc::request::request(
            &st,
            sup,
            entry::FAULT,
            UserRange::EMPTY,
            UserRange::EMPTY,
        ))?;
        drop(st);
        let forged = first_on(sup, entry::FAULT)?;
        ensure!(
            forged.flags() & ACC_ROUTED == 0,
            "a process's own call came marked ACC_ROUTED: {:#x}",
            forged.flags()
        );
        Ok(())
    })();
    f.end();
    outcome
}
