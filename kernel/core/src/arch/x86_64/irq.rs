//! Device interrupts: the vectors handed to devices, how one reaches its
//! device's vector (an I/O APIC line, or MSI/MSI-X, whose address and data
//! the device's driver writes into the device), and the way up when one
//! arrives. What an interrupt means (a message to its driver) belongs to
//! the layers above, reached through the `device_irq` hook.

use super::{apic, ioapic};
use core::sync::atomic::{AtomicU64, Ordering};

/// Vectors for devices: above the exceptions and the legacy PICs' range,
/// below the kernel's own (timer 0x20, serial 0x24, PICs 0x70..0x7f, IPIs
/// from 0xf0).
pub const FIRST: u8 = 0x30;
pub const LAST: u8 = 0x6f;

/// Vectors in use, one bit each (bit i: FIRST + i).
static USED: AtomicU64 = AtomicU64::new(0);

/// Interrupts taken per device vector, for the inspector.
pub static COUNTS: [AtomicU64; (LAST - FIRST + 1) as usize] =
    [const { AtomicU64::new(0) }; (LAST - FIRST + 1) as usize];

/// A free device vector, now in use; None when all are taken.
pub fn alloc_vector() -> Option<u8> {
    let mut used = USED.load(Ordering::Acquire);
    loop {
        let free = (!used).trailing_zeros() as u8;
        if free > LAST - FIRST {
            return None;
        }
        match USED.compare_exchange(used, used | 1 << free, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                COUNTS[free as usize].store(0, Ordering::Relaxed);
                return Some(FIRST + free);
            }
            Err(now) => used = now,
        }
    }
}

/// Gives vector `v` back (its device's driver has gone).
pub fn free_vector(v: u8) {
    if (FIRST..=LAST).contains(&v) {
        USED.fetch_and(!(1 << (v - FIRST)), Ordering::AcqRel);
    }
}

pub fn is_device_vector(v: u8) -> bool {
    (FIRST..=LAST).contains(&v)
}

/// The message an MSI or MSI-X entry must carry to raise vector `v` on the
/// boot CPU: (address, data), fixed delivery, edge-triggered.
pub fn msi_message(v: u8) -> (u64, u32) {
    let dest = crate::cpu::get(0).map_or(0, |c| c.apic_id);
    (0xfee0_0000 | (dest as u64) << 12, v as u32)
}

/// The global system interrupt and the MADT flags (polarity, trigger) of
/// the line a PCI function's interrupt pin was routed to: the ISA IRQ the
/// firmware wrote into its interrupt-line register, as the MADT's
/// overrides place it. A line without an override is a PCI line as the
/// PCI specification has it: level-triggered, active low.
pub fn pci_line(line: u8) -> (u32, u16) {
    match crate::boot::isa_override(line) {
        Some((gsi, flags)) => (gsi, flags),
        None => (line as u32, 0b1111),
    }
}

/// Routes I/O APIC line `gsi` (its MADT `flags`) to vector `v` on the boot
/// CPU, masked until `unmask_line`.
pub fn route_line(gsi: u32, flags: u16, v: u8) -> bool {
    let dest = crate::cpu::get(0).map_or(0, |c| c.apic_id);
    ioapic::route(gsi, flags, v, dest) && ioapic::set_masked(gsi, true)
}

pub fn mask_line(gsi: u32) {
    ioapic::set_masked(gsi, true);
}

pub fn unmask_line(gsi: u32) {
    ioapic::set_masked(gsi, false);
}

/// A device vector arrived: count it, acknowledge it at the local APIC,
/// and hand it up.
pub(super) fn on_device_vector(v: u8) {
    COUNTS[(v - FIRST) as usize].fetch_add(1, Ordering::Relaxed);
    apic::eoi();
    (crate::hooks::get().device_irq)(v);
}
