//! Pages from storage by message (seed 003's way: the kernel turns an
//! event into communication). A region whose bytes are in a file names
//! the file's pager, a server process (the file server); a fault on one
//! of its pages that is not present becomes a rendezvous with the pager
//! on `abi::PAGER_ENTRY`, made on behalf of the faulting process (or of
//! the process composing one, for eager loading), which waits in it. The
//! message says which bytes of which file; the call's reply buffer is the
//! new frame itself. The pager answers as it answers a read: with its
//! reply (`endr`), or pieces (`rv_write`, `endr_len`), or by passing the
//! call on (`forward`) to whoever holds the bytes (the block cache), who
//! then writes them straight into the frame: one copy, as every file read
//! (seed 003's pointer passing). A short answer (a hole of the file) is
//! followed by a call for the rest.

use crate::call::{self, Call, PageSlot};
use crate::port;
use crate::process::Process;
use abi::Error;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::uaccess::UserRange;
use kcore::vm::region::{PageFrame, PageRequest};

/// Pages pagers supplied, and page-ins that failed (for the inspector).
pub static PAGES_SUPPLIED: AtomicU64 = AtomicU64::new(0);
pub static PAGE_INS_FAILED: AtomicU64 = AtomicU64::new(0);

/// Asks the pager for the page `req` describes, `caller` waiting in the
/// call (interrupts on, no lock held); the frame it filled, now the
/// caller's to place or free. The pager's failure or end, the file's end
/// before the bytes asked, or the caller's end while it waits: an error.
pub fn page_in(caller: &Process, req: &PageRequest) -> Result<PageFrame, Error> {
    let r = fetch(caller, req);
    match r {
        Ok(_) => PAGES_SUPPLIED.fetch_add(1, Ordering::Relaxed),
        Err(_) => PAGE_INS_FAILED.fetch_add(1, Ordering::Relaxed),
    };
    r
}

fn fetch(caller: &Process, req: &PageRequest) -> Result<PageFrame, Error> {
    let mut frame = PageFrame::new().map_err(|_| Error::NoMemory)?;
    let mut got = 0u32;
    while got < req.len {
        let (back, n) = one_call(caller, req, frame, got)?;
        frame = back;
        if n == 0 {
            return Err(Error::Fault);
        }
        got += n;
    }
    Ok(frame)
}

/// One call for the bytes of `req` from `got` on, into `frame`: the frame
/// back and how many bytes the pager gave.
fn one_call(caller: &Process, req: &PageRequest, frame: PageFrame, got: u32) -> Result<(PageFrame, u32), Error> {
    let pager = port::target(req.pager.pid)?;
    port::check_entry(&pager, abi::PAGER_ENTRY)?;
    let msg = abi::PageIn {
        object: req.pager.object,
        offset: req.offset + got as u64,
        len: (req.len - got) as u64,
    };
    // Marked as the kernel's: a process may call the pager's entry itself,
    // and the pager must not answer it as if a fault of a program it
    // serves asked (ACC_PAGER).
    let mut c = call::on_behalf_of(
        caller,
        pager.pid(),
        abi::PAGER_ENTRY,
        abi::ACC_PAGER,
        kcore::uaccess::pod_bytes(&msg),
    )?;
    {
        let m = Arc::get_mut(&mut c).expect("a call object nobody else holds");
        *m.page.get_mut() = Some(PageSlot {
            frame,
            at: req.at + got,
            len: req.len - got,
            written: 0,
        });
        *m.to_page.get_mut() = true;
    }
    let partner = port::deliver(&pager, c.clone())?;
    drop(pager);
    let status = c.wait_raw(partner);
    // Taken whatever happened: a server still holding the call (its
    // caller was killed) finds no frame to fill.
    let slot = c.page.lock().take();
    c.to_page.store(false, Ordering::Relaxed);
    caller.port.spare.keep(c);
    let slot = slot.ok_or(Error::Fault)?;
    match status {
        Some(n) if n <= slot.written as u64 && !caller.is_killed() => Ok((slot.frame, n as u32)),
        _ => Err(Error::Fault),
    }
}

/// The room of a pager's call's page (what its reply may hold), if `c`
/// is one.
#[inline(always)]
pub(crate) fn room(c: &Call) -> Option<usize> {
    if !c.to_page.load(Ordering::Relaxed) {
        return None;
    }
    c.page.lock().as_ref().map(|s| s.len as usize)
}

/// A reply's bytes `from` (in the current process, the server answering)
/// written at `offset` of the page of pager's call `c`; None if `c` is no
/// pager's call. Returns how many bytes went (at most the page's room).
/// Inlined: every reply looks, and nearly none is a pager's.
#[inline(always)]
pub(crate) fn write(c: &Call, offset: usize, from: UserRange) -> Option<Result<u64, Error>> {
    let room = room(c)?;
    Some(write_page(c, offset, from, room))
}

#[cold]
#[inline(never)]
fn write_page(c: &Call, offset: usize, from: UserRange, room: usize) -> Result<u64, Error> {
    if offset > room {
        return Err(Error::Invalid);
    }
    let n = from.len().min(room - offset);
    // Read from the server's memory first, with no lock held (the read may
    // fault a page of it in).
    let mut bytes = alloc::vec::Vec::new();
    bytes.try_reserve_exact(n).map_err(|_| Error::NoMemory)?;
    bytes.resize(n, 0);
    from.prefix(n).read(&mut bytes)?;
    let mut slot = c.page.lock();
    let s = slot.as_mut().ok_or(Error::NotFound)?;
    if !s.frame.write(s.at as usize + offset, &bytes) {
        return Err(Error::Invalid);
    }
    s.written = s.written.max((offset + n) as u32);
    Ok(n as u64)
}
