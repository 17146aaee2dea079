//! A buffer written once and then only read, without a lock: the short
//! reply a server leaves in a call for its caller. The server fills it
//! straight from its own memory (a copy that may fault a page in, so no
//! spinlock may be held); the caller reads it once it has seen the call
//! done; it is emptied only through an exclusive reference (when the call
//! object is recycled). A state word orders the three.

use crate::uaccess::UserRange;
use abi::Error;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

const EMPTY: u8 = 0;
const FILLING: u8 = 1;
const FULL: u8 = 2;

pub struct OnceBuf<const N: usize> {
    state: AtomicU8,
    len: AtomicUsize,
    bytes: UnsafeCell<[u8; N]>,
}

// SAFETY: `bytes` is written only by the one `fill` that moved the state
// from EMPTY to FILLING, and read only after the state is FULL (release /
// acquire order the two); it is emptied only through `&mut self`.
unsafe impl<const N: usize> Sync for OnceBuf<N> {}

impl<const N: usize> OnceBuf<N> {
    pub const fn new() -> Self {
        OnceBuf {
            state: AtomicU8::new(EMPTY),
            len: AtomicUsize::new(0),
            bytes: UnsafeCell::new([0; N]),
        }
    }

    /// Fills it from user range `from` (in the current space): its length
    /// (`from` must fit), or the error that kept it empty of data. Only
    /// the first fill after an emptying writes; a later one is `Busy`.
    #[inline(always)]
    pub fn fill_from_user(&self, from: UserRange) -> Result<usize, Error> {
        if from.len() > N {
            return Err(Error::Invalid);
        }
        if self
            .state
            .compare_exchange(EMPTY, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(Error::Busy);
        }
        // SAFETY: this call moved the state to FILLING, so it alone touches
        // the bytes until it publishes them below; the buffer holds N bytes
        // and `from` fits.
        let r = if from.is_empty() {
            Ok(())
        } else {
            unsafe { from.read_raw(self.bytes.get().cast()) }
        };
        let n = if r.is_ok() { from.len() } else { 0 };
        self.len.store(n, Ordering::Relaxed);
        self.state.store(FULL, Ordering::Release);
        r.map(|_| n)
    }

    /// The bytes, once filled (None before).
    #[inline(always)]
    pub fn get(&self) -> Option<&[u8]> {
        if self.state.load(Ordering::Acquire) != FULL {
            return None;
        }
        let n = self.len.load(Ordering::Relaxed).min(N);
        // SAFETY: FULL: the fill that wrote the bytes has published them,
        // and nothing writes them again before `empty`, which needs `&mut`.
        Some(unsafe { &(&*self.bytes.get())[..n] })
    }

    /// Empties it for the next fill.
    #[inline(always)]
    pub fn empty(&mut self) {
        *self.state.get_mut() = EMPTY;
        *self.len.get_mut() = 0;
    }
}

impl<const N: usize> Default for OnceBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}
