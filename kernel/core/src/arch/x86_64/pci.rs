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
