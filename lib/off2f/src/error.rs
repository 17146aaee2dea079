//! Why an OFF2F file was refused.

use core::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Not an OFF2F file at all (no "OFF" magic).
    NotOff2f,
    UnsupportedVersion(u8),
    /// Fewer bytes than the header (or the file it describes) needs.
    Truncated {
        need: u64,
        have: u64,
    },
    /// A field of the header, or the header as a whole, is inconsistent.
    Header(&'static str),
    /// Segment `index` (in table order) is inconsistent.
    Segment {
        index: usize,
        what: &'static str,
    },
    /// A file's content does not have the checksum the header records.
    Checksum(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotOff2f => write!(f, "not an OFF2F file (no \"OFF\" magic)"),
            Error::UnsupportedVersion(v) => write!(f, "OFF2F version {v} is not supported"),
            Error::Truncated { need, have } => write!(f, "truncated: {need} bytes needed, {have} present"),
            Error::Header(what) => write!(f, "bad header: {what}"),
            Error::Segment { index, what } => write!(f, "bad segment {index}: {what}"),
            Error::Checksum(what) => write!(f, "{what} does not match the checksum in the header"),
        }
    }
}
