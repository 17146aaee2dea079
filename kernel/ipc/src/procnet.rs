//! What seed 003 measured of its process network, and its two knobs.
//! The paper counted the communications a UNIX system call became (26 on
//! average), the data that travelled by pointer against what travelled as
//! call arguments (fig. 8), and slowed its kernel on purpose to see how
//! system time follows: a loop in `call` and `acc` lengthening every
//! communication (fig. 7), and a loop per byte passed by pointer (fig. 10).
//! Here: the bytes servers move in and out of the memory of a process
//! waiting in their call (`caller_read`, `caller_write`: our passing by
//! pointer) are counted, and two settings, off unless the boot asks
//! (`ipc_delay=NS`, `ipc_kib_delay=NS`), add a wait to every completed
//! communication and to every KiB so moved. Off, each costs a load and a
//! branch.

use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes servers moved from or into the memory of the process waiting in
/// their call.
pub static BYTES_BY_REFERENCE: AtomicU64 = AtomicU64::new(0);

/// Added to every completed communication, and per KiB passed by
/// reference, in TSC cycles (0: off).
static CALL_DELAY: AtomicU64 = AtomicU64::new(0);
static KIB_DELAY: AtomicU64 = AtomicU64::new(0);

/// The boot's settings, in nanoseconds.
pub fn set_delays(per_call_ns: u64, per_kib_ns: u64) {
    let cycles = |ns: u64| ns.saturating_mul(kcore::clock::tsc_hz()) / 1_000_000_000;
    CALL_DELAY.store(cycles(per_call_ns), Ordering::Relaxed);
    KIB_DELAY.store(cycles(per_kib_ns), Ordering::Relaxed);
}

/// A communication completed.
#[inline(always)]
pub(crate) fn communicated() {
    let d = CALL_DELAY.load(Ordering::Relaxed);
    if d != 0 {
        spin(d);
    }
}

/// `len` bytes passed by reference.
#[inline(always)]
pub(crate) fn by_reference(len: usize) {
    BYTES_BY_REFERENCE.fetch_add(len as u64, Ordering::Relaxed);
    let d = KIB_DELAY.load(Ordering::Relaxed);
    if d != 0 {
        spin(d.saturating_mul(len as u64) / 1024);
    }
}

#[cold]
fn spin(cycles: u64) {
    let end = kcore::clock::cycles().saturating_add(cycles);
    while kcore::clock::cycles() < end {
        core::hint::spin_loop();
    }
}
