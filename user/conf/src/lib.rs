//! The languages of the boot files, which the kernel no longer reads: the
//! resource pool's settings (`etc/pool.conf`, and the shell's
//! `pool <setting>`) and the placement of the OS servers started at boot
//! (`etc/servers.conf`). Each parses into the structures the kernel takes
//! (`abi::PoolSettings` and `abi::PoolRule` for `pool_set`; a program, a CPU
//! and arguments for `spawn`). Errors are `abi::Error`s, as the kernel's
//! parser gave them: `Invalid` for a line that does not parse, `NotFound`
//! for a program that does not exist.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod pool;
pub mod servers;
