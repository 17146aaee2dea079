//! `linux_sigmask` (the signal masks the kernel serves rt_sigprocmask
//! from, and the pending set it forwards by) under hostile input: only
//! the process's supervisor and the supervisor's parent read and set
//! them, SIGKILL and SIGSTOP never enter a mask; a stranger, another
//! supervisor, the process itself, a native process, a thread or process
//! that does not exist and an unknown operation are refused and change
//! nothing.

use super::{Supervised, end, live, ok};
use abi::Error;
use abi::linux::sigmask::{GET, PENDING, SET, UNBLOCKABLE};
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use ipc::process as proc;
use ipc::supervise::sigmask;
use kcore::ensure;
use kcore::ktest::TestResult;

/// The Linux pid the test's Linux process has (its first thread's tid).
const LINUX_PID: u64 = 4243;

pub fn sigmask_is_checked() -> TestResult {
    let f = Supervised::new(LINUX_PID)?;
    let other_sup = live()?;
    let (sup, lender, child) = (f.sup, f.lender, f.child.clone()?);
    let outcome = (|| -> TestResult {
        let [c, s, sh, st, os, ln] = f.looked_up(other_sup)?;
        ensure!(
            sigmask(&s, GET, child, LINUX_PID, 0) == Ok(0),
            "a new thread's mask is not empty"
        );
        ensure!(
            sigmask(&s, SET, child, LINUX_PID, u64::MAX) == Ok(0),
            "its supervisor refused"
        );
        let all = !UNBLOCKABLE;
        ensure!(
            sigmask(&sh, GET, child, LINUX_PID, 0) == Ok(all),
            "SIGKILL or SIGSTOP blocked, or not set: {:?}",
            sigmask(&sh, GET, child, LINUX_PID, 0)
        );
        let first = c.computation_labelled(0).ok_or("no first computation")?;
        first.sigmask_news.store(true, Ordering::SeqCst);
        ensure!(sigmask(&s, GET, child, LINUX_PID, 0) == Ok(all), "read back");
        ensure!(!first.sigmask_news.load(Ordering::SeqCst), "a read leaves the news");
        ensure!(
            sigmask(&sh, PENDING, child, LINUX_PID, 1 << 9) == Ok(all) && c.linux_sig_pending() == 1 << 9,
            "the pending set not published by the shared server"
        );
        ensure!(
            sigmask(&s, PENDING, child, 0, 1 << 10) == Ok(0),
            "tid 0 publishes alone"
        );
        let mut refused = Vec::new();
        for (who, holder, op, target, tid, want) in [
            ("a stranger", &st, SET, child, LINUX_PID, Error::Denied),
            ("a stranger's read", &st, GET, child, LINUX_PID, Error::Denied),
            ("another supervisor", &os, PENDING, child, 0, Error::Denied),
            ("the process itself", &c, SET, child, LINUX_PID, Error::Denied),
            ("a native process", &sh, GET, lender, 0, Error::Denied),
            ("a native process, by itself", &ln, SET, lender, 0, Error::Denied),
            ("no such thread", &s, SET, child, LINUX_PID + 1, Error::NotFound),
            ("thread u64::MAX", &s, GET, child, u64::MAX, Error::NotFound),
            ("target 0", &s, GET, 0, LINUX_PID, Error::NotFound),
            ("a made-up target", &s, SET, 1 << 40, LINUX_PID, Error::NotFound),
            ("operation 0", &s, 0, child, LINUX_PID, Error::Invalid),
            ("operation u64::MAX", &sh, u64::MAX, child, LINUX_PID, Error::Invalid),
        ] {
            let r = sigmask(holder, op, target, tid, 5);
            if r != Err(want) {
                refused.push((who, r));
            }
        }
        ensure!(refused.is_empty(), "not refused as they should be: {refused:?}");
        ensure!(
            sigmask(&s, GET, child, LINUX_PID, 0) == Ok(all) && c.linux_sig_pending() == 1 << 10,
            "a refused call changed the mask or the pending set"
        );
        ensure!(!c.has_exited(), "the refused calls ended the process");
        Ok(())
    })();
    let _ = proc::kill(child);
    let status = ok(proc::wait(sup, child));
    end(other_sup);
    f.end();
    outcome?;
    ensure!(status? == abi::KILLED_STATUS, "the child did not end killed");
    Ok(())
}
