//! execve's path, argv and envp as read from the waiting process.
//!
//! Nearly always in two `caller_read_many` calls (`quick`): the path and
//! the two arrays of pointers first, then the strings they point at, each
//! from its start for at most `PEEK` bytes and never past its page;
//! strings that lie together (the environment's, above a program's first
//! stack) are read as one range. Only the bytes near what is needed are
//! copied, not whole pages.
//!
//! What does not fit that (an array of more than `ARRAY_PEEK` bytes, a
//! longer string, one that goes on in the next page, anything that
//! cannot be read) is read again from the start by `ArgMem`, a page at a
//! time, which gives every error: the quick way finds the same bytes or
//! nothing.

use alloc::vec::Vec;
use linuxabi::errno;
use tessera_rt::abi;
use tessera_rt::sys::calls;

const PAGE: u64 = 4096;

/// The last pages read of the process waiting in `rid` (two: the array
/// and the strings are often in different ones).
pub struct ArgMem {
    rid: u64,
    pages: [(u64, Vec<u8>); 2],
    next: usize,
}

/// The buffers execve reads into, kept by the supervisor from one execve
/// to the next: made (and zeroed) once, not at every exec. Two pages for
/// an `ArgMem`, and the bytes `quick` reads.
#[derive(Default)]
pub struct ArgPages([Vec<u8>; 2], Vec<u8>);

/// A string's first read: at most this many bytes from its start.
const PEEK: u64 = 256;
/// An array's first read: at most this many bytes (64 pointers).
const ARRAY_PEEK: u64 = 512;
/// Strings at most this far apart in one page are read as one range.
const GAP: u64 = 64;
/// Where user space ends: no range from below it reaches past 2^64.
const USER_END: u64 = 1 << 47;

/// The length of a range from `at` of at most `max` bytes that stays in
/// `at`'s page (a page the process cannot read then fails alone).
fn in_page(at: u64, max: u64) -> u64 {
    (PAGE - at % PAGE).min(max)
}

/// execve's path and the strings of argv and envp (their arrays at
/// `argv_at`, `env_at`; 0: none), read in two calls: `None` if they are
/// not all within reach of those (then `ArgMem` reads them, and says
/// what is wrong, if anything).
pub fn quick(rid: u64, (path_at, argv_at, env_at): (u64, u64, u64), bufs: &mut ArgPages) -> Option<Args> {
    let buf = &mut bufs.1;
    if path_at == 0 || [path_at, argv_at, env_at].iter().any(|&a| a >= USER_END) {
        return None;
    }
    // The path, argv's array, envp's: at fixed places in `buf`.
    let spans = [(path_at, PEEK), (argv_at, ARRAY_PEEK), (env_at, ARRAY_PEEK)];
    let mut list = [abi::ReadEntry::default(); 3];
    let mut n = 0;
    let mut offset = 0;
    let mut places = [(0usize, 0usize); 3];
    for (i, &(at, max)) in spans.iter().enumerate() {
        if at == 0 {
            continue;
        }
        let len = in_page(at, max);
        places[i] = (offset, len as usize);
        list[n] = abi::ReadEntry { addr: at, buf: 0, len };
        n += 1;
        offset += len as usize;
    }
    read_all(rid, &mut list[..n], buf, offset)?;
    let piece = |(from, len): (usize, usize)| &buf[from..from + len];
    let path = until_nul(piece(places[0]))?.to_vec();
    let pointers = |i: usize| -> Option<Vec<u64>> {
        if spans[i].0 == 0 {
            return Some(Vec::new());
        }
        let mut out = Vec::new();
        for w in piece(places[i]).chunks_exact(8) {
            match u64::from_le_bytes(w.try_into().ok()?) {
                0 => return Some(out),
                p => out.push(p),
            }
        }
        None
    };
    let (argv, env) = (pointers(1)?, pointers(2)?);
    // One call for both: the program's name (argv[0]) and its
    // environment are usually in two ranges.
    let n = argv.len();
    let mut starts = argv;
    starts.extend_from_slice(&env);
    let mut args = Args {
        path,
        argv: Vec::with_capacity(n),
        env: Env::default(),
    };
    strings(rid, &starts, buf, |i, s| {
        if i < n {
            args.argv.push(s.to_vec());
        } else {
            args.env.push(s);
        }
    })?;
    Some(args)
}

/// What execve reads of the process: its path, argv's strings (without
/// their NULs) and the environment.
pub struct Args {
    pub path: Vec<u8>,
    pub argv: Vec<Vec<u8>>,
    pub env: Env,
}

/// A program's environment as exec gives it to the kernel: each string
/// followed by its NUL, one after the other. Nothing but its count is
/// kept once the program runs, so it is never taken apart.
#[derive(Default)]
pub struct Env {
    pub bytes: Vec<u8>,
    pub count: usize,
}

impl Env {
    pub fn push(&mut self, s: &[u8]) {
        self.bytes.extend_from_slice(s);
        self.bytes.push(0);
        self.count += 1;
    }
}

/// The bytes before the first NUL of `b`, if it has one (core's search
/// looks at a word at a time).
fn until_nul(b: &[u8]) -> Option<&[u8]> {
    core::ffi::CStr::from_bytes_until_nul(b)
        .ok()
        .map(core::ffi::CStr::to_bytes)
}

/// Reads `list`'s ranges one after the other into `buf` (their `buf`
/// fields are set here), `total` bytes in all, up to `MAX_BATCH` ranges
/// a call: `None` unless every one was read.
fn read_all(rid: u64, list: &mut [abi::ReadEntry], buf: &mut Vec<u8>, total: usize) -> Option<()> {
    if buf.len() < total {
        buf.resize(total, 0);
    }
    let mut at = buf.as_mut_ptr() as u64;
    for e in list.iter_mut() {
        e.buf = at;
        at += e.len;
    }
    for part in list.chunks_mut(abi::MAX_BATCH as usize) {
        let read = calls::caller_read_many(rid, part).ok()?;
        if read != part.len() as u64 {
            return None;
        }
    }
    Some(())
}

/// The strings at `starts`, given to `each` in their order with their
/// index (none before all are read): each read from its start for
/// `PEEK` bytes at most, not past its page. A string that starts in the
/// page of the range before it, within `GAP` of it either side, joins
/// that range (as the environment's strings lie, one next to the other,
/// in whichever order a program's loader put them). `None` if one cannot
/// be read or has no NUL there.
fn strings(rid: u64, starts: &[u64], buf: &mut Vec<u8>, mut each: impl FnMut(usize, &[u8])) -> Option<()> {
    if starts.iter().any(|&a| a >= USER_END) {
        return None;
    }
    let mut list: Vec<abi::ReadEntry> = Vec::with_capacity(starts.len());
    // Each string's range, by its index in `list`.
    let mut range_of = Vec::with_capacity(starts.len());
    for &at in starts {
        let end = at + in_page(at, PEEK);
        match list.last_mut() {
            Some(g) if at / PAGE == g.addr / PAGE && at + GAP >= g.addr && at <= g.addr + g.len + GAP => {
                let start = g.addr.min(at);
                g.len = end.max(g.addr + g.len) - start;
                g.addr = start;
            }
            _ => list.push(abi::ReadEntry {
                addr: at,
                buf: 0,
                len: end - at,
            }),
        }
        range_of.push(list.len() - 1);
    }
    let total = list.iter().map(|g| g.len as usize).sum();
    read_all(rid, &mut list, buf, total)?;
    let base = buf.as_ptr() as u64;
    // Every string is looked at before any is given: a string without
    // its NUL here leaves `each` not called.
    let mut found = Vec::with_capacity(starts.len());
    for (&at, g) in starts.iter().zip(range_of) {
        let g = &list[g];
        // Where the range was read in `buf`, and the string in it.
        let (from, to) = ((g.buf - base + (at - g.addr)) as usize, (g.buf - base + g.len) as usize);
        found.push(from..from + until_nul(&buf[from..to])?.len());
    }
    for (i, r) in found.into_iter().enumerate() {
        each(i, &buf[r]);
    }
    Some(())
}

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
