//! Linux's `futex` call, served by the kernel for a Linux process's
//! computations (`ipc::futex` keeps the waiters): the operations musl's
//! and Rust's threads use (WAIT, WAKE, their bitset forms, REQUEUE and
//! CMP_REQUEUE), private and shared, with relative and absolute timeouts.
//! Checks and error numbers are Linux's.

use crate::linux::{errno, fail, read_timespec};
use ipc::futex::{self, WaitError};
use ipc::process::Process;
use kcore::clock;

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_PRIVATE_FLAG: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;

/// `futex(uaddr, op, val, timeout or val2, uaddr2, val3)`.
pub fn futex(me: &Process, a: [u64; 6]) -> u64 {
    let (addr, op, val) = (a[0], a[1], a[2] as u32);
    let private = op & FUTEX_PRIVATE_FLAG != 0;
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    if op & FUTEX_CLOCK_REALTIME != 0 && cmd != FUTEX_WAIT_BITSET {
        return fail(errno::ENOSYS);
    }
    if !matches!(
        cmd,
        FUTEX_WAIT | FUTEX_WAKE | FUTEX_REQUEUE | FUTEX_CMP_REQUEUE | FUTEX_WAIT_BITSET | FUTEX_WAKE_BITSET
    ) {
        return fail(errno::ENOSYS);
    }
    if !addr.is_multiple_of(4) {
        return fail(errno::EINVAL);
    }
    let bitset = match cmd {
        FUTEX_WAIT_BITSET | FUTEX_WAKE_BITSET => a[5] as u32,
        _ => u32::MAX,
    };
    if bitset == 0 {
        return fail(errno::EINVAL);
    }
    match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            let deadline = match a[3] {
                0 => None,
                at => match read_timespec(at) {
                    Err(e) => return fail(e),
                    // FUTEX_WAIT's timeout is relative; the bitset form's
                    // absolute, on CLOCK_MONOTONIC unless told otherwise.
                    Ok(ns) if cmd == FUTEX_WAIT => Some(clock::nanos().saturating_add(ns)),
                    Ok(ns) if op & FUTEX_CLOCK_REALTIME != 0 => Some(ns.saturating_sub(crate::wallclock::base())),
                    Ok(ns) => Some(ns),
                },
            };
            match futex::wait(me, addr, val, private, bitset, deadline) {
                Ok(()) => 0,
                Err(WaitError::Again) => fail(errno::EAGAIN),
                Err(WaitError::TimedOut) => fail(errno::ETIMEDOUT),
                // As Linux's: a wait without a timeout is restarted after a
                // handler with SA_RESTART (or none); one with a timeout is
                // not, its time would be lost.
                Err(WaitError::Interrupted) if deadline.is_none() => fail(errno::ERESTARTSYS),
                Err(WaitError::Interrupted) => fail(errno::EINTR),
                Err(WaitError::Fault) => fail(errno::EFAULT),
                Err(WaitError::NoMemory) => fail(errno::ENOMEM),
            }
        }
        FUTEX_WAKE | FUTEX_WAKE_BITSET => match key(me, addr, private) {
            Ok(k) => futex::wake(k, count(a[2]), bitset),
            Err(e) => e,
        },
        _ => requeue(me, a, private, cmd == FUTEX_CMP_REQUEUE),
    }
}

/// A count argument: Linux takes it as an int, and a negative one as
/// "all" for wakes.
fn count(v: u64) -> u64 {
    let n = v as u32 as i32;
    if n < 0 { u64::MAX } else { n as u64 }
}

/// The key of the word at `addr`, which must be readable (EFAULT).
fn key(me: &Process, addr: u64, private: bool) -> Result<futex::Key, u64> {
    kcore::uaccess::read::<u32>(addr).map_err(|_| fail(errno::EFAULT))?;
    futex::key_of(me, addr, private).map_err(|_| fail(errno::EFAULT))
}

/// REQUEUE and CMP_REQUEUE: wake `val`, move up to `val2` (the timeout
/// argument) of the rest to `uaddr2`; CMP_REQUEUE first checks that the
/// word still holds `val3`.
fn requeue(me: &Process, a: [u64; 6], private: bool, cmp: bool) -> u64 {
    let (n, m) = (a[2] as u32 as i32, a[3] as u32 as i32);
    if n < 0 || m < 0 {
        return fail(errno::EINVAL);
    }
    if !a[4].is_multiple_of(4) {
        return fail(errno::EINVAL);
    }
    let from = match key(me, a[0], private) {
        Ok(k) => k,
        Err(e) => return e,
    };
    let to = match key(me, a[4], private) {
        Ok(k) => k,
        Err(e) => return e,
    };
    if cmp {
        match kcore::uaccess::read::<u32>(a[0]) {
            Ok(v) if v == a[5] as u32 => {}
            Ok(_) => return fail(errno::EAGAIN),
            Err(_) => return fail(errno::EFAULT),
        }
    }
    futex::requeue(from, to, n as u64, m as u64)
}
