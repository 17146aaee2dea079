//! What the kernel keeps of a Linux process's file mappings, which its
//! supervisor makes (the kernel cannot see files): the most a mapping may
//! be opened to (Linux's VM_MAYWRITE and VM_MAYEXEC), which mprotect
//! obeys, and where the mapped file ends, past which a touch is SIGBUS.
//! The supervisor sets both as it makes a mapping (`caller_map_file`)
//! and moves the end as the process truncates or extends the file
//! (`caller_file_end`); they stay with the mapping's parts through
//! munmap, mprotect and mremap, and with a fork's copy.

use abi::Error;
use abi::linux::{FILE_WRITTEN_MAX, MAY_EXEC, MAY_WRITE};
use alloc::vec::Vec;
use ipc::process::Process;
use kcore::mm::layout::PAGE_SIZE;
use kcore::uaccess::UserRange;
use kcore::vm::region::{FileEnd, Kind};
use kcore::vm::space::{SpaceError, VirtualSpace};
use linuxabi::mman::{PROT_EXEC, PROT_WRITE};

/// `caller_map_file`: the mapping of `p` that starts at `addr` is a
/// file's, with these limits and, for `file` not 0, this end. Invalid
/// for unknown `may` bits, an address where no anonymous mapping starts,
/// a mapping whose protection the limits already break, or an end past
/// what a file's pages can count.
pub fn mark(p: &Process, addr: u64, may: u64, file: u64, first: u64, pages: u64) -> Result<u64, Error> {
    if may & !(MAY_WRITE | MAY_EXEC) != 0 || !addr.is_multiple_of(PAGE_SIZE) {
        return Err(Error::Invalid);
    }
    // A file's pages at 4 KiB each within what an offset (i64) reaches.
    const FILE_PAGES_MAX: u64 = 1 << 51;
    if file != 0 && (first > FILE_PAGES_MAX || pages > FILE_PAGES_MAX) {
        return Err(Error::Invalid);
    }
    let end = if file == 0 {
        FileEnd::default()
    } else {
        FileEnd { file, first, pages }
    };
    let space = p.space().ok_or(Error::NotFound)?;
    let marked = space
        .lock()
        .mark_file_map(addr, may & MAY_WRITE != 0, may & MAY_EXEC != 0, end);
    match marked {
        Ok(()) => Ok(0),
        Err(SpaceError::OutOfMemory | SpaceError::OverLimit) => Err(Error::NoMemory),
        Err(SpaceError::BadRange) => Err(Error::Invalid),
    }
}

/// `caller_file_end`: `p`'s mappings of `file` end at `pages` pages of
/// it now. Returns how many there were.
pub fn set_end(p: &Process, file: u64, pages: u64) -> Result<u64, Error> {
    if file == 0 {
        return Err(Error::Invalid);
    }
    let space = p.space().ok_or(Error::NotFound)?;
    Ok(space.lock().set_file_end(file, pages) as u64)
}

/// `caller_file_written`: `data` (the supervisor's memory) was written to
/// `file` at `offset`; `p`'s private mappings' pages that are still the
/// file's take it. The bytes are read before the space is locked (the
/// read may fault).
pub fn written(p: &Process, file: u64, offset: u64, data: UserRange) -> Result<u64, Error> {
    if data.len() > FILE_WRITTEN_MAX {
        return Err(Error::Invalid);
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(data.len()).map_err(|_| Error::NoMemory)?;
    bytes.resize(data.len(), 0);
    data.read(&mut bytes)?;
    written_bytes(p, file, offset, &bytes)
}

/// `written` of bytes the kernel holds (and tests give).
pub fn written_bytes(p: &Process, file: u64, offset: u64, bytes: &[u8]) -> Result<u64, Error> {
    // Within what a file offset (an i64) reaches, as Linux's.
    let end = offset.checked_add(bytes.len() as u64).ok_or(Error::Invalid)?;
    if file == 0 || end > i64::MAX as u64 || bytes.len() > FILE_WRITTEN_MAX {
        return Err(Error::Invalid);
    }
    let space = p.space().ok_or(Error::NotFound)?;
    Ok(space.lock().file_written(file, offset, bytes) as u64)
}

/// Where mprotect of `[addr, end)` to `prot` must stop (EACCES): the
/// start, within the range, of the first mapping in address order whose
/// limits refuse `prot` (Linux changes the mappings before it and stops
/// there). None if none refuses.
pub fn refused_at(s: &VirtualSpace, addr: u64, end: u64, prot: u64) -> Option<u64> {
    s.regions()
        .filter(|r| r.region.kind == Kind::Heap && r.base < end && addr < r.end())
        .filter(|r| {
            let m = r.region.linux;
            (prot & PROT_WRITE != 0 && !m.may_write()) || (prot & PROT_EXEC != 0 && !m.may_exec())
        })
        .map(|r| r.base.max(addr))
        .min()
}
