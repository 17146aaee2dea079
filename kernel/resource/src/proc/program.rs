//! Program (Tender's プログラム): what a process runs, independent of any
//! process: the entry point and the loadable segments of a static ELF64
//! executable, or of an OFF2F one (`off2f.rs`), checked once so that
//! loading can trust them.

use abi::Error;
use alloc::vec::Vec;
use kcore::vm::USER_TOP;
use object::Endianness;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub filesz: u64,
    pub offset: u64,
    pub writable: bool,
    pub executable: bool,
    /// The bytes are in the program's NVM text file (an OFF2F program's
    /// text), `offset` being where the byte at `vaddr` is in that file;
    /// otherwise in the image.
    pub in_nvm: bool,
    /// The bytes are in the file the program's pager serves (an OFF2F
    /// program's data, read at faults), `offset` being where in it.
    pub paged: bool,
}

pub struct Program {
    /// The plate it was read from: its content identity (the pool's key).
    pub plate: restable::ResId,
    pub name: alloc::string::String,
    pub image: kcore::bytes::Bytes,
    pub entry: u64,
    pub segments: Vec<Segment>,
    /// Where the program headers are in memory, and how many (a Linux
    /// program learns them from its auxiliary vector); 0 if no segment
    /// loads them.
    pub phdr: u64,
    pub phnum: u64,
    /// An OFF2F program's text file in the NVM, held while the program is.
    pub nvm: Option<crate::nvm::Text>,
    /// The pager of a program whose plate holds only file 1's header
    /// page, and the file it names, with the pages read of it so far.
    pub pager: Option<alloc::sync::Arc<kcore::vm::region::PagedFile>>,
}

impl Program {
    /// Text (read-only), data and BSS sizes in bytes.
    pub fn sizes(&self) -> (u64, u64, u64) {
        let mut t = (0, 0, 0);
        for s in &self.segments {
            if s.writable {
                t.1 += s.filesz;
                t.2 += s.memsz - s.filesz;
            } else {
                t.0 += s.memsz;
            }
        }
        t
    }
}

/// Where a position-independent program (ET_DYN) linked at address 0 is
/// loaded: Linux's place for one, two thirds up its 47-bit user half.
pub const PIE_BASE: u64 = 0x5555_5555_4000;

/// Parses a static x86_64 executable: fixed-address (ET_EXEC), or
/// position-independent (ET_DYN without an interpreter: a static PIE,
/// which relocates itself) moved to `PIE_BASE`. Anything else (dynamic,
/// another machine, overlapping or out-of-range segments) is `BadProgram`.
pub fn parse(
    bytes: kcore::bytes::Bytes,
    plate: restable::ResId,
    name: alloc::string::String,
    pager: Option<(abi::PagerSource, kcore::mm::quota::Charge)>,
) -> Result<Program, Error> {
    if bytes.starts_with(b"OFF") {
        return super::off2f::parse(bytes, plate, name, pager);
    }
    if pager.is_some() {
        // Only OFF2F's data is read at faults.
        return Err(Error::BadProgram);
    }
    let image: &[u8] = &bytes;
    let bad = Error::BadProgram;
    let header = elf::FileHeader64::<Endianness>::parse(image).map_err(|_| bad)?;
    let endian = header.endian().map_err(|_| bad)?;
    let pie = header.e_type(endian) == elf::ET_DYN;
    if header.e_machine(endian) != elf::EM_X86_64 || !(header.e_type(endian) == elf::ET_EXEC || pie) {
        return Err(bad);
    }
    let headers = header.program_headers(endian, image).map_err(|_| bad)?;
    let lowest = headers
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| ph.p_vaddr(endian))
        .min()
        .unwrap_or(0);
    let bias = if pie && lowest < PIE_BASE { PIE_BASE } else { 0 };
    let mut segments = Vec::new();
    for ph in headers {
        match ph.p_type(endian) {
            elf::PT_LOAD => {}
            elf::PT_INTERP => return Err(bad),
            elf::PT_DYNAMIC if !pie => return Err(bad),
            _ => continue,
        }
        let s = Segment {
            vaddr: ph.p_vaddr(endian).checked_add(bias).ok_or(bad)?,
            memsz: ph.p_memsz(endian),
            filesz: ph.p_filesz(endian),
            offset: ph.p_offset(endian),
            writable: ph.p_flags(endian).0 & elf::PF_W.0 != 0,
            executable: ph.p_flags(endian).0 & elf::PF_X.0 != 0,
            in_nvm: false,
            paged: false,
        };
        let end = s.vaddr.checked_add(s.memsz).ok_or(bad)?;
        let file_end = s.offset.checked_add(s.filesz).ok_or(bad)?;
        if s.memsz == 0 {
            continue;
        }
        if s.filesz > s.memsz || file_end > image.len() as u64 || s.vaddr < 0x1000 || end > USER_TOP {
            return Err(bad);
        }
        if s.vaddr % 4096 != s.offset % 4096 {
            return Err(bad);
        }
        segments.try_reserve(1).map_err(|_| Error::NoMemory)?;
        segments.push(s);
    }
    segments.sort_unstable_by_key(|s| s.vaddr);
    let page = |x: u64| x & !0xfff;
    for w in segments.windows(2) {
        if page(w[0].vaddr + w[0].memsz + 0xfff) > page(w[1].vaddr) {
            return Err(bad);
        }
    }
    let entry = header.e_entry(endian).wrapping_add(bias);
    if segments.is_empty()
        || !segments
            .iter()
            .any(|s| s.executable && entry >= s.vaddr && entry < s.vaddr + s.memsz)
    {
        return Err(bad);
    }
    let phoff = header.e_phoff(endian);
    let phdr = segments
        .iter()
        .find(|s| phoff >= s.offset && phoff < s.offset + s.filesz)
        .map_or(0, |s| s.vaddr + (phoff - s.offset));
    Ok(Program {
        plate,
        name,
        image: bytes.clone(),
        entry,
        segments,
        phdr,
        phnum: header.e_phnum(endian) as u64,
        nvm: None,
        pager: None,
    })
}
