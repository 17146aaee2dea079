//! `linux_set_ppid` (the parent a Linux process's getppid is answered
//! with by the kernel) under hostile input: only the process's supervisor
//! and the supervisor's parent (the personality's shared server) set it,
//! and only under the Linux pid the process has; a stranger, another
//! supervisor, the process itself, a stale or foreign Linux pid, a native
//! process, a process gone, made-up ids and a parent past Linux's largest
//! pid are refused and change nothing.

use super::{Supervised, end, live, ok};
use abi::Error;
use abi::linux::PID_MAX;
use alloc::vec::Vec;
use ipc::process as proc;
use ipc::supervise::set_ppid;
use kcore::ensure;
use kcore::ktest::TestResult;

/// The Linux pid the test's Linux process has.
const LINUX_PID: u64 = 4242;

pub fn set_ppid_is_checked() -> TestResult {
    let f = Supervised::new(LINUX_PID)?;
    let other_sup = live()?;
    let (sup, lender, child) = (f.sup, f.lender, f.child.clone()?);
    let outcome = (|| -> TestResult {
        let [c, s, sh, st, os, ln] = f.looked_up(other_sup)?;
        ensure!(c.linux_ppid() == 0, "a new process has a parent: {}", c.linux_ppid());
        ensure!(set_ppid(&s, child, LINUX_PID, 7) == Ok(0), "its supervisor refused");
        ensure!(c.linux_ppid() == 7, "set by its supervisor: {}", c.linux_ppid());
        ensure!(set_ppid(&sh, child, LINUX_PID, 1) == Ok(0), "the shared server refused");
        ensure!(c.linux_ppid() == 1, "set by the shared server: {}", c.linux_ppid());
        let mut refused = Vec::new();
        for (who, holder, target, linux_pid, ppid, want) in [
            ("a stranger", &st, child, LINUX_PID, 9, Error::Denied),
            ("another supervisor", &os, child, LINUX_PID, 9, Error::Denied),
            ("the process itself", &c, child, LINUX_PID, 9, Error::Denied),
            ("another Linux pid", &s, child, LINUX_PID + 1, 9, Error::NotFound),
            ("Linux pid 0", &s, child, 0, 9, Error::NotFound),
            ("a native process", &sh, lender, LINUX_PID, 9, Error::Denied),
            ("a native process, by itself", &ln, lender, LINUX_PID, 9, Error::Denied),
            ("target 0", &s, 0, LINUX_PID, 9, Error::NotFound),
            ("a made-up target", &s, 1 << 40, LINUX_PID, 9, Error::NotFound),
            ("target u64::MAX", &sh, u64::MAX, LINUX_PID, 9, Error::NotFound),
            (
                "a parent past PID_MAX",
                &s,
                child,
                LINUX_PID,
                PID_MAX + 1,
                Error::Invalid,
            ),
            ("parent u64::MAX", &sh, child, LINUX_PID, u64::MAX, Error::Invalid),
        ] {
            let r = set_ppid(holder, target, linux_pid, ppid);
            if r != Err(want) {
                refused.push((who, r));
            }
        }
        ensure!(refused.is_empty(), "not refused as they should be: {refused:?}");
        ensure!(c.linux_ppid() == 1, "a refused call changed it: {}", c.linux_ppid());
        ensure!(set_ppid(&s, child, LINUX_PID, PID_MAX) == Ok(0), "PID_MAX refused");
        // 0: not known here any more (getppid goes to the supervisor).
        ensure!(
            set_ppid(&s, child, LINUX_PID, 0) == Ok(0) && c.linux_ppid() == 0,
            "not cleared: {}",
            c.linux_ppid()
        );
        ensure!(!c.has_exited(), "the refused calls ended the process");
        Ok(())
    })();
    let _ = proc::kill(child);
    let status = ok(proc::wait(sup, child));
    let gone = proc::get(sup).map(|s| set_ppid(&s, child, LINUX_PID, 3));
    end(other_sup);
    f.end();
    outcome?;
    ensure!(status? == abi::KILLED_STATUS, "the child did not end killed");
    ensure!(
        gone == Some(Err(Error::NotFound)),
        "a process gone, by its supervisor: {gone:?}"
    );
    Ok(())
}
