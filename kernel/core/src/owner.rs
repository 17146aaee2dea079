//! A strong reference to an object whose type a lower layer does not know:
//! a computation holds the process it runs for, a process the state a
//! higher layer keeps for it. It is `Arc<dyn Any>` with the type's
//! identity kept beside the pointer, so that getting the object back is a
//! comparison with a constant instead of a call through a vtable (every
//! system call does it).

use alloc::sync::Arc;
use core::any::TypeId;
use core::ptr::NonNull;

pub struct Owner {
    ptr: NonNull<()>,
    type_id: TypeId,
    /// Drops the strong reference `ptr` came from (`Arc::<T>::from_raw`).
    release: unsafe fn(NonNull<()>),
}

// SAFETY: an Owner is only made from an `Arc<T>` with `T: Send + Sync`.
unsafe impl Send for Owner {}
// SAFETY: as above; it only ever gives out `&T` and `Arc<T>`.
unsafe impl Sync for Owner {}

/// # Safety
/// `p` came from `Arc::<T>::into_raw` and that reference is given back here.
unsafe fn release<T>(p: NonNull<()>) {
    // SAFETY: the caller's promise.
    drop(unsafe { Arc::from_raw(p.as_ptr() as *const T) });
}

impl Owner {
    pub fn new<T: Send + Sync + 'static>(value: Arc<T>) -> Owner {
        let raw = Arc::into_raw(value) as *mut ();
        Owner {
            // SAFETY: `Arc::into_raw` never gives a null pointer.
            ptr: unsafe { NonNull::new_unchecked(raw) },
            type_id: TypeId::of::<T>(),
            release: release::<T>,
        }
    }

    /// The object, if it is a `T`.
    #[inline(always)]
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        if self.type_id != TypeId::of::<T>() {
            return None;
        }
        // SAFETY: the type matches, and `self` holds a strong reference for
        // as long as the borrow lasts.
        Some(unsafe { &*(self.ptr.as_ptr() as *const T) })
    }

    /// A new strong reference to the object, if it is a `T`.
    pub fn get_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let p: *const T = self.get::<T>()?;
        // SAFETY: `ptr` came from `Arc::<T>::into_raw` (the type matches)
        // and `self` keeps a reference alive; the count added is the one
        // the returned Arc gives back.
        unsafe {
            Arc::increment_strong_count(p);
            Some(Arc::from_raw(p))
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Arc::into_raw` of the type `release` was
        // made for, and this is the one place that gives it back.
        unsafe { (self.release)(self.ptr) };
    }
}
