//! The firmware's ACPI tables, read with the `acpi` crate through the
//! direct map: the MADT's processors, I/O APICs and interrupt source
//! overrides, as the kernel keeps them (`platform::acpi::Madt`).

use crate::mm::layout::phys_to_virt;
use acpi::madt::{Madt as Table, MadtEntry};
use acpi::{AcpiHandler, AcpiTables, PhysicalMapping};
use core::ptr::NonNull;
use platform::acpi::{IoApic, IrqOverride, Madt};

/// Physical memory as the direct map shows it: nothing to map or unmap.
#[derive(Clone, Copy)]
struct DirectMap;

impl AcpiHandler for DirectMap {
    unsafe fn map_physical_region<T>(&self, physical_address: usize, size: usize) -> PhysicalMapping<Self, T> {
        let virt = NonNull::new(phys_to_virt(physical_address as u64) as *mut T).expect("the direct map is not at 0");
        // SAFETY: the direct map covers the physical memory the firmware's
        // tables are in, for as long as the kernel runs; `size` bytes from
        // there are the region the crate asked for.
        unsafe { PhysicalMapping::new(physical_address, virt, size, size, *self) }
    }

    fn unmap_physical_region<T>(_: &PhysicalMapping<Self, T>) {}
}

/// The MADT found through the RSDP at `rsdp` (0: looked for in the BIOS
/// area, as boot paths that do not hand it over need).
pub fn madt(rsdp: u64) -> Result<Madt, acpi::AcpiError> {
    // SAFETY: the address is the firmware's RSDP (or the BIOS area the crate
    // searches), in the direct map.
    let tables = unsafe {
        if rsdp != 0 {
            AcpiTables::from_rsdp(DirectMap, rsdp as usize)
        } else {
            AcpiTables::search_for_rsdp_bios(DirectMap)
        }
    }?;
    let mapping = tables.find_table::<Table>()?;
    let table = mapping.get();
    let mut madt = Madt {
        lapic_address: table.local_apic_address as u64,
        pcat_compat: table.supports_8259(),
        ..Madt::default()
    };
    for entry in table.entries() {
        match entry {
            MadtEntry::LocalApic(e) if e.flags & 1 != 0 => madt.add_cpu(e.apic_id as u32),
            MadtEntry::LocalX2Apic(e) if e.flags & 1 != 0 => madt.add_cpu(e.x2apic_id),
            MadtEntry::IoApic(e) => madt.add_ioapic(IoApic {
                id: e.io_apic_id,
                address: e.io_apic_address,
                gsi_base: e.global_system_interrupt_base,
            }),
            MadtEntry::InterruptSourceOverride(e) => madt.add_override(IrqOverride {
                irq: e.irq,
                gsi: e.global_system_interrupt,
                flags: e.flags,
            }),
            MadtEntry::LocalApicAddressOverride(e) => madt.lapic_address = e.local_apic_address,
            _ => {}
        }
    }
    Ok(madt)
}
