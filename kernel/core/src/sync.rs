//! Kernel locks. Any lock that an interrupt handler may also take must be
//! held with interrupts disabled on this CPU, or the handler could spin on a
//! lock its own CPU holds. `IrqMutex` does that for every kernel lock, so no
//! caller has to remember which locks are shared with handlers.

use core::ops::{Deref, DerefMut};
use x86_64::instructions::interrupts;

pub struct IrqMutex<T> {
    inner: spin::Mutex<T>,
}

pub struct IrqMutexGuard<'a, T> {
    guard: core::mem::ManuallyDrop<spin::MutexGuard<'a, T>>,
    were_enabled: bool,
}

impl<T> IrqMutex<T> {
    pub const fn new(value: T) -> Self {
        IrqMutex {
            inner: spin::Mutex::new(value),
        }
    }

    /// The value, through an exclusive reference: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Inlined: every kernel path takes several locks, and the usual case
    /// (free lock) is a handful of instructions that a call would double.
    #[inline]
    pub fn lock(&self) -> IrqMutexGuard<'_, T> {
        let were_enabled = interrupts::are_enabled();
        interrupts::disable();
        let guard = match self.inner.try_lock() {
            Some(g) => g,
            None => self.lock_contended(),
        };
        IrqMutexGuard {
            guard: core::mem::ManuallyDrop::new(guard),
            were_enabled,
        }
    }

    /// `lock`, for a caller that has interrupts disabled already (the
    /// rendezvous path and the scheduler): no flags to save and restore.
    #[inline]
    pub fn lock_irqs_off(&self) -> IrqMutexGuard<'_, T> {
        // Checked in test images: taken with interrupts on, a timer tick
        // that takes the same lock on this CPU deadlocks (a rare hang,
        // found once only with a debugger). Release images skip the check:
        // it is on every rendezvous's path.
        if cfg!(feature = "ktest") {
            assert!(!interrupts::are_enabled(), "lock_irqs_off with interrupts enabled");
        }
        let guard = match self.inner.try_lock() {
            Some(g) => g,
            None => self.lock_contended(),
        };
        IrqMutexGuard {
            guard: core::mem::ManuallyDrop::new(guard),
            were_enabled: false,
        }
    }

    /// The wait, out of line: rare, and larger than the fast path.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> spin::MutexGuard<'_, T> {
        loop {
            // Interrupts are off while we wait, so answer TLB shootdowns
            // here: the holder may be waiting for this CPU's answer before
            // it lets go (a space lock held across a shootdown).
            crate::mm::tlb::serve_pending();
            core::hint::spin_loop();
            if let Some(g) = self.inner.try_lock() {
                return g;
            }
        }
    }
}

impl<T> Deref for IrqMutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for IrqMutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for IrqMutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard is dropped exactly once, here, before interrupts
        // come back on, so a handler never finds the lock held by its own CPU.
        unsafe { core::mem::ManuallyDrop::drop(&mut self.guard) };
        if self.were_enabled {
            interrupts::enable();
        }
    }
}
