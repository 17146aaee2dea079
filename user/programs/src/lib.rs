//! What several native programs share: the resource pool's settings applied
//! through the system calls (init, the shell, sysbench), the inspector's
//! reports formatted from the kernel's records (the shell), and running
//! and converting programs kept on the file system (OFF2F, seed 001).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod checks;
pub mod compose;
pub mod fsexec;
pub mod inspect;
pub mod off2fconv;
pub mod pool;
