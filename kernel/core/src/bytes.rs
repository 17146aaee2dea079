//! Bytes a region may be filled from, and how long they live: the initial
//! archive's files live as long as the kernel; a plate made at run time
//! (a program brought in from the file system) lives as long as the last
//! plate entry, program or region that holds it, so that a replaced
//! version is freed once nothing runs from it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;

#[derive(Clone)]
pub enum Bytes {
    Static(&'static [u8]),
    Shared(Arc<Vec<u8>>),
}

impl Bytes {
    /// Bytes `from..from + len` of these, sharing them (None: out of range).
    pub fn slice(&self, from: usize, len: usize) -> Option<Slice> {
        let end = from.checked_add(len)?;
        (end <= self.len()).then(|| Slice {
            bytes: self.clone(),
            from,
            len,
        })
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Static(b) => b,
            Bytes::Shared(v) => v,
        }
    }
}

impl core::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} bytes", self.len())
    }
}

/// A part of some `Bytes`, holding them.
#[derive(Clone, Debug)]
pub struct Slice {
    bytes: Bytes,
    from: usize,
    len: usize,
}

impl Deref for Slice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[self.from..self.from + self.len]
    }
}
