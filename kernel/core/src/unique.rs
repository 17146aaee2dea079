//! Objects recycled without a lock: `UniqueArc` is an `Arc` that is known
//! to be the only reference to its object (so it derefs mutably with no
//! check), and `UniqueSlot` keeps one such object in an atomic slot. The
//! rendezvous keeps each process's last call object so (its next call
//! fills it in place and shares it with the server as a plain `Arc`).

use alloc::sync::Arc;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicPtr, Ordering};

/// An `Arc` with no other `Arc` or `Weak` to its object.
pub struct UniqueArc<T>(Arc<T>);

impl<T> UniqueArc<T> {
    pub fn new(value: T) -> UniqueArc<T> {
        UniqueArc(Arc::new(value))
    }

    /// `a` as a unique reference, if nobody else holds its object.
    #[inline(always)]
    pub fn try_from_arc(mut a: Arc<T>) -> Result<UniqueArc<T>, Arc<T>> {
        if Arc::get_mut(&mut a).is_some() {
            Ok(UniqueArc(a))
        } else {
            Err(a)
        }
    }

    /// The object as an ordinary, shareable `Arc`.
    #[inline(always)]
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

impl<T> Deref for UniqueArc<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for UniqueArc<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: a UniqueArc is the only reference to its object (checked
        // by `try_from_arc`, true of `new`; nothing clones the inner Arc
        // before `into_arc` gives it up), so this borrow is exclusive, as
        // `Arc::get_mut` would find without its compare-and-swap.
        unsafe { &mut *Arc::as_ptr(&self.0).cast_mut() }
    }
}

/// An `Arc` that remembers that a check found it to be the only reference
/// to its object: until it is shared again (`share`, the one way to the
/// inner `Arc`), its object derefs mutably with no second check. A batch's
/// call objects are checked once as their results are collected and
/// filled for the next batch without looking again.
pub struct CheckedArc<T> {
    arc: Arc<T>,
    /// Found alone, and not shared since.
    alone: bool,
}

impl<T> CheckedArc<T> {
    /// `a`, not known to be alone.
    #[inline(always)]
    pub fn new(a: Arc<T>) -> CheckedArc<T> {
        CheckedArc { arc: a, alone: false }
    }

    /// Whether nobody else holds the object (looked at only if it is not
    /// known already).
    #[inline(always)]
    pub fn check(&mut self) -> bool {
        if !self.alone {
            self.alone = Arc::get_mut(&mut self.arc).is_some();
        }
        self.alone
    }

    /// The object, mutably, if nobody else holds it (as `check`).
    #[inline(always)]
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if !self.check() {
            return None;
        }
        // SAFETY: `alone` is set only by a successful `Arc::get_mut` (or by
        // `From<UniqueArc>`), and every way to the inner `Arc` (`share`)
        // clears it: nothing can have cloned the `Arc`, or made a `Weak` of
        // it, since it was found alone, so this borrow is exclusive.
        Some(unsafe { &mut *Arc::as_ptr(&self.arc).cast_mut() })
    }

    /// The `Arc`, for whoever shares the object: it is no longer known to
    /// be alone.
    #[inline(always)]
    pub fn share(&mut self) -> &Arc<T> {
        self.alone = false;
        &self.arc
    }
}

impl<T> From<UniqueArc<T>> for CheckedArc<T> {
    #[inline(always)]
    fn from(u: UniqueArc<T>) -> CheckedArc<T> {
        CheckedArc { arc: u.0, alone: true }
    }
}

impl<T> Deref for CheckedArc<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.arc
    }
}

/// One `UniqueArc` kept in an atomic slot, taken and put back with one
/// exchange each.
pub struct UniqueSlot<T>(AtomicPtr<T>);

impl<T> UniqueSlot<T> {
    pub const fn new() -> Self {
        UniqueSlot(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// The object in the slot, if any; the slot is empty afterwards.
    #[inline(always)]
    pub fn take(&self) -> Option<UniqueArc<T>> {
        let ptr = self.0.swap(core::ptr::null_mut(), Ordering::Acquire);
        // SAFETY: a non-null slot holds the strong reference of a UniqueArc
        // (from `Arc::into_raw` in `put`), taken back exactly once: the swap
        // emptied the slot.
        (!ptr.is_null()).then(|| UniqueArc(unsafe { Arc::from_raw(ptr) }))
    }

    /// Puts `u` in the slot; gives back what was there.
    #[inline(always)]
    pub fn put(&self, u: UniqueArc<T>) -> Option<UniqueArc<T>> {
        let old = self.0.swap(Arc::into_raw(u.0).cast_mut(), Ordering::AcqRel);
        // SAFETY: as in `take`; the swap took it out of the slot.
        (!old.is_null()).then(|| UniqueArc(unsafe { Arc::from_raw(old) }))
    }
}

impl<T> Default for UniqueSlot<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for UniqueSlot<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

// SAFETY: the slot only moves whole `Arc<T>`s between threads, as an
// `Arc<T>` may be moved when T is Send + Sync.
unsafe impl<T: Send + Sync> Send for UniqueSlot<T> {}
// SAFETY: as above; every access is an atomic exchange.
unsafe impl<T: Send + Sync> Sync for UniqueSlot<T> {}
