//! The wall clock Linux programs see (CLOCK_REALTIME): the kernel's clock
//! since boot plus a base, which starts at `linux::EPOCH_AT_BOOT` (the
//! machine has no wall clock the kernel reads) and which a Linux process
//! with the privilege moves (settimeofday, clock_settime, stime) through
//! its supervisor. Servers read it too, so that a file's time stamps are
//! the time its writer saw.

use crate::linux::{EPOCH_AT_BOOT, NS};
use abi::Error;
use core::sync::atomic::{AtomicU64, Ordering};
use ipc::process::Process;
use kcore::clock;

/// CLOCK_REALTIME minus the kernel's clock, in nanoseconds.
static BASE: AtomicU64 = AtomicU64::new(EPOCH_AT_BOOT * NS);

/// Nanoseconds since 1970 at boot, as the clock reads now.
pub(crate) fn base() -> u64 {
    BASE.load(Ordering::Relaxed)
}

/// CLOCK_REALTIME now, in nanoseconds since 1970.
pub fn now() -> u64 {
    clock::nanos().saturating_add(base())
}

/// `wall_set`: the clock becomes `ns`, asked by the supervisor of the
/// process waiting in call `rid` (which checked the caller's privilege).
/// A time before boot cannot be (the clock since boot is unsigned):
/// Invalid, as Linux refuses a time before its monotonic clock's start.
pub fn set(me: &Process, rid: u64, ns: u64) -> Result<u64, Error> {
    ipc::supervise::waiting(me, rid)?;
    let since_boot = clock::nanos();
    let base = ns.checked_sub(since_boot).ok_or(Error::Invalid)?;
    BASE.store(base, Ordering::Relaxed);
    Ok(0)
}
