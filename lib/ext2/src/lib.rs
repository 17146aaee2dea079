//! The ext2 file system (revision 1) as pure logic: no I/O of its own, no
//! clock, no `unsafe`. It runs over a [`BlockDevice`] and is the file
//! system of Tessera's ext2 file server.
//!
//! Layers, as seed 003 splits the file system into processes:
//! - [`FileManager`] (the file process): paths, directories, links,
//!   rename, open files and their [`Handle`]s.
//! - [`InodeManager`] (the inode process): inodes, allocation, and the
//!   block map from file offsets to device blocks, which it also hands out
//!   as [`Segment`]s so a server can move file data without copying it
//!   through the file system.
//! - [`BlockDevice`] (the buffer process): lends blocks to closures, so no
//!   layer keeps a private copy of block data.
//!
//! The README beside this crate says what the library trusts on disk and
//! what it checks, and in which order it writes so that a crash leaves
//! nothing `e2fsck -p` cannot repair.
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
pub use file::{DirEntry, FileManager, Handle, Owner, SetAttr, Stat};
pub use inode::{InodeManager, MountOptions, Segment, StatFs, Stats};
pub use time::Timestamp;
