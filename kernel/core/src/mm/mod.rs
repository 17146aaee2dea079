//! Memory management: physical frames, page tables, the kernel heap, kernel
//! stacks, TLB shootdown, and the accounts kernel memory is charged to.

pub mod frames;
pub mod heap;
pub mod large;
pub mod layout;
pub mod nvm;
pub mod paging;
pub mod quota;
pub mod stack;
pub mod tlb;

use platform::memmap::MemoryMap;

/// Brings memory management up: frame allocator, final kernel page tables,
/// heap. `reserved` lists physical ranges that must never be handed out.
pub fn init(memmap: &MemoryMap, reserved: &[(u64, u64)]) {
    frames::init(memmap, reserved).expect("no room for the frame allocator's metadata");
    paging::init_kernel_tables(memmap).expect("cannot build the kernel page tables");
    heap::init().expect("cannot map the initial kernel heap");
}
