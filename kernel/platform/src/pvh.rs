//! The PVH boot protocol's `hvm_start_info` (xen/include/public/arch-x86/hvm/start_info.h),
//! which QEMU fills when it boots an ELF kernel through its PVH note.

use crate::memmap::{MemoryMap, RegionKind};
use crate::{ParseError, PhysMemory};

pub const START_INFO_MAGIC: u32 = 0x336e_c578;

/// What Tessera uses of the start info.
#[derive(Debug)]
pub struct StartInfo {
    pub cmdline_paddr: u64,
    pub rsdp_paddr: u64,
    pub memmap: MemoryMap,
    /// First module (the initial archive, when QEMU is given `-initrd`).
    pub module: Option<(u64, u64)>,
}

pub fn parse(mem: &impl PhysMemory, addr: u64) -> Result<StartInfo, ParseError> {
    let magic = mem.read_u32(addr).ok_or(ParseError::Unreadable(addr))?;
    if magic != START_INFO_MAGIC {
        return Err(ParseError::BadSignature(addr));
    }
    let version = mem.read_u32(addr + 4).ok_or(ParseError::Unreadable(addr))?;
    let nr_modules = mem.read_u32(addr + 12).ok_or(ParseError::Unreadable(addr))?;
    let modlist = mem.read_u64(addr + 16).ok_or(ParseError::Unreadable(addr))?;
    let cmdline_paddr = mem.read_u64(addr + 24).ok_or(ParseError::Unreadable(addr))?;
    let rsdp_paddr = mem.read_u64(addr + 32).ok_or(ParseError::Unreadable(addr))?;
    let mut memmap = MemoryMap::new();
    if version >= 1 {
        let map = mem.read_u64(addr + 40).ok_or(ParseError::Unreadable(addr))?;
        let entries = mem.read_u32(addr + 48).ok_or(ParseError::Unreadable(addr))?;
        if entries as usize > crate::memmap::MAX_REGIONS {
            return Err(ParseError::BadLength(addr + 48));
        }
        for i in 0..entries as u64 {
            let e = map + i * 24;
            let base = mem.read_u64(e).ok_or(ParseError::Unreadable(e))?;
            let size = mem.read_u64(e + 8).ok_or(ParseError::Unreadable(e))?;
            let kind = mem.read_u32(e + 16).ok_or(ParseError::Unreadable(e))?;
            memmap.add(base, size, RegionKind::from_e820(kind));
        }
    }
    let module = if nr_modules > 0 && modlist != 0 {
        let paddr = mem.read_u64(modlist).ok_or(ParseError::Unreadable(modlist))?;
        let size = mem.read_u64(modlist + 8).ok_or(ParseError::Unreadable(modlist))?;
        Some((paddr, size))
    } else {
        None
    };
    Ok(StartInfo {
        cmdline_paddr,
        rsdp_paddr,
        memmap,
        module,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmem::TestMem;

    fn start_info(mem: &mut TestMem, entries: &[(u64, u64, u32)]) {
        let si = 0x1000;
        mem.put(si, &START_INFO_MAGIC.to_le_bytes());
        mem.put(si + 4, &1u32.to_le_bytes());
        mem.put(si + 24, &0x2000u64.to_le_bytes());
        mem.put(si + 32, &0xf5000u64.to_le_bytes());
        mem.put(si + 40, &0x3000u64.to_le_bytes());
        mem.put(si + 48, &(entries.len() as u32).to_le_bytes());
        for (i, (b, s, k)) in entries.iter().enumerate() {
            let e = 0x3000 + 24 * i as u64;
            mem.put(e, &b.to_le_bytes());
            mem.put(e + 8, &s.to_le_bytes());
            mem.put(e + 16, &k.to_le_bytes());
        }
    }

    #[test]
    fn parses_memory_map_and_pointers() {
        let mut mem = TestMem::new(0, 0x10000);
        start_info(
            &mut mem,
            &[(0, 0x9fc00, 1), (0xf0000, 0x10000, 2), (0x100000, 0x1ff0_0000, 1)],
        );
        let si = parse(&mem, 0x1000).unwrap();
        assert_eq!(si.cmdline_paddr, 0x2000);
        assert_eq!(si.rsdp_paddr, 0xf5000);
        assert_eq!(si.memmap.usable_bytes(), 0x9f000 + 0x1ff0_0000);
        assert!(si.module.is_none());
    }

    #[test]
    fn rejects_bad_magic_and_unreadable_tables() {
        let mut mem = TestMem::new(0, 0x10000);
        assert_eq!(parse(&mem, 0x1000).unwrap_err(), ParseError::BadSignature(0x1000));
        assert!(matches!(parse(&mem, 0x20000), Err(ParseError::Unreadable(_))));
        start_info(&mut mem, &[(0, 0x1000, 1)]);
        mem.put(0x1000 + 40, &0xdead_0000u64.to_le_bytes());
        assert!(matches!(parse(&mem, 0x1000), Err(ParseError::Unreadable(_))));
        mem.put(0x1000 + 48, &100_000u32.to_le_bytes());
        assert!(matches!(parse(&mem, 0x1000), Err(ParseError::BadLength(_))));
    }
}
