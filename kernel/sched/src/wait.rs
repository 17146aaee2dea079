//! Waiting for an event: a wait queue of blocked computations, and the
//! one-computation slot the rendezvous waits in. The check and the block
//! happen under the lock the waker takes too, so no wake-up is lost.

use alloc::sync::Arc;
use alloc::vec::Vec;
use kcore::computation::{Computation, State};
use kcore::sync::IrqMutex;

/// A list of blocked computations waiting for one event.
pub struct WaitQueue {
    waiters: IrqMutex<Vec<Arc<Computation>>>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub const fn new() -> Self {
        WaitQueue {
            waiters: IrqMutex::new(Vec::new()),
        }
    }

    /// Blocks the current computation until `ready()` holds. `ready` is
    /// checked under the queue's lock, and wakers take that lock too, so a
    /// wake-up between check and block cannot be lost. Returns false if the
    /// process was killed while waiting.
    pub fn wait_until(&self, ready: impl FnMut() -> bool) -> bool {
        self.wait(None, ready)
    }

    /// Like `wait_until`, but gives up at `deadline` (ns since boot).
    /// Returns whether `ready()` became true.
    pub fn wait_until_deadline(&self, deadline: u64, ready: impl FnMut() -> bool) -> bool {
        self.wait(Some(deadline), ready)
    }

    fn wait(&self, deadline: Option<u64>, mut ready: impl FnMut() -> bool) -> bool {
        let expired = || deadline.is_some_and(|d| kcore::clock::nanos() >= d);
        // Nothing to wait for: no need to touch the list (ready() has no
        // effect unless it holds).
        if ready() {
            return true;
        }
        let cur = crate::current().filter(|c| !c.is_idle());
        let mut listed = false;
        loop {
            let cur = match &cur {
                Some(c) => c,
                None => {
                    // Kernel code on a CPU's idle computation (boot, tests)
                    // never blocks: it lets others run until `ready()`.
                    if ready() {
                        return true;
                    }
                    if expired() {
                        return false;
                    }
                    crate::idle_step();
                    continue;
                }
            };
            {
                let mut w = self.waiters.lock();
                if core::mem::take(&mut listed) {
                    w.retain(|c| !Arc::ptr_eq(c, cur));
                }
                let done = if ready() {
                    Some(true)
                } else if expired() || cur.killed() {
                    Some(false)
                } else {
                    None
                };
                if let Some(result) = done {
                    return result;
                }
                // A kill does not take this queue's lock: it sets its flag,
                // then wakes what it finds blocked under the state's lock,
                // so the flag is looked at again under that lock.
                let mut state = cur.state.lock();
                if cur.killed() {
                    return false;
                }
                *state = State::Blocked;
                drop(state);
                w.push(cur.clone());
                if let Some(d) = deadline {
                    // The timer wakes it at the deadline if nothing else does.
                    crate::wake_at(d, cur.clone());
                }
            }
            crate::schedule_to(None);
            if deadline.is_some() {
                crate::cancel_wake(cur);
            }
            // Whoever woke it may have left it on the list (a kill, the
            // timer): the next pass takes it off, under the lock it takes
            // anyway to check again.
            listed = true;
        }
    }

    /// Makes `f`'s change under the queue's lock, so that a waiter that
    /// checks its condition under the same lock cannot miss it.
    pub fn update<R>(&self, f: impl FnOnce() -> R) -> R {
        let _w = self.waiters.lock();
        f()
    }

    pub fn wake_all(&self) {
        // One at a time, so the list keeps its room (no allocation per
        // wait); only those waiting now are woken.
        let n = self.waiters.lock().len();
        for _ in 0..n {
            let Some(c) = self.waiters.lock().pop() else { break };
            crate::wake(&c);
        }
    }
}

/// Blocks the current computation until `ready` holds for the data under
/// `lock`, waiting in the one-computation slot `slot` of that data: the
/// rendezvous's waits (a caller for its call, a server for its port, a
/// batch's caller for its last member), whose wakers take the same lock
/// anyway to make `ready` hold and take the waiter out of the slot. Check and block happen under the lock, so no
/// wake-up is lost; after a hand-over, one pass under the lock both checks
/// and leaves the slot. `partner` is a computation the waiter has just made
/// ready to run (taken from a wait queue, not yet woken): if the waiter
/// must block, it hands its CPU to `partner` directly (the rendezvous's
/// direct switch); otherwise `partner` is woken the ordinary way. Returns
/// false if the process was killed while waiting.
pub fn wait_in_slot<T>(
    lock: &IrqMutex<T>,
    mut partner: Option<Arc<Computation>>,
    mut ready: impl FnMut(&mut T) -> bool,
    slot: impl Fn(&mut T) -> &mut Option<Arc<Computation>>,
) -> bool {
    let wake_partner = |p: &mut Option<Arc<Computation>>| {
        if let Some(p) = p.take() {
            crate::wake(&p);
        }
    };
    // Compared by address: a reference is taken only to block (most
    // waits of a busy server find their call already there).
    let me = crate::with_current(|c| (c as *const Computation, c.is_idle()));
    let Some((me, false)) = me else {
        // Kernel code on a CPU's idle computation never blocks.
        wake_partner(&mut partner);
        while !ready(&mut lock.lock()) {
            crate::idle_step();
        }
        return true;
    };
    // One stretch with interrupts off: every lock below is then taken
    // without saving and restoring the flags, and the direct switch needs
    // them off anyway.
    let were_enabled = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    let done = loop {
        let other = {
            let mut g = lock.lock_irqs_off();
            let s = slot(&mut g);
            // Woken by someone else than the one who takes the slot (a
            // kill): leave the slot, it is for a blocked waiter only.
            let other = match s.take() {
                Some(c) if !core::ptr::eq(Arc::as_ptr(&c), me) => Some(c),
                _ => None,
            };
            if ready(&mut g) {
                *slot(&mut g) = other;
                drop(g);
                wake_partner(&mut partner);
                break true;
            }
            // (`current` is `me`: it was found running here above.)
            let cur = crate::current().filter(|c| core::ptr::eq(Arc::as_ptr(c), me));
            let Some(cur) = cur.filter(|c| !c.killed()) else {
                *slot(&mut g) = other;
                drop(g);
                wake_partner(&mut partner);
                break false;
            };
            *cur.state.lock_irqs_off() = State::Blocked;
            *slot(&mut g) = Some(cur);
            other
        };
        // The slot holds one waiter; one that was there already (never so
        // for a process's single computation) is woken to check again
        // rather than forgotten.
        if let Some(o) = other {
            crate::wake(&o);
        }
        crate::schedule_to(partner.take());
    };
    if were_enabled {
        x86_64::instructions::interrupts::enable();
    }
    done
}
