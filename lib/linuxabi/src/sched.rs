//! Scheduling attributes as Linux keeps them per process: a policy with
//! its static priority (`sched_setscheduler`) and a nice value
//! (`setpriority`), with Linux's ranges, error numbers and permission
//! rules. Tessera's scheduler does not read them yet: they are recorded,
//! inherited by fork and reported back.

use crate::errno;

pub const SCHED_OTHER: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
pub const SCHED_DEADLINE: u32 = 6;
/// A flag beside the policy: children start as SCHED_OTHER.
pub const SCHED_RESET_ON_FORK: u64 = 0x4000_0000;

pub const PRIO_PROCESS: u64 = 0;
pub const PRIO_PGRP: u64 = 1;
pub const PRIO_USER: u64 = 2;

/// The time slice of Tessera's scheduler (its timer runs at 100 Hz, and a
/// computation runs for one tick while others wait): what
/// sched_rr_get_interval reports.
pub const SLICE_NS: u64 = 10_000_000;

pub const MIN_NICE: i32 = -20;
pub const MAX_NICE: i32 = 19;

/// A process's attributes (fork copies them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sched {
    pub policy: u32,
    pub priority: u32,
    pub nice: i32,
    pub reset_on_fork: bool,
    /// The CPUs it may run on (bit i: CPU i; 0: never set, every one).
    pub affinity: u64,
}

fn is_rt(policy: u32) -> bool {
    matches!(policy, SCHED_FIFO | SCHED_RR)
}

/// `sched_get_priority_max`.
pub fn priority_max(policy: u64) -> Result<u64, i64> {
    match policy as u32 {
        _ if policy > u32::MAX as u64 => Err(errno::EINVAL),
        SCHED_FIFO | SCHED_RR => Ok(99),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok(0),
        _ => Err(errno::EINVAL),
    }
}

/// `sched_get_priority_min`.
pub fn priority_min(policy: u64) -> Result<u64, i64> {
    priority_max(policy).map(|m| m.min(1))
}

/// Nice value `nice` clamped to Linux's range.
pub fn clamp_nice(nice: i64) -> i32 {
    nice.clamp(MIN_NICE as i64, MAX_NICE as i64) as i32
}

/// What getpriority reports for a nice value (20 - nice: 1 ..= 40, so no
/// result looks like an error; the C library subtracts it back).
pub fn prio_word(nice: i32) -> u64 {
    (20 - nice) as u64
}

impl Sched {
    /// The policy as sched_getscheduler reports it, with its flag.
    pub fn policy_word(&self) -> u64 {
        self.policy as u64 | if self.reset_on_fork { SCHED_RESET_ON_FORK } else { 0 }
    }

    /// The attributes a forked child starts with.
    pub fn for_child(self) -> Sched {
        if !self.reset_on_fork {
            return self;
        }
        let rt = is_rt(self.policy);
        Sched {
            policy: if rt { SCHED_OTHER } else { self.policy },
            priority: if rt { 0 } else { self.priority },
            nice: self.nice.max(0),
            reset_on_fork: false,
            affinity: self.affinity,
        }
    }

    /// `sched_setscheduler` (`policy` None: `sched_setparam`, the policy
    /// kept) by a caller who is privileged or not (`privileged`: root, or
    /// the same owner without CAP_SYS_NICE is `owner`), in Linux's order
    /// of checks: the policy, the priority for it, then the permission.
    pub fn set_scheduler(
        &mut self,
        policy: Option<u64>,
        priority: u64,
        privileged: bool,
        owner: bool,
    ) -> Result<(), i64> {
        let (policy, reset) = match policy {
            None => (self.policy as u64, self.reset_on_fork),
            Some(p) => (p & !SCHED_RESET_ON_FORK, p & SCHED_RESET_ON_FORK != 0),
        };
        if policy > u32::MAX as u64 || priority_max(policy).is_err() || policy as u32 == SCHED_DEADLINE {
            return Err(errno::EINVAL);
        }
        let policy = policy as u32;
        if priority > 99 || is_rt(policy) != (priority != 0) {
            return Err(errno::EINVAL);
        }
        if !privileged {
            // Without CAP_SYS_NICE (RLIMIT_RTPRIO is 0): no new
            // real-time policy or higher real-time priority, no leaving
            // SCHED_IDLE, nothing for another user's process.
            let rt_up = is_rt(policy) && (policy != self.policy || priority > self.priority as u64);
            if rt_up || (self.policy == SCHED_IDLE && policy != SCHED_IDLE) || !owner {
                return Err(errno::EPERM);
            }
            if self.reset_on_fork && !reset {
                return Err(errno::EPERM);
            }
        }
        self.policy = policy;
        self.priority = priority as u32;
        self.reset_on_fork = reset;
        Ok(())
    }

    /// `sched_setaffinity` of this process to `mask` (already limited to
    /// the CPUs there are): EPERM for another user's process without the
    /// privilege, then EINVAL for no CPU at all.
    pub fn set_affinity(&mut self, mask: u64, privileged: bool, owner: bool) -> Result<(), i64> {
        if !privileged && !owner {
            return Err(errno::EPERM);
        }
        if mask == 0 {
            return Err(errno::EINVAL);
        }
        self.affinity = mask;
        Ok(())
    }

    /// `setpriority` of one process: EPERM for another user's process,
    /// EACCES for a lower nice value without the privilege (RLIMIT_NICE
    /// is 0).
    pub fn set_nice(&mut self, nice: i32, privileged: bool, owner: bool) -> Result<(), i64> {
        if !privileged && !owner {
            return Err(errno::EPERM);
        }
        if nice < self.nice && !privileged {
            return Err(errno::EACCES);
        }
        self.nice = nice;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_ranges_are_linuxs() {
        assert_eq!(priority_max(SCHED_FIFO as u64), Ok(99));
        assert_eq!(priority_min(SCHED_RR as u64), Ok(1));
        assert_eq!(priority_max(SCHED_OTHER as u64), Ok(0));
        assert_eq!(priority_min(SCHED_IDLE as u64), Ok(0));
        assert_eq!(priority_max(4), Err(errno::EINVAL));
        assert_eq!(priority_min(u64::MAX), Err(errno::EINVAL));
        assert_eq!(priority_max(1 << 32 | 1), Err(errno::EINVAL));
    }

    #[test]
    fn setscheduler_checks_policy_then_priority_then_permission() {
        let mut s = Sched::default();
        assert_eq!(s.set_scheduler(Some(99), 0, true, true), Err(errno::EINVAL));
        assert_eq!(
            s.set_scheduler(Some(SCHED_FIFO as u64), 0, true, true),
            Err(errno::EINVAL)
        );
        assert_eq!(
            s.set_scheduler(Some(SCHED_OTHER as u64), 1, true, true),
            Err(errno::EINVAL)
        );
        assert_eq!(
            s.set_scheduler(Some(SCHED_FIFO as u64), 100, false, false),
            Err(errno::EINVAL)
        );
        assert_eq!(
            s.set_scheduler(Some(SCHED_FIFO as u64), 10, false, true),
            Err(errno::EPERM)
        );
        assert_eq!(
            s.set_scheduler(Some(SCHED_BATCH as u64), 0, false, false),
            Err(errno::EPERM)
        );
        assert_eq!(s.set_scheduler(Some(SCHED_BATCH as u64), 0, false, true), Ok(()));
        assert_eq!(s.set_scheduler(Some(SCHED_RR as u64), 5, true, false), Ok(()));
        assert_eq!((s.policy, s.priority), (SCHED_RR, 5));
        // setparam keeps the policy and checks the priority against it.
        assert_eq!(s.set_scheduler(None, 0, true, true), Err(errno::EINVAL));
        assert_eq!(s.set_scheduler(None, 7, true, true), Ok(()));
        assert_eq!((s.policy, s.priority), (SCHED_RR, 7));
        // Without the privilege a real-time priority may go down only.
        assert_eq!(s.set_scheduler(None, 8, false, true), Err(errno::EPERM));
        assert_eq!(s.set_scheduler(None, 6, false, true), Ok(()));
        assert_eq!(
            s.set_scheduler(Some(SCHED_FIFO as u64), 1, false, true),
            Err(errno::EPERM)
        );
    }

    #[test]
    fn reset_on_fork_gives_children_the_normal_policy() {
        let mut s = Sched::default();
        let flag = SCHED_RESET_ON_FORK | SCHED_FIFO as u64;
        assert_eq!(s.set_scheduler(Some(flag), 3, true, true), Ok(()));
        assert_eq!(s.policy_word(), flag);
        s.nice = -5;
        let c = s.for_child();
        assert_eq!(
            (c.policy, c.priority, c.nice, c.reset_on_fork),
            (SCHED_OTHER, 0, 0, false)
        );
        assert_eq!(Sched { nice: 4, ..s }.for_child().nice, 4);
        assert_eq!(Sched::default().for_child(), Sched::default());
    }

    #[test]
    fn affinity_checks_the_owner_then_the_mask() {
        let mut s = Sched::default();
        assert_eq!(s.set_affinity(0, false, false), Err(errno::EPERM));
        assert_eq!(s.set_affinity(0, true, false), Err(errno::EINVAL));
        assert_eq!(s.set_affinity(0b10, false, true), Ok(()));
        assert_eq!(s.for_child().affinity, 0b10);
    }

    #[test]
    fn nice_needs_the_privilege_to_go_down() {
        let mut s = Sched::default();
        assert_eq!(s.set_nice(5, false, true), Ok(()));
        assert_eq!(s.set_nice(3, false, true), Err(errno::EACCES));
        assert_eq!(s.set_nice(10, false, false), Err(errno::EPERM));
        assert_eq!(s.set_nice(-20, true, false), Ok(()));
        assert_eq!(clamp_nice(-100), MIN_NICE);
        assert_eq!(clamp_nice(i64::MAX), MAX_NICE);
        assert_eq!(prio_word(-20), 40);
        assert_eq!(prio_word(19), 1);
    }
}
