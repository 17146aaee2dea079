//! Setting the wall clock: settimeofday and clock_settime (musl's stime
//! is settimeofday), their arguments checked in Linux's order (the
//! pointers, the values, then CAP_SYS_TIME), the time then given to the
//! kernel (`wall_set`), whose CLOCK_REALTIME every process and the file
//! server read. The time zone is checked and not kept: gettimeofday
//! reports UTC.

use super::Sup;
use linuxabi::errno;
use linuxabi::structs as st;
use tessera_rt::sys::calls;

const NS: u64 = 1_000_000_000;
/// Linux's latest settable time (TIME_SETTOD_SEC_MAX: KTIME_SEC_MAX less
/// 30 years of uptime).
const SETTOD_SEC_MAX: u64 = (i64::MAX as u64 / NS) - 30 * 365 * 86_400;
/// CAP_SYS_TIME.
const CAP_SYS_TIME: u64 = 25;

impl Sup {
    pub(super) fn settimeofday(&mut self, rid: u64, tv: u64, tz: u64) -> Result<u64, i64> {
        let time = if tv != 0 {
            let b = self.read_mem(rid, tv, 16)?;
            let (sec, usec) = (st::u64_at(&b, 0), st::u64_at(&b, 8) as i64);
            // Linux lets a count of exactly one second through here, to
            // refuse it below as a timespec's.
            if !(0..=1_000_000).contains(&usec) {
                return Err(errno::EINVAL);
            }
            Some((sec, usec as u64 * 1000))
        } else {
            None
        };
        let zone = if tz != 0 {
            let b = self.read_mem(rid, tz, 8)?;
            Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        } else {
            None
        };
        self.set_wall(rid, time, zone)
    }

    /// clock_settime: only CLOCK_REALTIME is settable (any other clock,
    /// known or not, is EINVAL before the time is read).
    pub(super) fn clock_settime(&mut self, rid: u64, clock: u64, tp: u64) -> Result<u64, i64> {
        if clock as u32 != 0 {
            return Err(errno::EINVAL);
        }
        let b = self.read_mem(rid, tp, 16)?;
        self.set_wall(rid, Some((st::u64_at(&b, 0), st::u64_at(&b, 8))), None)
    }

    /// Linux's `do_sys_settimeofday64`.
    fn set_wall(&mut self, rid: u64, time: Option<(u64, u64)>, zone: Option<i32>) -> Result<u64, i64> {
        if let Some((sec, ns)) = time
            && (sec > SETTOD_SEC_MAX || ns >= NS)
        {
            return Err(errno::EINVAL);
        }
        if !self.cred.caps.has(CAP_SYS_TIME) {
            return Err(errno::EPERM);
        }
        if zone.is_some_and(|minutes_west| !(-15 * 60..=15 * 60).contains(&minutes_west)) {
            return Err(errno::EINVAL);
        }
        if let Some((sec, ns)) = time {
            // Before boot: the monotonic clock would go below its start.
            calls::wall_set(rid, sec * NS + ns).map_err(|_| errno::EINVAL)?;
        }
        Ok(0)
    }
}
