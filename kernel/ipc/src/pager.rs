//! Pages from storage by message (seed 003's way: the kernel turns an
//! event into communication). A region whose bytes are in a file names
//! the file's pager, a server process (the file server); a fault on one
//! of its pages that is not present becomes a rendezvous with the pager
//! on `abi::PAGER_ENTRY`, made on behalf of the faulting process (or of
//! the process composing one, for eager loading), which waits in it. The
//! message says which bytes of which file; the pager reads them and gives
//! them with `page_supply`, straight into the frame the call carries, and
//! that ends the call. Only such a call reaches the frame: what a pager
//! reads for a call a process made itself goes nowhere.

use crate::call::{self, Completion, PageSlot, Request};
use crate::port::{self, wake};
use crate::process::Process;
use crate::rendezvous::answer;
use abi::Error;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::uaccess::UserRange;
use kcore::unique::UniqueArc;
use kcore::vm::region::{PageFrame, PageRequest};

/// Pages pagers supplied, and page-ins that failed (for the inspector).
pub static PAGES_SUPPLIED: AtomicU64 = AtomicU64::new(0);
pub static PAGE_INS_FAILED: AtomicU64 = AtomicU64::new(0);

/// Asks the pager for the page `req` describes, `caller` waiting in the
/// call (interrupts on, no lock held); the frame it filled, now the
/// caller's to place or free. The pager's failure, its end, a short
/// answer (the file changed) or the caller's end while it waits: an error.
pub fn page_in(caller: &Process, req: &PageRequest) -> Result<PageFrame, Error> {
    let r = fetch(caller, req);
    if r.is_err() {
        PAGE_INS_FAILED.fetch_add(1, Ordering::Relaxed);
    }
    r
}

fn fetch(caller: &Process, req: &PageRequest) -> Result<PageFrame, Error> {
    let frame = PageFrame::new().map_err(|_| Error::NoMemory)?;
    let pager = port::target(req.pager.pid)?;
    port::check_entry(&pager, abi::PAGER_ENTRY)?;
    let msg = abi::PageIn {
        object: req.pager.object,
        offset: req.offset,
        len: req.len as u64,
    };
    let r = Request::new(
        abi::PAGER_ENTRY,
        caller.pid(),
        UserRange::EMPTY,
        UserRange::EMPTY,
        Completion::Wait,
    );
    let mut c = call::make_call(
        caller.pid(),
        pager.pid(),
        r,
        caller.port.spare.take().map(UniqueArc::into_arc),
    )?;
    {
        let m = Arc::get_mut(&mut c).expect("a call object nobody else holds");
        let bytes = kcore::uaccess::pod_bytes(&msg);
        m.inline[..bytes.len()].copy_from_slice(bytes);
        *m.shown.get_mut() = bytes.len() as u64;
        *m.page.get_mut() = Some(PageSlot {
            frame,
            at: req.at,
            len: req.len,
            filled: false,
        });
    }
    let partner = port::deliver(&pager, c.clone())?;
    drop(pager);
    let status = c.wait_raw(partner);
    // Taken whatever happened: a pager still holding the call (its caller
    // was killed) finds no frame to fill.
    let slot = c.page.lock().take();
    caller.port.spare.keep(c);
    let slot = slot.ok_or(Error::Fault)?;
    match status {
        Some(n) if slot.filled && n == req.len as u64 && !caller.is_killed() => Ok(slot.frame),
        _ => Err(Error::Fault),
    }
}

/// `page_supply`: pager `server` gives the page of the call `rid` it
/// holds the bytes `data` (at most the length asked; fewer mean the file
/// ended), and ends the call with their count.
pub fn supply(server: &Process, rid: u64, data: UserRange) -> Result<u64, Error> {
    let c = port::held(server, rid)?;
    let want = match c.page.lock().as_ref() {
        Some(s) => s.len as usize,
        None => return Err(Error::Invalid),
    };
    let n = data.len().min(want);
    // Read from the pager's memory first, with no lock held (the read may
    // fault a page of it in).
    let mut bytes = alloc::vec::Vec::new();
    bytes.try_reserve_exact(n).map_err(|_| Error::NoMemory)?;
    bytes.resize(n, 0);
    data.prefix(n).read(&mut bytes)?;
    {
        let mut slot = c.page.lock();
        let s = slot.as_mut().ok_or(Error::Invalid)?;
        if !s.frame.write(s.at as usize, &bytes) {
            return Err(Error::Invalid);
        }
        s.filled = true;
    }
    drop(c);
    let c = port::release(server, rid)?;
    PAGES_SUPPLIED.fetch_add(1, Ordering::Relaxed);
    wake(answer(server, c, n as u64, 0));
    Ok(n as u64)
}
