//! The pseudo non-volatile memory (seed 001 §3.1): memory the kernel never
//! gives to its frame allocator, whose content survives a restart. Under
//! QEMU it is the memory BAR (BAR2) of an `ivshmem-plain` device backed by
//! a host file (`memory-backend-file,share=on`). The kernel keeps the
//! device for itself and maps the BAR once, at boot, into the direct map as
//! write-back memory, like RAM (Linux's DAX does the same with a pmem
//! region): the NVM store is read and written through it, and a text page
//! of an OFF2F program is mapped into a process at its physical address.
//!
//! The persistence model the store relies on (`nvmstore::Region`): a write
//! is durable after `flush` of its range and a `fence`. Here a flush is
//! `clflush` of every cache line and the fence `sfence`; under QEMU the
//! guest's stores reach the shared host file at once, so a killed QEMU
//! leaves exactly what the guest had written.

use super::layout::phys_to_virt;
use super::paging;
use crate::arch::x86_64::pci;
use crate::println;
use platform::pci::{Bar, Bdf, command, reg};
use spin::Once;

/// ivshmem-plain (`1af4:1110`): its BAR2 is the shared memory.
pub const VENDOR: u16 = 0x1af4;
pub const DEVICE: u16 = 0x1110;
const MEMORY_BAR: usize = 2;
const LINE: u64 = 64;

/// The NVM as the kernel sees it: `size` bytes of physical memory from
/// `base`, reached through the direct map.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    base: u64,
    size: u64,
    bdf: Bdf,
}

static WINDOW: Once<Option<Window>> = Once::new();

/// Finds the device, turns its memory decoding on and maps its memory
/// (once, at boot, before other CPUs run). Without the device, or with a
/// BAR the kernel cannot map as memory, there is no NVM.
pub fn init() {
    WINDOW.call_once(|| {
        let f = pci::functions()
            .iter()
            .find(|f| f.vendor == VENDOR && f.device == DEVICE)?;
        let Bar::Memory { addr, size, .. } = f.bars[MEMORY_BAR] else {
            println!("NVM: device {:?} has no memory BAR", f.bdf);
            return None;
        };
        if addr == 0 {
            println!("NVM: the firmware gave its memory no address");
            return None;
        }
        let cmd = pci::read(f.bdf, reg::COMMAND, 2);
        pci::write(f.bdf, reg::COMMAND, 2, cmd | command::MEMORY);
        if let Err(e) = paging::map_direct_memory(addr, size) {
            println!("NVM: {size:#x} bytes at {addr:#x} cannot be mapped as memory ({e:?})");
            return None;
        }
        println!("NVM: {} MiB at {addr:#x} (ivshmem {:?})", size >> 20, f.bdf);
        Some(Window {
            base: addr,
            size,
            bdf: f.bdf,
        })
    });
}

/// The NVM, if the machine has one.
pub fn window() -> Option<&'static Window> {
    WINDOW.get().and_then(|w| w.as_ref())
}

impl Window {
    /// Physical address of byte 0.
    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The PCI function whose memory it is (never a driver's).
    pub fn bdf(&self) -> Bdf {
        self.bdf
    }

    /// Whether `len` bytes from `offset` lie in the NVM.
    fn holds(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.size)
    }

    fn at(&self, offset: u64) -> *mut u8 {
        phys_to_virt(self.base + offset) as *mut u8
    }

    /// Copies the bytes at `offset` into `buf`; false (nothing read) if
    /// they are not all in the NVM.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> bool {
        if !self.holds(offset, buf.len() as u64) {
            return false;
        }
        // SAFETY: the range lies in the NVM, mapped in the direct map since
        // boot and never unmapped; it is not RAM any Rust object lives in,
        // so a copy from it aliases nothing.
        unsafe { core::ptr::copy_nonoverlapping(self.at(offset), buf.as_mut_ptr(), buf.len()) };
        true
    }

    /// Writes `data` at `offset`; false (nothing written) if it does not fit.
    pub fn write(&self, offset: u64, data: &[u8]) -> bool {
        if !self.holds(offset, data.len() as u64) {
            return false;
        }
        // SAFETY: as in `read`; which bytes may be written when is the
        // store's business (it never writes a page a process maps).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.at(offset), data.len()) };
        true
    }

    /// Starts writing the cache lines of `[offset, offset + len)` back.
    pub fn flush(&self, offset: u64, len: u64) {
        if len == 0 || !self.holds(offset, len) {
            return;
        }
        let mut line = offset & !(LINE - 1);
        while line < offset + len {
            // SAFETY: the line is in the NVM's mapping; clflush changes no
            // memory content.
            unsafe { core::arch::asm!("clflush [{}]", in(reg) self.at(line), options(nostack, preserves_flags)) };
            line += LINE;
        }
    }

    /// Waits until every flush before it is done.
    pub fn fence(&self) {
        // SAFETY: a store fence has no effect besides ordering.
        unsafe { core::arch::asm!("sfence", options(nostack, preserves_flags)) };
    }
}
