//! The console as processes read it: a process waits until the core's
//! input ring has something, woken by the input hook.

use sched::WaitQueue;

static INPUT_WAITERS: WaitQueue = WaitQueue::new();

/// The hook the console's interrupt calls when input arrived.
pub fn input_ready() {
    INPUT_WAITERS.wake_all();
}

/// Blocks the calling process until input arrives, then returns what is
/// buffered (at least one byte). None if the process was killed meanwhile.
pub fn read(buf: &mut [u8]) -> Option<usize> {
    if buf.is_empty() {
        return Some(0);
    }
    let mut n = 0;
    let ok = INPUT_WAITERS.wait_until(|| {
        n = kcore::console::take_buffered(buf);
        n > 0
    });
    ok.then_some(n)
}
