//! POSIX timers and timerfd's timers as Linux runs them: a deadline and a
//! period in nanoseconds since boot, expirations counted (a periodic
//! timer that fell behind counts the periods it missed as overruns), and
//! the `itimerspec` records the calls read and write.

use crate::errno;

pub const SIGEV_SIGNAL: u32 = 0;
pub const SIGEV_NONE: u32 = 1;
pub const SIGEV_THREAD: u32 = 2;
pub const SIGEV_THREAD_ID: u32 = 4;
/// `si_code` of a timer's signal.
pub const SI_TIMER: i64 = -2;
pub const TIMER_ABSTIME: u64 = 1;
const NS: u64 = 1_000_000_000;

/// An armed or disarmed timer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    /// When it next expires (0: disarmed).
    pub deadline: u64,
    pub interval: u64,
}

impl Timer {
    /// Expirations due by `now` (0 if none); the timer moves on to its
    /// next period, or is disarmed.
    pub fn expire(&mut self, now: u64) -> u64 {
        if self.deadline == 0 || now < self.deadline {
            return 0;
        }
        if self.interval == 0 {
            self.deadline = 0;
            return 1;
        }
        let n = (now - self.deadline) / self.interval + 1;
        self.deadline = self.deadline.saturating_add(n.saturating_mul(self.interval));
        n
    }

    /// (remaining, interval) as `*_gettime` reports them.
    pub fn remaining(&self, now: u64) -> (u64, u64) {
        match self.deadline {
            0 => (0, self.interval),
            // Due but not yet run: Linux reports 1 ns left.
            d => (d.saturating_sub(now).max(1), self.interval),
        }
    }
}

pub const CLOCK_REALTIME: u64 = 0;
pub const CLOCK_MONOTONIC: u64 = 1;
pub const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
pub const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
pub const CLOCK_MONOTONIC_RAW: u64 = 4;
pub const CLOCK_REALTIME_COARSE: u64 = 5;
pub const CLOCK_MONOTONIC_COARSE: u64 = 6;
pub const CLOCK_BOOTTIME: u64 = 7;
pub const CLOCK_REALTIME_ALARM: u64 = 8;
pub const CLOCK_BOOTTIME_ALARM: u64 = 9;
pub const CLOCK_TAI: u64 = 11;
/// Seconds of CLOCK_REALTIME at boot (as the kernel counts it).
pub const EPOCH_AT_BOOT: u64 = 1_704_067_200;

/// When a timer set to `value` on `clock` (absolute with TIMER_ABSTIME)
/// expires, in nanoseconds since boot; 0 disarms it. `now` is the time
/// since boot and `cpu` the process's CPU time: a CPU-time clock's timer
/// runs on the wall clock from the time it was set (never later than
/// the CPU time it asks for).
pub fn deadline(clock: u64, abs: bool, value: u64, now: u64, cpu: u64) -> u64 {
    if value == 0 {
        return 0;
    }
    let at = if !abs {
        now.saturating_add(value)
    } else {
        match clock {
            CLOCK_REALTIME | CLOCK_REALTIME_ALARM | CLOCK_TAI => value.saturating_sub(EPOCH_AT_BOOT * NS),
            CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => now.saturating_add(value.saturating_sub(cpu)),
            _ => value,
        }
    };
    at.max(1)
}

/// An `itimerspec` (interval, then value) as nanoseconds; EINVAL for a
/// negative field or nanoseconds past a second.
pub fn parse_itimerspec(b: &[u8]) -> Result<(u64, u64), i64> {
    let f = |i: usize| i64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    if b.len() < 32 {
        return Err(errno::EFAULT);
    }
    let (is, ins, vs, vns) = (f(0), f(8), f(16), f(24));
    if is < 0 || vs < 0 || !(0..NS as i64).contains(&ins) || !(0..NS as i64).contains(&vns) {
        return Err(errno::EINVAL);
    }
    let ns = |s: i64, n: i64| (s as u64).saturating_mul(NS).saturating_add(n as u64);
    Ok((ns(is, ins), ns(vs, vns)))
}

/// An `itimerspec` of (value, interval).
pub fn itimerspec(value: u64, interval: u64) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..8].copy_from_slice(&(interval / NS).to_le_bytes());
    b[8..16].copy_from_slice(&(interval % NS).to_le_bytes());
    b[16..24].copy_from_slice(&(value / NS).to_le_bytes());
    b[24..32].copy_from_slice(&(value % NS).to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_overruns() {
        let mut t = Timer {
            deadline: 100,
            interval: 10,
        };
        assert_eq!(t.expire(99), 0);
        assert_eq!(t.expire(100), 1);
        assert_eq!(t.deadline, 110);
        assert_eq!(t.expire(135), 3, "two missed periods");
        assert_eq!(t.deadline, 140);
        let mut once = Timer {
            deadline: 5,
            interval: 0,
        };
        assert_eq!(once.expire(9), 1);
        assert_eq!(once.remaining(9), (0, 0));
    }

    #[test]
    fn absolute_times() {
        let epoch = EPOCH_AT_BOOT * NS;
        assert_eq!(deadline(CLOCK_REALTIME, true, epoch + 50, 10, 0), 50);
        assert_eq!(deadline(CLOCK_MONOTONIC, true, 70, 10, 0), 70);
        assert_eq!(deadline(CLOCK_MONOTONIC, false, 70, 10, 0), 80);
        assert_eq!(deadline(CLOCK_REALTIME, true, 5, 10, 0), 1, "in the past: at once");
        assert_eq!(deadline(CLOCK_PROCESS_CPUTIME_ID, true, 30, 100, 20), 110);
        assert_eq!(deadline(CLOCK_MONOTONIC, false, 0, 10, 0), 0);
    }

    #[test]
    fn records() {
        let b = itimerspec(1_500_000_000, 2);
        assert_eq!(parse_itimerspec(&b), Ok((2, 1_500_000_000)));
        let mut bad = b;
        bad[24..32].copy_from_slice(&(NS as i64).to_le_bytes());
        assert_eq!(parse_itimerspec(&bad), Err(errno::EINVAL));
    }
}
