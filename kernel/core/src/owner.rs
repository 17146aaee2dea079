//! A strong reference to an object whose type a lower layer does not know:
//! a computation holds the process it runs for, a process the port a
//! higher layer keeps for it. Getting the object back must be cheap (every
//! system call does it) and sound: the object's kind is a `static` of the
//! layer that defines the type (`OwnerKind<T>`), and an `Owner` keeps the
//! address of the kind it was made with. Two kinds never share an address,
//! so comparing the address with the kind asked for proves the type; it is
//! one comparison with a constant, where `Any`'s type ids cost a call.

use alloc::sync::Arc;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// The kind of objects of type `T` an `Owner` may hold: define one as a
/// `static` beside the type, and make and read owners through it.
pub struct OwnerKind<T> {
    /// Not zero-sized: distinct statics then have distinct addresses.
    _unique: u8,
    _type: PhantomData<fn() -> T>,
}

impl<T> OwnerKind<T> {
    pub const fn new() -> Self {
        OwnerKind {
            _unique: 0,
            _type: PhantomData,
        }
    }

    fn tag(&'static self) -> *const () {
        self as *const Self as *const ()
    }
}

impl<T> Default for OwnerKind<T> {
    fn default() -> Self {
        Self::new()
    }
}

pub struct Owner {
    ptr: NonNull<()>,
    kind: *const (),
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
    pub fn new<T: Send + Sync + 'static>(kind: &'static OwnerKind<T>, value: Arc<T>) -> Owner {
        let raw = Arc::into_raw(value) as *mut ();
        Owner {
            // SAFETY: `Arc::into_raw` never gives a null pointer.
            ptr: unsafe { NonNull::new_unchecked(raw) },
            kind: kind.tag(),
            release: release::<T>,
        }
    }

    /// The object, if it is of `kind`.
    #[inline(always)]
    pub fn get<T: Send + Sync + 'static>(&self, kind: &'static OwnerKind<T>) -> Option<&T> {
        if self.kind != kind.tag() {
            return None;
        }
        // SAFETY: only `new` with this very kind stores its address, and it
        // took an `Arc<T>`; `self` holds that strong reference for as long
        // as the borrow lasts.
        Some(unsafe { &*(self.ptr.as_ptr() as *const T) })
    }

    /// A new strong reference to the object, if it is of `kind`.
    pub fn get_arc<T: Send + Sync + 'static>(&self, kind: &'static OwnerKind<T>) -> Option<Arc<T>> {
        let p: *const T = self.get(kind)?;
        // SAFETY: `p` came from `Arc::<T>::into_raw` (the kind matches) and
        // `self` keeps a reference alive; the count added is the one the
        // returned Arc gives back.
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
