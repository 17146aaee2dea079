//! OFF2F (Object File Format consisting of 2 Files, seed 001): an
//! executable split by how its parts are accessed. File 1, on disk, holds
//! the header (magic "OFF"; everything exec needs, in the first 4 KiB), the
//! data and the relocation information; file 2, in the NVM store, holds the
//! text, page-aligned, so that a page fault in the text maps the NVM page
//! itself.
//!
//! - [`Header::parse`] checks a header and answers exec's and the fault
//!   handler's questions ([`Header::page_source`]).
//! - [`write`] lays a [`Program`] out as the two [`Files`].
//! - [`convert`] (feature `elf`) makes a `Program` from an x86_64 ELF file.
//! - [`reconstruct`] gives the ELF file and the loaded pages back.
//!
//! `README.md` maps the paper's format onto this one.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

#[cfg(feature = "elf")]
mod elf;
mod error;
mod header;
mod layout;
pub mod reconstruct;
mod write;

#[cfg(feature = "elf")]
pub use elf::{Refused, convert};
pub use error::Error;
pub use header::{Header, Location, PageSource};
pub use layout::{CRC64, HEADER_PAGE, Kind, MAX_SEGMENTS, PAGE, PF_R, PF_W, PF_X, Place, Segment, Tls, USER_END};
pub use write::{Files, LoadSegment, Program, write};
