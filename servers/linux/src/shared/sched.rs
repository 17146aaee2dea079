//! Scheduling attributes (`ctl::SCHED_GET`, `SCHED_SET`, `PRIO_GET`,
//! `PRIO_SET`): held here with each process, so any process may ask about
//! or change another's (sched_getparam, setpriority of a process group
//! or a user) under Linux's rules (`linuxabi::sched`).

use super::{End, Shared, reply, result};
use crate::proto::word;
use linuxabi::errno;
use linuxabi::sched::{self, PRIO_PGRP, PRIO_PROCESS, PRIO_USER};

impl Shared {
    /// The caller's effective uid (root may do anything here: it has
    /// CAP_SYS_NICE).
    fn sched_caller(&self, caller: u32) -> Option<(u32, u32)> {
        self.procs.get(caller).map(|c| (c.euid, c.uid))
    }

    /// `[caller, pid]` → `[policy (with SCHED_RESET_ON_FORK), priority,
    /// nice]`, or ESRCH.
    pub(super) fn sched_get(&self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        let Some(pid) = self.procs.target(caller, word(w, 2) as u32) else {
            return result(-errno::ESRCH);
        };
        match self.procs.get(pid) {
            Some(p) => reply(&[
                p.sched.policy_word(),
                p.sched.priority as u64,
                p.sched.nice as i64 as u64,
                p.sched.affinity,
            ]),
            None => result(-errno::ESRCH),
        }
    }

    /// `[caller, pid, policy (u64::MAX: kept), priority]` → 0 or an error.
    pub(super) fn sched_set(&mut self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        let Some((euid, _)) = self.sched_caller(caller) else {
            return result(-errno::ESRCH);
        };
        let Some(pid) = self.procs.target(caller, word(w, 2) as u32) else {
            return result(-errno::ESRCH);
        };
        let Some(p) = self.procs.get_mut(pid) else {
            return result(-errno::ESRCH);
        };
        let policy = Some(word(w, 3)).filter(|&v| v != u64::MAX);
        let owner = euid == p.euid || euid == p.uid;
        match p.sched.set_scheduler(policy, word(w, 4), euid == 0, owner) {
            Ok(()) => result(0),
            Err(e) => result(-e),
        }
    }

    /// `[caller, pid, mask]` → 0 or an error.
    pub(super) fn affinity_set(&mut self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        let Some((euid, _)) = self.sched_caller(caller) else {
            return result(-errno::ESRCH);
        };
        let Some(p) = self
            .procs
            .target(caller, word(w, 2) as u32)
            .and_then(|p| self.procs.get_mut(p))
        else {
            return result(-errno::ESRCH);
        };
        let owner = euid == p.euid || euid == p.uid;
        match p.sched.set_affinity(word(w, 3), euid == 0, owner) {
            Ok(()) => result(0),
            Err(e) => result(-e),
        }
    }

    /// The live processes `which`/`who` names (setpriority's choice), or
    /// EINVAL for an unknown `which`.
    fn prio_targets(&self, caller: u32, which: u64, who: u32) -> Result<alloc::vec::Vec<u32>, i64> {
        let me = self.procs.get(caller);
        let pick = match which {
            PRIO_PROCESS => return Ok(self.procs.target(caller, who).into_iter().collect()),
            PRIO_PGRP if who == 0 => me.map_or(0, |p| p.pgid),
            PRIO_USER if who == 0 => me.map_or(0, |p| p.uid),
            PRIO_PGRP | PRIO_USER => who,
            _ => return Err(errno::EINVAL),
        };
        Ok(self
            .procs
            .live_pids()
            .into_iter()
            .filter(|&pid| {
                self.procs.get(pid).is_some_and(|p| {
                    if which == PRIO_PGRP {
                        p.pgid == pick
                    } else {
                        p.uid == pick
                    }
                })
            })
            .collect())
    }

    /// `[caller, which, who]` → the highest priority (20 - nice) among
    /// the processes named, or ESRCH when there are none.
    pub(super) fn prio_get(&self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        match self.prio_targets(caller, word(w, 2), word(w, 3) as u32) {
            Err(e) => result(-e),
            Ok(pids) => result(
                pids.iter()
                    .filter_map(|&p| self.procs.get(p))
                    .map(|p| sched::prio_word(p.sched.nice) as i64)
                    .max()
                    .unwrap_or(-errno::ESRCH),
            ),
        }
    }

    /// `[caller, which, who, nice]` → 0, or the last error among the
    /// processes named (ESRCH when there are none), as Linux reports it.
    pub(super) fn prio_set(&mut self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        let Some((euid, _)) = self.sched_caller(caller) else {
            return result(-errno::ESRCH);
        };
        let nice = sched::clamp_nice(word(w, 4) as i64);
        let pids = match self.prio_targets(caller, word(w, 2), word(w, 3) as u32) {
            Ok(p) => p,
            Err(e) => return result(-e),
        };
        let mut error = -errno::ESRCH;
        for pid in pids {
            if let Some(p) = self.procs.get_mut(pid) {
                let owner = euid == p.euid || euid == p.uid;
                match p.sched.set_nice(nice, euid == 0, owner) {
                    Ok(()) if error == -errno::ESRCH => error = 0,
                    Ok(()) => {}
                    Err(e) => error = -e,
                }
            }
        }
        result(error)
    }
}
