//! POSIX timers (timer_create and the rest) and timerfd's timers: every
//! one is this server's, since it keeps the clock's alarm. A POSIX timer
//! belongs to its process (gone at its exit or exec) and signals it when
//! it expires (SI_TIMER, its id, its value, the periods it missed as the
//! overrun); a timerfd's timer belongs to the descriptor's object, whose
//! count of expirations a read takes (`eventfd.rs`'s counter).

use super::objects::Object;
use super::{End, Shared, reply, result};
use crate::proto::{obj, word};
use alloc::collections::BTreeMap;
use linuxabi::errno;
use linuxabi::eventfd::Counter;
use linuxabi::ptimer::{CLOCK_PROCESS_CPUTIME_ID, SI_TIMER, SIGEV_NONE, SIGEV_SIGNAL, Timer, deadline};
use tessera_rt::sys;

/// POSIX timers a process may have (Linux bounds them by the pending
/// signals' limit): each is memory of this server's.
const PER_PROCESS: usize = 256;

/// A process's virtual and profiling interval timers (setitimer's
/// ITIMER_VIRTUAL, 1, and ITIMER_PROF, 2) sit among its POSIX timers
/// under ids no timer_create gives (Linux's timer ids are non-negative
/// ints), `ITIMER_ID | which`.
const ITIMER_ID: u32 = 0x8000_0000;

pub struct PosixTimer {
    pub timer: Timer,
    pub clock: u64,
    pub notify: u32,
    pub signo: u32,
    pub value: u64,
    /// Expirations missed at the last signal (timer_getoverrun).
    pub overrun: u64,
}

#[derive(Default)]
pub struct PTimers {
    /// (pid, timer id) → its timer.
    pub posix: BTreeMap<(u32, u32), PosixTimer>,
    /// timerfd object → its timer and clock.
    pub fds: BTreeMap<u64, (Timer, u64)>,
}

impl PTimers {
    pub fn deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.posix
            .values()
            .map(|t| t.timer.deadline)
            .chain(self.fds.values().map(|t| t.0.deadline))
            .filter(|&d| d != 0)
    }
}

impl Shared {
    /// `ctl::PTIMER`: [op, pid, ...]: 0 create [notify, signo, value,
    /// clock, value is the id] → id; 1 set [id, value, interval, absolute, CPU time] →
    /// [remaining, interval] before;
    /// 2 get [id] → [remaining, interval]; 3 overrun [id]; 4 delete [id];
    /// 5 set the interval timer [which, value, interval] → [remaining,
    /// interval] before; 6 get it [which] → [remaining, interval].
    pub(super) fn ptimer(&mut self, w: &[u64]) -> End {
        let (op, pid, id) = (word(w, 1), word(w, 2) as u32, word(w, 3) as u32);
        let now = sys::now_ns();
        if op == 5 || op == 6 {
            return self.itimer(op == 5, pid, w);
        }
        let t = &mut self.ptimers.posix;
        if op == 0 {
            let mine = t.range((pid, 0)..(pid, ITIMER_ID));
            if mine.clone().count() >= PER_PROCESS {
                return result(-errno::EAGAIN);
            }
            let free = (0..).find(|i| !t.contains_key(&(pid, *i))).unwrap_or(0);
            t.insert(
                (pid, free),
                PosixTimer {
                    timer: Timer::default(),
                    notify: word(w, 3) as u32,
                    signo: word(w, 4) as u32,
                    // Without a sigevent the value is the timer's id.
                    value: if word(w, 7) != 0 { free as u64 } else { word(w, 5) },
                    clock: word(w, 6),
                    overrun: 0,
                },
            );
            return result(free as i64);
        }
        let Some(p) = t.get_mut(&(pid, id)).filter(|_| id < ITIMER_ID) else {
            return result(-errno::EINVAL);
        };
        match op {
            1 => {
                let (rem, int) = p.timer.remaining(now);
                p.timer = Timer {
                    deadline: deadline(p.clock, word(w, 6) != 0, word(w, 4), now, word(w, 7)),
                    interval: word(w, 5),
                };
                p.overrun = 0;
                reply(&[rem, int])
            }
            2 => {
                let (rem, int) = p.timer.remaining(now);
                reply(&[rem, int])
            }
            3 => result(p.overrun.min(i32::MAX as u64) as i64),
            4 => {
                t.remove(&(pid, id));
                result(0)
            }
            _ => result(-errno::EINVAL),
        }
    }

    /// setitimer and getitimer of ITIMER_VIRTUAL and ITIMER_PROF: a timer
    /// on the process's CPU clock that sends SIGVTALRM or SIGPROF. As the
    /// POSIX timers on that clock, it counts the time from its setting,
    /// which the process's CPU time never exceeds. A value of 0 disarms.
    fn itimer(&mut self, set: bool, pid: u32, w: &[u64]) -> End {
        let which = word(w, 3) as u32;
        let signo = match which {
            1 => linuxabi::signal::SIGVTALRM,
            2 => linuxabi::signal::SIGPROF,
            _ => return result(-errno::EINVAL),
        };
        let now = sys::now_ns();
        let key = (pid, ITIMER_ID | which);
        let t = &mut self.ptimers.posix;
        let (rem, int) = t.get(&key).map_or((0, 0), |p| p.timer.remaining(now));
        if set {
            let (value, interval) = (word(w, 4), word(w, 5));
            if value == 0 {
                t.remove(&key);
            } else {
                t.insert(
                    key,
                    PosixTimer {
                        timer: Timer {
                            deadline: deadline(CLOCK_PROCESS_CPUTIME_ID, false, value, now, 0),
                            interval,
                        },
                        clock: CLOCK_PROCESS_CPUTIME_ID,
                        notify: SIGEV_SIGNAL,
                        signo,
                        value: 0,
                        overrun: 0,
                    },
                );
            }
        }
        reply(&[rem, int])
    }

    /// `ctl::TIMERFD`: [op, ...]: 0 create [clock] → object; 1 set
    /// [object, value, interval, absolute] → [remaining, interval]
    /// before; 2 get [object].
    pub(super) fn timerfd(&mut self, w: &[u64]) -> End {
        let (op, id) = (word(w, 1), word(w, 2));
        let now = sys::now_ns();
        if op == 0 {
            let id = self.objs.insert(Object {
                kind: obj::TIMERFD,
                refs: 1,
                flags: 0,
                pipe: 0,
                pos: 0,
            });
            self.objs.counters.insert(id, Counter::new(0, false));
            self.ptimers.fds.insert(id, (Timer::default(), word(w, 2)));
            return result(id as i64);
        }
        let Some((t, clock)) = self.ptimers.fds.get_mut(&id) else {
            return result(-errno::EINVAL);
        };
        let (rem, int) = t.remaining(now);
        if op == 1 {
            *t = Timer {
                deadline: deadline(*clock, word(w, 5) != 0, word(w, 3), now, 0),
                interval: word(w, 4),
            };
            // A new setting drops the expirations not read yet.
            if let Some(c) = self.objs.counters.get_mut(&id) {
                c.value = 0;
            }
        }
        reply(&[rem, int])
    }

    /// The timers due now expire: signals sent, timerfd counts raised.
    pub(super) fn ptimers_tick(&mut self, now: u64) {
        let mut due = alloc::vec::Vec::new();
        for (&(pid, id), p) in self.ptimers.posix.iter_mut() {
            let n = p.timer.expire(now);
            if n > 0 {
                p.overrun = n - 1;
                if p.notify != SIGEV_NONE {
                    due.push((pid, id, p.signo, p.value, n - 1));
                }
            }
        }
        for (pid, id, signo, value, overrun) in due {
            if id >= ITIMER_ID {
                self.itimer_signal(pid, signo);
            } else {
                self.timer_signal(pid, id, signo, value, overrun);
            }
        }
        let counters = &mut self.objs.counters;
        self.ptimers.fds.retain(|id, (t, _)| {
            let Some(c) = counters.get_mut(id) else {
                return false;
            };
            let n = t.expire(now);
            if n > 0 {
                c.value = c.value.saturating_add(n);
            }
            true
        });
        self.woke = true;
    }

    fn timer_signal(&mut self, pid: u32, id: u32, signo: u32, value: u64, overrun: u64) {
        let Some(p) = self.procs.get(pid) else { return };
        if p.zombie.is_some() {
            return;
        }
        let s = crate::proto::Signal {
            sig: signo as u64,
            code: SI_TIMER,
            // The siginfo's timer id and overrun sit where a sender's pid
            // and uid do.
            pid: id as u64,
            uid: overrun.min(i32::MAX as u64),
            value,
            ..crate::proto::Signal::default()
        };
        let sup = p.sup;
        self.notify(sup, &s);
    }

    /// An interval timer's signal: the kernel's, as Linux sends it.
    fn itimer_signal(&mut self, pid: u32, signo: u32) {
        let Some(p) = self.procs.get(pid) else { return };
        if p.zombie.is_some() {
            return;
        }
        let s = crate::proto::Signal {
            sig: signo as u64,
            code: linuxabi::signal::SI_KERNEL as i64,
            ..crate::proto::Signal::default()
        };
        let sup = p.sup;
        self.notify(sup, &s);
    }

    /// `pid` ended (`exec` false) or ran a new program: its POSIX timers
    /// go; its interval timers go only with it (execve keeps them).
    pub(super) fn ptimers_exit(&mut self, pid: u32, exec: bool) {
        self.ptimers
            .posix
            .retain(|&(p, id), _| p != pid || (exec && id >= ITIMER_ID));
    }
}
