//! Alarms as communication (seed 003: the clock's interrupt turned into a
//! message): `port_alarm` has the kernel post an event on one of the
//! caller's port entries when the clock reaches a deadline. A server that
//! waits for calls and for time at once (the Linux personality's timers:
//! `alarm`, timeouts of `poll` and `futex`) waits in `acc` for both.

use abi::Error;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use ipc::process::{self as proc, Process};
use kcore::sync::IrqMutex;

/// One alarm per process: (deadline, pid, entry). Pids, not references:
/// the tick must never drop the last reference to a process.
static ALARMS: IrqMutex<Vec<(u64, u64, u64)>> = IrqMutex::new(Vec::new());
/// Whether any alarm is set: the timer's tick looks at no lock otherwise.
static ANY: AtomicBool = AtomicBool::new(false);

/// `port_alarm`: sets (or with deadline 0, cancels) the caller's alarm.
pub fn set(me: &Process, entry: u64, deadline: u64) -> Result<(), Error> {
    if entry >= 61 {
        return Err(Error::Invalid);
    }
    let mut a = ALARMS.lock();
    // Alarms of processes that ended go too.
    a.retain(|&(_, pid, _)| pid != me.pid() && proc::get(pid).is_some_and(|p| !p.has_exited()));
    if deadline != 0 {
        a.try_reserve(1).map_err(|_| Error::NoMemory)?;
        a.push((deadline, me.pid(), entry));
    }
    ANY.store(!a.is_empty(), Ordering::Release);
    Ok(())
}

/// The timer's tick (on the boot CPU): posts the events of the alarms due.
pub fn on_tick() {
    if !ANY.load(Ordering::Acquire) || kcore::cpu::this_cpu().index != 0 {
        return;
    }
    let now = kcore::clock::nanos();
    let mut due = Vec::new();
    {
        let mut a = ALARMS.lock();
        if due.try_reserve(a.len()).is_err() {
            return;
        }
        a.retain(|&(t, pid, e)| {
            if t <= now {
                due.push((pid, e));
                false
            } else {
                true
            }
        });
        ANY.store(!a.is_empty(), Ordering::Release);
    }
    for (pid, entry) in due {
        // The table holds the process while it lives: this reference is
        // never the last.
        if let Some(p) = proc::get(pid)
            && let Some(c) = ipc::port::post_event(&p, entry)
        {
            sched::wake(&c);
        }
    }
}
