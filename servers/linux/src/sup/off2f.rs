//! execve of an OFF2F program (seed 001): exec reads file 1's header page
//! alone, not the whole file; the text stays in the NVM store, whose pages
//! the kernel maps in place at faults, and the data stays in file 1, whose
//! pages the file server supplies at faults (its pager): the plate is a
//! paged plate, as `fsexec` makes it for a native program. The kernel
//! checks the header and finds the text file.

use linuxabi::errno;
use linuxabi::structs::StatView;
use tessera_rt::abi::PagerSource;

/// Whether the file's first bytes are an OFF2F header's.
pub fn is_off2f(head: &[u8]) -> bool {
    head.starts_with(b"OFF")
}

/// Where the bytes of file 1 past its header page are, for the kernel:
/// in the file `st` describes, served by file server `fs`. `head` is
/// what exec read (the header page); a header that does not parse, or
/// names bytes past the file's end, is not a program (ENOEXEC).
pub fn source(head: &[u8], st: &StatView, fs: u64) -> Result<PagerSource, i64> {
    let size = st.size.max(0) as u64;
    if head.len() < off2f::HEADER_PAGE {
        return Err(errno::ENOEXEC);
    }
    let (at, len) = off2f::Header::parse(head).map_err(|_| errno::ENOEXEC)?.data_area();
    at.checked_add(len).filter(|&e| e <= size).ok_or(errno::ENOEXEC)?;
    Ok(PagerSource {
        pager: fs,
        object: tessera_api::fs::pager_object(st.ino, size, st.mtime),
        size,
    })
}
