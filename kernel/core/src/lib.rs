//! The kernel's core (on the lines of Asterinas's OSTD): everything that
//! touches the machine directly and needs `unsafe` to do it, behind safe
//! interfaces: boot, CPUs and per-CPU data, traps and interrupt
//! controllers, the clock and the console, physical memory, page tables,
//! virtual regions and spaces, access to user memory, TLB shootdown, and
//! computations with the switch between them. Every crate above this one
//! forbids `unsafe`.
//!
//! The core never names a crate above it: where a trap or a system call
//! must reach a higher layer it calls a hook the kernel binary registered
//! at boot (`hooks`).
#![no_std]

extern crate alloc;

pub mod acpi;
pub mod arch;
pub mod boot;
pub mod bytes;
pub mod clock;
pub mod computation;
pub mod console;
pub mod cpu;
pub mod cpuacct;
pub mod handoff;
pub mod hooks;
pub mod initrd;
pub mod ktest;
pub mod mm;
pub mod owner;
mod panic;
pub mod sync;
#[cfg(feature = "ktest")]
pub mod tests;
pub mod uaccess;
pub mod unique;
pub mod vm;
