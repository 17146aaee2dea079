//! AnT's request and result rings (seed 002 §2.2), from the process's side:
//! write requests into the request ring (`push`), send them with one system
//! call (`submit`), take results from the result ring without a system call
//! (`take`), and wait only when it is empty (`wait`). `call` is AnT's
//! callsync and `ncallsync` its batch request, in the same control-block
//! format.

use crate::sys::calls;
use abi::{Control, Error, RING_SLOTS, RING_WAIT_ALL, Rings};
use core::sync::atomic::{AtomicU64, Ordering};

/// The calling process's rings.
pub struct Ring {
    rings: *mut Rings,
}

/// One of the shared indices, as an atomic (the kernel reads and writes it
/// from another context).
fn index(p: *mut u64) -> &'static AtomicU64 {
    // SAFETY: the index lives in the rings, mapped for the life of the
    // process, aligned; AtomicU64 has u64's layout.
    unsafe { &*(p as *const AtomicU64) }
}

impl Ring {
    /// The process's rings (the kernel makes them on first use).
    pub fn open() -> Result<Ring, Error> {
        let at = calls::ring_setup()?;
        Ok(Ring {
            rings: at as *mut Rings,
        })
    }

    /// Where the rings are in the process's space.
    pub fn address(&self) -> u64 {
        self.rings as u64
    }

    fn req_head(&self) -> &AtomicU64 {
        // SAFETY: a field of the mapped rings.
        index(unsafe { &raw mut (*self.rings).req.head })
    }
    fn req_tail(&self) -> &AtomicU64 {
        // SAFETY: as above.
        index(unsafe { &raw mut (*self.rings).req.tail })
    }
    fn res_head(&self) -> &AtomicU64 {
        // SAFETY: as above.
        index(unsafe { &raw mut (*self.rings).res.head })
    }
    fn res_tail(&self) -> &AtomicU64 {
        // SAFETY: as above.
        index(unsafe { &raw mut (*self.rings).res.tail })
    }

    /// Writes a request into the request ring (not sent yet). Busy when
    /// the ring is full of requests not yet submitted.
    pub fn push(&mut self, c: &Control) -> Result<(), Error> {
        let tail = self.req_tail().load(Ordering::Relaxed);
        if tail.wrapping_sub(self.req_head().load(Ordering::Acquire)) >= RING_SLOTS {
            return Err(Error::Busy);
        }
        // SAFETY: the slot is inside the mapped rings; the kernel reads it
        // only after `tail` is published below.
        unsafe { core::ptr::write_volatile(&raw mut (*self.rings).requests[(tail % RING_SLOTS) as usize], *c) };
        self.req_tail().store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Sends the next `n` pushed requests; their results come to the
    /// result ring as they finish.
    pub fn submit(&mut self, n: u64) -> Result<u64, Error> {
        calls::ring_submit(n, 0)
    }

    /// Takes the next result, if one is there (no system call).
    pub fn take(&mut self) -> Option<Control> {
        let head = self.res_head().load(Ordering::Relaxed);
        if head == self.res_tail().load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the slot is inside the mapped rings; the kernel wrote it
        // before publishing `tail`.
        let c = unsafe { core::ptr::read_volatile(&raw const (*self.rings).results[(head % RING_SLOTS) as usize]) };
        self.res_head().store(head.wrapping_add(1), Ordering::Release);
        Some(c)
    }

    /// Waits up to `timeout_ns` for a result; returns how many are waiting.
    pub fn wait(&self, timeout_ns: u64) -> Result<u64, Error> {
        calls::ring_wait(timeout_ns)
    }

    /// The next result, waiting for it as long as it takes.
    pub fn next_result(&mut self) -> Result<Control, Error> {
        loop {
            if let Some(c) = self.take() {
                return Ok(c);
            }
            match self.wait(u64::MAX) {
                Ok(_) | Err(Error::Busy) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// AnT's batch request: the requests go out at once and the call
    /// returns once all are back; `out[i]` gets request `i`'s result.
    /// Results already in the ring must have been taken first.
    pub fn ncallsync(&mut self, requests: &[Control], out: &mut [Control]) -> Result<(), Error> {
        if requests.len() > out.len() || requests.is_empty() {
            return Err(Error::Invalid);
        }
        for c in requests {
            self.push(c)?;
        }
        // Once sent, every result is in the ring, in order (a failed
        // member's too, with its error as status).
        calls::ring_submit(requests.len() as u64, RING_WAIT_ALL)?;
        for o in out.iter_mut().take(requests.len()) {
            *o = self.take().ok_or(Error::Invalid)?;
        }
        Ok(())
    }

    /// AnT's callsync through the rings: one request, waited for. Its
    /// result (`Control::result`) says how it went.
    pub fn call(&mut self, request: &Control) -> Result<Control, Error> {
        let mut out = [Control::default()];
        self.ncallsync(core::slice::from_ref(request), &mut out)?;
        Ok(out[0])
    }
}
