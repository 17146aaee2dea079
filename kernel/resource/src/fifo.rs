//! A first-in, first-out queue of small copyable items (container
//! identifiers in a box's size class). Every SWAP send and receive moves
//! one container between two such queues; the standard double-ended queue
//! does each step out of line with its general wrap-around arithmetic, this
//! ring (a power-of-two capacity, so wrapping is a mask) does it inline in a
//! few instructions.

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

pub struct Fifo<T> {
    /// The ring; its length (0, or a power of two) is the capacity.
    buf: Vec<T>,
    /// Where the first item is.
    head: usize,
    len: usize,
    /// What fills the free part of a new ring.
    fill: T,
}

impl<T: Copy> Fifo<T> {
    /// An empty queue; `fill` is any value, kept in free slots.
    pub const fn new(fill: T) -> Self {
        Fifo {
            buf: Vec::new(),
            head: 0,
            len: 0,
            fill,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ring index of the `k`th item (the ring is not empty).
    #[inline(always)]
    fn slot(&self, k: usize) -> usize {
        (self.head + k) & (self.buf.len() - 1)
    }

    #[inline(always)]
    pub fn front(&self) -> Option<T> {
        (self.len > 0).then(|| self.buf[self.head])
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = self.slot(1);
        self.len -= 1;
        Some(v)
    }

    /// Makes room for `n` more items.
    #[inline(always)]
    pub fn try_reserve(&mut self, n: usize) -> Result<(), TryReserveError> {
        match self.len.checked_add(n) {
            Some(need) if need <= self.buf.len() => Ok(()),
            _ => self.grow(n),
        }
    }

    /// A larger ring holding the same items, first at index 0.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) -> Result<(), TryReserveError> {
        let need = self.len.saturating_add(n).max(4);
        let cap = need.checked_next_power_of_two().unwrap_or(need);
        let mut buf = Vec::new();
        buf.try_reserve_exact(cap)?;
        buf.extend(self.iter());
        buf.resize(cap, self.fill);
        self.buf = buf;
        self.head = 0;
        Ok(())
    }

    /// Appends `v`, growing the ring if it is full (as the standard
    /// collections do, an allocation failure there is fatal: callers that
    /// must not fail reserve first).
    #[inline(always)]
    pub fn push_back(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow_or_die();
        }
        let i = self.slot(self.len);
        self.buf[i] = v;
        self.len += 1;
    }

    pub fn push_front(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow_or_die();
        }
        self.head = self.slot(self.buf.len() - 1);
        self.buf[self.head] = v;
        self.len += 1;
    }

    #[cold]
    fn grow_or_die(&mut self) {
        if self.grow(1).is_err() {
            alloc::alloc::handle_alloc_error(core::alloc::Layout::new::<T>());
        }
    }

    /// Takes out the `i`th item; the ones after it move up.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        let v = self.buf[self.slot(i)];
        for k in i..self.len - 1 {
            let (to, from) = (self.slot(k), self.slot(k + 1));
            self.buf[to] = self.buf[from];
        }
        self.len -= 1;
        Some(v)
    }

    /// The items, first to last.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len).map(|k| self.buf[self.slot(k)])
    }
}
