//! A crash-consistent store of named files on byte-addressable persistent
//! memory: where OFF2F keeps the text files of programs (seed 001's pseudo
//! non-volatile memory, under QEMU a file-backed `ivshmem-plain` BAR).
//!
//! Each file is one contiguous, page-aligned run of pages, so that the kernel
//! maps a text page at a fault straight from the region ([`FileInfo`]:
//! region offset and page count). The store's crash consistency (power lost
//! at any moment of a store or delete leaves the old or the new file, whole,
//! and a directory that mounts) is argued in `store.rs` against the
//! persistence model of `region.rs`, and tested with [`sim::SimRegion`],
//! which loses power after any operation and tears unflushed writes at
//! 8-byte granularity.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

mod error;
#[cfg(feature = "std")]
pub mod file;
mod layout;
mod name;
mod region;
pub mod sim;
mod space;
mod store;

pub use error::Error;
pub use layout::{CRC64, Geometry};
pub use name::{NAME_MAX, valid_name};
pub use region::{PAGE_SIZE, Region, RegionError, checked_range};
pub use space::Space;
pub use store::{FileInfo, FormatOptions, Store};

/// CRC-64/XZ of `data`: the checksum the directory keeps for each file.
pub fn checksum(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}
