//! The I/O APIC: routes device interrupt lines (global system interrupts) to
//! a vector on a chosen CPU.

use crate::mm::layout::phys_to_virt;
use crate::sync::IrqMutex;
use platform::acpi::Madt;

struct IoApics {
    /// (virtual base, first GSI, number of inputs)
    chips: [(u64, u32, u32); platform::acpi::MAX_IOAPICS],
    count: usize,
}

impl IoApics {
    /// The chip (its base) and its input that global system interrupt
    /// `gsi` arrives at.
    fn input_of(&self, gsi: u32) -> Option<(u64, u32)> {
        self.chips[..self.count]
            .iter()
            .find(|(_, first, n)| gsi >= *first && gsi < first + n)
            .map(|&(base, first, _)| (base, gsi - first))
    }
}

static IOAPICS: IrqMutex<IoApics> = IrqMutex::new(IoApics {
    chips: [(0, 0, 0); platform::acpi::MAX_IOAPICS],
    count: 0,
});

/// The register of input `pin`'s redirection entry (its low half; the
/// high half, the destination, is the next one).
const fn entry(pin: u32) -> u32 {
    0x10 + 2 * pin
}

fn reg_read(base: u64, reg: u32) -> u32 {
    // SAFETY: IOREGSEL/IOWIN of a mapped I/O APIC; callers hold the IOAPICS lock.
    unsafe {
        core::ptr::write_volatile(base as *mut u32, reg);
        core::ptr::read_volatile((base + 0x10) as *const u32)
    }
}

fn reg_write(base: u64, reg: u32, value: u32) {
    // SAFETY: as in reg_read.
    unsafe {
        core::ptr::write_volatile(base as *mut u32, reg);
        core::ptr::write_volatile((base + 0x10) as *mut u32, value);
    }
}

/// Records every I/O APIC of the MADT and masks all their inputs.
pub fn init(madt: &Madt) {
    let mut io = IOAPICS.lock();
    for chip in madt.ioapics() {
        let base = phys_to_virt(chip.address as u64);
        let inputs = ((reg_read(base, 1) >> 16) & 0xff) + 1;
        for i in 0..inputs {
            reg_write(base, entry(i), 1 << 16);
        }
        let n = io.count;
        io.chips[n] = (base, chip.gsi_base, inputs);
        io.count += 1;
    }
}

/// Sends global system interrupt `gsi` to `vector` on the CPU with `apic_id`.
/// `flags` are the MADT override flags (polarity and trigger mode).
pub fn route(gsi: u32, flags: u16, vector: u8, apic_id: u32) -> bool {
    let io = IOAPICS.lock();
    let Some((base, pin)) = io.input_of(gsi) else {
        return false;
    };
    let active_low = flags & 0b11 == 0b11;
    let level = (flags >> 2) & 0b11 == 0b11;
    let low = vector as u32 | (u32::from(active_low) << 13) | (u32::from(level) << 15);
    reg_write(base, entry(pin) + 1, apic_id << 24);
    reg_write(base, entry(pin), low);
    true
}

/// Masks or unmasks global system interrupt `gsi` (a level-triggered line
/// stays masked from its interrupt until its driver has served the device).
pub fn set_masked(gsi: u32, masked: bool) -> bool {
    let io = IOAPICS.lock();
    let Some((base, pin)) = io.input_of(gsi) else {
        return false;
    };
    let reg = entry(pin);
    let low = reg_read(base, reg);
    reg_write(base, reg, if masked { low | 1 << 16 } else { low & !(1 << 16) });
    true
}
