//! kcmp(2): whether two processes share a kernel object. Every Linux
//! process here has its own supervisor, so two processes share no
//! memory, table, directory, signal handlers, I/O context or semaphore
//! adjustments, and a process's threads share all of them. Descriptions
//! are compared within the caller's own table only: another process's
//! table is its supervisor's (EOPNOTSUPP, as for an epoll's target).

use super::Sup;
use crate::proto::{ctl, word};
use alloc::rc::Rc;
use linuxabi::errno;

const KCMP_FILE: u64 = 0;
const KCMP_EPOLL_TFD: u64 = 7;
const KCMP_TYPES: u64 = 8;

impl Sup {
    /// The process `pid` names (a tid of its own threads names the
    /// caller): its pid and real uid; ESRCH if there is none.
    fn kcmp_target(&self, pid: u64) -> Result<(u32, u32), i64> {
        let pid = pid as u32;
        if pid as i32 <= 0 {
            return Err(errno::ESRCH);
        }
        if pid == self.pid || self.threads.others.contains(&pid) {
            return Ok((self.pid, self.cred.uid));
        }
        let rec = self.ctl(&[ctl::PROC, pid as u64]);
        if let Some(e) = errno::of(word(&rec, 0)) {
            return Err(e);
        }
        Ok((pid, word(&rec, 5) as u32))
    }

    pub(super) fn kcmp(&mut self, a: [u64; 6]) -> Result<u64, i64> {
        let (p1, p2) = (self.kcmp_target(a[0])?, self.kcmp_target(a[1])?);
        // ptrace's read check by real ids, for both.
        if self.cred.euid != 0 && (p1.1 != self.cred.uid || p2.1 != self.cred.uid) {
            return Err(errno::EPERM);
        }
        let (p1, p2) = (p1.0, p2.0);
        // Linux orders objects by their (obfuscated) addresses: here by
        // pid, which is as stable while both live.
        let order = |x: u64, y: u64| match x.cmp(&y) {
            core::cmp::Ordering::Equal => 0,
            core::cmp::Ordering::Less => 1,
            core::cmp::Ordering::Greater => 2,
        };
        match a[2] {
            KCMP_FILE if p1 == self.pid && p2 == self.pid => {
                let (f1, f2) = (self.fds.ofd(a[3])?, self.fds.ofd(a[4])?);
                if Rc::ptr_eq(&f1, &f2) {
                    Ok(0)
                } else {
                    Ok(order(Rc::as_ptr(&f1) as u64, Rc::as_ptr(&f2) as u64))
                }
            }
            KCMP_FILE | KCMP_EPOLL_TFD => Err(errno::EOPNOTSUPP),
            t if t < KCMP_TYPES => Ok(order(p1 as u64, p2 as u64)),
            _ => Err(errno::EINVAL),
        }
    }
}
