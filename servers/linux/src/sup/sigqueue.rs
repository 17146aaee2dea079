//! RLIMIT_SIGPENDING: how many signals with their information a process
//! may have queued (real-time ones, and those sent to one thread). Linux
//! counts them per user; here each supervisor counts its own process's,
//! which is what bounds the supervisor's memory: without it a program could
//! grow its lists of queued signals without end.

use super::Sup;
use linuxabi::signal as sig;

/// The resource's index in the limits (Linux's RLIMIT_SIGPENDING).
const RLIMIT_SIGPENDING: usize = 11;

impl Sup {
    /// Signals queued with their information now.
    fn queued(&self) -> usize {
        self.sig.queue.len() + self.threads_queued()
    }

    /// Whether one more signal `s` sent with code `code` must be refused
    /// (EAGAIN): a real-time signal sent with information (not kill's
    /// SI_USER) past the limit, as Linux's `__send_signal_locked`.
    pub(super) fn queue_refuses(&self, s: u32, code: i32) -> bool {
        s >= sig::SIGRTMIN && code != sig::SI_USER && self.queue_full()
    }

    /// Whether the queue is at its limit. A signal that comes anyway (a
    /// standard one, or kill's real-time one, which Linux still delivers
    /// without its information) is queued only while none of its number
    /// waits, so the lists stay within the limit plus one per signal.
    pub(super) fn queue_full(&self) -> bool {
        let limit = self.limits[RLIMIT_SIGPENDING][0];
        self.queued() as u64 >= limit
    }
}
