//! POSIX timers (timer_create, timer_settime, timer_gettime,
//! timer_getoverrun, timer_delete) and timerfd (timerfd_create,
//! timerfd_settime, timerfd_gettime): the supervisor checks the caller's
//! records and hands the timers to the shared server, which keeps the
//! clock's alarm (`shared/ptimers.rs`).

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd};
use crate::proto::{ctl, obj, word};
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::ptimer::{self as pt, SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD_ID, TIMER_ABSTIME};
use tessera_rt::sys;

const TFD_CLOEXEC: u64 = 0o2000000;
const TFD_NONBLOCK: u64 = 0o4000;
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;
const SIGALRM: u64 = 14;

/// The shared server's answer: its words, or the error in the first.
fn answer(r: Vec<u64>) -> Result<Vec<u64>, i64> {
    match errno::of(word(&r, 0)) {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

impl Sup {
    pub(super) fn timer_create(&mut self, rid: u64, clock: u64, sevp: u64, idp: u64) -> Result<u64, i64> {
        match clock {
            pt::CLOCK_REALTIME
            | pt::CLOCK_MONOTONIC
            | pt::CLOCK_PROCESS_CPUTIME_ID
            | pt::CLOCK_THREAD_CPUTIME_ID
            | pt::CLOCK_BOOTTIME
            | pt::CLOCK_TAI => {}
            // No wake-up alarm device.
            pt::CLOCK_REALTIME_ALARM | pt::CLOCK_BOOTTIME_ALARM => return Err(errno::EOPNOTSUPP),
            _ => return Err(errno::EINVAL),
        }
        // The default: SIGALRM with the timer's id as its value.
        let (mut notify, mut signo, mut value, mut value_is_id) = (SIGEV_SIGNAL as u64, SIGALRM, 0, 1);
        if sevp != 0 {
            let b = self.read_mem(rid, sevp, 20)?;
            let i32_at = |i: usize| i32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
            value = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
            value_is_id = 0;
            signo = i32_at(8) as u32 as u64;
            let n = i32_at(12) as u32;
            notify = n as u64;
            match n {
                SIGEV_NONE => {}
                SIGEV_SIGNAL if (1..=64).contains(&signo) => {}
                SIGEV_THREAD_ID if (1..=64).contains(&signo) && i32_at(16) > 0 => {}
                _ => return Err(errno::EINVAL),
            }
        }
        let r = answer(self.ctl(&[
            ctl::PTIMER,
            0,
            self.pid as u64,
            notify,
            signo,
            value,
            clock,
            value_is_id,
        ]))?;
        let id = word(&r, 0);
        if let Err(e) = self.write_mem(rid, idp, &(id as i32).to_le_bytes()) {
            self.ctl(&[ctl::PTIMER, 4, self.pid as u64, id]);
            return Err(e);
        }
        Ok(0)
    }

    pub(super) fn timer_settime(&mut self, rid: u64, id: u64, flags: u64, new: u64, old: u64) -> Result<u64, i64> {
        if new == 0 {
            return Err(errno::EINVAL);
        }
        let (interval, value) = pt::parse_itimerspec(&self.read_mem(rid, new, 32)?)?;
        let cpu = sys::proc_info(self.tpid).map_or(0, |i| i.cpu_ns);
        let abs = (flags & TIMER_ABSTIME != 0) as u64;
        let r = answer(self.ctl(&[
            ctl::PTIMER,
            1,
            self.pid as u64,
            id as i32 as u32 as u64,
            value,
            interval,
            abs,
            cpu,
        ]))?;
        if old != 0 {
            self.write_mem(rid, old, &pt::itimerspec(word(&r, 0), word(&r, 1)))?;
        }
        Ok(0)
    }

    pub(super) fn timer_gettime(&mut self, rid: u64, id: u64, out: u64) -> Result<u64, i64> {
        let r = answer(self.ctl(&[ctl::PTIMER, 2, self.pid as u64, id as i32 as u32 as u64]))?;
        self.write_mem(rid, out, &pt::itimerspec(word(&r, 0), word(&r, 1)))?;
        Ok(0)
    }

    /// timer_getoverrun (op 3) and timer_delete (op 4).
    pub(super) fn timer_op(&mut self, op: u64, id: u64) -> Result<u64, i64> {
        answer(self.ctl(&[ctl::PTIMER, op, self.pid as u64, id as i32 as u32 as u64])).map(|r| word(&r, 0))
    }

    pub(super) fn timerfd_create(&mut self, clock: u64, flags: u64) -> Result<u64, i64> {
        match clock {
            pt::CLOCK_REALTIME | pt::CLOCK_MONOTONIC | pt::CLOCK_BOOTTIME => {}
            pt::CLOCK_REALTIME_ALARM | pt::CLOCK_BOOTTIME_ALARM => return Err(errno::EOPNOTSUPP),
            _ => return Err(errno::EINVAL),
        }
        if flags & !(TFD_CLOEXEC | TFD_NONBLOCK) != 0 {
            return Err(errno::EINVAL);
        }
        let id = word(&answer(self.ctl(&[ctl::TIMERFD, 0, clock]))?, 0);
        let nonblock = if flags & TFD_NONBLOCK != 0 { fdt::O_NONBLOCK } else { 0 };
        if nonblock != 0 {
            self.ctl(&[ctl::OBJ_SETFL, id, nonblock as u64]);
        }
        let o = Ofd::new(
            Kind::Obj { id, kind: obj::TIMERFD },
            fdt::O_RDWR | nonblock,
            String::from("anon_inode:[timerfd]"),
        );
        match self.fds.insert(o.clone(), flags & TFD_CLOEXEC != 0, self.limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.release(&o);
                Err(e)
            }
        }
    }

    /// The timerfd object of descriptor `fd` (EBADF: none; EINVAL: not a
    /// timerfd).
    fn timerfd_of(&self, fd: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        match o.borrow().kind {
            Kind::Obj { id, kind } if kind == obj::TIMERFD => Ok(id),
            _ => Err(errno::EINVAL),
        }
    }

    pub(super) fn timerfd_settime(&mut self, rid: u64, fd: u64, flags: u64, new: u64, old: u64) -> Result<u64, i64> {
        if flags & !(TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(errno::EINVAL);
        }
        let id = self.timerfd_of(fd)?;
        let (interval, value) = pt::parse_itimerspec(&self.read_mem(rid, new, 32)?)?;
        let abs = (flags & TIMER_ABSTIME != 0) as u64;
        let r = answer(self.ctl(&[ctl::TIMERFD, 1, id, value, interval, abs]))?;
        if old != 0 {
            self.write_mem(rid, old, &pt::itimerspec(word(&r, 0), word(&r, 1)))?;
        }
        Ok(0)
    }

    pub(super) fn timerfd_gettime(&mut self, rid: u64, fd: u64, out: u64) -> Result<u64, i64> {
        let id = self.timerfd_of(fd)?;
        let r = answer(self.ctl(&[ctl::TIMERFD, 2, id]))?;
        self.write_mem(rid, out, &pt::itimerspec(word(&r, 0), word(&r, 1)))?;
        Ok(0)
    }
}
