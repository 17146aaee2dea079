//! CPU times (times, getrusage, wait4's rusage). User time is what the
//! kernel counted on the process's computation; system time is what its
//! supervisor spent serving it since it took the process: in a process
//! network the supervisor does a Linux kernel's work for its process
//! (seed 003), so its time is the process's system time. Time the file,
//! network and shared servers spend on its behalf is not counted: it is
//! theirs, shared by every client.

use super::Sup;
use crate::proto::{ctl, word};
use crate::shared::CpuTimes;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::structs as st;
use tessera_rt::sys;

/// Linux's clock ticks per second for times() (USER_HZ).
const USER_HZ: u64 = 100;
const NS_PER_TICK: u64 = 1_000_000_000 / USER_HZ;

/// The supervisor's own CPU time so far, in nanoseconds (its own
/// call: `proc_info` counts every page of the space, which cost a
/// fork and exec about 150,000 instructions more when asked at each
/// start and end).
pub(super) fn own_cpu_ns() -> u64 {
    sys::calls::cpu_time().unwrap_or(0)
}

impl Sup {
    /// Its process's CPU time and minor faults so far (one look).
    pub(super) fn usage(&self) -> (CpuTimes, u64) {
        let (user, faults) = sys::proc_info(self.tpid).map_or((0, 0), |p| {
            let f = p.faults;
            (p.cpu_ns, f.text + f.data + f.bss + f.stack + f.heap)
        });
        let system = own_cpu_ns().saturating_sub(self.serving_since);
        (CpuTimes { user, system }, faults)
    }

    pub(super) fn cpu_times(&self) -> CpuTimes {
        self.usage().0
    }

    /// [minor faults, user ns, system ns] of the children it waited for.
    fn child_usage(&self) -> Result<(u64, CpuTimes), i64> {
        let r: Vec<u64> = self.ctl(&[ctl::CHILD_USAGE, self.pid as u64]);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        Ok((
            word(&r, 0),
            CpuTimes {
                user: word(&r, 1),
                system: word(&r, 2),
            },
        ))
    }

    pub(super) fn getrusage(&mut self, rid: u64, who: u64, at: u64) -> Result<u64, i64> {
        const RUSAGE_SELF: i64 = 0;
        const RUSAGE_THREAD: i64 = 1;
        const RUSAGE_CHILDREN: i64 = -1;
        let b = match who as i64 {
            RUSAGE_SELF | RUSAGE_THREAD => {
                let (t, faults) = self.usage();
                st::rusage(t.user, t.system, faults)
            }
            RUSAGE_CHILDREN => {
                let (faults, t) = self.child_usage()?;
                st::rusage(t.user, t.system, faults)
            }
            _ => return Err(errno::EINVAL),
        };
        self.write_mem(rid, at, &b)?;
        Ok(0)
    }

    pub(super) fn times(&mut self, rid: u64, at: u64) -> Result<u64, i64> {
        if at != 0 {
            let own = self.cpu_times();
            let (_, children) = self.child_usage()?;
            let mut o = st::Out::with_len(32);
            for ns in [own.user, own.system, children.user, children.system] {
                o.u64(ns / NS_PER_TICK);
            }
            self.write_mem(rid, at, &o.0)?;
        }
        Ok(sys::now_ns() / NS_PER_TICK)
    }
}
