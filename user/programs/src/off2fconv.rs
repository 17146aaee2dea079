//! The ELF → OFF2F converter on Tessera (seed 001 §3.3's two tools in one:
//! convert, and store the text on NVM): an ELF file of the file system
//! becomes file 1 on the file system (header, data, relocation
//! information) and the text file in the kernel's NVM store.
//!
//! Running it twice changes nothing: file 1 is written only if it differs,
//! and the store keeps a text file that already holds the same bytes. What
//! it cannot convert it refuses, saying why (`off2f::convert`'s reasons),
//! and leaves both places as they were.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_CREAT, O_RDONLY, O_TRUNC, O_WRONLY};
use tessera_rt::sys;

/// What a conversion did.
#[derive(Debug, Clone)]
pub struct Converted {
    pub kind: &'static str,
    pub text_name: String,
    pub file1_bytes: u64,
    pub text_bytes: u64,
    /// Whether file 1 and the text file were written (false: they already
    /// held exactly this).
    pub file1_written: bool,
    pub text_stored: bool,
}

/// The whole of the file at `path`.
pub fn read_file(path: &str) -> Result<Vec<u8>, String> {
    let mut f = File::open(path, O_RDONLY, 0).map_err(|e| format!("{path}: {e}"))?;
    let size = f.stat().map_err(|e| format!("{path}: {e}"))?.size as usize;
    let mut data = vec![0u8; size];
    let mut done = 0;
    // In pieces: the kernel takes a reply buffer of a bounded size.
    while done < size {
        let end = size.min(done + crate::fsexec::READ_PIECE);
        match f.read(&mut data[done..end]).map_err(|e| format!("{path}: {e}"))? {
            0 => break,
            n => done += n,
        }
    }
    data.truncate(done);
    Ok(data)
}

/// Writes `data` as the file at `path` (mode `mode`), unless it already
/// holds exactly that; true if it wrote.
fn write_if_changed(path: &str, data: &[u8], mode: u32) -> Result<bool, String> {
    if client::stat(path).is_ok_and(|s| s.size as usize == data.len()) && read_file(path).is_ok_and(|d| d == data) {
        return Ok(false);
    }
    let mut f = File::open(path, O_WRONLY | O_CREAT | O_TRUNC, mode).map_err(|e| format!("{path}: {e}"))?;
    f.write(data).map_err(|e| format!("{path}: {e}"))?;
    f.sync().map_err(|e| format!("{path}: {e}"))?;
    Ok(true)
}

/// The text file's name for a program at `path` when none is given: its
/// path without the leading `/`, each `/` a `:` (the store's names have no
/// `/`), cut to the store's limit from the end.
pub fn default_text_name(path: &str) -> String {
    let name: String = path
        .trim_start_matches('/')
        .chars()
        .map(|c| if c == '/' { ':' } else { c })
        .filter(|c| c.is_ascii_graphic())
        .collect();
    let max = nvmstore::NAME_MAX;
    String::from(&name[name.len().saturating_sub(max)..])
}

/// Converts the ELF program at `elf_path`: file 1 to `off_path`, the text
/// to the NVM store as `text_name`.
pub fn convert(elf_path: &str, off_path: &str, text_name: &str) -> Result<Converted, String> {
    let elf = read_file(elf_path)?;
    let files = off2f::convert(&elf, text_name).map_err(|e| format!("{elf_path}: cannot convert: {e}"))?;
    let h = off2f::Header::parse(&files.file1).map_err(|e| format!("{elf_path}: converted header: {e}"))?;
    let kind = h.kind().name();
    let mode = client::stat(elf_path).map_or(0o755, |s| s.mode & 0o7777);
    // The text first: file 1 names it, so a file 1 never names a text the
    // store does not have (a failed store leaves file 1 as it was).
    let text_stored = sys::nvm_store(text_name, &files.text).map_err(|e| match e {
        tessera_rt::abi::Error::Denied => format!("{text_name}: storing in the NVM needs the NVM right"),
        tessera_rt::abi::Error::Limit => {
            format!("{text_name}: the NVM store has no room for {} bytes", files.text.len())
        }
        tessera_rt::abi::Error::NotFound => String::from("this machine has no NVM store"),
        e => format!("{text_name}: storing in the NVM: {e:?}"),
    })?;
    let file1_written = write_if_changed(off_path, &files.file1, mode)?;
    Ok(Converted {
        kind,
        text_name: String::from(text_name),
        file1_bytes: files.file1.len() as u64,
        text_bytes: files.text.len() as u64,
        file1_written,
        text_stored,
    })
}

/// The whole of NVM text file `name`.
pub fn read_text(name: &str, len: u64) -> Result<Vec<u8>, String> {
    let mut text = vec![0u8; len as usize];
    let mut done = 0;
    while done < text.len() {
        let end = text.len().min(done + crate::fsexec::READ_PIECE);
        match sys::nvm_read(name, done as u64, &mut text[done..end]) {
            Ok(0) => return Err(format!("{name}: the NVM text file ends at {done} bytes")),
            Ok(n) => done += n,
            Err(e) => return Err(format!("{name}: reading the NVM text file: {e:?}")),
        }
    }
    Ok(text)
}

/// The reverse check: file 1 at `off_path` and its text file give back
/// the ELF file at `elf_path` byte for byte, and the header's checksums
/// hold.
pub fn check(elf_path: &str, off_path: &str) -> Result<(), String> {
    let elf = read_file(elf_path)?;
    let file1 = read_file(off_path)?;
    let h = off2f::Header::parse(&file1).map_err(|e| format!("{off_path}: {e}"))?;
    let text = read_text(h.text_name(), h.text_size())?;
    h.check_files(&file1, &text).map_err(|e| format!("{off_path}: {e}"))?;
    let back = off2f::reconstruct::elf_file(&file1, &text).map_err(|e| format!("{off_path}: {e}"))?;
    if back != elf {
        let at = back
            .iter()
            .zip(&elf)
            .position(|(a, b)| a != b)
            .unwrap_or(back.len().min(elf.len()));
        return Err(format!(
            "{off_path} gives back {} bytes that differ from {elf_path}'s {} at byte {at}",
            back.len(),
            elf.len()
        ));
    }
    Ok(())
}
