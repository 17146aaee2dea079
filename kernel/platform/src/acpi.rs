//! The processors and interrupt controllers as the kernel keeps them, from
//! the firmware's MADT ("APIC" table; the kernel reads it with the `acpi`
//! crate, `kcore::acpi`).

pub const MAX_CPUS: usize = 64;
pub const MAX_IOAPICS: usize = 8;
pub const MAX_OVERRIDES: usize = 16;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoApic {
    pub id: u8,
    pub address: u32,
    pub gsi_base: u32,
}

/// An ISA IRQ that is wired to a different global system interrupt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqOverride {
    pub irq: u8,
    pub gsi: u32,
    /// MPS INTI flags: polarity (bits 0-1) and trigger mode (bits 2-3).
    pub flags: u16,
}

#[derive(Clone, Debug)]
pub struct Madt {
    pub lapic_address: u64,
    /// APIC ids of the enabled processors, in table order (the first is the
    /// boot processor on every machine QEMU builds).
    pub apic_ids: [u32; MAX_CPUS],
    pub cpu_count: usize,
    pub ioapics: [IoApic; MAX_IOAPICS],
    pub ioapic_count: usize,
    pub overrides: [IrqOverride; MAX_OVERRIDES],
    pub override_count: usize,
    /// The machine also has the two legacy 8259 PICs, which must be masked.
    pub pcat_compat: bool,
}

impl Default for Madt {
    fn default() -> Self {
        Madt {
            lapic_address: 0,
            apic_ids: [0; MAX_CPUS],
            cpu_count: 0,
            ioapics: [IoApic::default(); MAX_IOAPICS],
            ioapic_count: 0,
            overrides: [IrqOverride::default(); MAX_OVERRIDES],
            override_count: 0,
            pcat_compat: false,
        }
    }
}

impl Madt {
    /// Adds an enabled processor; past `MAX_CPUS` it is left unused.
    pub fn add_cpu(&mut self, apic_id: u32) {
        if let Some(slot) = self.apic_ids.get_mut(self.cpu_count) {
            *slot = apic_id;
            self.cpu_count += 1;
        }
    }
    /// Adds an I/O APIC; past `MAX_IOAPICS` its interrupts stay unrouted.
    pub fn add_ioapic(&mut self, ioapic: IoApic) {
        if let Some(slot) = self.ioapics.get_mut(self.ioapic_count) {
            *slot = ioapic;
            self.ioapic_count += 1;
        }
    }
    /// Adds an interrupt source override; past `MAX_OVERRIDES` the IRQ keeps its identity mapping.
    pub fn add_override(&mut self, irq: IrqOverride) {
        if let Some(slot) = self.overrides.get_mut(self.override_count) {
            *slot = irq;
            self.override_count += 1;
        }
    }
    pub fn cpus(&self) -> &[u32] {
        &self.apic_ids[..self.cpu_count]
    }
    pub fn ioapics(&self) -> &[IoApic] {
        &self.ioapics[..self.ioapic_count]
    }
    /// The global system interrupt and flags for ISA IRQ `irq`.
    pub fn isa_irq(&self, irq: u8) -> (u32, u16) {
        self.overrides[..self.override_count]
            .iter()
            .find(|o| o.irq == irq)
            .map_or((irq as u32, 0), |o| (o.gsi, o.flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_irqs_follow_the_overrides() {
        let mut madt = Madt::default();
        madt.overrides[0] = IrqOverride {
            irq: 0,
            gsi: 2,
            flags: 0,
        };
        madt.overrides[1] = IrqOverride {
            irq: 11,
            gsi: 11,
            flags: 0xd,
        };
        madt.override_count = 2;
        assert_eq!(madt.isa_irq(0), (2, 0));
        assert_eq!(madt.isa_irq(11), (11, 0xd));
        assert_eq!(madt.isa_irq(4), (4, 0));
    }

    #[test]
    fn entries_past_the_capacity_are_left_out() {
        let mut madt = Madt::default();
        for id in 0..MAX_CPUS as u32 + 3 {
            madt.add_cpu(id);
        }
        assert_eq!(madt.cpus().len(), MAX_CPUS);
        assert_eq!(madt.cpus()[MAX_CPUS - 1], MAX_CPUS as u32 - 1);
        madt.add_override(IrqOverride {
            irq: 9,
            gsi: 20,
            flags: 0xf,
        });
        assert_eq!(madt.isa_irq(9), (20, 0xf));
    }
}
