//! A PCI device claimed from the kernel, with its memory BARs mapped.

use crate::hal;
use tessera_rt::abi::{self, DeviceRecord, Error};
use tessera_rt::sys;

pub struct Device {
    pub id: u64,
    pub record: DeviceRecord,
}

impl Device {
    /// Claims the `index`-th device with these ids (the caller needs
    /// `rights::DEVICE`) and maps every memory BAR, so that the HAL can
    /// turn the BARs' physical addresses into the driver's.
    pub fn claim(vendor: u16, device: u16, index: u64) -> Result<Device, Error> {
        let id = sys::device_find(vendor as u64, device as u64, index)?;
        sys::device_claim(id)?;
        let mut record = DeviceRecord::default();
        sys::device_info(id, &mut record)?;
        for (i, bar) in record.bars.iter().enumerate() {
            if bar.size == 0 || bar.flags & abi::BAR_IO != 0 {
                continue;
            }
            let addr = sys::device_map(id, i as u64)?;
            hal::add_window(bar.base, bar.size, addr);
        }
        // The kernel left the device quiet (no decoding, no bus mastering,
        // INTx off) after its last driver: this one turns it on.
        let cmd = sys::device_config_read(id, 4, 2)?;
        let on = 0b110; // memory decoding, bus mastering
        sys::device_config_write(id, 4, 2, (cmd | on) & !(1 << 10))?;
        Ok(Device { id, record })
    }

    /// Bus, device and function.
    pub fn location(&self) -> (u8, u8, u8) {
        let b = self.record.bdf;
        ((b >> 8) as u8, ((b >> 3) & 0x1f) as u8, (b & 7) as u8)
    }

    /// Its interrupt comes as an event on `entry` of this process's port.
    pub fn bind_interrupt(&self, entry: u64) -> Result<(), Error> {
        sys::device_irq(self.id, entry)
    }

    /// The device is served: its line may interrupt again.
    pub fn interrupt_done(&self) -> Result<(), Error> {
        sys::device_irq_done(self.id)
    }
}
