//! The bytes of an OFF2F header page: constants, and encoding of the fixed
//! part and of its tables (little-endian, fixed offsets).
//!
//! ```text
//! file 1 (disk)                        file 2 (text, NVM store)
//! 0      header page (4 KiB):          0  windows of the read-only
//!        fixed part, segment table,       segments, each whole pages,
//!        extent table, ELF header,        in segment order
//!        program headers, interpreter,
//!        text file name, zeros
//! 4096   data area: windows of the
//!        writable segments, whole pages
//! ...    relocation information: the
//!        ELF's bytes outside every
//!        segment (section headers,
//!        symbol and string tables)
//! ```
//!
//! A segment's window is the run of whole pages that holds its file bytes,
//! laid out as in the ELF file: the byte at address `vaddr + i` is at
//! `offset + i`, and `offset ≡ vaddr (mod 4096)`, so that page k of the
//! segment's address range is page k of its window.

use crc::{CRC_64_XZ, Crc, Table};

pub const PAGE: u64 = 4096;
/// The header page: all that exec reads.
pub const HEADER_PAGE: usize = 4096;
/// The paper's magic number, then the format version.
pub const MAGIC: [u8; 3] = *b"OFF";
pub const VERSION: u8 = 1;
pub const FIXED_SIZE: usize = 168;
pub const SEGMENT_SIZE: usize = 56;
pub const EXTENT_SIZE: usize = 16;
pub const EHDR_SIZE: usize = 64;
pub const PHDR_SIZE: usize = 56;
pub const MAX_SEGMENTS: usize = 16;
/// User space of x86_64 with 4-level paging: addresses below 2^47.
pub const USER_END: u64 = 0x0000_8000_0000_0000;
pub const EM_X86_64: u16 = 62;
pub const ET_EXEC: u8 = 2;
pub const ET_DYN: u8 = 3;
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

pub const FLAG_TLS: u16 = 1 << 0;
pub const FLAG_TEXTREL: u16 = 1 << 1;
pub const FLAG_EXEC_STACK: u16 = 1 << 2;
pub const FLAG_PHDR_LOADED: u16 = 1 << 3;
pub const FLAG_DYNAMIC: u16 = 1 << 4;
pub const FLAGS_KNOWN: u16 = (1 << 5) - 1;

/// CRC-64/XZ, as the NVM store keeps for each file: the text checksum in
/// the header can be compared with the store's without reading the text.
pub const CRC64: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_XZ);

pub fn page_floor(x: u64) -> u64 {
    x & !(PAGE - 1)
}

/// None on overflow.
pub fn page_ceil(x: u64) -> Option<u64> {
    Some(x.checked_add(PAGE - 1)? & !(PAGE - 1))
}

pub fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

pub fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Offsets of the fixed part's fields.
pub mod field {
    pub const VERSION: usize = 3;
    pub const HEADER_LEN: usize = 4;
    pub const MACHINE: usize = 6;
    pub const KIND: usize = 8;
    pub const ELF_TYPE: usize = 9;
    pub const FLAGS: usize = 10;
    pub const NSEGMENTS: usize = 12;
    pub const NEXTENTS: usize = 14;
    pub const PHNUM: usize = 16;
    pub const INTERP_LEN: usize = 18;
    pub const NAME_LEN: usize = 20;
    pub const RESERVED16: usize = 22;
    pub const ENTRY: usize = 24;
    pub const PHDR_VADDR: usize = 32;
    pub const TLS_VADDR: usize = 40;
    pub const TLS_FILESZ: usize = 48;
    pub const TLS_MEMSZ: usize = 56;
    pub const TLS_ALIGN: usize = 64;
    pub const DYNAMIC_VADDR: usize = 72;
    pub const TEXT_SIZE: usize = 80;
    pub const TEXT_CRC: usize = 88;
    pub const FILE_SIZE: usize = 96;
    pub const DATA_OFFSET: usize = 104;
    pub const DATA_SIZE: usize = 112;
    pub const RELOC_OFFSET: usize = 120;
    pub const RELOC_SIZE: usize = 128;
    pub const ELF_SIZE: usize = 136;
    pub const BODY_CRC: usize = 144;
    pub const RESERVED64: usize = 152;
    pub const HEADER_CRC: usize = 160;
}

/// What kind of ELF file the OFF2F file was made from. The paper's tables
/// count library text apart from program text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ET_EXEC, no interpreter.
    StaticExec = 1,
    /// ET_EXEC with an interpreter (ld.so).
    DynamicExec = 2,
    /// ET_DYN flagged PIE, no interpreter: relocates itself.
    StaticPie = 3,
    /// ET_DYN flagged PIE with an interpreter.
    DynamicPie = 4,
    /// ET_DYN not flagged PIE: a shared library (ld.so itself included).
    SharedLibrary = 5,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::StaticExec,
            2 => Kind::DynamicExec,
            3 => Kind::StaticPie,
            4 => Kind::DynamicPie,
            5 => Kind::SharedLibrary,
            _ => return None,
        })
    }

    pub fn elf_type(self) -> u8 {
        match self {
            Kind::StaticExec | Kind::DynamicExec => ET_EXEC,
            _ => ET_DYN,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::StaticExec => "static executable",
            Kind::DynamicExec => "dynamically linked executable",
            Kind::StaticPie => "static PIE executable",
            Kind::DynamicPie => "dynamically linked PIE executable",
            Kind::SharedLibrary => "shared library",
        }
    }

    /// Whether its text counts as library text.
    pub fn is_library(self) -> bool {
        self == Kind::SharedLibrary
    }
}

/// Where a segment's file bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Read-only: in the text file (NVM), window starting at this offset.
    Text,
    /// Writable: in file 1's data area.
    Data,
    /// No file bytes (all zero-fill).
    Zero,
}

/// One PT_LOAD segment as OFF2F keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub filesz: u64,
    /// p_offset in the ELF file it came from.
    pub elf_offset: u64,
    pub align: u64,
    /// Offset of the byte at `vaddr` in the file `place` names (0 for Zero).
    pub offset: u64,
    /// PF_R | PF_W | PF_X.
    pub flags: u32,
    pub place: Place,
}

impl Segment {
    pub fn writable(&self) -> bool {
        self.flags & PF_W != 0
    }

    pub fn executable(&self) -> bool {
        self.flags & PF_X != 0
    }

    /// The window: first byte (page-aligned) and length in whole pages.
    pub fn window(&self) -> (u64, u64) {
        let skew = self.vaddr % PAGE;
        let len = page_ceil(skew.saturating_add(self.filesz)).unwrap_or(page_floor(u64::MAX));
        (self.offset.saturating_sub(skew), len)
    }

    pub fn encode(&self, b: &mut [u8]) {
        put_u64(b, 0, self.vaddr);
        put_u64(b, 8, self.memsz);
        put_u64(b, 16, self.filesz);
        put_u64(b, 24, self.elf_offset);
        put_u64(b, 32, self.align);
        put_u64(b, 40, self.offset);
        put_u32(b, 48, self.flags);
        put_u32(
            b,
            52,
            match self.place {
                Place::Text => 1,
                Place::Data => 2,
                Place::Zero => 3,
            },
        );
    }

    /// None only for an unknown placement: everything else is the parser's.
    pub fn decode(b: &[u8]) -> Option<Segment> {
        Some(Segment {
            vaddr: u64_at(b, 0),
            memsz: u64_at(b, 8),
            filesz: u64_at(b, 16),
            elf_offset: u64_at(b, 24),
            align: u64_at(b, 32),
            offset: u64_at(b, 40),
            flags: u32_at(b, 48),
            place: match u32_at(b, 52) {
                1 => Place::Text,
                2 => Place::Data,
                3 => Place::Zero,
                _ => return None,
            },
        })
    }
}

/// A run of the ELF file outside every segment, kept in the relocation
/// information area (in extent order, back to back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub elf_offset: u64,
    pub len: u64,
}

impl Extent {
    pub fn encode(&self, b: &mut [u8]) {
        put_u64(b, 0, self.elf_offset);
        put_u64(b, 8, self.len);
    }

    pub fn decode(b: &[u8]) -> Extent {
        Extent {
            elf_offset: u64_at(b, 0),
            len: u64_at(b, 8),
        }
    }
}

/// The TLS template (PT_TLS), which libc's start-up code reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tls {
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}
