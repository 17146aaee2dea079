//! What several native programs share: the resource pool's settings applied
//! through the system calls (init, the shell, sysbench), and the
//! inspector's reports formatted from the kernel's records (the shell).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod inspect;
pub mod pool;
