//! `off2f check`: the reverse check. The ELF file is read again here with
//! the `object` crate, independently of the converter, and every byte of
//! every segment's memory image is compared with the page the kernel would
//! install from the two OFF2F files.

use crate::{Failure, operands, read};
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endianness, elf};
use off2f::{Header, PAGE, reconstruct};

pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let [elf_path, off_path, text_path] = operands(args)?;
    let (data, file1, text) = (read(&elf_path)?, read(&off_path)?, read(&text_path)?);
    let report = check(&data, &file1, &text).map_err(|e| format!("{off_path}, {text_path}: {e}"))?;
    println!("{elf_path}: {report}");
    Ok(())
}

/// What was compared, or the first difference.
pub fn check(data: &[u8], file1: &[u8], text: &[u8]) -> Result<String, String> {
    let h = Header::parse(file1).map_err(|e| e.to_string())?;
    h.check_files(file1, text).map_err(|e| e.to_string())?;
    let elf = reconstruct::elf_file(file1, text).map_err(|e| e.to_string())?;
    if elf != data {
        let at = elf
            .iter()
            .zip(data)
            .position(|(a, b)| a != b)
            .unwrap_or(elf.len().min(data.len()));
        return Err(format!(
            "the ELF file is not given back: first difference at offset {at:#x}"
        ));
    }

    let header = elf::FileHeader64::<Endianness>::parse(data).map_err(|e| e.to_string())?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    if header.e_entry(endian) != h.entry() {
        return Err("entry point differs".into());
    }
    let phdrs = header.program_headers(endian, data).map_err(|e| e.to_string())?;
    let (mut segments, mut bytes, mut pages) = (0, 0u64, 0u64);
    for ph in phdrs
        .iter()
        .filter(|p| p.p_type(endian) == elf::PT_LOAD && p.p_memsz(endian) > 0)
    {
        let (vaddr, memsz) = (ph.p_vaddr(endian), ph.p_memsz(endian));
        let file_bytes = ph.data(endian, data).map_err(|()| "segment outside the ELF file")?;
        let mut page_at = vaddr & !(PAGE - 1);
        while page_at < vaddr + memsz {
            let page = reconstruct::page(&h, file1, text, page_at)
                .ok_or_else(|| format!("no page at {page_at:#x}, inside segment {segments}"))?;
            let from = vaddr.max(page_at);
            let to = (vaddr + memsz).min(page_at + PAGE);
            for a in from..to {
                let i = a - vaddr;
                let expected = file_bytes.get(i as usize).copied().unwrap_or(0);
                if page[(a - page_at) as usize] != expected {
                    return Err(format!("segment {segments}: byte at {a:#x} differs"));
                }
            }
            bytes += to - from;
            pages += 1;
            page_at += PAGE;
        }
        segments += 1;
    }
    if segments != h.segments().count() {
        return Err("a different number of segments".into());
    }
    Ok(format!(
        "identical: the ELF file ({} bytes) and the memory image of its {segments} segments ({bytes} bytes in \
         {pages} pages)",
        data.len()
    ))
}
