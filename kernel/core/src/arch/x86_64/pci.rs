//! PCI configuration space through configuration mechanism #1 (ports
//! 0xCF8/0xCFC, the `pc` machine's), and the functions found at boot.
//! What a function's registers mean is `platform::pci`'s.

use crate::sync::IrqMutex;
use alloc::vec::Vec;
use platform::pci::{Bdf, ConfigSpace, Function};
use spin::Once;
use x86_64::instructions::port::Port;

/// The address and data ports, used as a pair under one lock.
static PORTS: IrqMutex<()> = IrqMutex::new(());

pub struct PortConfig;

impl ConfigSpace for PortConfig {
    fn read32(&self, bdf: Bdf, offset: u16) -> u32 {
        let _g = PORTS.lock();
        // SAFETY: 0xCF8/0xCFC are the PCI configuration ports, used only
        // here and under the lock, address then data.
        unsafe {
            Port::<u32>::new(0xcf8).write(bdf.address(offset));
            Port::<u32>::new(0xcfc).read()
        }
    }

    fn write32(&self, bdf: Bdf, offset: u16, value: u32) {
        let _g = PORTS.lock();
        // SAFETY: as in read32.
        unsafe {
            Port::<u32>::new(0xcf8).write(bdf.address(offset));
            Port::<u32>::new(0xcfc).write(value);
        }
    }
}

/// Reads `width` (1, 2 or 4) bytes of `bdf`'s configuration space at
/// `offset` (aligned to the width: `platform::pci::valid_access`).
pub fn read(bdf: Bdf, offset: u16, width: u8) -> u32 {
    let _g = PORTS.lock();
    let data = 0xcfc + (offset & 3);
    // SAFETY: as in read32; the data port's bytes 0..3 reach the bytes of
    // the addressed register.
    unsafe {
        Port::<u32>::new(0xcf8).write(bdf.address(offset));
        match width {
            1 => Port::<u8>::new(data).read() as u32,
            2 => Port::<u16>::new(data).read() as u32,
            _ => Port::<u32>::new(0xcfc).read(),
        }
    }
}

/// Writes `width` bytes at `offset`: only the bytes named, so that a
/// write to the command register leaves the status register's
/// write-one-to-clear bits alone.
pub fn write(bdf: Bdf, offset: u16, width: u8, value: u32) {
    let _g = PORTS.lock();
    let data = 0xcfc + (offset & 3);
    // SAFETY: as in `read`.
    unsafe {
        Port::<u32>::new(0xcf8).write(bdf.address(offset));
        match width {
            1 => Port::<u8>::new(data).write(value as u8),
            2 => Port::<u16>::new(data).write(value as u16),
            _ => Port::<u32>::new(0xcfc).write(value),
        }
    }
}

static FUNCTIONS: Once<Vec<Function>> = Once::new();

/// Enumerates the buses once (at boot, before any driver runs: sizing a
/// BAR briefly turns its decoding off).
pub fn init() {
    FUNCTIONS.call_once(|| {
        let mut found = Vec::new();
        platform::pci::enumerate(&PortConfig, |f| found.push(*f));
        found
    });
}

/// The functions found at boot, in bus order.
pub fn functions() -> &'static [Function] {
    FUNCTIONS.get().map_or(&[], |v| v.as_slice())
}
