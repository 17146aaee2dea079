//! A pipe's buffer, kept as Linux keeps it: up to 16 pages (or what
//! `F_SETPIPE_SZ` set), a write appended to the last page only if it fits
//! there whole, so that the capacity programs observe is Linux's (65,536
//! bytes in writes of 4,096, 64,000 in writes of 1,000).
//!
//! A pipe of messages (an AF_UNIX datagram socket pair) keeps where each
//! write ended: a write goes whole or waits, a read takes one message
//! (what does not fit the reader's buffer is dropped, as a datagram's).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

pub const PAGE: usize = 4096;
/// Pages a pipe holds.
pub const PAGES: usize = 16;
/// The most `F_SETPIPE_SZ` gives (Linux's `/proc/sys/fs/pipe-max-size`
/// for an unprivileged process). Above it Linux lets a privileged process
/// go on; here nobody does, since the personality's shared server holds
/// every pipe's bytes.
pub const MAX_SIZE: usize = 1 << 20;
/// Writes of at most this many bytes are atomic.
pub const PIPE_BUF: usize = 4096;

/// Linux's `round_pipe_size`: a size as a pipe's capacity (at least a
/// page, a power of two); None beyond 2^31.
pub fn round_size(size: u64) -> Option<u64> {
    if size > 1 << 31 {
        return None;
    }
    Some(size.max(PAGE as u64).next_power_of_two())
}

pub struct Pipe {
    pages: VecDeque<Vec<u8>>,
    /// Pages it may hold (its capacity over the page size).
    slots: usize,
    /// Bytes already read from the first page.
    head: usize,
    /// References to each end (processes holding it open).
    pub readers: u32,
    pub writers: u32,
    /// The lengths of the messages it holds, oldest first (None: a byte
    /// stream).
    messages: Option<VecDeque<usize>>,
}

impl Default for Pipe {
    fn default() -> Pipe {
        Pipe {
            pages: VecDeque::new(),
            slots: PAGES,
            head: 0,
            readers: 0,
            writers: 0,
            messages: None,
        }
    }
}

impl Pipe {
    /// An empty pipe with one holder of each end.
    pub fn new() -> Pipe {
        Pipe {
            readers: 1,
            writers: 1,
            ..Pipe::default()
        }
    }

    /// An empty pipe of messages with one holder of each end.
    pub fn of_messages() -> Pipe {
        Pipe {
            messages: Some(VecDeque::new()),
            ..Pipe::new()
        }
    }

    pub fn holds_messages(&self) -> bool {
        self.messages.is_some()
    }

    /// Whether a read finds something (a message, even an empty one).
    pub fn readable(&self) -> bool {
        match &self.messages {
            Some(m) => !m.is_empty(),
            None => !self.is_empty(),
        }
    }

    /// Whether a message of `len` bytes goes in now.
    pub fn fits_message(&self, len: usize) -> bool {
        self.room_for(len) == len
    }

    /// Appends one message (which `fits_message` allowed).
    pub fn push_message(&mut self, data: &[u8]) {
        self.push(data);
        if let Some(m) = &mut self.messages {
            m.push_back(data.len());
        }
    }

    /// Takes the first message: its first `n` bytes, the rest dropped.
    pub fn take_message(&mut self, n: usize) -> Vec<u8> {
        let Some(len) = self.messages.as_mut().and_then(VecDeque::pop_front) else {
            return Vec::new();
        };
        let data = self.peek(n.min(len));
        self.consume(len);
        data
    }

    pub fn len(&self) -> usize {
        self.pages.iter().map(Vec::len).sum::<usize>() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its capacity in bytes (`F_GETPIPE_SZ`).
    pub fn size(&self) -> usize {
        self.slots * PAGE
    }

    /// `F_SETPIPE_SZ`: the capacity becomes `size` rounded up to a power
    /// of two pages, at least one (so 0 is one page, as on Linux). Returns
    /// the new capacity, or the errno: EINVAL beyond 2^31, EPERM beyond
    /// `MAX_SIZE`, EBUSY if the pages it holds now would not fit.
    pub fn resize(&mut self, size: u64) -> Result<usize, i64> {
        let bytes = round_size(size).ok_or(crate::errno::EINVAL)? as usize;
        if bytes > MAX_SIZE {
            return Err(crate::errno::EPERM);
        }
        let slots = bytes / PAGE;
        if slots < self.pages.len() {
            return Err(crate::errno::EBUSY);
        }
        self.slots = slots;
        Ok(bytes)
    }

    /// Bytes a write of `len` bytes would place now (0: it must wait). A
    /// write of at most PIPE_BUF bytes goes whole or not at all.
    pub fn room_for(&self, len: usize) -> usize {
        let free_pages = self.slots - self.pages.len();
        let tail = len % PAGE;
        let merge = match self.pages.back() {
            Some(last) if tail > 0 && last.len() + tail <= PAGE => tail,
            _ => 0,
        };
        let pages_needed = (len - merge).div_ceil(PAGE);
        if pages_needed <= free_pages {
            return len;
        }
        if len <= PIPE_BUF {
            return 0;
        }
        // A large write goes in part: the merge and whole free pages.
        (merge + free_pages * PAGE).min(len)
    }

    /// Appends `data` (which `room_for` allowed), page by page.
    pub fn push(&mut self, mut data: &[u8]) {
        let tail = data.len() % PAGE;
        if tail > 0
            && let Some(last) = self.pages.back_mut()
            && last.len() + tail <= PAGE
        {
            last.extend_from_slice(&data[..tail]);
            data = &data[tail..];
        }
        for chunk in data.chunks(PAGE) {
            self.pages.push_back(chunk.to_vec());
        }
    }

    /// The first `n` bytes, without taking them.
    pub fn peek(&self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n.min(self.len()));
        let mut skip = self.head;
        for p in &self.pages {
            let part = &p[skip..];
            skip = 0;
            let want = n - out.len();
            out.extend_from_slice(&part[..part.len().min(want)]);
            if out.len() == n {
                break;
            }
        }
        out
    }

    /// Takes the first `n` bytes (at most what there is).
    pub fn consume(&mut self, mut n: usize) {
        while n > 0 {
            let Some(first) = self.pages.front() else { return };
            let left = first.len() - self.head;
            if n < left {
                self.head += n;
                return;
            }
            n -= left;
            self.pages.pop_front();
            self.head = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(write: usize) -> usize {
        fill_pipe(Pipe::default(), write)
    }

    /// Bytes `p` takes in whole writes of `write` bytes.
    fn fill_pipe(mut p: Pipe, write: usize) -> usize {
        let data = vec![7u8; write];
        let mut total = 0;
        while p.room_for(write) == write {
            p.push(&data);
            total += write;
        }
        total
    }

    #[test]
    fn capacity_is_linuxs() {
        assert_eq!(fill(4096), 65536);
        assert_eq!(fill(1000), 64000);
        assert_eq!(fill(1), 65536);
    }

    #[test]
    fn reads_take_in_order_across_pages() {
        let mut p = Pipe::default();
        p.push(b"hello ");
        p.push(&[b'x'; 5000]);
        p.push(b"end");
        assert_eq!(p.len(), 5009);
        assert_eq!(p.peek(8), b"hello xx");
        p.consume(6);
        p.consume(5000);
        assert_eq!(p.peek(100), b"end");
        p.consume(3);
        assert!(p.is_empty());
    }

    #[test]
    fn sizes_round_as_linux_rounds_them() {
        assert_eq!(round_size(0), Some(4096));
        assert_eq!(round_size(4097), Some(8192));
        assert_eq!(round_size(65536), Some(65536));
        assert_eq!(round_size(1 << 31), Some(1 << 31));
        assert_eq!(round_size((1 << 31) + 1), None);
        assert_eq!(Pipe::default().resize((1 << 31) + 1), Err(crate::errno::EINVAL));
    }

    #[test]
    fn resize_rounds_to_pages_and_keeps_what_is_held() {
        let mut p = Pipe::default();
        assert_eq!(p.size(), 65536);
        assert_eq!(p.resize(4096), Ok(4096));
        assert_eq!(p.size(), 4096);
        assert_eq!(p.room_for(4096), 4096);
        p.push(&[1; 4096]);
        assert_eq!(p.room_for(1), 0);
        // One page held: a smaller size is not possible, a larger one is.
        assert_eq!(p.resize(1), Ok(4096));
        assert_eq!(p.resize(5000), Ok(8192));
        p.push(&[2; 10]);
        assert_eq!(p.resize(4096), Err(crate::errno::EBUSY));
        assert_eq!(p.resize(1 << 32), Err(crate::errno::EINVAL));
        assert_eq!(p.resize((MAX_SIZE + 1) as u64), Err(crate::errno::EPERM));
        assert_eq!(p.resize(MAX_SIZE as u64), Ok(MAX_SIZE));
        assert_eq!(fill_sized(4096, 3 * 4096), 4 * 4096);
        assert_eq!(fill_sized(1000, 0), 4000);
    }

    fn fill_sized(write: usize, size: u64) -> usize {
        let mut p = Pipe::default();
        p.resize(size).unwrap();
        fill_pipe(p, write)
    }

    #[test]
    fn messages_keep_their_boundaries() {
        let mut p = Pipe::of_messages();
        assert!(p.holds_messages() && !p.readable());
        p.push_message(b"first");
        p.push_message(b"");
        p.push_message(&[9; 5000]);
        assert!(p.readable());
        assert_eq!(p.take_message(100), b"first");
        // An empty message is a message.
        assert!(p.readable());
        assert_eq!(p.take_message(100), b"");
        // A short read drops the rest of its message.
        assert_eq!(p.take_message(3), [9, 9, 9]);
        assert!(!p.readable() && p.is_empty());
        assert!(p.fits_message(65536));
        assert!(!p.fits_message(65537));
        p.push_message(&[1; 60000]);
        assert!(!p.fits_message(8000));
        assert!(p.fits_message(10));
    }

    #[test]
    fn large_writes_go_in_part_small_ones_whole() {
        let mut p = Pipe::default();
        for _ in 0..15 {
            p.push(&[0; 4096]);
        }
        p.push(&[0; 100]);
        // One page free (and room after the 100 bytes): 8000 bytes is
        // more than PIPE_BUF, so part of it goes.
        assert_eq!(p.room_for(8000), 3904);
        assert_eq!(p.room_for(4096), 0);
        assert_eq!(p.room_for(3996), 3996);
    }
}
