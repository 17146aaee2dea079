//! execve of an OFF2F program (seed 001): exec reads file 1's header page
//! and the data area it names, not the whole file; the text stays in the
//! NVM store, and the kernel maps its pages in place at faults. The plate
//! is file 1 up to the end of its data area, as `fsexec` makes it for a
//! native program; the kernel checks the header and finds the text file.

use super::fs::Fs;
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;

/// Whether the file's first bytes are an OFF2F header's.
pub fn is_off2f(head: &[u8]) -> bool {
    head.starts_with(b"OFF")
}

/// Reads exactly `buf.len()` bytes at `at`; a short file is not a program.
fn read_exact(fs: &Fs, fd: u32, at: u64, buf: &mut [u8]) -> Result<(), i64> {
    match fs.read_own(fd, at, buf)? {
        n if n == buf.len() => Ok(()),
        _ => Err(errno::ENOEXEC),
    }
}

/// What exec needs of the OFF2F file 1 open as `fd` (`size` bytes): its
/// header page, then its data area. A header that does not parse, or
/// names bytes past the file's end, is not a program (ENOEXEC).
pub fn image(fs: &Fs, fd: u32, size: u64) -> Result<Vec<u8>, i64> {
    let mut image = vec![0u8; size.min(off2f::HEADER_PAGE as u64) as usize];
    read_exact(fs, fd, 0, &mut image)?;
    let (at, len) = off2f::Header::parse(&image).map_err(|_| errno::ENOEXEC)?.data_area();
    let end = at.checked_add(len).filter(|&e| e <= size).ok_or(errno::ENOEXEC)?;
    let first = image.len() as u64;
    image.resize(end.max(first) as usize, 0);
    if end > first {
        let from = at.max(first);
        read_exact(fs, fd, from, &mut image[from as usize..end as usize])?;
    }
    Ok(image)
}
