//! `off2f info`: what an OFF2F header says, as exec will read it.

use crate::{Failure, operands, read};
use off2f::{Header, PF_R, PF_W, PF_X, Place};

pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let [path] = operands(args)?;
    let file1 = read(&path)?;
    let h = Header::parse(&file1).map_err(|e| format!("{path}: {e}"))?;
    if file1.len() as u64 != h.file_size() {
        return Err(format!("{path}: {} bytes, the header says {}", file1.len(), h.file_size()).into());
    }
    println!("{path}: OFF2F, {}", h.kind().name());
    println!("  header        {} bytes (exec reads the first 4096)", h.len());
    println!("  entry         {:#x}", h.entry());
    match h.phdr_vaddr() {
        Some(v) => println!("  phdr          {v:#x}, {} entries", h.phnum()),
        None => println!("  phdr          not loaded, {} entries", h.phnum()),
    }
    if let Some(i) = h.interp() {
        println!("  interpreter   {}", String::from_utf8_lossy(i));
    }
    if let Some(t) = h.tls() {
        println!(
            "  TLS           {:#x}, {} bytes initialised of {}, align {}",
            t.vaddr, t.filesz, t.memsz, t.align
        );
    }
    if let Some(d) = h.dynamic_vaddr() {
        println!("  dynamic       {d:#x}");
    }
    println!(
        "  stack         {}{}",
        if h.exec_stack() { "executable" } else { "not executable" },
        if h.text_relocations() {
            "; text relocations (text pages get private copies)"
        } else {
            ""
        }
    );
    println!(
        "  text file     {:?} in the NVM store, {} bytes, CRC-64 {:016x}",
        h.text_name(),
        h.text_size(),
        h.text_crc()
    );
    let (data_at, data_len) = h.data_area();
    let (reloc_at, reloc_len) = h.relocation_info();
    println!("  data          {data_len} bytes at {data_at:#x}");
    println!(
        "  relocation    {reloc_len} bytes at {reloc_at:#x} ({} runs of the ELF file outside the segments)",
        h.extents().count()
    );
    println!("  from an ELF file of {} bytes", h.elf_size());
    println!("  segments      address            memory     file  flags  where");
    for s in h.segments() {
        let flags: String = [(PF_R, 'r'), (PF_W, 'w'), (PF_X, 'x')]
            .iter()
            .map(|&(f, c)| if s.flags & f != 0 { c } else { '-' })
            .collect();
        let place = match s.place {
            Place::Text => format!("text file at {:#x}", s.offset),
            Place::Data => format!("file 1 at {:#x}", s.offset),
            Place::Zero => "zero-fill".to_string(),
        };
        println!(
            "                {:#018x} {:>10} {:>8}  {flags}    {place}",
            s.vaddr, s.memsz, s.filesz
        );
    }
    Ok(())
}
