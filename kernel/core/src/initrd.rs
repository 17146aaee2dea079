//! The initial archive: a cpio image QEMU loads beside the kernel (`-initrd`)
//! and the boot protocol hands over as a module. It stays where QEMU put it
//! (its range is never given to the frame allocator) and is read in place.
//! It holds the programs (`bin/`) and, later, configuration (`etc/`).

use crate::mm::layout::phys_to_virt;
use spin::Once;

static ARCHIVE: Once<&'static [u8]> = Once::new();

pub fn init(module: Option<(u64, u64)>) {
    if let Some((base, size)) = module {
        // SAFETY: the module's range is reserved at boot and mapped by the
        // direct map; nothing writes to it afterwards.
        let bytes = unsafe { core::slice::from_raw_parts(phys_to_virt(base) as *const u8, size as usize) };
        ARCHIVE.call_once(|| bytes);
    }
}

pub fn archive() -> Option<&'static [u8]> {
    ARCHIVE.get().copied()
}
