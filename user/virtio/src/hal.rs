//! `virtio-drivers`' hardware abstraction over Tessera's system calls.
//!
//! - DMA memory (the virtqueues) is AnT's ICA: physically contiguous pages
//!   attached to the driver, whose physical address the kernel tells a
//!   device holder (`dma_address`).
//! - A buffer lent to the device (`share`) goes as it is when the kernel
//!   finds it present and physically contiguous (an ICA the driver was
//!   given, a request header on the heap within one page): no copy. Any
//!   other buffer is bounced through DMA memory of its own and copied back
//!   when the device is done; [`bounced_bytes`] counts what that cost.
//! - A BAR's physical address is found among the windows the driver
//!   mapped when it claimed the device.
//!
//! Errors the trait cannot report (no memory for a queue, a BAR never
//! mapped) end the driver with a panic: the kernel then quiesces its
//! device, and nothing else is harmed.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use spin::Mutex;
use tessera_rt::ica::Ica;
use tessera_rt::sys;
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

/// A BAR mapped into the driver: physical base, size, address here.
struct Window {
    phys: u64,
    size: u64,
    virt: u64,
}

static WINDOWS: Mutex<Vec<Window>> = Mutex::new(Vec::new());

/// DMA memory handed out, by physical address.
static DMA: Mutex<BTreeMap<u64, Ica>> = Mutex::new(BTreeMap::new());

/// Bounce buffers lent to the device, by physical address.
static BOUNCES: Mutex<BTreeMap<u64, Ica>> = Mutex::new(BTreeMap::new());

static SHARED_DIRECT: AtomicU64 = AtomicU64::new(0);
static BOUNCED: AtomicU64 = AtomicU64::new(0);

/// Buffers lent to the device as they were, with no copy.
pub fn shared_direct() -> u64 {
    SHARED_DIRECT.load(Ordering::Relaxed)
}

/// Bytes copied into or out of bounce buffers.
pub fn bounced_bytes() -> u64 {
    BOUNCED.load(Ordering::Relaxed)
}

pub(crate) fn add_window(phys: u64, size: u64, virt: u64) {
    WINDOWS.lock().push(Window { phys, size, virt });
}

fn contiguous(pages: usize) -> (u64, Ica) {
    let ica = Ica::create(pages as u64).expect("virtio: no memory for DMA");
    let phys = sys::dma_address(ica.addr(), ica.len() as u64).expect("virtio: DMA memory without an address");
    (phys, ica)
}

pub struct TesseraHal;

// SAFETY: DMA memory is an ICA this process holds alone (the registry of
// `tessera_rt::ica` makes it the only object for it), page-aligned and
// zeroed, kept until `dma_dealloc`; BAR windows are the kernel's uncached
// mappings of the claimed device; a shared buffer's address is the one the
// kernel gives for exactly its bytes, or a bounce buffer's.
unsafe impl Hal for TesseraHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let (phys, ica) = contiguous(pages);
        let ptr = NonNull::new(ica.addr() as *mut u8).expect("an ICA is never at 0");
        DMA.lock().insert(phys, ica);
        (phys, ptr)
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, _vaddr: NonNull<u8>, _pages: usize) -> i32 {
        // Dropping the ICA deletes it.
        match DMA.lock().remove(&paddr) {
            Some(_) => 0,
            None => -1,
        }
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, size: usize) -> NonNull<u8> {
        let windows = WINDOWS.lock();
        let w = windows
            .iter()
            .find(|w| paddr >= w.phys && paddr - w.phys + size as u64 <= w.size)
            .expect("virtio: a register range outside the device's BARs");
        NonNull::new((w.virt + (paddr - w.phys)) as *mut u8).expect("a window is never at 0")
    }

    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        let (addr, len) = (buffer.as_ptr() as *mut u8 as u64, buffer.len());
        if let Ok(phys) = sys::dma_address(addr, len as u64) {
            SHARED_DIRECT.fetch_add(1, Ordering::Relaxed);
            return phys;
        }
        let (phys, mut bounce) = contiguous(len.div_ceil(4096));
        if direction != BufferDirection::DeviceToDriver {
            // SAFETY: the caller lends a valid buffer of `len` bytes that
            // nothing else accesses during this call.
            let data = unsafe { core::slice::from_raw_parts(addr as *const u8, len) };
            bounce.as_mut_slice()[..len].copy_from_slice(data);
            BOUNCED.fetch_add(len as u64, Ordering::Relaxed);
        }
        BOUNCES.lock().insert(phys, bounce);
        phys
    }

    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, direction: BufferDirection) {
        let Some(bounce) = BOUNCES.lock().remove(&paddr) else {
            return; // lent as it was
        };
        if direction != BufferDirection::DriverToDevice {
            let len = buffer.len();
            // SAFETY: the buffer is the one `share` was given, valid and
            // accessed by nothing else during this call.
            let data = unsafe { core::slice::from_raw_parts_mut(buffer.as_ptr() as *mut u8, len) };
            data.copy_from_slice(&bounce.as_slice()[..len]);
            BOUNCED.fetch_add(len as u64, Ordering::Relaxed);
        }
    }
}
