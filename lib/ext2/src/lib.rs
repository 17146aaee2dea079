#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod device;
pub mod disk;
pub mod error;
pub mod file;
pub mod inode;
pub mod time;

pub use device::{BlockDevice, MemDevice};
pub use disk::inode::FileType;
pub use error::{Errno, Result};
pub use file::{DirEntry, FileManager, Handle, Owner, Search, SetAttr, Stat};
pub use inode::{InodeManager, MountOptions, Segment, StatFs, Stats, XATTR_CREATE, XATTR_REPLACE};
pub use time::Timestamp;
