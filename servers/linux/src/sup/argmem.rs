//! execve's argv and envp as read from the waiting process: the arrays of
//! pointers and their strings mostly lie in a page or two (the strings
//! of a program's environment sit together above its first stack), so
//! they are read a page at a time and each page once, not a read per
//! pointer and per string.

use alloc::vec::Vec;
use linuxabi::errno;
use tessera_rt::sys::calls;

const PAGE: u64 = 4096;

/// The last pages read of the process waiting in `rid` (two: the array
/// and the strings are often in different ones).
pub struct ArgMem {
    rid: u64,
    pages: [(u64, Vec<u8>); 2],
    next: usize,
}

/// Two page buffers an `ArgMem` reads into, kept by the supervisor from
/// one execve to the next: made (and zeroed) once, not at every exec.
#[derive(Default)]
pub struct ArgPages([Vec<u8>; 2]);

impl ArgMem {
    /// Reads of the process waiting in `rid`, into `bufs`' buffers (which
    /// `done` gives back). What they held before is never read: a page
    /// is read whole before any byte of it is looked at.
    pub fn new(rid: u64, bufs: &mut ArgPages) -> ArgMem {
        let [a, b] = core::mem::take(&mut bufs.0);
        ArgMem {
            rid,
            pages: [(u64::MAX, a), (u64::MAX, b)],
            next: 0,
        }
    }

    /// The buffers back, for the next execve.
    pub fn done(self, bufs: &mut ArgPages) {
        let [(_, a), (_, b)] = self.pages;
        bufs.0 = [a, b];
    }

    /// The bytes from `addr` to the end of its page: EFAULT if unreadable.
    fn rest_of_page(&mut self, addr: u64) -> Result<&[u8], i64> {
        let base = addr & !(PAGE - 1);
        let i = match self.pages.iter().position(|(b, _)| *b == base) {
            Some(i) => i,
            None => {
                let i = self.next;
                let (at, data) = &mut self.pages[i];
                data.resize(PAGE as usize, 0);
                // A failed read leaves the buffer's bytes unknown: its
                // page is then none.
                *at = u64::MAX;
                calls::caller_read(self.rid, base, data).map_err(|_| errno::EFAULT)?;
                *at = base;
                self.next = 1 - i;
                i
            }
        };
        Ok(&self.pages[i].1[(addr - base) as usize..])
    }

    pub fn u64(&mut self, addr: u64) -> Result<u64, i64> {
        let mut b = [0u8; 8];
        let first = self.rest_of_page(addr)?;
        let n = first.len().min(8);
        b[..n].copy_from_slice(&first[..n]);
        if n < 8 {
            // Across a page's end.
            let second = self.rest_of_page(addr + n as u64)?;
            b[n..].copy_from_slice(&second[..8 - n]);
        }
        Ok(u64::from_le_bytes(b))
    }

    /// A NUL-terminated string of at most `max` bytes: EFAULT if
    /// unreadable, ENAMETOOLONG if longer (as `Sup::read_cstr`).
    pub fn cstr(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, i64> {
        if addr == 0 {
            return Err(errno::EFAULT);
        }
        let mut out = Vec::new();
        let mut at = addr;
        loop {
            let room = max + 1 - out.len();
            let chunk = self.rest_of_page(at)?;
            let chunk = &chunk[..chunk.len().min(room)];
            if let Some(z) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..z]);
                return Ok(out);
            }
            let n = chunk.len();
            out.extend_from_slice(chunk);
            if out.len() > max {
                return Err(errno::ENAMETOOLONG);
            }
            at += n as u64;
        }
    }
}
