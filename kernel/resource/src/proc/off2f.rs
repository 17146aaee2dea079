//! Exec of an OFF2F program (seed 001 §3.2, fig. 3 (B)): its plate is file
//! 1 as far as exec needs it, the header page (what exec reads: 4 KiB)
//! and the data area after it; its text is the NVM text file the header
//! names, which the program holds and its text regions map in place.
//!
//! A paged plate (`plate_paged`: exec read the header page alone) holds
//! no data: the data segments' bytes stay in file 1, read by its pager a
//! page at a time at faults, as an ELF's are (seed 001 §3.2).
//!
//! The header is checked through and through by `off2f::Header::parse`
//! before anything is trusted; the text file must be the very one the
//! header describes (its size and checksum). This kernel loads static
//! executables only, as for ELF: anything else is `BadProgram`.

use super::program::{Program, Segment};
use abi::Error;
use alloc::string::String;
use alloc::vec::Vec;
use kcore::vm::region::{PagedFile, PagerRef};
use off2f::{HEADER_PAGE, Header, Kind, Place};

pub fn parse(
    bytes: kcore::bytes::Bytes,
    plate: restable::ResId,
    name: String,
    pager: Option<(abi::PagerSource, kcore::mm::quota::Charge)>,
) -> Result<Program, Error> {
    let image: &[u8] = &bytes;
    let h = Header::parse(image).map_err(|_| Error::BadProgram)?;
    if h.kind() != Kind::StaticExec {
        return Err(Error::BadProgram);
    }
    // The plate holds the header page and, unless a pager has it, the
    // data area (the relocation information is not needed to run).
    let (data_at, data_len) = h.data_area();
    let data_end = data_at.checked_add(data_len).ok_or(Error::BadProgram)?;
    // Where file 1's bytes are: all in the plate, or in the file.
    let file_size = pager.as_ref().map_or(image.len() as u64, |(p, _)| p.size);
    if file_size < data_end.max(HEADER_PAGE as u64) || (image.len() as u64) < HEADER_PAGE as u64 {
        return Err(Error::BadProgram);
    }
    let text = crate::nvm::open_text(h.text_name(), h.text_size(), h.text_crc())?;
    let mut segments = Vec::new();
    for s in h.segments() {
        if s.place == Place::Data && s.offset.checked_add(s.filesz).is_none_or(|end| end > file_size) {
            return Err(Error::BadProgram);
        }
        segments.try_reserve(1).map_err(|_| Error::NoMemory)?;
        segments.push(Segment {
            vaddr: s.vaddr,
            memsz: s.memsz,
            filesz: s.filesz,
            offset: s.offset,
            writable: s.writable(),
            executable: s.executable(),
            in_nvm: s.place == Place::Text,
            paged: pager.is_some() && s.place == Place::Data,
        });
    }
    Ok(Program {
        plate,
        name,
        image: bytes.clone(),
        entry: h.entry(),
        segments,
        phdr: h.phdr_vaddr().unwrap_or(0),
        phnum: h.phnum() as u64,
        nvm: Some(text),
        pager: match pager {
            Some((p, payer)) => {
                let file = PagedFile::new(
                    PagerRef {
                        pid: p.pager,
                        object: p.object,
                    },
                    payer,
                );
                Some(kcore::mm::heap::try_arc(file).map_err(|_| Error::NoMemory)?)
            }
            None => None,
        },
    })
}
