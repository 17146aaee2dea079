//! The way back: the ELF file and the loaded pages as the two OFF2F files
//! give them, for the reverse check and for a loader that reads an OFF2F
//! file as if it were its ELF file.

use crate::error::Error;
use crate::header::{Header, Location, PageSource};
use crate::layout::PAGE;
use alloc::vec;
use alloc::vec::Vec;

/// None if the file is shorter than its header says.
fn bytes<'a>(file1: &'a [u8], text: &'a [u8], loc: Location, len: u64) -> Option<&'a [u8]> {
    let (file, at) = match loc {
        Location::Text(at) => (text, at),
        Location::File1(at) => (file1, at),
    };
    file.get(usize::try_from(at).ok()?..usize::try_from(at.checked_add(len)?).ok()?)
}

/// The original ELF file, byte for byte.
pub fn elf_file(file1: &[u8], text: &[u8]) -> Result<Vec<u8>, Error> {
    let h = Header::parse(file1)?;
    h.check_files(file1, text)?;
    let mut elf = vec![0u8; h.elf_size() as usize];
    let mut at = 0u64;
    while at < h.elf_size() {
        // parse checked that segments and extents tile the file.
        let (loc, len) = h.locate(at).ok_or(Error::Header("a hole in the ELF file"))?;
        let len = len.min(h.elf_size() - at);
        let from = bytes(file1, text, loc, len).ok_or(Error::Header("a range outside its file"))?;
        elf[at as usize..(at + len) as usize].copy_from_slice(from);
        at += len;
    }
    Ok(elf)
}

/// The page at `vaddr` (page-aligned, before load bias) as the kernel will
/// install it from the two files; None outside every segment (or if a file
/// is shorter than the header says).
pub fn page(h: &Header<'_>, file1: &[u8], text: &[u8], vaddr: u64) -> Option<[u8; PAGE as usize]> {
    let (_, source) = h.page_source(vaddr)?;
    let mut page = [0u8; PAGE as usize];
    match source {
        PageSource::Text { page: n } => page.copy_from_slice(bytes(file1, text, Location::Text(n * PAGE), PAGE)?),
        PageSource::Data { offset } => page.copy_from_slice(bytes(file1, text, Location::File1(offset), PAGE)?),
        PageSource::Zero => {}
    }
    Some(page)
}
