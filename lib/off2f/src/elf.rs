//! The converter: an x86_64 ELF file (static, static-PIE or dynamically
//! linked executable, or shared library) to OFF2F, as the paper's tool did
//! for FreeBSD's: the read-only segments become the text file, the writable
//! ones the data, and what no segment loads the relocation information.
//!
//! It refuses, saying why, whatever a loader could not map page by page
//! from the two files.

use crate::layout::*;
use crate::write::{self, Files, LoadSegment, Program};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use object::Endianness;
use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};

/// Why a file cannot be converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(why: String) -> Result<T, Refused> {
    Err(Refused(why))
}

const DF_1_PIE: u64 = 0x0800_0000;

struct Dynamic {
    pie: bool,
    soname: bool,
    textrel: bool,
}

/// Reads the dynamic section's flags through the segment that loads it.
fn dynamic_flags(data: &[u8], endian: Endianness, ph: &elf::ProgramHeader64<Endianness>) -> Result<Dynamic, Refused> {
    let mut d = Dynamic {
        pie: false,
        soname: false,
        textrel: false,
    };
    let entries = match ph.dynamic(endian, data) {
        Ok(Some(e)) => e,
        _ => return refuse("the dynamic section lies outside the file".into()),
    };
    for e in entries {
        let val: u64 = e.d_val(endian);
        match e.d_tag(endian) {
            elf::DT_NULL => break,
            elf::DT_FLAGS_1 => d.pie |= val & DF_1_PIE != 0,
            elf::DT_SONAME => d.soname = true,
            elf::DT_TEXTREL => d.textrel = true,
            elf::DT_FLAGS => d.textrel |= val & elf::DF_TEXTREL.0 != 0,
            _ => {}
        }
    }
    Ok(d)
}

/// Converts `data` (a whole ELF file); the text file will be stored in the
/// NVM store as `text_name`.
pub fn convert(data: &[u8], text_name: &str) -> Result<Files, Refused> {
    if data.len() < 4 || data[..4] != *b"\x7fELF" {
        return refuse("not an ELF file".into());
    }
    if data.len() < EHDR_SIZE {
        return refuse("truncated ELF header".into());
    }
    if data[4] != elf::ELFCLASS64.0 || data[5] != elf::ELFDATA2LSB.0 {
        return refuse("not a 64-bit little-endian ELF file (OFF2F here is for x86_64)".into());
    }
    let Ok(header) = elf::FileHeader64::<Endianness>::parse(data) else {
        return refuse("unsupported ELF header".into());
    };
    let Ok(endian) = header.endian() else {
        return refuse("unsupported ELF byte order".into());
    };
    let machine = header.e_machine(endian);
    if machine != elf::EM_X86_64 {
        return refuse(format!("machine {} is not x86_64", machine.0));
    }
    let elf_type = header.e_type(endian);
    match elf_type {
        elf::ET_EXEC | elf::ET_DYN => {}
        elf::ET_REL => return refuse("a relocatable object file: link it into a program first".into()),
        elf::ET_CORE => return refuse("a core dump, not a program".into()),
        t => return refuse(format!("ELF type {t} is neither an executable nor a shared library")),
    }
    if header.e_ehsize(endian) as usize != EHDR_SIZE || header.e_version(endian) != elf::EV_CURRENT.0 as u32 {
        return refuse("unexpected ELF header size or version".into());
    }
    if header.e_phnum(endian) == elf::PN_XNUM {
        return refuse("more than 65534 program headers".into());
    }
    let Ok(phdrs) = header.program_headers(endian, data) else {
        return refuse("the program headers lie outside the file (truncated?)".into());
    };
    if phdrs.is_empty() {
        return refuse("no program headers: nothing to load".into());
    }
    let phoff = header.e_phoff(endian);
    let phdr_bytes = (phdrs.len() * PHDR_SIZE) as u64;

    let mut segments: Vec<LoadSegment> = Vec::new();
    let (mut interp, mut tls, mut dynamic, mut pt_phdr, mut gnu_stack) = (None, None, None, None, None);
    for (i, ph) in phdrs.iter().enumerate() {
        let (vaddr, memsz, filesz) = (ph.p_vaddr(endian), ph.p_memsz(endian), ph.p_filesz(endian));
        let offset = ph.p_offset(endian);
        let in_file = offset.checked_add(filesz).is_some_and(|end| end <= data.len() as u64);
        match ph.p_type(endian) {
            elf::PT_LOAD if memsz == 0 => {}
            elf::PT_LOAD => {
                let n = segments.len();
                if !in_file {
                    return refuse(format!(
                        "segment {n}: its bytes lie past the end of the file (truncated?)"
                    ));
                }
                if filesz > memsz {
                    return refuse(format!("segment {n}: more bytes in the file than in memory"));
                }
                if vaddr % PAGE != offset % PAGE {
                    return refuse(format!(
                        "segment {n}: not page-aligned in the file (offset {offset:#x}, address {vaddr:#x} differ \
                         modulo 4096), so its pages cannot be mapped from the file"
                    ));
                }
                if vaddr.checked_add(memsz).is_none_or(|end| end > USER_END) {
                    return refuse(format!("segment {n}: addresses outside user space"));
                }
                if elf_type == elf::ET_EXEC && vaddr < PAGE {
                    return refuse(format!("segment {n}: loads into the first page of memory"));
                }
                let flags = ph.p_flags(endian).0;
                if flags & !(PF_R | PF_W | PF_X) != 0
                    || (ph.p_align(endian) > 1 && !ph.p_align(endian).is_power_of_two())
                {
                    return refuse(format!("segment {n}: unknown flags or bad alignment"));
                }
                segments.push(LoadSegment {
                    vaddr,
                    memsz,
                    filesz,
                    elf_offset: offset,
                    align: ph.p_align(endian),
                    flags,
                    window: window(data, vaddr, offset, filesz, memsz),
                });
            }
            elf::PT_INTERP => {
                let Some(path) = in_file.then(|| &data[offset as usize..(offset + filesz) as usize]) else {
                    return refuse("the interpreter path lies outside the file".into());
                };
                let path = path.strip_suffix(&[0]).unwrap_or(path);
                if interp.is_some() || path.is_empty() || path.contains(&0) || filesz != path.len() as u64 + 1 {
                    return refuse(format!("program header {i}: a malformed interpreter path"));
                }
                interp = Some(path.to_vec());
            }
            elf::PT_TLS => {
                if tls.is_some() {
                    return refuse("two TLS segments".into());
                }
                tls = Some(Tls {
                    vaddr,
                    filesz,
                    memsz,
                    align: ph.p_align(endian),
                });
            }
            elf::PT_DYNAMIC => {
                if dynamic.is_some() {
                    return refuse("two dynamic sections".into());
                }
                dynamic = Some((vaddr, dynamic_flags(data, endian, ph)?));
            }
            elf::PT_PHDR if pt_phdr.is_none() => pt_phdr = Some(vaddr),
            elf::PT_GNU_STACK if gnu_stack.is_none() => gnu_stack = Some(ph.p_flags(endian).0 & PF_X != 0),
            elf::PT_PHDR | elf::PT_GNU_STACK => return refuse(format!("program header {i}: a duplicate")),
            _ => {}
        }
    }
    if segments.is_empty() {
        return refuse("no loadable segment".into());
    }
    if segments.len() > MAX_SEGMENTS {
        return refuse(format!("{} loadable segments (at most {MAX_SEGMENTS})", segments.len()));
    }
    for (i, w) in segments.windows(2).enumerate() {
        let end = page_ceil(w[0].vaddr + w[0].memsz).unwrap_or(u64::MAX);
        if w[1].vaddr < w[0].vaddr {
            return refuse(format!("segments {i} and {} are not in address order", i + 1));
        }
        if page_floor(w[1].vaddr) < end {
            return refuse(format!(
                "segments {i} and {} overlap or share the page at {:#x} in memory",
                i + 1,
                page_floor(w[1].vaddr)
            ));
        }
    }
    let mut by_offset: Vec<(u64, u64)> = segments
        .iter()
        .filter(|s| s.filesz > 0)
        .map(|s| (s.elf_offset, s.filesz))
        .collect();
    by_offset.sort_unstable();
    if by_offset.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
        return refuse("two segments overlap in the file".into());
    }

    let loaded = |vaddr: u64, len: u64| {
        segments
            .iter()
            .any(|s| vaddr >= s.vaddr && vaddr.checked_add(len).is_some_and(|e| e <= s.vaddr + s.filesz))
    };
    let phdr_vaddr = match pt_phdr {
        Some(v) if loaded(v, phdr_bytes) => Some(v),
        Some(_) => return refuse("PT_PHDR names program headers that no segment loads".into()),
        None => segments
            .iter()
            .find(|s| phoff >= s.elf_offset && phoff.saturating_add(phdr_bytes) <= s.elf_offset + s.filesz)
            .map(|s| s.vaddr + (phoff - s.elf_offset)),
    };
    if let Some(t) = tls
        && (t.filesz > t.memsz || (t.align > 1 && !t.align.is_power_of_two()) || !loaded(t.vaddr, t.filesz))
    {
        return refuse("the TLS template does not lie in a loaded segment".into());
    }
    if let Some((v, _)) = dynamic
        && !segments.iter().any(|s| v >= s.vaddr && v < s.vaddr + s.memsz)
    {
        return refuse("the dynamic section does not lie in a loaded segment".into());
    }
    let flags = dynamic.as_ref().map(|d| &d.1);
    let kind = match (elf_type, &interp, flags) {
        (elf::ET_EXEC, None, _) => Kind::StaticExec,
        (elf::ET_EXEC, Some(_), _) => Kind::DynamicExec,
        (_, None, Some(d)) if d.pie => Kind::StaticPie,
        (_, Some(_), Some(d)) if d.pie => Kind::DynamicPie,
        (_, _, Some(d)) if d.soname => Kind::SharedLibrary,
        // Older linkers do not flag PIEs: without a soname, an ET_DYN with
        // an entry point is a program.
        (_, None, _) if header.e_entry(endian) != 0 => Kind::StaticPie,
        (_, Some(_), _) if header.e_entry(endian) != 0 => Kind::DynamicPie,
        _ => Kind::SharedLibrary,
    };
    let entry = header.e_entry(endian);
    let entry_ok = segments
        .iter()
        .any(|s| s.flags & PF_X != 0 && entry >= s.vaddr && entry < s.vaddr + s.memsz);
    if !(entry_ok || (kind == Kind::SharedLibrary && entry == 0)) {
        return refuse(format!("the entry point {entry:#x} is not in an executable segment"));
    }
    if !nvmstore::valid_name(text_name) {
        return refuse(format!(
            "{text_name:?} cannot name a text file in the NVM store (1 to {} printable ASCII characters, no space \
             or '/')",
            nvmstore::NAME_MAX
        ));
    }

    let program = Program {
        kind,
        entry,
        phdr_vaddr,
        tls,
        dynamic_vaddr: dynamic.as_ref().map(|d| d.0),
        // Linux's rule: without PT_GNU_STACK the stack is executable.
        exec_stack: gnu_stack.unwrap_or(true),
        text_relocations: flags.is_some_and(|d| d.textrel),
        elf_header: data[..EHDR_SIZE].to_vec(),
        program_headers: data[phoff as usize..(phoff + phdr_bytes) as usize].to_vec(),
        interp,
        text_name: text_name.into(),
        elf_size: data.len() as u64,
        extents: outside_segments(data, &segments),
        segments,
    };
    let fixed = FIXED_SIZE + EHDR_SIZE;
    let need = fixed
        + program.segments.len() * SEGMENT_SIZE
        + program.extents.len() * EXTENT_SIZE
        + program.program_headers.len()
        + program.interp.as_ref().map_or(0, Vec::len)
        + text_name.len();
    if need > HEADER_PAGE {
        return refuse(format!(
            "the header would take {need} bytes, more than the 4 KiB exec reads ({} program headers)",
            phdrs.len()
        ));
    }
    write::write(&program).map_err(|e| Refused(format!("internal error: the converter wrote a bad file: {e}")))
}

/// The whole pages of the file around a segment's bytes, as a loader's
/// mmap shows them: neighbouring bytes included, zeros past the end of the
/// file, and zeros after the file bytes where the segment goes on as BSS.
fn window(data: &[u8], vaddr: u64, offset: u64, filesz: u64, memsz: u64) -> Vec<u8> {
    if filesz == 0 {
        return Vec::new();
    }
    let skew = vaddr % PAGE;
    let start = (offset - skew) as usize;
    let len = page_ceil(skew + filesz).unwrap_or(0) as usize;
    let mut w = vec![0u8; len];
    let end = (start + len).min(data.len());
    w[..end - start].copy_from_slice(&data[start..end]);
    if memsz > filesz {
        w[(skew + filesz) as usize..].fill(0);
    }
    w
}

/// The runs of the file no segment holds (relocation information).
fn outside_segments(data: &[u8], segments: &[LoadSegment]) -> Vec<(u64, Vec<u8>)> {
    let mut held: Vec<(u64, u64)> = segments
        .iter()
        .filter(|s| s.filesz > 0)
        .map(|s| (s.elf_offset, s.elf_offset + s.filesz))
        .collect();
    held.sort_unstable();
    let mut runs = Vec::new();
    let mut at = 0u64;
    for (start, end) in held.into_iter().chain([(data.len() as u64, data.len() as u64)]) {
        if start > at {
            runs.push((at, data[at as usize..start as usize].to_vec()));
        }
        at = at.max(end);
    }
    runs
}
