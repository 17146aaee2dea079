//! The kernel's virtual address layout. The lower half (PML4 slots 0..255)
//! belongs to user virtual spaces; the kernel's slots are fixed at boot and
//! their PML4 entries never change afterwards, so every virtual space can
//! share them by copying the top half of the kernel's PML4 once.

/// Where the kernel image runs (top 2 GiB, code model "kernel"); it is
/// loaded at physical 1 MiB.
pub const KERNEL_VMA: u64 = 0xffff_ffff_8000_0000;
/// Direct map of all physical memory (PML4 slot 256, up to 512 GiB).
pub const PHYS_OFFSET: u64 = 0xffff_8000_0000_0000;
/// Kernel heap, grown on demand (PML4 slot 384).
pub const HEAP_BASE: u64 = 0xffff_c000_0000_0000;
pub const HEAP_MAX: u64 = 64 << 30;
/// Large allocations, each in pages of its own (`large.rs`): the upper
/// half of the heap's slot, far above anything the heap can reach.
pub const LARGE_BASE: u64 = HEAP_BASE + (256 << 30);
pub const LARGE_SIZE: u64 = 256 << 30;
/// Kernel stacks, each with an unmapped guard page below it (slot 385).
pub const STACKS_BASE: u64 = 0xffff_c080_0000_0000;
/// Temporary kernel mappings (slot 386).
pub const SCRATCH_BASE: u64 = 0xffff_c100_0000_0000;

/// The PML4 slots the kernel owns besides the image's (511).
pub const KERNEL_SLOTS: [usize; 4] = [256, 384, 385, 386];

pub const PAGE_SIZE: u64 = 4096;
/// A block: what one entry of a page directory maps (a 2 MiB page).
pub const BLOCK_SIZE: u64 = 2 << 20;
pub const BLOCK_PAGES: usize = (BLOCK_SIZE / PAGE_SIZE) as usize;

pub const fn phys_to_virt(phys: u64) -> u64 {
    PHYS_OFFSET + phys
}

/// Physical address of a kernel-image or direct-map virtual address.
pub fn virt_to_phys(virt: u64) -> u64 {
    if virt >= KERNEL_VMA {
        virt - KERNEL_VMA
    } else {
        debug_assert!((PHYS_OFFSET..HEAP_BASE).contains(&virt));
        virt - PHYS_OFFSET
    }
}

pub const fn page_align_up(x: u64) -> u64 {
    (x + PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

/// Boundaries of the kernel image, from the linker script.
pub mod image {
    unsafe extern "C" {
        static __kernel_start: u8;
        static __rodata_start: u8;
        static __data_start: u8;
        static __kernel_end: u8;
    }
    // SAFETY (all four): only the addresses of linker symbols are taken.
    pub fn start() -> u64 {
        unsafe { &__kernel_start as *const u8 as u64 }
    }
    pub fn rodata() -> u64 {
        unsafe { &__rodata_start as *const u8 as u64 }
    }
    pub fn data() -> u64 {
        unsafe { &__data_start as *const u8 as u64 }
    }
    pub fn end() -> u64 {
        unsafe { &__kernel_end as *const u8 as u64 }
    }
}
