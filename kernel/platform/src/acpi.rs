//! Just enough ACPI to find the processors and interrupt controllers: the
//! RSDP, the RSDT/XSDT, and the MADT ("APIC" table). Every table's checksum
//! and length is checked before its contents are used.

use crate::{ParseError, PhysMemory};

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

fn checksum(mem: &impl PhysMemory, addr: u64, len: u32) -> Result<(), ParseError> {
    let mut sum = 0u8;
    let mut buf = [0u8; 64];
    let mut off = 0u32;
    while off < len {
        let n = (len - off).min(64) as usize;
        if !mem.read(addr + off as u64, &mut buf[..n]) {
            return Err(ParseError::Unreadable(addr + off as u64));
        }
        sum = buf[..n].iter().fold(sum, |s, b| s.wrapping_add(*b));
        off += n as u32;
    }
    if sum == 0 {
        Ok(())
    } else {
        Err(ParseError::BadChecksum(addr))
    }
}

/// Validates the RSDP at `addr` and returns (root table address, is XSDT).
pub fn parse_rsdp(mem: &impl PhysMemory, addr: u64) -> Result<(u64, bool), ParseError> {
    let mut sig = [0u8; 8];
    if !mem.read(addr, &mut sig) {
        return Err(ParseError::Unreadable(addr));
    }
    if &sig != b"RSD PTR " {
        return Err(ParseError::BadSignature(addr));
    }
    checksum(mem, addr, 20)?;
    let revision = mem.read_u8(addr + 15).ok_or(ParseError::Unreadable(addr))?;
    if revision >= 2 {
        let len = mem.read_u32(addr + 20).ok_or(ParseError::Unreadable(addr))?;
        if !(36..=4096).contains(&len) {
            return Err(ParseError::BadLength(addr));
        }
        checksum(mem, addr, len)?;
        let xsdt = mem.read_u64(addr + 24).ok_or(ParseError::Unreadable(addr))?;
        if xsdt != 0 {
            return Ok((xsdt, true));
        }
    }
    let rsdt = mem.read_u32(addr + 16).ok_or(ParseError::Unreadable(addr))?;
    Ok((rsdt as u64, false))
}

/// Looks for the RSDP in the BIOS read-only area, for boot paths that do not
/// hand its address over.
pub fn scan_for_rsdp(mem: &impl PhysMemory) -> Option<u64> {
    (0xe0000u64..0x100000).step_by(16).find(|&a| parse_rsdp(mem, a).is_ok())
}

/// Checks a system description table header; returns its length.
fn table(mem: &impl PhysMemory, addr: u64, want: Option<&[u8; 4]>) -> Result<u32, ParseError> {
    let mut sig = [0u8; 4];
    if !mem.read(addr, &mut sig) {
        return Err(ParseError::Unreadable(addr));
    }
    if want.is_some_and(|w| w != &sig) {
        return Err(ParseError::BadSignature(addr));
    }
    let len = mem.read_u32(addr + 4).ok_or(ParseError::Unreadable(addr))?;
    if !(36..=1 << 20).contains(&len) {
        return Err(ParseError::BadLength(addr));
    }
    checksum(mem, addr, len)?;
    Ok(len)
}

/// Finds the table with `signature` through the RSDP at `rsdp`.
pub fn find_table(mem: &impl PhysMemory, rsdp: u64, signature: &[u8; 4]) -> Result<u64, ParseError> {
    let (root, xsdt) = parse_rsdp(mem, rsdp)?;
    let len = table(mem, root, Some(if xsdt { b"XSDT" } else { b"RSDT" }))?;
    let width = if xsdt { 8 } else { 4 };
    let count = (len as u64 - 36) / width;
    for i in 0..count {
        let at = root + 36 + i * width;
        let entry = if xsdt {
            mem.read_u64(at)
        } else {
            mem.read_u32(at).map(u64::from)
        }
        .ok_or(ParseError::Unreadable(at))?;
        let mut sig = [0u8; 4];
        if mem.read(entry, &mut sig) && &sig == signature {
            table(mem, entry, Some(signature))?;
            return Ok(entry);
        }
    }
    Err(ParseError::BadSignature(root))
}

pub fn parse_madt(mem: &impl PhysMemory, rsdp: u64) -> Result<Madt, ParseError> {
    let addr = find_table(mem, rsdp, b"APIC")?;
    let len = table(mem, addr, Some(b"APIC"))? as u64;
    let mut madt = Madt {
        lapic_address: mem.read_u32(addr + 36).ok_or(ParseError::Unreadable(addr))? as u64,
        pcat_compat: mem.read_u32(addr + 40).ok_or(ParseError::Unreadable(addr))? & 1 != 0,
        ..Madt::default()
    };
    let mut at = addr + 44;
    while at + 2 <= addr + len {
        let kind = mem.read_u8(at).ok_or(ParseError::Unreadable(at))?;
        let elen = mem.read_u8(at + 1).ok_or(ParseError::Unreadable(at))? as u64;
        if elen < 2 || at + elen > addr + len {
            return Err(ParseError::BadLength(at));
        }
        let rd32 = |o: u64| mem.read_u32(at + o).ok_or(ParseError::Unreadable(at));
        match (kind, elen) {
            (0, 8..) => {
                let apic_id = mem.read_u8(at + 3).ok_or(ParseError::Unreadable(at))?;
                if rd32(4)? & 1 != 0 && madt.cpu_count < MAX_CPUS {
                    madt.apic_ids[madt.cpu_count] = apic_id as u32;
                    madt.cpu_count += 1;
                }
            }
            (9, 16..) if rd32(8)? & 1 != 0 && madt.cpu_count < MAX_CPUS => {
                madt.apic_ids[madt.cpu_count] = rd32(4)?;
                madt.cpu_count += 1;
            }
            (1, 12..) if madt.ioapic_count < MAX_IOAPICS => {
                madt.ioapics[madt.ioapic_count] = IoApic {
                    id: mem.read_u8(at + 2).ok_or(ParseError::Unreadable(at))?,
                    address: rd32(4)?,
                    gsi_base: rd32(8)?,
                };
                madt.ioapic_count += 1;
            }
            (2, 10..) if madt.override_count < MAX_OVERRIDES => {
                madt.overrides[madt.override_count] = IrqOverride {
                    irq: mem.read_u8(at + 3).ok_or(ParseError::Unreadable(at))?,
                    gsi: rd32(4)?,
                    flags: mem.read_u16(at + 8).ok_or(ParseError::Unreadable(at))?,
                };
                madt.override_count += 1;
            }
            (5, 12..) => {
                madt.lapic_address = mem.read_u64(at + 4).ok_or(ParseError::Unreadable(at))?;
            }
            _ => {}
        }
        at += elen;
    }
    Ok(madt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmem::TestMem;

    fn fix_checksum(mem: &mut TestMem, addr: u64, len: usize, at: usize) {
        let off = (addr - mem.base) as usize;
        mem.bytes[off + at] = 0;
        let sum = mem.bytes[off..off + len].iter().fold(0u8, |s, b| s.wrapping_add(*b));
        mem.bytes[off + at] = 0u8.wrapping_sub(sum);
    }

    fn header(sig: &[u8; 4], len: u32) -> Vec<u8> {
        let mut h = vec![0u8; 36];
        h[..4].copy_from_slice(sig);
        h[4..8].copy_from_slice(&len.to_le_bytes());
        h
    }

    /// A machine like QEMU's pc with `-smp 4`: RSDP rev 0 -> RSDT -> MADT.
    fn machine() -> TestMem {
        let mut mem = TestMem::new(0xe0000, 0x20000);
        let rsdp = 0xf5000u64;
        let mut r = b"RSD PTR ".to_vec();
        r.extend_from_slice(&[0, b'B', b'O', b'C', b'H', b'S', b' ', 0]);
        r.extend_from_slice(&0xe1000u32.to_le_bytes());
        mem.put(rsdp, &r);
        fix_checksum(&mut mem, rsdp, 20, 8);

        let mut rsdt = header(b"RSDT", 36 + 8);
        rsdt.extend_from_slice(&0xe1800u32.to_le_bytes()); // some other table
        rsdt.extend_from_slice(&0xe2000u32.to_le_bytes());
        mem.put(0xe1000, &rsdt);
        fix_checksum(&mut mem, 0xe1000, rsdt.len(), 9);
        let facp = header(b"FACP", 36);
        mem.put(0xe1800, &facp);
        fix_checksum(&mut mem, 0xe1800, 36, 9);

        let mut body = Vec::new();
        body.extend_from_slice(&0xfee0_0000u32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        for (id, enabled) in [(0u8, 1u32), (1, 1), (2, 0), (3, 1)] {
            body.extend_from_slice(&[0, 8, id, id]);
            body.extend_from_slice(&enabled.to_le_bytes());
        }
        body.extend_from_slice(&[1, 12, 0, 0]);
        body.extend_from_slice(&0xfec0_0000u32.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&[2, 10, 0, 0]);
        body.extend_from_slice(&2u32.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        let mut madt = header(b"APIC", (36 + body.len()) as u32);
        madt.extend_from_slice(&body);
        mem.put(0xe2000, &madt);
        fix_checksum(&mut mem, 0xe2000, madt.len(), 9);
        mem
    }

    #[test]
    fn finds_cpus_ioapic_and_overrides() {
        let mem = machine();
        let rsdp = scan_for_rsdp(&mem).unwrap();
        assert_eq!(rsdp, 0xf5000);
        let madt = parse_madt(&mem, rsdp).unwrap();
        assert_eq!(madt.cpus(), &[0, 1, 3]);
        assert_eq!(madt.lapic_address, 0xfee0_0000);
        assert_eq!(madt.ioapics()[0].address, 0xfec0_0000);
        assert_eq!(madt.isa_irq(0), (2, 0));
        assert_eq!(madt.isa_irq(4), (4, 0));
        assert!(madt.pcat_compat);
    }

    #[test]
    fn corrupted_tables_are_rejected() {
        let mut mem = machine();
        mem.bytes[(0xe2000 + 50 - 0xe0000) as usize] ^= 0xff;
        assert_eq!(parse_madt(&mem, 0xf5000).unwrap_err(), ParseError::BadChecksum(0xe2000));
        let mut mem = machine();
        // An entry whose length runs past the table.
        let at = 0xe2000 + 44 + 1;
        mem.bytes[(at - 0xe0000) as usize] = 200;
        assert!(parse_madt(&mem, 0xf5000).is_err());
        let mem = TestMem::new(0xe0000, 0x20000);
        assert!(scan_for_rsdp(&mem).is_none());
        assert!(parse_madt(&mem, 0xf5000).is_err());
    }
}
