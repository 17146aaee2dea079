//! The parser: an OFF2F header page, checked through and through before
//! anything is trusted, then read by exec (what to build) and by the page
//! fault handler (where a page comes from: fig. 3 steps X and Y).
//!
//! Every check is on values from the input: no arithmetic can overflow, no
//! index can fall outside the bytes given, whatever they are.

use crate::error::Error;
use crate::layout::*;

/// A checked OFF2F header. `bytes` given to `parse` may be the header page
/// alone (what exec reads) or the whole of file 1.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    page: &'a [u8],
    kind: Kind,
    nsegments: usize,
    nextents: usize,
    phnum: usize,
}

/// Where the content of a page of a segment comes from (fault path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageSource {
    /// Page `page` of the text file: map the NVM page itself, read-only
    /// (step Y).
    Text { page: u64 },
    /// The page at `offset` of file 1: read it from disk into a new frame.
    Data { offset: u64 },
    /// No file bytes: a zeroed frame.
    Zero,
}

/// Where a byte of the original ELF file is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Text(u64),
    File1(u64),
}

fn seg_err(index: usize, what: &'static str) -> Error {
    Error::Segment { index, what }
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const PT_PHDR: u32 = 6;
const PT_TLS: u32 = 7;
const PT_GNU_STACK: u32 = 0x6474_e551;

/// The fields of one Elf64_Phdr.
struct Phdr {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

fn phdr(b: &[u8]) -> Phdr {
    Phdr {
        kind: u32_at(b, 0),
        flags: u32_at(b, 4),
        offset: u64_at(b, 8),
        vaddr: u64_at(b, 16),
        filesz: u64_at(b, 32),
        memsz: u64_at(b, 40),
        align: u64_at(b, 48),
    }
}

fn aligned(align: u64) -> bool {
    align <= 1 || align.is_power_of_two()
}

impl<'a> Header<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Header<'a>, Error> {
        if bytes.len() < 4 || bytes[..3] != MAGIC {
            return Err(Error::NotOff2f);
        }
        if bytes[field::VERSION] != VERSION {
            return Err(Error::UnsupportedVersion(bytes[field::VERSION]));
        }
        let have = bytes.len() as u64;
        if bytes.len() < FIXED_SIZE {
            return Err(Error::Truncated {
                need: FIXED_SIZE as u64,
                have,
            });
        }
        let len = u16_at(bytes, field::HEADER_LEN) as usize;
        if !(FIXED_SIZE..=HEADER_PAGE).contains(&len) {
            return Err(Error::Header("header length"));
        }
        if bytes.len() < len {
            return Err(Error::Truncated { need: len as u64, have });
        }
        let page = &bytes[..len];
        if bytes[len..bytes.len().min(HEADER_PAGE)].iter().any(|&b| b != 0) {
            return Err(Error::Header("bytes after the header in its page are not zero"));
        }
        let mut digest = CRC64.digest();
        digest.update(&page[..field::HEADER_CRC]);
        digest.update(&[0; 8]);
        digest.update(&page[field::HEADER_CRC + 8..]);
        if digest.finalize() != u64_at(page, field::HEADER_CRC) {
            return Err(Error::Checksum("the header"));
        }
        let kind = Kind::from_u8(page[field::KIND]).ok_or(Error::Header("kind"))?;
        let h = Header {
            page,
            kind,
            nsegments: u16_at(page, field::NSEGMENTS) as usize,
            nextents: u16_at(page, field::NEXTENTS) as usize,
            phnum: u16_at(page, field::PHNUM) as usize,
        };
        h.check_fields()?;
        h.check_segments()?;
        h.check_elf_ranges()?;
        h.check_elf_headers()?;
        h.check_addresses()?;
        Ok(h)
    }

    fn u64(&self, at: usize) -> u64 {
        u64_at(self.page, at)
    }

    fn u16(&self, at: usize) -> u16 {
        u16_at(self.page, at)
    }

    fn seg_table(&self) -> usize {
        FIXED_SIZE
    }
    fn ext_table(&self) -> usize {
        self.seg_table() + self.nsegments * SEGMENT_SIZE
    }
    fn ehdr_at(&self) -> usize {
        self.ext_table() + self.nextents * EXTENT_SIZE
    }
    fn phdrs_at(&self) -> usize {
        self.ehdr_at() + EHDR_SIZE
    }
    fn interp_at(&self) -> usize {
        self.phdrs_at() + self.phnum * PHDR_SIZE
    }
    fn name_at(&self) -> usize {
        self.interp_at() + self.u16(field::INTERP_LEN) as usize
    }

    fn check_fields(&self) -> Result<(), Error> {
        let bad = |what| Err(Error::Header(what));
        // The tables must fill the header exactly (lengths are u16, counts
        // bounded, so the sum cannot overflow).
        if self.nsegments == 0 || self.nsegments > MAX_SEGMENTS {
            return bad("segment count");
        }
        if self.nextents > MAX_SEGMENTS + 1 {
            return bad("extent count");
        }
        if self.name_at() + self.u16(field::NAME_LEN) as usize != self.page.len() {
            return bad("table sizes do not add up to the header length");
        }
        if self.u16(field::MACHINE) != EM_X86_64 {
            return bad("machine (x86_64 only)");
        }
        if self.page[field::ELF_TYPE] != self.kind.elf_type() {
            return bad("ELF type does not match the kind");
        }
        let flags = self.u16(field::FLAGS);
        if flags & !FLAGS_KNOWN != 0 || self.u16(field::RESERVED16) != 0 || self.u64(field::RESERVED64) != 0 {
            return bad("unknown flags or reserved fields set");
        }
        let interp = self.u16(field::INTERP_LEN) > 0;
        match self.kind {
            Kind::StaticExec | Kind::StaticPie if interp => return bad("a static program with an interpreter"),
            Kind::DynamicExec | Kind::DynamicPie if !interp => return bad("a dynamic program without interpreter"),
            _ => {}
        }
        if self.interp().is_some_and(|i| i.contains(&0)) {
            return bad("interpreter path contains NUL");
        }
        if !core::str::from_utf8(self.name_bytes()).is_ok_and(nvmstore::valid_name) {
            return bad("text file name");
        }
        // File 1: header page, data area, relocation information.
        let data_size = self.u64(field::DATA_SIZE);
        let text_size = self.u64(field::TEXT_SIZE);
        let reloc_offset = self.u64(field::RELOC_OFFSET);
        if self.u64(field::DATA_OFFSET) != PAGE || !data_size.is_multiple_of(PAGE) || !text_size.is_multiple_of(PAGE) {
            return bad("data area or text size not in whole pages");
        }
        if PAGE.checked_add(data_size) != Some(reloc_offset)
            || reloc_offset.checked_add(self.u64(field::RELOC_SIZE)) != Some(self.u64(field::FILE_SIZE))
        {
            return bad("file 1 layout");
        }
        Ok(())
    }

    /// Each segment well-formed, in address order, on pages of its own; the
    /// windows tile the text file and the data area in segment order.
    fn check_segments(&self) -> Result<(), Error> {
        let mut text_end = 0u64;
        let mut data_end = PAGE;
        let mut prev_end = 0u64;
        for (i, s) in self.segment_table().enumerate() {
            let s = s.ok_or(seg_err(i, "placement"))?;
            let e = |what| Err(seg_err(i, what));
            if s.memsz == 0 || s.filesz > s.memsz {
                return e("sizes");
            }
            if s.flags & !(PF_R | PF_W | PF_X) != 0 || !aligned(s.align) {
                return e("flags or alignment");
            }
            let Some(end) = s.vaddr.checked_add(s.memsz).filter(|&end| end <= USER_END) else {
                return e("addresses outside user space");
            };
            if self.kind.elf_type() == ET_EXEC && s.vaddr < PAGE {
                return e("address in the first page");
            }
            if s.vaddr % PAGE != s.elf_offset % PAGE || (s.vaddr % PAGE != s.offset % PAGE && s.place != Place::Zero) {
                return e("file offset and address differ modulo the page size");
            }
            if i > 0 && page_floor(s.vaddr) < prev_end {
                return e("overlaps or shares a page with the segment before");
            }
            prev_end = page_ceil(end).ok_or(seg_err(i, "addresses outside user space"))?;
            let expected = match (s.filesz, s.writable()) {
                (0, _) => Place::Zero,
                (_, false) => Place::Text,
                (_, true) => Place::Data,
            };
            if s.place != expected {
                return e("placement does not match its flags (read-only text on NVM, data on disk)");
            }
            let cursor = match s.place {
                Place::Text => &mut text_end,
                Place::Data => &mut data_end,
                Place::Zero if s.offset == 0 => continue,
                Place::Zero => return e("zero-fill segment with an offset"),
            };
            let (start, len) = s.window();
            if s.offset < s.vaddr % PAGE || start != *cursor {
                return e("window not where the previous one ended");
            }
            *cursor = start.checked_add(len).ok_or(seg_err(i, "window"))?;
        }
        if text_end != self.text_size() || data_end != self.u64(field::RELOC_OFFSET) {
            return Err(Error::Header("windows do not fill the text file and the data area"));
        }
        Ok(())
    }

    /// Segments' file bytes and the extents tile the ELF file exactly, and
    /// the extents fill the relocation information area.
    fn check_elf_ranges(&self) -> Result<(), Error> {
        let mut ranges = [(0u64, 0u64); 2 * MAX_SEGMENTS + 1];
        let mut n = 0;
        let mut reloc = 0u64;
        let mut prev_extent_end = 0;
        for x in self.extents() {
            if x.len == 0 || x.elf_offset < prev_extent_end {
                return Err(Error::Header("extents empty or out of order"));
            }
            prev_extent_end = x.elf_offset.checked_add(x.len).ok_or(Error::Header("extent"))?;
            reloc = reloc.checked_add(x.len).ok_or(Error::Header("extent"))?;
            ranges[n] = (x.elf_offset, x.len);
            n += 1;
        }
        if reloc != self.u64(field::RELOC_SIZE) {
            return Err(Error::Header("extents do not fill the relocation information"));
        }
        for s in self.segments().filter(|s| s.filesz > 0) {
            ranges[n] = (s.elf_offset, s.filesz);
            n += 1;
        }
        let ranges = &mut ranges[..n];
        ranges.sort_unstable();
        let mut at = 0u64;
        for &(start, len) in ranges.iter() {
            if start != at {
                return Err(Error::Header("segments and extents do not tile the ELF file"));
            }
            at = start.checked_add(len).ok_or(Error::Header("ELF range"))?;
        }
        if at != self.elf_size() {
            return Err(Error::Header("segments and extents do not tile the ELF file"));
        }
        Ok(())
    }

    /// The copies of the ELF header and program headers say what the
    /// fixed part and the segment table say.
    fn check_elf_headers(&self) -> Result<(), Error> {
        let bad = |what| Err(Error::Header(what));
        let eh = self.elf_header();
        if eh[..7] != [0x7f, b'E', b'L', b'F', 2, 1, 1]
            || u16_at(eh, 16) != self.kind.elf_type() as u16
            || u16_at(eh, 18) != EM_X86_64
            || u32_at(eh, 20) != 1
            || u64_at(eh, 24) != self.entry()
            || u16_at(eh, 52) != EHDR_SIZE as u16
            || u16_at(eh, 54) != PHDR_SIZE as u16
            || u16_at(eh, 56) as usize != self.phnum
        {
            return bad("ELF header copy does not match");
        }
        let flags = self.u16(field::FLAGS);
        let mut loads = self.segments();
        let (mut interp, mut tls, mut dynamic, mut stack, mut phdr_seen) = (false, false, false, false, false);
        for raw in self.program_headers().chunks_exact(PHDR_SIZE) {
            let p = phdr(raw);
            match p.kind {
                PT_LOAD if p.memsz == 0 => {}
                PT_LOAD => {
                    let Some(s) = loads.next() else {
                        return bad("more PT_LOAD than segments");
                    };
                    if (s.vaddr, s.memsz, s.filesz, s.elf_offset, s.align, s.flags)
                        != (p.vaddr, p.memsz, p.filesz, p.offset, p.align, p.flags)
                    {
                        return bad("a PT_LOAD does not match its segment");
                    }
                }
                PT_INTERP => {
                    let len = self.interp().map_or(0, |i| i.len() as u64);
                    if interp || len == 0 || p.filesz != len + 1 {
                        return bad("PT_INTERP does not match the interpreter");
                    }
                    interp = true;
                }
                PT_TLS => {
                    let t = Some(Tls {
                        vaddr: p.vaddr,
                        filesz: p.filesz,
                        memsz: p.memsz,
                        align: p.align,
                    });
                    if tls || self.tls() != t {
                        return bad("PT_TLS does not match");
                    }
                    tls = true;
                }
                PT_DYNAMIC => {
                    if dynamic || self.dynamic_vaddr() != Some(p.vaddr) {
                        return bad("PT_DYNAMIC does not match");
                    }
                    dynamic = true;
                }
                PT_GNU_STACK => {
                    if stack || (p.flags & PF_X != 0) != self.exec_stack() {
                        return bad("PT_GNU_STACK does not match");
                    }
                    stack = true;
                }
                PT_PHDR => {
                    if phdr_seen || self.phdr_vaddr() != Some(p.vaddr) {
                        return bad("PT_PHDR does not match");
                    }
                    phdr_seen = true;
                }
                _ => {}
            }
        }
        if loads.next().is_some()
            || interp != self.interp().is_some()
            || tls != (flags & FLAG_TLS != 0)
            || dynamic != (flags & FLAG_DYNAMIC != 0)
            || (!stack && !self.exec_stack())
        {
            return bad("program headers and header fields disagree");
        }
        Ok(())
    }

    /// Entry, program headers, TLS template and dynamic section lie where
    /// the segments put bytes.
    fn check_addresses(&self) -> Result<(), Error> {
        let bad = |what| Err(Error::Header(what));
        let in_file_part = |vaddr: u64, len: u64| {
            self.segments()
                .any(|s| vaddr >= s.vaddr && vaddr.checked_add(len).is_some_and(|end| end <= s.vaddr + s.filesz))
        };
        let entry = self.entry();
        let entry_ok = self
            .segments()
            .any(|s| s.executable() && entry >= s.vaddr && entry < s.vaddr + s.memsz);
        if !(entry_ok || (self.kind.is_library() && entry == 0)) {
            return bad("entry point outside executable segments");
        }
        let flags = self.u16(field::FLAGS);
        match self.phdr_vaddr() {
            Some(v) if !in_file_part(v, (self.phnum * PHDR_SIZE) as u64) => return bad("program headers not loaded"),
            None if self.u64(field::PHDR_VADDR) != 0 => return bad("program header address without flag"),
            _ => {}
        }
        match self.tls() {
            Some(t) if !aligned(t.align) || t.filesz > t.memsz || !in_file_part(t.vaddr, t.filesz) => {
                return bad("TLS template");
            }
            None if (
                self.u64(field::TLS_VADDR),
                self.u64(field::TLS_FILESZ),
                self.u64(field::TLS_MEMSZ),
            ) != (0, 0, 0)
                || self.u64(field::TLS_ALIGN) != 0 =>
            {
                return bad("TLS fields without flag");
            }
            _ => {}
        }
        if flags & FLAG_DYNAMIC == 0 && self.u64(field::DYNAMIC_VADDR) != 0 {
            return bad("dynamic section address without flag");
        }
        Ok(())
    }

    // --- What exec reads -------------------------------------------------

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Bytes of the header proper (the rest of its 4 KiB page is zero).
    pub fn len(&self) -> usize {
        self.page.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// e_entry, before any load bias (ET_DYN).
    pub fn entry(&self) -> u64 {
        self.u64(field::ENTRY)
    }

    /// Address of the program headers in the loaded image (AT_PHDR, before
    /// load bias), if a segment loads them.
    pub fn phdr_vaddr(&self) -> Option<u64> {
        (self.u16(field::FLAGS) & FLAG_PHDR_LOADED != 0).then(|| self.u64(field::PHDR_VADDR))
    }

    /// AT_PHNUM (AT_PHENT is 56).
    pub fn phnum(&self) -> usize {
        self.phnum
    }

    /// The ELF program header table, as in the ELF file (Elf64_Phdr each).
    pub fn program_headers(&self) -> &'a [u8] {
        &self.page[self.phdrs_at()..self.interp_at()]
    }

    /// The ELF file header of the original file (Elf64_Ehdr).
    pub fn elf_header(&self) -> &'a [u8] {
        &self.page[self.ehdr_at()..self.phdrs_at()]
    }

    /// PT_INTERP's path, without its NUL.
    pub fn interp(&self) -> Option<&'a [u8]> {
        let i = &self.page[self.interp_at()..self.name_at()];
        (!i.is_empty()).then_some(i)
    }

    pub fn tls(&self) -> Option<Tls> {
        (self.u16(field::FLAGS) & FLAG_TLS != 0).then(|| Tls {
            vaddr: self.u64(field::TLS_VADDR),
            filesz: self.u64(field::TLS_FILESZ),
            memsz: self.u64(field::TLS_MEMSZ),
            align: self.u64(field::TLS_ALIGN),
        })
    }

    pub fn dynamic_vaddr(&self) -> Option<u64> {
        (self.u16(field::FLAGS) & FLAG_DYNAMIC != 0).then(|| self.u64(field::DYNAMIC_VADDR))
    }

    /// PT_GNU_STACK asks for an executable stack (or is missing).
    pub fn exec_stack(&self) -> bool {
        self.u16(field::FLAGS) & FLAG_EXEC_STACK != 0
    }

    /// The dynamic section asks for relocations in read-only segments: the
    /// loader will write to text pages, which then become private copies.
    pub fn text_relocations(&self) -> bool {
        self.u16(field::FLAGS) & FLAG_TEXTREL != 0
    }

    fn name_bytes(&self) -> &'a [u8] {
        &self.page[self.name_at()..]
    }

    /// The text file's name in the NVM store.
    pub fn text_name(&self) -> &'a str {
        // Checked to be ASCII by parse.
        core::str::from_utf8(self.name_bytes()).unwrap_or("")
    }

    pub fn text_size(&self) -> u64 {
        self.u64(field::TEXT_SIZE)
    }

    /// CRC-64/XZ of the text file: compare it with the store's entry.
    pub fn text_crc(&self) -> u64 {
        self.u64(field::TEXT_CRC)
    }

    pub fn file_size(&self) -> u64 {
        self.u64(field::FILE_SIZE)
    }

    /// File 1's data area: offset and length.
    pub fn data_area(&self) -> (u64, u64) {
        (PAGE, self.u64(field::DATA_SIZE))
    }

    /// File 1's relocation information: offset and length.
    pub fn relocation_info(&self) -> (u64, u64) {
        (self.u64(field::RELOC_OFFSET), self.u64(field::RELOC_SIZE))
    }

    pub fn elf_size(&self) -> u64 {
        self.u64(field::ELF_SIZE)
    }

    fn segment_table(&self) -> impl Iterator<Item = Option<Segment>> + 'a {
        let table = &self.page[self.seg_table()..self.ext_table()];
        table.chunks_exact(SEGMENT_SIZE).map(Segment::decode)
    }

    /// The PT_LOAD segments, in address order.
    pub fn segments(&self) -> impl Iterator<Item = Segment> + 'a {
        // parse checked every placement.
        self.segment_table().flatten()
    }

    pub fn extents(&self) -> impl Iterator<Item = Extent> + 'a {
        let table = &self.page[self.ext_table()..self.ehdr_at()];
        table.chunks_exact(EXTENT_SIZE).map(Extent::decode)
    }

    // --- What the page fault handler reads --------------------------------

    /// Step X of fig. 3: which segment `vaddr` (before load bias) is in, and
    /// where its page's content comes from; None outside every segment.
    pub fn page_source(&self, vaddr: u64) -> Option<(Segment, PageSource)> {
        let s = self
            .segments()
            .find(|s| vaddr >= page_floor(s.vaddr) && page_ceil(s.vaddr + s.memsz).is_some_and(|end| vaddr < end))?;
        let k = (page_floor(vaddr) - page_floor(s.vaddr)) / PAGE;
        let (start, len) = s.window();
        let source = match s.place {
            _ if k >= len / PAGE => PageSource::Zero,
            Place::Text => PageSource::Text { page: start / PAGE + k },
            Place::Data => PageSource::Data {
                offset: start + k * PAGE,
            },
            Place::Zero => PageSource::Zero,
        };
        Some((s, source))
    }

    /// Where byte `elf_offset` of the original ELF file is kept, and how
    /// many bytes from there on are kept contiguously (for a loader that
    /// reads and maps an OFF2F library as if it were its ELF file).
    pub fn locate(&self, elf_offset: u64) -> Option<(Location, u64)> {
        for s in self.segments().filter(|s| s.filesz > 0) {
            if elf_offset >= s.elf_offset && elf_offset - s.elf_offset < s.filesz {
                let i = elf_offset - s.elf_offset;
                let at = s.offset + i;
                let loc = if s.place == Place::Text {
                    Location::Text(at)
                } else {
                    Location::File1(at)
                };
                return Some((loc, s.filesz - i));
            }
        }
        let mut at = self.u64(field::RELOC_OFFSET);
        for x in self.extents() {
            if elf_offset >= x.elf_offset && elf_offset - x.elf_offset < x.len {
                let i = elf_offset - x.elf_offset;
                return Some((Location::File1(at + i), x.len - i));
            }
            at += x.len;
        }
        None
    }

    /// Whether file 1 and the text file are the ones this header describes
    /// (sizes and checksums).
    pub fn check_files(&self, file1: &[u8], text: &[u8]) -> Result<(), Error> {
        if file1.len() as u64 != self.file_size() {
            return Err(Error::Truncated {
                need: self.file_size(),
                have: file1.len() as u64,
            });
        }
        if text.len() as u64 != self.text_size() {
            return Err(Error::Checksum("the text file's size"));
        }
        let body = file1.get(HEADER_PAGE..).unwrap_or(&[]);
        if CRC64.checksum(body) != self.u64(field::BODY_CRC) {
            return Err(Error::Checksum("file 1's data and relocation information"));
        }
        if CRC64.checksum(text) != self.text_crc() {
            return Err(Error::Checksum("the text file"));
        }
        Ok(())
    }
}
