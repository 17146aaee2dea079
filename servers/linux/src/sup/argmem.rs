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

impl ArgMem {
    pub fn new(rid: u64) -> ArgMem {
        ArgMem {
            rid,
            pages: [(u64::MAX, Vec::new()), (u64::MAX, Vec::new())],
            next: 0,
        }
    }

    /// The bytes from `addr` to the end of its page: EFAULT if unreadable.
    fn rest_of_page(&mut self, addr: u64) -> Result<&[u8], i64> {
        let base = addr & !(PAGE - 1);
        let i = match self.pages.iter().position(|(b, _)| *b == base) {
            Some(i) => i,
            None => {
                let mut data = alloc::vec![0u8; PAGE as usize];
                calls::caller_read(self.rid, base, &mut data).map_err(|_| errno::EFAULT)?;
                let i = self.next;
                self.pages[i] = (base, data);
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
