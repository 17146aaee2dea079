//! Scheduling attributes (`ctl::SCHED_GET`, `SCHED_SET`, `PRIO_GET`,
//! `PRIO_SET`): held here with each process, so any process may ask about
//! or change another's (sched_getparam, setpriority of a process group
//! or a user) under Linux's rules (`linuxabi::sched`).

use super::procs::INIT;
use super::{End, Shared, reply, result};
use crate::proto::word;
use linuxabi::errno;
use linuxabi::sched::{self, PRIO_PGRP, PRIO_PROCESS, PRIO_USER, Sched};

impl Shared {
    /// The caller's effective uid (root may do anything here: it has
    /// CAP_SYS_NICE).
    fn sched_caller(&self, caller: u32) -> Option<(u32, u32)> {
        self.procs.get(caller).map(|c| (c.euid, c.uid))
    }

    /// The attributes of process `pid` (the virtual init's among them),
    /// with whether the caller of effective uid `euid` owns it.
    fn sched_mut(&mut self, pid: u32, euid: u32) -> Option<(&mut Sched, bool)> {
        match self.procs.get_mut(pid) {
            Some(p) => {
                let owner = euid == p.euid || euid == p.uid;
                Some((&mut p.sched, owner))
            }
            None if pid == INIT => Some((&mut self.init_sched, euid == 0)),
            None => None,
        }
    }

    /// `[caller, pid]` → `[policy (with SCHED_RESET_ON_FORK), priority,
    /// nice, affinity]`, or ESRCH.
    pub(super) fn sched_get(&self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        let Some(pid) = self.procs.target(caller, word(w, 2) as u32) else {
            return result(-errno::ESRCH);
        };
        let s = match self.procs.get(pid) {
            Some(p) => Some(p.sched),
            None if pid == INIT => Some(self.init_sched),
            None => None,
        };
        match s {
            Some(s) => reply(&[
                s.policy_word(),
                s.priority as u64,
                s.nice as i64 as u64,
                s.affinity,
                s.dl[0],
                s.dl[1],
                s.dl[2],
            ]),
            None => result(-errno::ESRCH),
        }
    }

    /// `[caller, pid, policy (u64::MAX: kept), priority]` → 0 or an error.
    pub(super) fn sched_set(&mut self, w: &[u64]) -> End {
        let policy = Some(word(w, 3)).filter(|&v| v != u64::MAX);
        self.sched_change(w, |s, root, owner| s.set_scheduler(policy, word(w, 4), root, owner))
    }

    /// `[caller, pid, policy, flags, nice, priority, runtime, deadline,
    /// period]` → 0 or an error (sched_setattr).
    pub(super) fn sched_attr_set(&mut self, w: &[u64]) -> End {
        let a = sched::Attr {
            policy: word(w, 3) as u32,
            flags: word(w, 4),
            nice: word(w, 5) as i32,
            priority: word(w, 6) as u32,
            dl: [word(w, 7), word(w, 8), word(w, 9)],
        };
        self.sched_change(w, |s, root, owner| s.set_attr(a, root, owner))
    }

    /// `[caller, which, who, priority or u64::MAX]`: ioprio_set, or
    /// ioprio_get (the best priority among the processes named: the
    /// lowest class, then level). The same processes and permission as
    /// setpriority's (the value's class checked by the supervisor).
    pub(super) fn ioprio(&mut self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        let Some((euid, _)) = self.sched_caller(caller) else {
            return result(-errno::ESRCH);
        };
        let pids = match self.prio_targets(caller, word(w, 2), word(w, 3) as u32) {
            Ok(p) => p,
            Err(e) => return result(-e),
        };
        let value = word(w, 4);
        let mut out = -errno::ESRCH;
        for pid in pids {
            let Some((s, owner)) = self.sched_mut(pid, euid) else {
                continue;
            };
            if value == u64::MAX {
                let v = s.ioprio() as i64;
                out = if out < 0 { v } else { out.min(v) };
            } else if owner || euid == 0 {
                s.ioprio = Some(value as u16);
                out = out.max(0);
            } else if out == -errno::ESRCH {
                out = -errno::EPERM;
            }
        }
        result(out)
    }

    /// `[caller, pid, mask]` → 0 or an error.
    pub(super) fn affinity_set(&mut self, w: &[u64]) -> End {
        self.sched_change(w, |s, root, owner| s.set_affinity(word(w, 3), root, owner))
    }

    /// `[caller, pid, ...]`: `change` on the scheduling attributes of the
    /// process the caller names, given whether the caller is root and
    /// whether it owns that process → 0 or an error.
    fn sched_change(&mut self, w: &[u64], change: impl FnOnce(&mut Sched, bool, bool) -> Result<(), i64>) -> End {
        let caller = word(w, 1) as u32;
        let Some((euid, _)) = self.sched_caller(caller) else {
            return result(-errno::ESRCH);
        };
        let Some((s, owner)) = self
            .procs
            .target(caller, word(w, 2) as u32)
            .and_then(|pid| self.sched_mut(pid, euid))
        else {
            return result(-errno::ESRCH);
        };
        match change(s, euid == 0, owner) {
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
        let mut pids: alloc::vec::Vec<u32> = self
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
            .collect();
        // The virtual init: root's, its own group's.
        if self.procs.get(INIT).is_none() && pick == if which == PRIO_PGRP { INIT } else { 0 } {
            pids.push(INIT);
        }
        Ok(pids)
    }

    /// `[caller, which, who]` → the highest priority (20 - nice) among
    /// the processes named, or ESRCH when there are none.
    pub(super) fn prio_get(&self, w: &[u64]) -> End {
        let caller = word(w, 1) as u32;
        match self.prio_targets(caller, word(w, 2), word(w, 3) as u32) {
            Err(e) => result(-e),
            Ok(pids) => result(
                pids.iter()
                    .filter_map(|&p| match self.procs.get(p) {
                        Some(p) => Some(p.sched.nice),
                        None => (p == INIT).then_some(self.init_sched.nice),
                    })
                    .map(|nice| sched::prio_word(nice) as i64)
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
            if let Some((s, owner)) = self.sched_mut(pid, euid) {
                match s.set_nice(nice, euid == 0, owner) {
                    Ok(()) if error == -errno::ESRCH => error = 0,
                    Ok(()) => {}
                    Err(e) => error = -e,
                }
            }
        }
        result(error)
    }
}
