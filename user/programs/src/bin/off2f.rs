//! `off2f`: OFF2F on Tessera (seed 001). Converts ELF programs of the file
//! system to OFF2F (file 1 beside them on the file system, the text in the
//! NVM store), checks a conversion, and lists or deletes the store's text
//! files. Converting and deleting need the NVM right (the shell has it).
//!
//!   off2f convert ELF OFF [TEXTNAME]   (TEXTNAME: ELF's path, `/` as `:`)
//!   off2f check ELF OFF                OFF and its text give back ELF
//!   off2f info OFF
//!   off2f ls
//!   off2f rm TEXTNAME
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_rt::{println, sys};
use user_programs::{inspect, off2fconv};

const USAGE: &str = "usage: off2f convert ELF OFF [TEXTNAME] | check ELF OFF | info OFF | ls | rm TEXTNAME";

fn main(args: &[&str]) -> i32 {
    let abs = filecmd::absolute;
    let result = match args.get(1..).unwrap_or(&[]) {
        ["convert", elf, off, rest @ ..] if rest.len() <= 1 => {
            let (elf, off) = (abs(elf), abs(off));
            let name = rest
                .first()
                .map_or_else(|| off2fconv::default_text_name(&elf), |n| (*n).into());
            off2fconv::convert(&elf, &off, &name).map(|c| {
                println!(
                    "{elf}: {}; {off}: {} bytes{}; text {:?}: {} bytes{}",
                    c.kind,
                    c.file1_bytes,
                    if c.file1_written { "" } else { " (unchanged)" },
                    c.text_name,
                    c.text_bytes,
                    if c.text_stored { "" } else { " (unchanged)" }
                )
            })
        }
        ["check", elf, off] => {
            off2fconv::check(&abs(elf), &abs(off)).map(|()| println!("{off}: gives back {elf} byte for byte"))
        }
        ["info", off] => info(&abs(off)),
        ["ls"] => inspect::nvm().map_err(|e| alloc::format!("{e:?}")),
        ["rm", name] => sys::nvm_delete(name).map_err(|e| alloc::format!("{name}: {e:?}")),
        _ => {
            println!("{USAGE}");
            return 2;
        }
    };
    match result {
        Ok(()) => 0,
        Err(why) => {
            println!("off2f: {why}");
            1
        }
    }
}

fn info(path: &str) -> Result<(), alloc::string::String> {
    let file1 = off2fconv::read_file(path)?;
    let h = off2f::Header::parse(&file1).map_err(|e| alloc::format!("{path}: {e}"))?;
    let (_, data) = h.data_area();
    let (_, reloc) = h.relocation_info();
    println!(
        "{path}: OFF2F, {}; entry {:#x}; header {} bytes, data {data}, relocation information {reloc}",
        h.kind().name(),
        h.entry(),
        h.len()
    );
    println!(
        "  text {:?}: {} bytes, CRC-64 {:016x}",
        h.text_name(),
        h.text_size(),
        h.text_crc()
    );
    for s in h.segments() {
        println!(
            "  {:#010x} {:>9} bytes ({:>9} from file)  {}{}{}  {:?}",
            s.vaddr,
            s.memsz,
            s.filesz,
            if s.flags & off2f::PF_R != 0 { 'r' } else { '-' },
            if s.writable() { 'w' } else { '-' },
            if s.executable() { 'x' } else { '-' },
            s.place
        );
    }
    Ok(())
}
tessera_rt::entry!(main);
