//! AnT's request and result rings (seed 002 §2.2): the kernel gives each
//! process that asks (`ring_setup`) two rings of control blocks in one
//! physically contiguous area mapped into its space. The process writes the
//! information of its requests into the request ring and sends the next n
//! of them with one system call (`ring_submit`); the kernel puts each
//! result, with the request's information and the servers it passed
//! through, into the result ring, where the process takes it without a
//! system call (it calls `ring_wait` only when the ring is empty). With
//! RING_WAIT_ALL the n blocks are one batch (`ncallsync`): the caller is
//! woken once, when all are back, and finds their results in order.
//!
//! The area belongs to the kernel (the process can neither delete nor
//! move it), and the kernel reads and writes it word by word through an
//! alias of its region. The
//! process may write anything into it: the kernel keeps its own copy of
//! the indices it produces and consumes, reads each control block once
//! into its own memory, and checks it like any system-call argument.

use crate::batch::{self, Member};
use crate::call::Call;
use crate::process::{self as proc, Process};
use crate::request;
use abi::{Control, Error, RING_SLOTS, RingIndex, Rings};
use core::mem::{offset_of, size_of};
use core::sync::atomic::Ordering;
use kcore::mm::layout::PAGE_SIZE;
use kcore::vm::region::{Kind, Region, SharedArea};
use kcore::vm::space::At;
use restable::ResId;

/// A process's rings, as the kernel keeps them.
pub struct RingState {
    region: ResId,
    link: ResId,
    /// The area, as the kernel reads and writes it: an alias of the
    /// region the process maps (it holds the frames too, so they stay
    /// while the kernel uses them).
    area: SharedArea,
    /// Their address in the process.
    user: u64,
    /// Next request block the kernel takes.
    req_head: u64,
    /// Next result slot the kernel fills.
    res_tail: u64,
    /// Requests sent without waiting whose results are not in the ring yet.
    outstanding: u64,
}

const PAGES: usize = core::mem::size_of::<Rings>().div_ceil(PAGE_SIZE as usize);

/// Byte offsets in the area (`abi::Rings`).
const REQ_HEAD: usize = offset_of!(Rings, req) + offset_of!(RingIndex, head);
const REQ_TAIL: usize = offset_of!(Rings, req) + offset_of!(RingIndex, tail);
const RES_HEAD: usize = offset_of!(Rings, res) + offset_of!(RingIndex, head);
const RES_TAIL: usize = offset_of!(Rings, res) + offset_of!(RingIndex, tail);
const REQUESTS: usize = offset_of!(Rings, requests);
const RESULTS: usize = offset_of!(Rings, results);
const BLOCK: usize = size_of::<Control>();

impl RingState {
    /// One of the process's indices, read once (it may change it any time).
    fn shared(&self, offset: usize) -> u64 {
        self.area.word(offset).map_or(0, |w| w.load(Ordering::Acquire))
    }

    fn publish(&self, offset: usize, value: u64) {
        if let Some(w) = self.area.word(offset) {
            w.store(value, Ordering::Release);
        }
    }

    /// Request blocks the process has written and the kernel not taken.
    fn pending(&self) -> Result<u64, Error> {
        let n = self.shared(REQ_TAIL).wrapping_sub(self.req_head);
        if n > RING_SLOTS {
            return Err(Error::Invalid);
        }
        Ok(n)
    }

    /// Results in the ring the process has not taken yet. A head the
    /// kernel cannot make sense of counts as a full ring.
    fn unread(&self) -> u64 {
        let n = self.res_tail.wrapping_sub(self.shared(RES_HEAD));
        n.min(RING_SLOTS)
    }

    /// Read once, by value: later writes by the process do not matter.
    fn request(&self, index: u64) -> Control {
        let slot = (index % RING_SLOTS) as usize;
        self.area.read(REQUESTS + slot * BLOCK).unwrap_or_default()
    }

    fn put_result(&mut self, c: &Control) {
        let slot = (self.res_tail % RING_SLOTS) as usize;
        self.area.write(RESULTS + slot * BLOCK, c);
        self.res_tail = self.res_tail.wrapping_add(1);
        self.publish(RES_TAIL, self.res_tail);
    }
}

/// `ring_setup`: the caller's rings, made on first use. Returns their
/// address in the caller's space. The area is attached there, at the
/// first free place, as the resource layer's region by `attach(area,
/// at)`, which returns the region's and the attachment's identifiers (the
/// kernel owns both: the process can neither delete nor move them) and
/// the address.
pub fn setup(p: &Process, attach: impl FnOnce(Region, At) -> Result<(ResId, ResId, u64), Error>) -> Result<u64, Error> {
    let mut slot = p.port.rings.lock();
    if let Some(r) = slot.as_ref() {
        return Ok(r.user);
    }
    let mut area = Region::contiguous(Kind::Data, PAGES).map_err(|_| Error::NoMemory)?;
    let alias = area
        .share()
        .map_err(|_| Error::NoMemory)?
        .into_shared()
        .map_err(|_| Error::NoMemory)?;
    let (region, link, base) = attach(area, p.free_place())?;
    *slot = Some(RingState {
        region,
        link,
        area: alias,
        user: base,
        req_head: 0,
        res_tail: 0,
        outstanding: 0,
    });
    Ok(base)
}

/// Takes the rings away (process exit): the identifiers of their region
/// and attachment, for the resource layer to delete. Results that arrive
/// later are dropped.
pub fn take(p: &Process) -> Option<(ResId, ResId)> {
    p.port.rings.lock().take().map(|r| (r.region, r.link))
}

/// Requests `p` sent through its rings whose results are not in the ring
/// yet (None: it has no rings).
pub fn in_flight(p: &Process) -> Option<u64> {
    p.port.rings.lock().as_ref().map(|r| r.outstanding)
}

/// Puts the result of a request sent without waiting into `pid`'s result ring.
pub fn complete(pid: u64, result: &Control) {
    let Some(p) = proc::get(pid) else { return };
    {
        let mut slot = p.port.rings.lock();
        let Some(r) = slot.as_mut() else { return };
        r.put_result(result);
        r.outstanding = r.outstanding.saturating_sub(1);
    }
    p.port.results_wait.wake_all();
}

/// `ring_submit(n, flags)`: sends the next `n` request blocks.
pub fn submit(p: &Process, n: u64, flags: u64) -> Result<u64, Error> {
    if n == 0 || n > RING_SLOTS {
        return Err(Error::Invalid);
    }
    // Take the blocks (and room for their results) under the lock; send
    // them without it.
    let first = {
        let mut slot = p.port.rings.lock();
        let r = slot.as_mut().ok_or(Error::NotFound)?;
        if r.pending()? < n {
            return Err(Error::Invalid);
        }
        if r.outstanding + r.unread() + n > RING_SLOTS {
            return Err(Error::Busy);
        }
        let first = r.req_head;
        r.req_head = r.req_head.wrapping_add(n);
        r.publish(REQ_HEAD, r.req_head);
        r.outstanding += n;
        first
    };
    let block = |i: u64| -> Result<Control, Error> {
        let slot = p.port.rings.lock();
        Ok(slot.as_ref().ok_or(Error::NotFound)?.request(first + i))
    };
    if flags & abi::RING_WAIT_ALL != 0 && n == 1 {
        // A batch of one is callsync: the rendezvous's direct path.
        let result = request::callsync(p, &block(0)?);
        let mut slot = p.port.rings.lock();
        let r = slot.as_mut().ok_or(Error::NotFound)?;
        r.put_result(&result);
        r.outstanding = r.outstanding.saturating_sub(1);
        Ok(1)
    } else if flags & abi::RING_WAIT_ALL != 0 {
        submit_batch(p, n, block)
    } else {
        for i in 0..n {
            let c = block(i)?;
            let sent = request::request_to_ring(p, &c);
            if let Err(e) = sent {
                // Every block taken gets its result, a failure included.
                let mut failed = c;
                failed.status = e.as_ret();
                failed.batch = 1;
                complete(p.pid(), &failed);
            }
        }
        Ok(n)
    }
}

/// A batch from the ring: `ncallsync` over the blocks; their results go
/// into the result ring in order once all are back.
fn submit_batch(p: &Process, n: u64, block: impl Fn(u64) -> Result<Control, Error>) -> Result<u64, Error> {
    // (`ncallsync_with` checks each block and fails bad ones alone.)
    let member = |i: usize| block(i as u64).map(|c| Member::of(&c));
    let mut written = 0;
    let result = |i: usize, status: u64, call: Option<&Call>| {
        let c = Member::of(&block(i as u64)?).control(status, n, call);
        written += 1;
        let mut slot = p.port.rings.lock();
        let r = slot.as_mut().ok_or(Error::NotFound)?;
        r.put_result(&c);
        r.outstanding = r.outstanding.saturating_sub(1);
        Ok(())
    };
    let outcome = batch::ncallsync_with(p, n as usize, member, result);
    if written == n {
        // Every result is in the ring; failed members carry their error.
        return Ok(n);
    }
    // Not sent, or not all back (the caller was killed): free the room.
    if let Some(r) = p.port.rings.lock().as_mut() {
        r.outstanding = r.outstanding.saturating_sub(n - written);
    }
    outcome.map(|()| n)
}

/// `ring_wait(timeout)`: waits until the result ring holds a result.
pub fn wait(p: &Process, timeout_ns: u64) -> Result<u64, Error> {
    let deadline = kcore::clock::nanos().saturating_add(timeout_ns);
    let mut waiting = 0;
    p.port.results_wait.wait_until_deadline(deadline, || {
        waiting = p.port.rings.lock().as_ref().map_or(0, |r| r.unread());
        waiting > 0
    });
    if waiting == 0 {
        return Err(Error::Busy);
    }
    Ok(waiting)
}
