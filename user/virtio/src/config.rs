//! PCI configuration space for `virtio-drivers`, through the kernel.
//!
//! The kernel refuses writes to the BARs (they stay where the firmware put
//! them), but `virtio-drivers` sizes a BAR the classic way before it uses
//! it: all ones written, the size mask read back, the old value restored.
//! That dance is answered here from what the kernel reported of the BAR,
//! without touching the device.

use tessera_rt::abi::{BAR_64, BAR_IO, DeviceRecord};
use tessera_rt::sys;
use virtio_drivers::transport::pci::bus::{ConfigurationAccess, DeviceFunction};

const BAR0: u8 = 0x10;

pub struct Config {
    device: u64,
    record: DeviceRecord,
    /// Per BAR register: the size mask a sizing write asked for.
    sizing: [bool; 6],
}

impl Config {
    pub fn new(device: &crate::Device) -> Config {
        Config {
            device: device.id,
            record: device.record,
            sizing: [false; 6],
        }
    }

    /// What BAR register `reg` reads as while it is being sized.
    fn size_mask(&self, reg: usize) -> u32 {
        // The register of a 64-bit BAR's upper half follows its lower half.
        let (bar, upper) = match reg.checked_sub(1).map(|r| self.record.bars[r]) {
            Some(lower) if lower.flags & BAR_64 != 0 && self.record.bars[reg].size == 0 => (lower, true),
            _ => (self.record.bars[reg], false),
        };
        if bar.size == 0 {
            return 0;
        }
        let mask = !(bar.size - 1);
        let real = sys::device_config_read(self.device, (BAR0 as usize + 4 * reg) as u64, 4).unwrap_or(0) as u32;
        if upper {
            (mask >> 32) as u32
        } else if bar.flags & BAR_IO != 0 {
            (mask as u32 & 0xffff_fffc) | (real & 0b11)
        } else {
            (mask as u32 & 0xffff_fff0) | (real & 0xf)
        }
    }
}

impl ConfigurationAccess for Config {
    fn read_word(&self, _: DeviceFunction, offset: u8) -> u32 {
        let reg = offset.wrapping_sub(BAR0) as usize / 4;
        if (BAR0..BAR0 + 24).contains(&offset) && self.sizing[reg] {
            return self.size_mask(reg);
        }
        sys::device_config_read(self.device, offset as u64, 4).unwrap_or(u32::MAX as u64) as u32
    }

    fn write_word(&mut self, _: DeviceFunction, offset: u8, data: u32) {
        if (BAR0..BAR0 + 24).contains(&offset) {
            self.sizing[(offset - BAR0) as usize / 4] = data == u32::MAX;
            return;
        }
        // A write the kernel refuses changes nothing; the transport reads
        // back what the device says.
        let _ = sys::device_config_write(self.device, offset as u64, 4, data as u64);
    }

    unsafe fn unsafe_clone(&self) -> Self {
        Config {
            device: self.device,
            record: self.record,
            sizing: self.sizing,
        }
    }
}
