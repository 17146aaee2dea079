//! What can go wrong, said so that a person can act on it.

use crate::region::RegionError;
use core::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    Region(RegionError),
    /// No superblock: the region was never formatted (or was wiped).
    NotFormatted,
    /// The region holds a store that fails its checks.
    Corrupt(&'static str),
    /// The region cannot hold a store with this directory capacity.
    TooSmall {
        size: u64,
    },
    BadName,
    NotFound,
    DirectoryFull {
        capacity: u32,
    },
    NoSpace {
        needed_pages: u64,
        free_pages: u64,
        largest_free_run: u64,
    },
    /// The data source of a streamed store failed; nothing was changed.
    Source,
}

impl From<RegionError> for Error {
    fn from(e: RegionError) -> Error {
        Error::Region(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Region(e) => write!(f, "{e}"),
            Error::NotFormatted => write!(f, "no store here: the region is not formatted"),
            Error::Corrupt(what) => write!(f, "the store is corrupt: bad {what}"),
            Error::TooSmall { size } => write!(f, "a region of {size} bytes is too small for a store"),
            Error::BadName => write!(
                f,
                "bad name: 1 to {} printable ASCII characters, no space or '/'",
                crate::NAME_MAX
            ),
            Error::NotFound => write!(f, "no such file"),
            Error::DirectoryFull { capacity } => write!(f, "the directory is full ({capacity} files)"),
            Error::NoSpace {
                needed_pages,
                free_pages,
                largest_free_run,
            } => write!(
                f,
                "no room: {needed_pages} contiguous pages needed, {free_pages} free, the largest free run is \
                 {largest_free_run}"
            ),
            Error::Source => write!(f, "reading the data to store failed"),
        }
    }
}
