//! The persistent region the store lives on, and the persistence model the
//! store's crash consistency is argued against.
//!
//! Model (that of byte-addressable persistent memory behind CPU caches):
//! - `write` changes what later reads see at once, but the bytes may still sit
//!   in a volatile cache: power lost now keeps, of each aligned 8-byte word
//!   written since it was last made durable, either its old value or any of
//!   the values written to it (lines are evicted whenever the cache likes, in
//!   no particular order). An aligned 8-byte word is never torn.
//! - `flush` (clwb) starts writing a range back; only a `fence` (sfence)
//!   after it guarantees that the range's values, as they were at the flush,
//!   are durable.
//!
//! The store therefore never relies on the order of two writes that are not
//! separated by flush + fence, nor on any write being whole.

use core::fmt;

/// The page size the store allocates in, and the unit the kernel maps.
pub const PAGE_SIZE: u64 = 4096;

/// An access the region could not carry out (out of range, or the host file
/// behind it failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionError {
    pub offset: u64,
    pub len: u64,
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "region access failed at offset {:#x} ({} bytes)",
            self.offset, self.len
        )
    }
}

pub trait Region {
    /// Bytes in the region.
    fn size(&self) -> u64;
    /// Reads what the CPU would see now (its own unflushed writes included).
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), RegionError>;
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), RegionError>;
    /// Starts writing `[offset, offset + len)` back to the medium.
    fn flush(&mut self, offset: u64, len: u64) -> Result<(), RegionError>;
    /// Waits until every range flushed before it is durable.
    fn fence(&mut self) -> Result<(), RegionError>;
}

/// The range `[offset, offset + len)` if it lies inside a region of `size`
/// bytes: the one bounds check every implementation makes.
pub fn checked_range(size: u64, offset: u64, len: u64) -> Result<core::ops::Range<usize>, RegionError> {
    let err = RegionError { offset, len };
    let end = offset.checked_add(len).filter(|&e| e <= size).ok_or(err)?;
    let start = usize::try_from(offset).map_err(|_| err)?;
    let end = usize::try_from(end).map_err(|_| err)?;
    Ok(start..end)
}
