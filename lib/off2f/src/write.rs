//! The writer: a program's parts, as a converter gathered them, laid out as
//! the two OFF2F files. Its output is parsed back before it is returned, so
//! nothing it writes can be refused by the parser.

use crate::error::Error;
use crate::header::Header;
use crate::layout::*;
use alloc::string::String;
use alloc::vec::Vec;

/// One PT_LOAD segment with its window: the whole pages of the ELF file
/// that hold its bytes, as the loader would map them (see `layout.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSegment {
    pub vaddr: u64,
    pub memsz: u64,
    pub filesz: u64,
    pub elf_offset: u64,
    pub align: u64,
    pub flags: u32,
    /// `page_ceil(vaddr % 4096 + filesz)` bytes; empty if `filesz` is 0.
    pub window: Vec<u8>,
}

/// Everything OFF2F keeps of an ELF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub kind: Kind,
    pub entry: u64,
    pub phdr_vaddr: Option<u64>,
    pub tls: Option<Tls>,
    pub dynamic_vaddr: Option<u64>,
    pub exec_stack: bool,
    pub text_relocations: bool,
    /// The ELF header (64 bytes) and program header table, as in the file.
    pub elf_header: Vec<u8>,
    pub program_headers: Vec<u8>,
    /// PT_INTERP's path without its NUL.
    pub interp: Option<Vec<u8>>,
    /// Name of the text file in the NVM store.
    pub text_name: String,
    pub elf_size: u64,
    /// In address order.
    pub segments: Vec<LoadSegment>,
    /// The ELF's bytes outside every segment, by offset: (offset, bytes).
    pub extents: Vec<(u64, Vec<u8>)>,
}

/// The two files of an OFF2F program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// Header, data and relocation information (disk).
    pub file1: Vec<u8>,
    /// Text (NVM).
    pub text: Vec<u8>,
}

pub fn write(p: &Program) -> Result<Files, Error> {
    if p.segments.len() > MAX_SEGMENTS {
        return Err(Error::Header("too many segments"));
    }
    let mut text = Vec::new();
    let mut data = Vec::new();
    let mut table = Vec::with_capacity(p.segments.len() * SEGMENT_SIZE);
    for (i, s) in p.segments.iter().enumerate() {
        let skew = s.vaddr % PAGE;
        let expected = if s.filesz == 0 {
            0
        } else {
            page_ceil(skew.saturating_add(s.filesz)).unwrap_or(0)
        };
        if s.window.len() as u64 != expected {
            return Err(Error::Segment {
                index: i,
                what: "window length",
            });
        }
        let (place, offset) = match (s.filesz, s.flags & PF_W != 0) {
            (0, _) => (Place::Zero, 0),
            (_, false) => (Place::Text, text.len() as u64 + skew),
            (_, true) => (Place::Data, PAGE + data.len() as u64 + skew),
        };
        match place {
            Place::Text => text.extend_from_slice(&s.window),
            Place::Data => data.extend_from_slice(&s.window),
            Place::Zero => {}
        }
        let seg = Segment {
            vaddr: s.vaddr,
            memsz: s.memsz,
            filesz: s.filesz,
            elf_offset: s.elf_offset,
            align: s.align,
            offset,
            flags: s.flags,
            place,
        };
        let mut b = [0u8; SEGMENT_SIZE];
        seg.encode(&mut b);
        table.extend_from_slice(&b);
    }
    let mut reloc = Vec::new();
    for (offset, bytes) in &p.extents {
        let mut b = [0u8; EXTENT_SIZE];
        Extent {
            elf_offset: *offset,
            len: bytes.len() as u64,
        }
        .encode(&mut b);
        table.extend_from_slice(&b);
        reloc.extend_from_slice(bytes);
    }
    let interp = p.interp.as_deref().unwrap_or(&[]);
    let header_len =
        FIXED_SIZE + table.len() + p.elf_header.len() + p.program_headers.len() + interp.len() + p.text_name.len();
    if header_len > HEADER_PAGE {
        return Err(Error::Header("the header does not fit in 4 KiB"));
    }

    let mut file1 = alloc::vec![0u8; HEADER_PAGE];
    file1.extend_from_slice(&data);
    file1.extend_from_slice(&reloc);
    let h = &mut file1[..HEADER_PAGE];
    h[..3].copy_from_slice(&MAGIC);
    h[field::VERSION] = VERSION;
    put_u16(h, field::HEADER_LEN, header_len as u16);
    put_u16(h, field::MACHINE, EM_X86_64);
    h[field::KIND] = p.kind as u8;
    h[field::ELF_TYPE] = p.kind.elf_type();
    let mut flags = 0;
    for (on, flag) in [
        (p.tls.is_some(), FLAG_TLS),
        (p.text_relocations, FLAG_TEXTREL),
        (p.exec_stack, FLAG_EXEC_STACK),
        (p.phdr_vaddr.is_some(), FLAG_PHDR_LOADED),
        (p.dynamic_vaddr.is_some(), FLAG_DYNAMIC),
    ] {
        if on {
            flags |= flag;
        }
    }
    put_u16(h, field::FLAGS, flags);
    put_u16(h, field::NSEGMENTS, p.segments.len() as u16);
    put_u16(h, field::NEXTENTS, p.extents.len() as u16);
    put_u16(h, field::PHNUM, (p.program_headers.len() / PHDR_SIZE) as u16);
    put_u16(h, field::INTERP_LEN, interp.len() as u16);
    put_u16(h, field::NAME_LEN, p.text_name.len() as u16);
    put_u64(h, field::ENTRY, p.entry);
    put_u64(h, field::PHDR_VADDR, p.phdr_vaddr.unwrap_or(0));
    let tls = p.tls.unwrap_or(Tls {
        vaddr: 0,
        filesz: 0,
        memsz: 0,
        align: 0,
    });
    put_u64(h, field::TLS_VADDR, tls.vaddr);
    put_u64(h, field::TLS_FILESZ, tls.filesz);
    put_u64(h, field::TLS_MEMSZ, tls.memsz);
    put_u64(h, field::TLS_ALIGN, tls.align);
    put_u64(h, field::DYNAMIC_VADDR, p.dynamic_vaddr.unwrap_or(0));
    put_u64(h, field::TEXT_SIZE, text.len() as u64);
    put_u64(h, field::TEXT_CRC, CRC64.checksum(&text));
    put_u64(h, field::DATA_OFFSET, PAGE);
    put_u64(h, field::DATA_SIZE, data.len() as u64);
    put_u64(h, field::RELOC_OFFSET, PAGE + data.len() as u64);
    put_u64(h, field::RELOC_SIZE, reloc.len() as u64);
    put_u64(h, field::FILE_SIZE, (HEADER_PAGE + data.len() + reloc.len()) as u64);
    put_u64(h, field::ELF_SIZE, p.elf_size);
    let mut at = FIXED_SIZE;
    for part in [
        &table[..],
        &p.elf_header,
        &p.program_headers,
        interp,
        p.text_name.as_bytes(),
    ] {
        h[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    let body_crc = CRC64.checksum(&file1[HEADER_PAGE..]);
    let h = &mut file1[..HEADER_PAGE];
    put_u64(h, field::BODY_CRC, body_crc);
    let header_crc = CRC64.checksum(&h[..header_len]);
    put_u64(h, field::HEADER_CRC, header_crc);

    let header = Header::parse(&file1)?;
    header.check_files(&file1, &text)?;
    Ok(Files { file1, text })
}
