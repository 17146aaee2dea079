//! RLIMIT_CPU: a process that has used its soft limit of CPU time gets
//! SIGXCPU, and again at each further second, and SIGKILL at its hard
//! limit, as Linux's check at the scheduler tick. This server keeps the
//! clock's alarm: a limit's alarm is set for when the process could
//! reach the next mark if it ran without pause, and at the alarm the
//! kernel's count of its CPU time decides (a process that slept is looked
//! at again when it could have caught up).

use super::Shared;
use crate::proto::word;
use alloc::collections::BTreeMap;
use linuxabi::signal::{SIGKILL, SIGXCPU};
use tessera_rt::sys;

const NS: u64 = 1_000_000_000;
/// RLIM_INFINITY.
const INFINITY: u64 = u64::MAX;

pub struct CpuLimit {
    /// CPU time (ns) at which the next SIGXCPU goes.
    next: u64,
    /// CPU time (ns) at which SIGKILL goes.
    hard: u64,
    /// When to look at the process's CPU time next (the clock's ns).
    at: u64,
}

#[derive(Default)]
pub struct CpuLimits(BTreeMap<u32, CpuLimit>);

impl CpuLimits {
    pub fn deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.values().map(|l| l.at)
    }
}

impl Shared {
    /// `ctl::CPU_LIMIT`: [pid, soft s, hard s]: its limits from now (the
    /// CPU time it has used counts; infinity for both ends the watch).
    pub(super) fn cpu_limit(&mut self, w: &[u64]) -> super::End {
        let (pid, soft, hard) = (word(w, 1) as u32, word(w, 2), word(w, 3));
        if soft == INFINITY && hard == INFINITY {
            self.cpu_limits.0.remove(&pid);
            return super::result(0);
        }
        let ns = |s: u64| if s == INFINITY { INFINITY } else { s.saturating_mul(NS) };
        let mut l = CpuLimit {
            next: ns(soft),
            hard: ns(hard),
            at: 0,
        };
        let used = self.cpu_used(pid);
        l.at = sys::now_ns().saturating_add(l.next.min(l.hard).saturating_sub(used));
        self.cpu_limits.0.insert(pid, l);
        super::result(0)
    }

    /// CPU time `pid` has used so far (ns), as the kernel counts it.
    fn cpu_used(&self, pid: u32) -> u64 {
        let Some(Ok(tpid)) = self.procs.get(pid).map(|p| p.tessera_pid()) else {
            return 0;
        };
        sys::proc_info(tpid).map_or(0, |i| i.cpu_ns)
    }

    /// The limits whose alarm is due: signals for those reached.
    pub(super) fn cpu_limits_tick(&mut self, now: u64) {
        let due: alloc::vec::Vec<u32> = self
            .cpu_limits
            .0
            .iter()
            .filter(|(_, l)| l.at <= now)
            .map(|(&p, _)| p)
            .collect();
        for pid in due {
            let used = self.cpu_used(pid);
            let Some(l) = self.cpu_limits.0.get_mut(&pid) else {
                continue;
            };
            if used >= l.hard {
                self.cpu_limits.0.remove(&pid);
                self.procs_signal(pid, SIGKILL, linuxabi::signal::SI_KERNEL as i64, 0);
                continue;
            }
            let xcpu = used >= l.next;
            if xcpu {
                l.next = used.saturating_add(NS);
            }
            l.at = now.saturating_add(l.next.min(l.hard).saturating_sub(used));
            if xcpu {
                self.procs_signal(pid, SIGXCPU, linuxabi::signal::SI_KERNEL as i64, 0);
            }
        }
    }

    /// `pid` ended: its watch goes (exec keeps it, as it keeps the limit).
    pub(super) fn cpu_limit_exit(&mut self, pid: u32) {
        self.cpu_limits.0.remove(&pid);
    }
}
