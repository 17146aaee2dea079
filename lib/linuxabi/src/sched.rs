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
    /// SCHED_DEADLINE's runtime, deadline and period (ns; zeros under
    /// any other policy).
    pub dl: [u64; 3],
    /// The I/O priority `ioprio_set` gave (None: never set, the default;
    /// IOPRIO_CLASS_NONE set is 0 and reads back as 0).
    pub ioprio: Option<u16>,
}

/// `ioprio_set`'s classes (the value's top three of sixteen bits) and
/// the default an unset process reports (best effort, level 4).
pub const IOPRIO_CLASS_NONE: u64 = 0;
pub const IOPRIO_CLASS_RT: u64 = 1;
pub const IOPRIO_CLASS_BE: u64 = 2;
pub const IOPRIO_CLASS_IDLE: u64 = 3;
pub const IOPRIO_DEFAULT: u16 = (IOPRIO_CLASS_BE << 13 | 4) as u16;

/// Linux 6.1's `ioprio_check_cap`: a known class, the real-time class
/// for the privileged only, and level 0 for IOPRIO_CLASS_NONE; the level
/// is the value's low three bits (so "level 8" of a class is accepted,
/// and kept as given).
pub fn ioprio_check(value: u64, privileged: bool) -> Result<u16, i64> {
    let (class, level) = ((value as u32 >> 13) & 7, value as u32 & 7);
    match class as u64 {
        IOPRIO_CLASS_RT if !privileged => Err(errno::EPERM),
        IOPRIO_CLASS_RT | IOPRIO_CLASS_BE | IOPRIO_CLASS_IDLE => Ok(value as u16),
        IOPRIO_CLASS_NONE if level == 0 => Ok(value as u16),
        _ => Err(errno::EINVAL),
    }
}

/// `sched_setattr`'s flags: SCHED_FLAG_RESET_ON_FORK, _RECLAIM,
/// _DL_OVERRUN, _KEEP_POLICY, _KEEP_PARAMS, _UTIL_CLAMP_MIN and _MAX.
pub const FLAG_RESET_ON_FORK: u64 = 0x01;
pub const FLAG_KEEP_POLICY: u64 = 0x08;
pub const FLAG_KEEP_PARAMS: u64 = 0x10;
pub const FLAG_UTIL_CLAMP: u64 = 0x60;
pub const FLAG_ALL: u64 = 0x7f;
/// The bounds of a deadline task's period (Linux's
/// `sched_deadline_period_min_us` and `_max_us` defaults).
const DL_PERIOD_MIN: u64 = 100_000;
const DL_PERIOD_MAX: u64 = (1 << 22) * 1_000;

/// What `struct sched_attr` asks (`sched_setattr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    pub policy: u32,
    pub flags: u64,
    pub nice: i32,
    pub priority: u32,
    /// runtime, deadline, period.
    pub dl: [u64; 3],
}

/// Linux's `__checkparam_dl`: a deadline and at least 1 µs of runtime, no
/// field past 2^63, runtime ≤ deadline ≤ period (0: the deadline), and a
/// period inside the system's bounds.
fn dl_valid([runtime, deadline, period]: [u64; 3]) -> bool {
    let period_or = if period == 0 { deadline } else { period };
    deadline != 0
        && runtime >= 1 << 10
        && (deadline | period) >> 63 == 0
        && (period == 0 || period >= deadline)
        && deadline >= runtime
        && (DL_PERIOD_MIN..=DL_PERIOD_MAX).contains(&period_or)
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

    /// The I/O priority `ioprio_get` reports (the default until set).
    pub fn ioprio(&self) -> u16 {
        self.ioprio.unwrap_or(IOPRIO_DEFAULT)
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
            dl: if self.policy == SCHED_DEADLINE { [0; 3] } else { self.dl },
            ioprio: self.ioprio,
        }
        .deadline_reset()
    }

    /// A deadline task's child under SCHED_RESET_ON_FORK is SCHED_OTHER.
    fn deadline_reset(mut self) -> Sched {
        if self.policy == SCHED_DEADLINE {
            self.policy = SCHED_OTHER;
            self.priority = 0;
        }
        self
    }

    /// `sched_setattr`, in the order of Linux's `__sched_setscheduler`:
    /// the policy and flags, the priority or deadline parameters for it,
    /// then the permission (`privileged`: root; `owner`: the caller's
    /// own process). The nice value applies to the fair policies only.
    pub fn set_attr(&mut self, mut a: Attr, privileged: bool, owner: bool) -> Result<(), i64> {
        if a.flags & FLAG_KEEP_PARAMS != 0 {
            a.nice = self.nice;
            a.priority = self.priority;
            a.dl = self.dl;
        }
        let reset = if a.flags & FLAG_KEEP_POLICY != 0 {
            a.policy = self.policy;
            self.reset_on_fork
        } else {
            a.flags & FLAG_RESET_ON_FORK != 0
        };
        if priority_max(a.policy as u64).is_err() || a.flags & !FLAG_ALL != 0 {
            return Err(errno::EINVAL);
        }
        let deadline = a.policy == SCHED_DEADLINE;
        if a.priority > 99 || (deadline && !dl_valid(a.dl)) || is_rt(a.policy) != (a.priority != 0) {
            return Err(errno::EINVAL);
        }
        let fair = !deadline && !is_rt(a.policy);
        let nice = clamp_nice(a.nice as i64);
        if !privileged {
            let rt_up = is_rt(a.policy) && (a.policy != self.policy || a.priority > self.priority);
            if (fair && nice < self.nice)
                || rt_up
                || deadline
                || (self.policy == SCHED_IDLE && a.policy != SCHED_IDLE)
                || !owner
                || (self.reset_on_fork && !reset)
            {
                return Err(errno::EPERM);
            }
        }
        // Utilisation clamping is a kernel option Tessera does not have.
        if a.flags & FLAG_UTIL_CLAMP != 0 {
            return Err(errno::EOPNOTSUPP);
        }
        self.policy = a.policy;
        self.priority = a.priority;
        self.reset_on_fork = reset;
        self.dl = if deadline { a.dl } else { [0; 3] };
        if fair {
            self.nice = nice;
        }
        Ok(())
    }

    /// What `sched_getattr` reports: the policy, the flags, the nice
    /// value (fair policies), the priority (real-time ones) and the
    /// deadline parameters.
    pub fn attr(&self) -> Attr {
        let fair = self.policy != SCHED_DEADLINE && !is_rt(self.policy);
        Attr {
            policy: self.policy,
            flags: self.reset_on_fork as u64,
            nice: if fair { self.nice } else { 0 },
            priority: if is_rt(self.policy) { self.priority } else { 0 },
            dl: self.dl,
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
        // A deadline task's parameters are sched_setattr's alone.
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

    fn deadline(dl: [u64; 3]) -> Attr {
        Attr {
            policy: SCHED_DEADLINE,
            dl,
            ..Attr::default()
        }
    }

    #[test]
    fn ioprio_checks_class_then_level() {
        let v = |class: u64, level: u64| class << 13 | level;
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_BE, 7), false), Ok(v(2, 7) as u16));
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_BE, 8), false), Ok(v(2, 8) as u16));
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_RT, 8), false), Err(errno::EPERM));
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_RT, 9), true), Ok(v(1, 9) as u16));
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_NONE, 8), true), Ok(8));
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_IDLE, 100), false), Ok(v(3, 100) as u16));
        assert_eq!(ioprio_check(v(IOPRIO_CLASS_NONE, 1), false), Err(errno::EINVAL));
        assert_eq!(ioprio_check(v(4, 0), true), Err(errno::EINVAL));
        assert_eq!(ioprio_check(0, false), Ok(0));
        assert_eq!(Sched::default().ioprio(), IOPRIO_DEFAULT);
        let none = Sched {
            ioprio: Some(0),
            ..Sched::default()
        };
        assert_eq!(none.ioprio(), 0);
    }

    #[test]
    fn setattr_keeps_deadline_parameters_and_checks_them() {
        let mut s = Sched::default();
        let ok = [10_000_000, 30_000_000, 30_000_000];
        assert_eq!(s.set_attr(deadline(ok), false, true), Err(errno::EPERM));
        assert_eq!(s.set_attr(deadline([10_000_000, 0, 0]), true, true), Err(errno::EINVAL));
        assert_eq!(
            s.set_attr(deadline([100, 30_000_000, 0]), true, true),
            Err(errno::EINVAL)
        );
        assert_eq!(
            s.set_attr(deadline([2, 1, 3].map(|v| v * 10_000_000)), true, true),
            Err(errno::EINVAL)
        );
        assert_eq!(
            s.set_attr(deadline([1 << 20, 1 << 40, 0]), true, true),
            Err(errno::EINVAL)
        );
        assert_eq!(s.set_attr(deadline(ok), true, true), Ok(()));
        assert_eq!(s.attr().dl, ok);
        assert_eq!(s.policy_word(), SCHED_DEADLINE as u64);
        let keep = Attr {
            flags: FLAG_KEEP_PARAMS | FLAG_KEEP_POLICY | FLAG_RESET_ON_FORK,
            ..Attr::default()
        };
        assert_eq!(s.set_attr(keep, true, true), Ok(()));
        assert_eq!((s.attr().dl, s.reset_on_fork), (ok, false));
        let mut reset = s;
        reset.reset_on_fork = true;
        assert_eq!(reset.for_child().policy, SCHED_OTHER);
        assert_eq!(reset.for_child().dl, [0; 3]);
        let other = Attr {
            nice: -30,
            ..Attr::default()
        };
        assert_eq!(s.set_attr(other, true, true), Ok(()));
        assert_eq!((s.policy, s.dl, s.nice), (SCHED_OTHER, [0; 3], MIN_NICE));
        let bad_flags = Attr {
            flags: 0x80,
            ..Attr::default()
        };
        assert_eq!(s.set_attr(bad_flags, true, true), Err(errno::EINVAL));
        let clamp = Attr {
            flags: 0x20,
            ..Attr::default()
        };
        assert_eq!(s.set_attr(clamp, true, true), Err(errno::EOPNOTSUPP));
        let lower = Attr {
            nice: -25,
            ..Attr::default()
        };
        assert_eq!(s.set_attr(lower, false, true), Ok(()));
        s.nice = 5;
        assert_eq!(s.set_attr(lower, false, true), Err(errno::EPERM));
    }

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
