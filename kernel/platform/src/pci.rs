//! PCI: the functions on the buses, their memory and I/O windows (BARs),
//! their interrupt pins and capabilities (MSI, MSI-X, virtio's vendor
//! capabilities), read through configuration space.
//!
//! The access itself (ports 0xCF8/0xCFC on the `pc` machine, or ECAM) is the
//! kernel's; this reads through the [`ConfigSpace`] trait so it runs in host
//! tests over a simulated bus. A device that answers nonsense (a BAR that
//! does not size, a capability list that loops) gives a function with what
//! could be read, never a panic or an endless walk.

/// Bus, device and function: where a function answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bdf {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl Bdf {
    pub const fn new(bus: u8, device: u8, function: u8) -> Bdf {
        Bdf { bus, device, function }
    }

    /// The 32-bit address of register `offset` for configuration
    /// mechanism #1 (port 0xCF8), with the enable bit.
    pub fn address(self, offset: u16) -> u32 {
        0x8000_0000
            | (self.bus as u32) << 16
            | ((self.device as u32) & 0x1f) << 11
            | ((self.function as u32) & 7) << 8
            | (offset as u32 & 0xfc)
    }
}

impl core::fmt::Display for Bdf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.bus, self.device, self.function)
    }
}

/// Configuration space of every function (registers are 32-bit, aligned).
pub trait ConfigSpace {
    fn read32(&self, bdf: Bdf, offset: u16) -> u32;
    fn write32(&self, bdf: Bdf, offset: u16, value: u32);

    fn read16(&self, bdf: Bdf, offset: u16) -> u16 {
        (self.read32(bdf, offset & !3) >> ((offset & 2) * 8)) as u16
    }
    fn read8(&self, bdf: Bdf, offset: u16) -> u8 {
        (self.read32(bdf, offset & !3) >> ((offset & 3) * 8)) as u8
    }
}

/// Registers of the common header.
pub mod reg {
    pub const VENDOR_DEVICE: u16 = 0x00;
    pub const COMMAND: u16 = 0x04;
    pub const STATUS: u16 = 0x06;
    pub const CLASS: u16 = 0x08;
    pub const HEADER_TYPE: u16 = 0x0e;
    pub const BAR0: u16 = 0x10;
    pub const SECONDARY_BUS: u16 = 0x19;
    pub const CAPABILITIES: u16 = 0x34;
    pub const INTERRUPT: u16 = 0x3c;
}

/// Bits of the command register.
pub mod command {
    pub const IO: u32 = 1;
    pub const MEMORY: u32 = 1 << 1;
    pub const BUS_MASTER: u32 = 1 << 2;
    pub const INTX_DISABLE: u32 = 1 << 10;
}

/// Capability identifiers.
pub mod cap {
    pub const MSI: u8 = 0x05;
    pub const VENDOR: u8 = 0x09;
    pub const MSIX: u8 = 0x11;
}

/// One base address register, decoded and sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Bar {
    #[default]
    None,
    /// Memory at `addr` of `size` bytes (a 64-bit BAR takes the next slot too).
    Memory {
        addr: u64,
        size: u64,
        prefetchable: bool,
        wide: bool,
    },
    /// I/O ports from `port`.
    Io { port: u32, size: u32 },
}

/// MSI-X: where its table and pending bits are (BAR and offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsiX {
    /// Offset of the capability in configuration space.
    pub at: u16,
    pub entries: u16,
    pub table_bar: u8,
    pub table_offset: u32,
    pub pba_bar: u8,
    pub pba_offset: u32,
}

/// Capabilities kept per function (virtio has five vendor ones).
pub const MAX_CAPS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Function {
    pub bdf: Bdf,
    pub vendor: u16,
    pub device: u16,
    pub class: u8,
    pub subclass: u8,
    pub prog_if: u8,
    pub revision: u8,
    pub bars: [Bar; 6],
    /// The interrupt pin (1 = INTA .. 4 = INTD; 0: none) and the line the
    /// firmware routed it to (the ISA IRQ / GSI on the `pc` machine).
    pub pin: u8,
    pub line: u8,
    /// (identifier, offset) of each capability, in list order.
    pub caps: [(u8, u16); MAX_CAPS],
    pub cap_count: usize,
    pub msix: Option<MsiX>,
}

impl Function {
    pub fn capabilities(&self) -> &[(u8, u16)] {
        &self.caps[..self.cap_count]
    }
}

/// Reads function `bdf`, or None if nothing answers there.
pub fn read_function(cfg: &impl ConfigSpace, bdf: Bdf) -> Option<Function> {
    let id = cfg.read32(bdf, reg::VENDOR_DEVICE);
    let vendor = id as u16;
    if vendor == 0xffff || vendor == 0 {
        return None;
    }
    let class = cfg.read32(bdf, reg::CLASS);
    let mut f = Function {
        bdf,
        vendor,
        device: (id >> 16) as u16,
        class: (class >> 24) as u8,
        subclass: (class >> 16) as u8,
        prog_if: (class >> 8) as u8,
        revision: class as u8,
        ..Function::default()
    };
    let header = cfg.read8(bdf, reg::HEADER_TYPE) & 0x7f;
    let intr = cfg.read32(bdf, reg::INTERRUPT);
    f.line = intr as u8;
    f.pin = (intr >> 8) as u8;
    if header == 0 {
        f.bars = read_bars(cfg, bdf);
    }
    read_capabilities(cfg, &mut f);
    Some(f)
}

/// Decodes and sizes the six BARs of a type-0 header. Decoding is switched
/// off while each is sized (writing ones would otherwise move its window
/// over something else for a moment), then the command register is put back.
fn read_bars(cfg: &impl ConfigSpace, bdf: Bdf) -> [Bar; 6] {
    let mut bars = [Bar::None; 6];
    let cmd = cfg.read32(bdf, reg::COMMAND);
    cfg.write32(bdf, reg::COMMAND, cmd & !(command::IO | command::MEMORY) & 0xffff);
    let mut i = 0;
    while i < 6 {
        let off = reg::BAR0 + 4 * i as u16;
        let low = cfg.read32(bdf, off);
        cfg.write32(bdf, off, 0xffff_ffff);
        let low_mask = cfg.read32(bdf, off);
        cfg.write32(bdf, off, low);
        if low & 1 == 1 {
            let size = (!(low_mask & !3)).wrapping_add(1) & 0xffff;
            if low_mask & !3 != 0 && size != 0 {
                bars[i] = Bar::Io { port: low & !3, size };
            }
            i += 1;
            continue;
        }
        let wide = (low >> 1) & 3 == 2;
        let prefetchable = low & 8 != 0;
        let (addr, mask) = if wide && i < 5 {
            let high = cfg.read32(bdf, off + 4);
            cfg.write32(bdf, off + 4, 0xffff_ffff);
            let high_mask = cfg.read32(bdf, off + 4);
            cfg.write32(bdf, off + 4, high);
            (
                (high as u64) << 32 | (low & !0xf) as u64,
                (high_mask as u64) << 32 | (low_mask & !0xf) as u64,
            )
        } else {
            ((low & !0xf) as u64, 0xffff_ffff_0000_0000 | (low_mask & !0xf) as u64)
        };
        let size = (!mask).wrapping_add(1);
        if mask & 0xffff_ffff_ffff_fff0 != 0 && size != 0 && (low_mask & !0xf) != 0 {
            bars[i] = Bar::Memory {
                addr,
                size,
                prefetchable,
                wide,
            };
        }
        i += if wide { 2 } else { 1 };
    }
    cfg.write32(bdf, reg::COMMAND, cmd & 0xffff);
    bars
}

/// Walks the capability list: at most `MAX_CAPS` kept, at most 48 followed
/// (the list lives in 192 bytes; more means it loops).
fn read_capabilities(cfg: &impl ConfigSpace, f: &mut Function) {
    let status = cfg.read16(f.bdf, reg::STATUS);
    if status & (1 << 4) == 0 {
        return;
    }
    let mut at = (cfg.read8(f.bdf, reg::CAPABILITIES) & 0xfc) as u16;
    for _ in 0..48 {
        if at < 0x40 {
            break;
        }
        let head = cfg.read32(f.bdf, at);
        let id = head as u8;
        if f.cap_count < MAX_CAPS {
            f.caps[f.cap_count] = (id, at);
            f.cap_count += 1;
        }
        if id == cap::MSIX {
            let table = cfg.read32(f.bdf, at + 4);
            let pba = cfg.read32(f.bdf, at + 8);
            f.msix = Some(MsiX {
                at,
                entries: ((head >> 16) as u16 & 0x7ff) + 1,
                table_bar: (table & 7) as u8,
                table_offset: table & !7,
                pba_bar: (pba & 7) as u8,
                pba_offset: pba & !7,
            });
        }
        at = ((head >> 8) as u8 & 0xfc) as u16;
    }
}

/// Every function reachable from bus 0 through PCI-to-PCI bridges, in bus
/// order. `visit` gets each; buses are scanned once each, at most 256.
pub fn enumerate(cfg: &impl ConfigSpace, mut visit: impl FnMut(&Function)) {
    let mut pending = [0u8; 256];
    let mut seen = [false; 256];
    let (mut head, mut tail) = (0usize, 1usize);
    seen[0] = true;
    while head < tail {
        let bus = pending[head];
        head += 1;
        for device in 0..32 {
            let Some(f0) = read_function(cfg, Bdf::new(bus, device, 0)) else {
                continue;
            };
            let multi = cfg.read8(f0.bdf, reg::HEADER_TYPE) & 0x80 != 0;
            for function in 0..if multi { 8 } else { 1 } {
                let f = if function == 0 {
                    f0
                } else {
                    match read_function(cfg, Bdf::new(bus, device, function)) {
                        Some(f) => f,
                        None => continue,
                    }
                };
                visit(&f);
                let header = cfg.read8(f.bdf, reg::HEADER_TYPE) & 0x7f;
                if f.class == 0x06 && f.subclass == 0x04 && header == 1 {
                    let secondary = cfg.read8(f.bdf, reg::SECONDARY_BUS);
                    if secondary != 0 && !seen[secondary as usize] && tail < 256 {
                        seen[secondary as usize] = true;
                        pending[tail] = secondary;
                        tail += 1;
                    }
                }
            }
        }
    }
}

/// Bytes of an MSI capability at its longest (64-bit address, per-vector
/// masking) and of an MSI-X capability.
const MSI_LEN: u16 = 24;
const MSIX_LEN: u16 = 12;

/// Whether a driver may access `width` bytes of `f`'s configuration
/// space at `offset`: an aligned access of 1, 2 or 4 bytes inside the 256
/// the `pc` machine's ports reach.
pub fn valid_access(offset: u64, width: u64) -> bool {
    matches!(width, 1 | 2 | 4) && offset.is_multiple_of(width) && offset <= 256 - width
}

/// Whether a driver may write `width` bytes at `offset` of `f`'s
/// configuration space. Its own business: the command and status
/// registers (decoding, bus mastering, INTx off) and the capabilities
/// past the header. The kernel's: the rest of the header (where the
/// firmware placed the BARs, the interrupt line the kernel routes) and
/// MSI and MSI-X, which aim interrupts at the CPUs.
pub fn driver_may_write(f: &Function, offset: u64, width: u64) -> bool {
    if !valid_access(offset, width) {
        return false;
    }
    let (start, end) = (offset as u16, (offset + width) as u16);
    if start >= reg::COMMAND && end <= reg::CLASS {
        return true;
    }
    if start < 0x40 {
        return false;
    }
    !f.capabilities().iter().any(|&(id, at)| {
        let len = match id {
            cap::MSI => MSI_LEN,
            cap::MSIX => MSIX_LEN,
            _ => return false,
        };
        start < at + len && at < end
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A simulated bus: each function's 256 bytes, with BARs that answer
    /// sizing writes as hardware does.
    #[derive(Default)]
    struct Bus {
        regs: RefCell<HashMap<(Bdf, u16), u32>>,
        /// Size masks of BARs: (bdf, offset) -> bits that stay zero.
        sizes: HashMap<(Bdf, u16), u32>,
    }

    impl Bus {
        fn set(&mut self, bdf: Bdf, off: u16, v: u32) {
            self.regs.get_mut().insert((bdf, off), v);
        }
        fn bar(&mut self, bdf: Bdf, off: u16, value: u32, size_mask: u32) {
            self.set(bdf, off, value);
            self.sizes.insert((bdf, off), size_mask);
        }
        fn function(&mut self, bdf: Bdf, vendor: u16, device: u16, class: u32) {
            self.set(bdf, 0, (device as u32) << 16 | vendor as u32);
            self.set(bdf, 8, class);
        }
    }

    impl ConfigSpace for Bus {
        fn read32(&self, bdf: Bdf, off: u16) -> u32 {
            if off == 0 && !self.regs.borrow().contains_key(&(bdf, 0)) {
                return 0xffff_ffff;
            }
            *self.regs.borrow().get(&(bdf, off)).unwrap_or(&0)
        }
        fn write32(&self, bdf: Bdf, off: u16, v: u32) {
            // The status half of the command register is read-only or
            // write-one-to-clear: writing zeros there leaves it.
            if off == reg::COMMAND {
                let old = *self.regs.borrow().get(&(bdf, off)).unwrap_or(&0);
                self.regs
                    .borrow_mut()
                    .insert((bdf, off), (old & 0xffff_0000) | (v & 0xffff));
                return;
            }
            let v = match self.sizes.get(&(bdf, off)) {
                // Only the address bits above the size are writable; the
                // type bits stay.
                Some(&mask) => {
                    let old = *self.regs.borrow().get(&(bdf, off)).unwrap_or(&0);
                    (v & mask) | (old & !mask & 0xf)
                }
                None => v,
            };
            self.regs.borrow_mut().insert((bdf, off), v);
        }
    }

    #[test]
    fn bars_of_every_kind_are_decoded_and_sized() {
        let mut bus = Bus::default();
        let d = Bdf::new(0, 3, 0);
        bus.function(d, 0x1af4, 0x1001, 0x0100_0000);
        bus.set(d, reg::COMMAND, 0x107);
        bus.bar(d, 0x10, 0xc001, 0xffff_ffc0); // I/O, 64 ports
        bus.bar(d, 0x14, 0xfebf_f000, 0xffff_f000); // 32-bit memory, 4 KiB
        bus.bar(d, 0x20, 0xfebf_800c, 0xffff_c000); // 64-bit prefetchable, 16 KiB
        bus.bar(d, 0x24, 0x0, 0xffff_ffff);
        let f = read_function(&bus, d).unwrap();
        assert_eq!(f.bars[0], Bar::Io { port: 0xc000, size: 64 });
        assert_eq!(
            f.bars[1],
            Bar::Memory {
                addr: 0xfebf_f000,
                size: 4096,
                prefetchable: false,
                wide: false
            }
        );
        assert_eq!(
            f.bars[4],
            Bar::Memory {
                addr: 0xfebf_8000,
                size: 16384,
                prefetchable: true,
                wide: true
            }
        );
        assert_eq!(f.bars[5], Bar::None);
        // The BARs and the command register are as they were.
        assert_eq!(bus.read32(d, 0x14), 0xfebf_f000);
        assert_eq!(bus.read32(d, reg::COMMAND), 0x107);
    }

    #[test]
    fn capabilities_and_msix_are_read_and_a_loop_ends() {
        let mut bus = Bus::default();
        let d = Bdf::new(0, 4, 0);
        bus.function(d, 0x1af4, 0x1000, 0x0200_0000);
        bus.set(d, reg::COMMAND, 1 << 20); // status: capability list
        bus.set(d, reg::CAPABILITIES, 0x40);
        bus.set(d, 0x40, 0x0002_5009); // vendor cap, next 0x50
        bus.set(d, 0x50, 0x0003_4011); // MSI-X, 4 entries, next 0x40 (a loop)
        bus.set(d, 0x54, 0x0000_1001); // table in BAR1 at 0x1000
        bus.set(d, 0x58, 0x0000_1801);
        let f = read_function(&bus, d).unwrap();
        assert_eq!(f.capabilities()[0], (cap::VENDOR, 0x40));
        assert_eq!(f.capabilities()[1], (cap::MSIX, 0x50));
        assert_eq!(f.cap_count, MAX_CAPS);
        let m = f.msix.unwrap();
        assert_eq!(
            (m.entries, m.table_bar, m.table_offset, m.pba_offset),
            (4, 1, 0x1000, 0x1800)
        );
    }

    #[test]
    fn enumeration_follows_bridges_and_functions() {
        let mut bus = Bus::default();
        bus.function(Bdf::new(0, 0, 0), 0x8086, 0x1237, 0x0600_0000);
        let bridge = Bdf::new(0, 1, 0);
        bus.function(bridge, 0x8086, 0x7000, 0x0604_0000);
        bus.set(bridge, reg::HEADER_TYPE & !3, 0x0081_0000); // header 1, multi-function
        bus.set(bridge, 0x18, 0x0000_0200); // secondary bus 2
        bus.function(Bdf::new(0, 1, 3), 0x8086, 0x7113, 0x0680_0000);
        bus.function(Bdf::new(2, 5, 0), 0x1af4, 0x1110, 0x0500_0000);
        let mut seen = Vec::new();
        enumerate(&bus, |f| seen.push((f.bdf, f.device)));
        assert_eq!(
            seen,
            vec![
                (Bdf::new(0, 0, 0), 0x1237),
                (bridge, 0x7000),
                (Bdf::new(0, 1, 3), 0x7113),
                (Bdf::new(2, 5, 0), 0x1110)
            ]
        );
    }

    #[test]
    fn config_addresses() {
        assert_eq!(Bdf::new(0, 3, 0).address(0x10), 0x8000_1810);
        assert_eq!(Bdf::new(1, 31, 7).address(0xff), 0x8001_fffc);
        assert_eq!(format!("{}", Bdf::new(0, 3, 1)), "00:03.1");
    }
    #[test]
    fn a_driver_writes_command_and_its_capabilities_only() {
        let mut f = Function::default();
        f.caps[0] = (cap::VENDOR, 0x40);
        f.caps[1] = (cap::MSIX, 0x98);
        f.caps[2] = (cap::MSI, 0x50);
        f.cap_count = 3;
        // Command and status, whole or in part.
        assert!(driver_may_write(&f, 0x04, 4));
        assert!(driver_may_write(&f, 0x04, 2));
        assert!(driver_may_write(&f, 0x06, 2));
        // The rest of the header: identity, BARs, interrupt line.
        for off in [0x00, 0x08, 0x0c, 0x10, 0x14, 0x24, 0x30, 0x3c] {
            assert!(!driver_may_write(&f, off, 4), "{off:#x}");
        }
        assert!(!driver_may_write(&f, 0x3c, 1));
        // A vendor capability is the driver's; MSI and MSI-X are not, to
        // their last byte.
        assert!(driver_may_write(&f, 0x40, 4));
        assert!(driver_may_write(&f, 0x4c, 4));
        assert!(!driver_may_write(&f, 0x50, 4));
        assert!(!driver_may_write(&f, 0x64, 4));
        assert!(driver_may_write(&f, 0x68, 4));
        assert!(!driver_may_write(&f, 0x98, 2));
        assert!(!driver_may_write(&f, 0xa0, 4));
        assert!(driver_may_write(&f, 0xa4, 4));
        // Misaligned, odd widths, past the end.
        assert!(!driver_may_write(&f, 0x41, 2));
        assert!(!driver_may_write(&f, 0x40, 3));
        assert!(!driver_may_write(&f, 0x40, 8));
        assert!(!driver_may_write(&f, 0xfe, 4));
        assert!(!driver_may_write(&f, 0x100, 1));
        assert!(!driver_may_write(&f, u64::MAX - 1, 2));
        assert!(valid_access(0xfc, 4) && !valid_access(0xfd, 1 << 40));
    }
}
