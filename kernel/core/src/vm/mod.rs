//! Virtual memory of user processes, in Tender's terms: a *virtual region*
//! (`region.rs`) is memory of whole pages with its backing, and a *virtual
//! space* (`space.rs`) is one address-translation table with regions
//! attached at addresses. Either exists without the other; a process is
//! only one user of them.

pub mod region;
pub mod space;

/// First address above user space (the lower canonical half).
pub const USER_END: u64 = 0x0000_8000_0000_0000;
/// End of what a region may occupy: the highest user page is never
/// mapped. No instruction can then lie in the bytes just below
/// `USER_END`, so no return to user mode (`iretq` after a `syscall` or an
/// interrupt) can aim at the first non-canonical address: Intel raises
/// that #GP in ring 0, after `swapgs`, with the user's GS base.
pub const USER_TOP: u64 = USER_END - 4096;
/// Top of the 64 KiB user stack; the page below the stack stays unmapped.
pub const USER_STACK_TOP: u64 = 0x0000_7fff_ffff_0000;
pub const USER_STACK_SIZE: u64 = 64 << 10;
/// A Linux program's stack when RLIMIT_STACK does not say (Linux's 8 MiB):
/// the 64 KiB stack grows down to it at faults, its new pages filled only
/// at faults, whatever the loading policy, so that eager loading (native
/// programs, the pool) never pays for megabytes nobody touches.
pub const LINUX_STACK_DEFAULT: u64 = 8 << 20;
/// The most of RLIMIT_STACK honoured (an unlimited one included): the
/// stack's list of frames costs the kernel 8 bytes a page it grew over.
pub const LINUX_STACK_MAX: u64 = 64 << 20;
/// Left unmapped under the largest stack before anonymous placements
/// begin, as Linux's stack guard gap (256 pages).
pub const STACK_GUARD_GAP: u64 = 1 << 20;
/// Where anonymous memory (`map`) is placed.
pub const USER_ANON_BASE: u64 = 0x0000_1000_0000_0000;

/// Whether `addr` is canonical (bits 63..47 all equal): the only addresses
/// the CPU will load into a base register or a return address.
pub fn is_canonical(addr: u64) -> bool {
    let top = addr >> 47;
    top == 0 || top == 0x1ffff
}
