//! Pipes the kernel serves to Linux processes: a resource kind whose
//! bytes go from the writer's memory to the reader's with no server on
//! the way (issue 18: a pipe in the personality's shared server cost a
//! rendezvous with the supervisor and another with that server per call).
//!
//! A pipe is made by a supervisor for the Linux process it serves (whose
//! kernel memory pays for its buffer) and reached only through that
//! process's table of kernel-served descriptors (`Bound`): descriptor
//! number → an open end (`End`, Linux's open file description of a
//! pipe: which end, O_NONBLOCK). The supervisor's own descriptor table
//! stays the truth; it binds, copies and unbinds numbers here as it
//! changes that table (`linux_pipe`), and the kernel serves read and
//! write on bound numbers (`KERNEL_SERVED_ON_PIPES`). Fork copies the
//! table (the child holds the same ends), exec keeps it, the end of a
//! process drops it: a pipe goes when its last end goes. The same table
//! binds numbers of regular files to their kernel caches (`Served::File`,
//! issue 18), whose pread64 the kernel serves from present pages, and
//! numbers of AF_UNIX stream socket pairs' ends (`Served::Sock`, issue
//! 19): an end reads one pipe and writes another, and shutdown lets go
//! of either for every descriptor sharing it.
//!
//! The bytes: a writer that finds a reader waiting on an empty pipe
//! copies straight into the reader's buffer, once, between the two
//! spaces; otherwise through the pipe's ring (Linux's capacity, counted
//! in pages as Linux counts them, so that programs see Linux's figures).
//! A read or write that must wait sleeps here, and gives up when its
//! process is asked to stop for a signal (the supervisor restarts or
//! fails it, as SA_RESTART says) or killed. A supervisor polling a pipe
//! asks for an event on its port at the pipe's next change (`watch`).
//!
//! Copies run under the pipe's lock through the spaces' own copy
//! (`VirtualSpace::copy_in`), which resolves demand-zero and copy-on-write
//! pages without sleeping; a page only a pager can bring is brought by
//! touching it first, outside the lock.

use super::file_cache::FileCache;
use super::mediator::{NO_IDS, Need, invoke, only};
use super::{KERNEL, Kind, ResId, ResTable, Resource, table};
use abi::linux::pipe::{CAPACITY, MAX_CAPACITY, PIPE_BUF, state};
use abi::{Error, ResInfo, ResOp};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use ipc::process::{self as proc, Process, Route};
use kcore::computation::{Computation, State as Run};
use kcore::mm::quota::Charge;
use kcore::sync::IrqMutex;
use kcore::uaccess::{MAX_COPY, UserRange};
use kcore::vm::space::SpaceRef;

const PAGE: usize = 4096;
const MAX_PAGES: usize = MAX_CAPACITY / PAGE;
/// The smallest ring a pipe makes.
const RING_MIN: usize = PAGE;
/// The highest descriptor number a table binds (its vector grows to it).
const MAX_FD: u64 = 1 << 16;
/// Writes of at most this many bytes are read from the writer's memory
/// into a buffer on the stack before the pipe's lock is taken.
const SMALL: usize = 64;
/// Supervisors watching one pipe at once.
const MAX_WATCHERS: usize = 64;

static TABLE: IrqMutex<ResTable<Arc<Pipe>>> = IrqMutex::new(table(Kind::Pipe));

pub struct Pipe {
    inner: IrqMutex<Inner>,
}

/// A reader waiting on an empty pipe, whose buffer a writer may fill.
struct Pending {
    comp: Arc<Computation>,
    pid: u64,
    /// Its space: its own while the read is pending (the reader cannot
    /// end before it takes the pipe's lock to withdraw it).
    space: SpaceRef,
    addr: u64,
    len: usize,
    /// Bytes a writer put there (then the read is over).
    got: Option<usize>,
}

struct Inner {
    id: ResId,
    /// The bytes, a ring of its length: made as bytes first come, as
    /// large as they need (a power of two, at least `RING_MIN`), up to the
    /// capacity; never shrunk. A pipe that carries a few bytes (a CGI
    /// program's answer) then never zeroes a ring of the whole capacity.
    ring: Vec<u8>,
    /// What a capacity raised by F_SETPIPE_SZ costs beyond the first.
    grown: Charge,
    /// The capacity charged so far: `CAPACITY`, or what F_SETPIPE_SZ raised it to.
    charged: usize,
    head: usize,
    held: usize,
    /// Bytes written into each page the pipe holds, oldest first (a ring
    /// of `MAX_PAGES`), as Linux fills its pages: a write joins the last
    /// page only if it fits there whole.
    pages: [u16; MAX_PAGES],
    first_page: usize,
    used_pages: usize,
    /// Bytes already read from the first page.
    read_in_first: usize,
    /// The capacity in pages.
    max_pages: usize,
    readers: u32,
    writers: u32,
    /// Computations waiting for a change; a change wakes them all.
    waiting: Vec<Arc<Computation>>,
    pending: Option<Pending>,
    /// (pid, port entry) of supervisors told of the next change.
    watchers: Vec<(u64, u64)>,
}

/// The watchers a change tells, once the pipe's lock is gone (a process
/// reference must not be dropped under it).
#[derive(Default)]
struct Wakes {
    watchers: Vec<(u64, u64)>,
}

impl Wakes {
    #[inline(always)]
    fn run(self) {
        // Nearly always no supervisor watches (it polls only when it must).
        if self.watchers.is_empty() {
            return;
        }
        self.tell();
    }

    #[inline(never)]
    fn tell(self) {
        for (pid, entry) in self.watchers {
            if let Some(p) = proc::get(pid)
                && let Some(c) = ipc::port::post_event(&p, entry)
            {
                sched::wake(&c);
            }
        }
    }
}

impl Inner {
    fn last_page(&self) -> Option<usize> {
        (self.used_pages > 0).then(|| (self.first_page + self.used_pages - 1) % MAX_PAGES)
    }

    /// Bytes a write of `len` would place now: all, or (a write above
    /// PIPE_BUF) what fits, or 0.
    fn room_for(&self, len: usize) -> usize {
        let free_pages = self.max_pages.saturating_sub(self.used_pages);
        let tail = len % PAGE;
        let merge = match self.last_page() {
            Some(l) if tail > 0 && self.pages[l] as usize + tail <= PAGE => tail,
            _ => 0,
        };
        if (len - merge).div_ceil(PAGE) <= free_pages {
            return len;
        }
        if len <= PIPE_BUF {
            return 0;
        }
        (merge + free_pages * PAGE).min(len)
    }

    /// Counts `len` bytes (as `room_for` allowed) into the pages.
    fn count_in(&mut self, mut len: usize) {
        let tail = len % PAGE;
        if let Some(l) = self.last_page()
            && tail > 0
            && self.pages[l] as usize + tail <= PAGE
        {
            self.pages[l] += tail as u16;
            len -= tail;
        }
        while len > 0 {
            let n = len.min(PAGE);
            let at = (self.first_page + self.used_pages) % MAX_PAGES;
            self.pages[at] = n as u16;
            self.used_pages += 1;
            len -= n;
        }
    }

    /// Takes `len` bytes (at most what it holds) out of the pages.
    fn count_out(&mut self, mut len: usize) {
        while len > 0 && self.used_pages > 0 {
            let left = self.pages[self.first_page] as usize - self.read_in_first;
            if len < left {
                self.read_in_first += len;
                return;
            }
            len -= left;
            self.first_page = (self.first_page + 1) % MAX_PAGES;
            self.used_pages -= 1;
            self.read_in_first = 0;
        }
    }

    /// The ring's pieces (start, length) of `len` bytes from ring index `at`.
    fn pieces(&self, at: usize, len: usize) -> [(usize, usize); 2] {
        let cap = self.ring.len();
        let first = len.min(cap - at);
        [(at, first), (0, len - first)]
    }

    /// Room in the ring for `len` bytes more than it holds: a larger ring
    /// (what it holds moved to its start) if they would not fit.
    fn ring_room(&mut self, len: usize) -> Result<(), Error> {
        let need = self.held + len;
        if need <= self.ring.len() {
            return Ok(());
        }
        let size = need.next_power_of_two().max(RING_MIN);
        let mut ring = Vec::new();
        ring.try_reserve_exact(size).map_err(|_| Error::NoMemory)?;
        for (at, n) in self.pieces(self.head, self.held) {
            ring.extend_from_slice(&self.ring[at..at + n]);
        }
        ring.resize(size, 0);
        self.ring = ring;
        self.head = 0;
        Ok(())
    }

    /// `n` bytes taken from the ring's start.
    fn advance(&mut self, n: usize) {
        if n > 0 {
            self.head = (self.head + n) % self.ring.len();
        }
    }

    /// `len` bytes of the writer's memory at `addr` onto the ring's end
    /// (the ring has room: `ring_room`).
    fn fill_from(&mut self, space: &SpaceRef, addr: u64, len: usize) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        let tail = (self.head + self.held) % self.ring.len();
        let mut s = space.lock();
        let mut done = 0;
        for (at, n) in self.pieces(tail, len) {
            if n > 0 {
                s.copy_out(addr + done as u64, &mut self.ring[at..at + n])
                    .map_err(|_| Error::Fault)?;
                done += n;
            }
        }
        drop(s);
        self.held += len;
        self.count_in(len);
        Ok(())
    }

    /// `data` (which `room_for` allowed) onto the ring's end (the ring
    /// has room: `ring_room`).
    fn fill_from_buf(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let tail = (self.head + self.held) % self.ring.len();
        let mut done = 0;
        for (at, n) in self.pieces(tail, data.len()) {
            self.ring[at..at + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        self.held += data.len();
        self.count_in(data.len());
    }

    /// The first `len` bytes into the reader's memory at `addr`, taken.
    fn drain_to(&mut self, space: &SpaceRef, addr: u64, len: usize) -> Result<(), Error> {
        self.copy_to(space, addr, len)?;
        self.advance(len);
        self.held -= len;
        self.count_out(len);
        Ok(())
    }

    /// The first `len` bytes into the reader's memory at `addr`, left
    /// there (MSG_PEEK).
    fn copy_to(&self, space: &SpaceRef, addr: u64, len: usize) -> Result<(), Error> {
        let mut s = space.lock();
        let mut done = 0;
        for (at, n) in self.pieces(self.head, len) {
            if n > 0 {
                s.copy_in(addr + done as u64, &self.ring[at..at + n])
                    .map_err(|_| Error::Fault)?;
                done += n;
            }
        }
        Ok(())
    }

    /// A change: every waiter is woken here, under the lock, as a futex
    /// wakes (a waiter blocks under it, so none is missed, and the list
    /// keeps its room); the watchers are told once the lock is gone.
    fn changed(&mut self) -> Wakes {
        if !self.waiting.is_empty() {
            for c in self.waiting.drain(..) {
                sched::wake(&c);
            }
        }
        if self.watchers.is_empty() {
            return Wakes::default();
        }
        Wakes {
            watchers: core::mem::take(&mut self.watchers),
        }
    }

    /// `me` stops waiting: out of the list, its pending read withdrawn.
    fn leave(&mut self, me: &Arc<Computation>) {
        // Listed once at most (`block`).
        if let Some(i) = self.waiting.iter().position(|c| Arc::ptr_eq(c, me)) {
            self.waiting.swap_remove(i);
        }
        if self.pending.as_ref().is_some_and(|p| Arc::ptr_eq(&p.comp, me)) {
            self.pending = None;
        }
    }

    /// Lists `me` among the waiting, then blocks it unless it is asked to
    /// stop meanwhile (its state's lock taken under the pipe's: a wake,
    /// which takes the pipe's first, cannot fall between).
    /// Returns whether it blocked (false: it must stop, and leave).
    fn block(&mut self, p: &Process, me: &Arc<Computation>) -> Result<bool, Fail> {
        if !self.waiting.iter().any(|c| Arc::ptr_eq(c, me)) {
            self.waiting.try_reserve(1).map_err(|_| Fail::NoMemory)?;
            self.waiting.push(me.clone());
        }
        let mut st = me.state.lock();
        if stopped(p, me) {
            return Ok(false);
        }
        *st = Run::Blocked;
        Ok(true)
    }

    fn state(&self) -> u64 {
        let mut w = self.held as u64 & state::HELD;
        if self.readers > 0 {
            w |= state::READERS;
        }
        if self.writers > 0 {
            w |= state::WRITERS;
        }
        if self.used_pages < self.max_pages {
            w |= state::ROOM;
        }
        w | (self.max_pages as u64) << state::PAGES_SHIFT
    }
}

/// Whether a wait of `me` (of process `p`) must end: a signal to take, or
/// the process killed.
fn stopped(p: &Process, me: &Computation) -> bool {
    p.is_killed() || me.killed() || p.attention_pending() || me.attention.load(Ordering::Acquire)
}

/// One open end of a pipe (Linux's open file description): descriptors
/// leading to it share it, in one process or across a fork.
pub struct End {
    pipe: Arc<Pipe>,
    write: bool,
    nonblock: AtomicBool,
}

impl End {
    fn new(pipe: &Arc<Pipe>, write: bool, nonblock: bool) -> End {
        End {
            pipe: pipe.clone(),
            write,
            nonblock: AtomicBool::new(nonblock),
        }
    }

    pub fn is_write(&self) -> bool {
        self.write
    }

    fn nonblock(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }
}

impl Drop for End {
    fn drop(&mut self) {
        let (wakes, last) = {
            let mut g = self.pipe.inner.lock();
            if self.write {
                g.writers -= 1;
            } else {
                g.readers -= 1;
            }
            let last = (g.readers == 0 && g.writers == 0).then_some(g.id);
            (g.changed(), last)
        };
        wakes.run();
        if let Some(id) = last {
            let gone = TABLE.lock().remove(id);
            drop(gone);
        }
    }
}

/// Why a read or write did not move bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// It would wait and may not (EAGAIN).
    Again,
    /// Asked to stop for a signal, or killed (restarted or EINTR).
    Interrupted,
    /// A buffer is not the caller's memory (EFAULT).
    Fault,
    /// No read end is left (EPIPE, and SIGPIPE: the supervisor's).
    NoReaders,
    /// The wrong end (EBADF).
    WrongEnd,
    /// No room to list a waiter (ENOMEM).
    NoMemory,
}

/// Brings each page of `len` bytes at `addr` of the current process in
/// (a page of a file needs its pager, which cannot be asked under a lock).
fn touch(addr: u64, len: usize) -> Result<(), Fail> {
    let end = addr.saturating_add(len as u64);
    let mut at = addr;
    while at < end {
        let mut b = [0u8; 1];
        UserRange::new(at, 1)
            .and_then(|r| r.read(&mut b))
            .map_err(|_| Fail::Fault)?;
        at = (at & !(PAGE as u64 - 1)) + PAGE as u64;
    }
    Ok(())
}

fn context(p: &Process, addr: u64, len: usize) -> Result<(SpaceRef, Arc<Computation>), Fail> {
    UserRange::new(addr, len).map_err(|_| Fail::Fault)?;
    let space = p.space().ok_or(Fail::Fault)?;
    let me = sched::current().ok_or(Fail::Interrupted)?;
    Ok((space, me))
}

/// `read` of `len` bytes into `addr` by the current computation of `p`
/// through `end`: what is there, or (unless it may not wait) the first
/// bytes a writer brings; 0 at the end of the data when no writer is
/// left.
pub fn read(p: &Process, end: &End, addr: u64, len: usize, may_wait: bool) -> Result<usize, Fail> {
    take(p, end, (addr, len), may_wait, false)
}

/// A `read` that leaves the bytes in the pipe (a stream socket's
/// MSG_PEEK): a writer never copies into its buffer.
pub fn peek(p: &Process, end: &End, addr: u64, len: usize, may_wait: bool) -> Result<usize, Fail> {
    take(p, end, (addr, len), may_wait, true)
}

#[inline(always)]
fn take(p: &Process, end: &End, (addr, len): (u64, usize), may_wait: bool, peek: bool) -> Result<usize, Fail> {
    if end.write {
        return Err(Fail::WrongEnd);
    }
    // At most what one copy may move: a read may return short.
    let len = len.min(MAX_COPY);
    if len == 0 {
        return Ok(0);
    }
    let (space, me) = context(p, addr, len)?;
    let mut touched = false;
    // Whether it blocked, and so may be listed (leaving costs a look).
    let mut waited = false;
    loop {
        let wakes;
        {
            let mut g = end.pipe.inner.lock();
            let mine = waited && g.pending.as_ref().is_some_and(|w| Arc::ptr_eq(&w.comp, &me));
            if mine && let Some(got) = g.pending.as_ref().and_then(|w| w.got) {
                if waited {
                    g.leave(&me);
                }
                return Ok(got);
            }
            if g.held > 0 {
                if waited {
                    g.leave(&me);
                }
                let n = len.min(g.held);
                let copied = match peek {
                    false => g.drain_to(&space, addr, n),
                    true => g.copy_to(&space, addr, n),
                };
                match copied {
                    Ok(()) if peek => wakes = Wakes::default(),
                    Ok(()) => wakes = g.changed(),
                    Err(_) if !touched => {
                        drop(g);
                        touch(addr, n)?;
                        touched = true;
                        continue;
                    }
                    Err(_) => return Err(Fail::Fault),
                }
                drop(g);
                wakes.run();
                return Ok(n);
            }
            if g.writers == 0 {
                if waited {
                    g.leave(&me);
                }
                return Ok(0);
            }
            if !may_wait || end.nonblock() {
                if waited {
                    g.leave(&me);
                }
                return Err(Fail::Again);
            }
            if g.pending.is_none() && !peek {
                g.pending = Some(Pending {
                    comp: me.clone(),
                    pid: p.pid(),
                    space: space.clone(),
                    addr,
                    len,
                    got: None,
                });
            }
            match g.block(p, &me) {
                Ok(true) => waited = true,
                Ok(false) => {
                    g.leave(&me);
                    return Err(Fail::Interrupted);
                }
                Err(e) => {
                    g.leave(&me);
                    return Err(e);
                }
            }
        }
        sched::schedule();
    }
}

/// Up to `len` bytes of `end`'s pipe dropped, never waiting: the bytes
/// dropped (0: empty and no writer left; Again: empty).
pub fn drop_bytes(end: &End, len: usize) -> Result<usize, Fail> {
    if end.write {
        return Err(Fail::WrongEnd);
    }
    let mut g = end.pipe.inner.lock();
    if g.held == 0 {
        return if g.writers == 0 { Ok(0) } else { Err(Fail::Again) };
    }
    let n = len.min(g.held);
    g.advance(n);
    g.held -= n;
    g.count_out(n);
    let w = g.changed();
    drop(g);
    w.run();
    Ok(n)
}

/// `write` of `len` bytes at `addr` by the current computation of `p`
/// through `end`: all of them unless it may not wait (then what fits; a
/// write of at most PIPE_BUF bytes goes whole or not at all), or it is
/// interrupted after some went.
pub fn write(p: &Process, end: &End, addr: u64, len: usize, may_wait: bool) -> Result<usize, Fail> {
    if !end.write {
        return Err(Fail::WrongEnd);
    }
    // In parts of at most what one copy may move.
    let mut done = 0;
    while done < len {
        let n = (len - done).min(MAX_COPY);
        match write_part(p, end, addr + done as u64, n, may_wait) {
            Ok(k) => {
                done += k;
                if k < n {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

fn write_part(p: &Process, end: &End, addr: u64, len: usize, may_wait: bool) -> Result<usize, Fail> {
    UserRange::new(addr, len).map_err(|_| Fail::Fault)?;
    // The writing computation, looked up only if it is to wait.
    let mut me: Option<Arc<Computation>> = None;
    // A short write is read from the writer's memory first, before any
    // lock (a bad pointer fails it with nothing moved): under the lock
    // only the reader's memory is walked.
    let mut small = [0u8; SMALL];
    let pre = len <= SMALL;
    if pre {
        UserRange::new(addr, len)
            .and_then(|r| r.read(&mut small[..len]))
            .map_err(|_| Fail::Fault)?;
    }
    let small = pre.then(|| &small[..len]);
    // A longer one is copied from its space under the lock.
    let space = match pre {
        true => None,
        false => Some(p.space().ok_or(Fail::Fault)?),
    };
    let mut done = 0;
    let mut touched = false;
    let mut waited = false;
    loop {
        let mut wakes = Wakes::default();
        {
            let mut g = end.pipe.inner.lock();
            if g.readers == 0 {
                if let Some(me) = me.as_ref().filter(|_| waited) {
                    g.leave(me);
                }
                return if done > 0 { Ok(done) } else { Err(Fail::NoReaders) };
            }
            let before = done;
            done += direct(&mut g, (p.pid(), space.as_ref()), (addr, small), done, len);
            let left = len - done;
            if left > 0 {
                let room = g.room_for(left);
                if room > 0 && (len > PIPE_BUF || room == left) {
                    if g.ring_room(room).is_err() {
                        if let Some(me) = me.as_ref().filter(|_| waited) {
                            g.leave(me);
                        }
                        let w = g.changed();
                        drop(g);
                        w.run();
                        wakes.run();
                        return if done > 0 { Ok(done) } else { Err(Fail::NoMemory) };
                    }
                    let filled = match (small, &space) {
                        (Some(b), _) => {
                            g.fill_from_buf(&b[done..done + room]);
                            Ok(())
                        }
                        (None, Some(s)) => g.fill_from(s, addr + done as u64, room),
                        (None, None) => Err(Error::Fault),
                    };
                    match filled {
                        Ok(()) => done += room,
                        Err(_) if !touched && done == before => {
                            drop(g);
                            touch(addr + done as u64, room)?;
                            touched = true;
                            continue;
                        }
                        Err(_) => {
                            let w = g.changed();
                            drop(g);
                            w.run();
                            wakes.run();
                            return if done > 0 { Ok(done) } else { Err(Fail::Fault) };
                        }
                    }
                }
            }
            if done > before {
                wakes = g.changed();
            }
            let over = if done == len {
                Some(Ok(done))
            } else if !may_wait || end.nonblock() {
                Some(if done > 0 { Ok(done) } else { Err(Fail::Again) })
            } else {
                if me.is_none() {
                    me = sched::current();
                }
                waited = true;
                match me.as_ref().map(|m| g.block(p, m)) {
                    Some(Ok(true)) => None,
                    Some(Err(e)) => Some(Err(e)),
                    _ => Some(if done > 0 { Ok(done) } else { Err(Fail::Interrupted) }),
                }
            };
            if let Some(r) = over {
                if let Some(me) = me.as_ref().filter(|_| waited) {
                    g.leave(me);
                }
                drop(g);
                wakes.run();
                return r;
            }
        }
        wakes.run();
        sched::schedule();
    }
}

/// Straight into a reader waiting on the empty pipe, if one is and is in
/// another space: up to what it asked of what is left of a write of
/// `total` bytes at `addr` (already read into `small` if short), `done`
/// of them gone; one of at most PIPE_BUF bytes stays whole. Returns the
/// bytes moved; a copy that fails leaves the bytes to the ring, from
/// which the reader copies them itself.
fn direct(
    g: &mut Inner,
    (pid, space): (u64, Option<&SpaceRef>),
    (addr, small): (u64, Option<&[u8]>),
    done: usize,
    total: usize,
) -> usize {
    let left = total - done;
    let addr = addr + done as u64;
    if g.held > 0 {
        return 0;
    }
    let Some(w) = g.pending.as_ref() else { return 0 };
    if w.got.is_some() || w.pid == pid || space.is_some_and(|s| Arc::ptr_eq(s, &w.space)) {
        return 0;
    }
    let n = left.min(w.len);
    if total <= PIPE_BUF && n < left && g.room_for(left - n) < left - n {
        return 0;
    }
    let copied = if let Some(b) = small {
        // Read already: the reader's space is walked, no process looked up.
        w.space.lock().copy_in(w.addr, &b[done..done + n]).is_ok()
    } else {
        match (UserRange::new(addr, n), UserRange::new(w.addr, n)) {
            (Ok(from), Ok(to)) => proc::copy_between((pid, from), (w.pid, to), n).is_ok(),
            _ => false,
        }
    };
    if !copied {
        return 0;
    }
    // The reader is among the waiting (it blocked with its read
    // pending): the change wakes it.
    if let Some(w) = g.pending.as_mut() {
        w.got = Some(n);
    }
    n
}

// ---- the tables of kernel-served descriptors ----

/// One end of an AF_UNIX stream socket pair (its open file description):
/// the read end of the pipe it reads and the write end of the pipe its
/// peer reads, each until shut down. It alone holds those ends, so that
/// letting go of one closes it: the peer reads EOF, or writes EPIPE.
pub struct SockEnd {
    sides: IrqMutex<[Option<Arc<End>>; 2]>,
    nonblock: AtomicBool,
}

impl SockEnd {
    /// The end it reads (`write` false) or writes, unless shut down.
    pub fn side(&self, write: bool) -> Option<Arc<End>> {
        self.sides.lock()[write as usize].clone()
    }
}

/// What a kernel-served descriptor leads to.
#[derive(Clone)]
pub enum Served {
    /// An end of a kernel pipe: read, write, readv and writev.
    Pipe(Arc<End>),
    /// An end of an AF_UNIX stream socket pair: the same, and sendto and
    /// recvfrom with no address and no flags.
    Sock(Arc<SockEnd>),
    /// A regular file's kernel cache (`file_cache`), which its file server
    /// granted the supervisor: a pread64 it holds every page of, and with
    /// `true` (`FILE_STAT`), fstat while it holds the file's attributes.
    File(Arc<FileCache>, bool),
}

/// A Linux process's kernel-served descriptors.
struct Bound {
    pid: u64,
    /// Its route (supervisor, Linux pid): an exec's new process finds the
    /// table of the old by it.
    route: (u64, u64),
    fds: Vec<Option<Served>>,
    /// The numbers marked close-on-exec, a bit each (a bit past the end,
    /// or of an empty number, means nothing).
    cloexec: Vec<u64>,
    /// An exec's close-on-exec descriptors: out of the new program's
    /// reach from its first instruction, but held until its supervisor
    /// closes them (`CLOSE`) after telling the shared server of the exec,
    /// so that whoever waits for such a pipe's end to close sees the exec
    /// done, as on Linux.
    closing: Vec<(u64, Served)>,
}

impl Bound {
    fn new(p: &Process) -> Bound {
        Bound {
            pid: p.pid(),
            route: route_of(p),
            fds: Vec::new(),
            cloexec: Vec::new(),
            closing: Vec::new(),
        }
    }

    fn is_cloexec(&self, fd: usize) -> bool {
        self.cloexec.get(fd / 64).is_some_and(|w| w & (1 << (fd % 64)) != 0)
    }

    fn set_cloexec(&mut self, fd: usize, on: bool) -> Result<(), Error> {
        let i = fd / 64;
        if self.cloexec.len() <= i {
            if !on {
                return Ok(());
            }
            self.cloexec
                .try_reserve(i + 1 - self.cloexec.len())
                .map_err(|_| Error::NoMemory)?;
            self.cloexec.resize(i + 1, 0);
        }
        let bit = 1 << (fd % 64);
        if on {
            self.cloexec[i] |= bit;
        } else {
            self.cloexec[i] &= !bit;
        }
        Ok(())
    }
}

static BOUND: IrqMutex<Vec<Bound>> = IrqMutex::new(Vec::new());

fn route_of(p: &Process) -> (u64, u64) {
    match p.route() {
        Route::Linux { supervisor, pid } => (supervisor, pid),
        Route::Native => (0, 0),
    }
}

/// What descriptor `fd` of process `pid` is bound to (the read and
/// write calls' look-up).
#[inline]
pub fn bound(pid: u64, fd: u64) -> Option<Served> {
    let b = BOUND.lock();
    let t = b.iter().find(|t| t.pid == pid)?;
    t.fds.get(usize::try_from(fd).ok()?)?.clone()
}

/// The table of `p`, made if it has none.
fn table_of<'a>(b: &'a mut Vec<Bound>, p: &Process) -> Result<&'a mut Bound, Error> {
    let i = match b.iter().position(|t| t.pid == p.pid()) {
        Some(i) => i,
        None => {
            b.try_reserve(1).map_err(|_| Error::NoMemory)?;
            b.push(Bound::new(p));
            b.len() - 1
        }
    };
    Ok(&mut b[i])
}

/// Binds `end` at `fd` of `p`, close-on-exec if `cloexec`; returns what
/// was there (to be dropped with no table lock held).
fn bind(p: &Process, fd: u64, end: Served, cloexec: bool) -> Result<Option<Served>, Error> {
    if fd >= MAX_FD {
        return Err(Error::Invalid);
    }
    let mut b = BOUND.lock();
    let t = table_of(&mut b, p)?;
    let i = fd as usize;
    if t.fds.len() <= i {
        t.fds.try_reserve(i + 1 - t.fds.len()).map_err(|_| Error::NoMemory)?;
        t.fds.resize(i + 1, None);
    }
    t.set_cloexec(i, cloexec)?;
    Ok(t.fds[i].replace(end))
}

/// The end of a pipe descriptor `fd` of `pid` reads (`write` false) or
/// writes: a pipe's end of that direction, or a socket's side (NotFound:
/// not bound; Invalid: the other end of a pipe; Deadlock: a socket's
/// side shut down, which reads as the end of the data and writes as
/// EPIPE).
pub fn side_at(pid: u64, fd: u64, write: bool) -> Result<Arc<End>, Error> {
    match bound(pid, fd) {
        Some(Served::Pipe(end)) if end.write == write => Ok(end),
        Some(Served::Pipe(_)) => Err(Error::Invalid),
        Some(Served::Sock(s)) => s.side(write).ok_or(Error::Deadlock),
        _ => Err(Error::NotFound),
    }
}

fn end_at(pid: u64, fd: u64) -> Result<Arc<End>, Error> {
    match bound(pid, fd) {
        Some(Served::Pipe(end)) => Ok(end),
        _ => Err(Error::NotFound),
    }
}

/// `linux_pipe(CREATE)`: a pipe for Linux process `p` (charged to it),
/// its ends bound at `rfd` and `wfd`.
pub fn create(p: &Process, rfd: u64, wfd: u64, nonblock: bool, cloexec: bool) -> Result<ResId, Error> {
    if rfd == wfd || rfd >= MAX_FD || wfd >= MAX_FD {
        return Err(Error::Invalid);
    }
    invoke(p.pid(), ResOp::CreatePipe, NO_IDS, || {
        let pipe = make(p.pid())?;
        let id = pipe.inner.lock().id;
        let (r, w) = (new_end(&pipe, false, nonblock), new_end(&pipe, true, nonblock));
        drop(pipe);
        // On a failure the ends go, and the pipe with them.
        bind_two(p, (rfd, Served::Pipe(r?)), (wfd, Served::Pipe(w?)), cloexec)?;
        Ok(id)
    })
}

/// An end of `pipe` (its writing end if `write`), charged to the kernel
/// heap's room: running out is NoMemory.
fn new_end(pipe: &Arc<Pipe>, write: bool, nonblock: bool) -> Result<Arc<End>, Error> {
    kcore::mm::heap::try_arc(End::new(pipe, write, nonblock)).map_err(|_| Error::NoMemory)
}

/// Binds the two ends a pipe or a socket pair was made with, both or
/// neither: if the second cannot be bound, the first is unbound again.
fn bind_two(p: &Process, a: (u64, Served), b: (u64, Served), cloexec: bool) -> Result<(), Error> {
    let first = a.0;
    let old_a = bind(p, a.0, a.1, cloexec)?;
    let old_b = bind(p, b.0, b.1, cloexec);
    drop(old_a);
    if old_b.is_err() {
        let _ = unbind(p.pid(), first);
    }
    drop(old_b?);
    Ok(())
}

/// `linux_pipe(SOCKPAIR)`: two pipes for Linux process `p` (charged to
/// it as pipes are), the ends of a stream socket pair bound at `fa` and
/// `fb`: `fa`'s reads the first and writes the second, `fb`'s the reverse;
/// both close-on-exec if `cloexec`.
pub fn sockpair(p: &Process, fa: u64, fb: u64, nonblock: bool, cloexec: bool) -> Result<ResId, Error> {
    if fa == fb || fa >= MAX_FD || fb >= MAX_FD {
        return Err(Error::Invalid);
    }
    invoke(p.pid(), ResOp::CreatePipe, NO_IDS, || {
        let one = make(p.pid())?;
        let two = make(p.pid())?;
        let id = one.inner.lock().id;
        let end = |rx: &Arc<Pipe>, tx: &Arc<Pipe>| {
            let sides = [new_end(rx, false, nonblock)?, new_end(tx, true, nonblock)?];
            kcore::mm::heap::try_arc(SockEnd {
                sides: IrqMutex::new(sides.map(Some)),
                nonblock: AtomicBool::new(nonblock),
            })
            .map_err(|_| Error::NoMemory)
        };
        // Each pipe counts one reader and one writer from its making, the
        // ends made here; a socket end that fails drops its two, and so
        // each pipe goes with the last of them.
        let a = end(&one, &two);
        let b = end(&two, &one);
        drop((one, two));
        bind_two(p, (fa, Served::Sock(a?)), (fb, Served::Sock(b?)), cloexec)?;
        Ok(id)
    })
}

fn sock_at(pid: u64, fd: u64) -> Result<Arc<SockEnd>, Error> {
    match bound(pid, fd) {
        Some(Served::Sock(s)) => Ok(s),
        _ => Err(Error::NotFound),
    }
}

/// `linux_pipe(SHUTDOWN)`: `how` 0 lets go of the pipe `fd`'s socket end
/// reads, 1 of the one it writes, 2 of both.
pub fn shutdown(p: &Process, fd: u64, how: u64) -> Result<(), Error> {
    if how > 2 {
        return Err(Error::Invalid);
    }
    invoke(p.pid(), ResOp::PipeControl, NO_IDS, || {
        let s = sock_at(p.pid(), fd)?;
        let gone = {
            let mut g = s.sides.lock();
            let rx = if how != 1 { g[0].take() } else { None };
            let tx = if how != 0 { g[1].take() } else { None };
            (rx, tx)
        };
        // The ends close (and wake) with no lock held.
        drop(gone);
        Ok(())
    })
}

fn make(owner: u64) -> Result<Arc<Pipe>, Error> {
    // Charged for the whole capacity, which its ring may grow to.
    let charge = super::charge(owner, super::cost::<Arc<Pipe>>((size_of::<Pipe>() + CAPACITY) as u64))?;
    let pipe = kcore::mm::heap::try_arc(Pipe {
        inner: IrqMutex::new(Inner {
            id: ResId::NONE,
            ring: Vec::new(),
            grown: Charge::NONE,
            charged: CAPACITY,
            head: 0,
            held: 0,
            pages: [0; MAX_PAGES],
            first_page: 0,
            used_pages: 0,
            read_in_first: 0,
            max_pages: CAPACITY / PAGE,
            readers: 1,
            writers: 1,
            waiting: Vec::new(),
            pending: None,
            watchers: Vec::new(),
        }),
    })
    .map_err(|_| Error::NoMemory)?;
    let id = super::insert_charged(&mut TABLE.lock(), owner, charge, pipe.clone())?;
    pipe.inner.lock().id = id;
    Ok(pipe)
}

/// The bytes pipe `id` holds (for its maker or the kernel to ask).
pub fn held(caller: u64, id: ResId) -> Result<u64, Error> {
    invoke(caller, ResOp::PipeControl, only(id, Need::Owned(Kind::Pipe)), || {
        let pipe = TABLE.lock().get(id).map_err(super::id_error)?.value.clone();
        let n = pipe.inner.lock().held as u64;
        Ok(n)
    })
}

/// `linux_pipe(DUP)`: `to` leads where `from` does, close-on-exec if
/// `cloexec`.
pub fn dup(p: &Process, from: u64, to: u64, cloexec: bool) -> Result<(), Error> {
    invoke(p.pid(), ResOp::PipeBind, NO_IDS, || {
        let end = bound(p.pid(), from).ok_or(Error::NotFound)?;
        drop(bind(p, to, end, cloexec)?);
        Ok(())
    })
}

/// `linux_pipe(BIND_FILE)`: descriptor `fd` of `p` leads to a regular
/// file whose cache is `cache` (what was there goes), close-on-exec if
/// `cloexec`; its fstat is served from the cache's attributes if `stat`.
pub fn bind_file(p: &Process, fd: u64, cache: Arc<FileCache>, stat: bool, cloexec: bool) -> Result<(), Error> {
    invoke(p.pid(), ResOp::PipeBind, NO_IDS, || {
        drop(bind(p, fd, Served::File(cache, stat), cloexec)?);
        Ok(())
    })
}

/// `linux_pipe(SETFD)`: descriptor `fd` of `p` becomes close-on-exec or
/// not (F_SETFD).
pub fn set_cloexec(p: &Process, fd: u64, on: bool) -> Result<(), Error> {
    invoke(p.pid(), ResOp::PipeBind, NO_IDS, || {
        let mut b = BOUND.lock();
        let t = b.iter_mut().find(|t| t.pid == p.pid()).ok_or(Error::NotFound)?;
        let i = usize::try_from(fd).map_err(|_| Error::NotFound)?;
        if t.fds.get(i).is_none_or(Option::is_none) {
            return Err(Error::NotFound);
        }
        t.set_cloexec(i, on)
    })
}

fn unbind(pid: u64, fd: u64) -> Result<Served, Error> {
    let mut b = BOUND.lock();
    let t = b.iter_mut().find(|t| t.pid == pid).ok_or(Error::NotFound)?;
    let end = usize::try_from(fd)
        .ok()
        .and_then(|i| t.fds.get_mut(i))
        .and_then(Option::take);
    let end = match end {
        Some(end) => end,
        // An exec's close-on-exec descriptor, closed by the supervisor.
        None => match t.closing.iter().position(|(n, _)| *n == fd) {
            Some(i) => t.closing.swap_remove(i).1,
            None => return Err(Error::NotFound),
        },
    };
    while t.fds.last().is_some_and(Option::is_none) {
        t.fds.pop();
    }
    Ok(end)
}

/// `linux_pipe(CLOSE)`.
pub fn close(p: &Process, fd: u64) -> Result<(), Error> {
    invoke(p.pid(), ResOp::PipeBind, NO_IDS, || unbind(p.pid(), fd).map(drop))
}

/// `linux_pipe(SETFL)`: a socket's both ends too.
pub fn set_nonblock(p: &Process, fd: u64, on: bool) -> Result<(), Error> {
    invoke(p.pid(), ResOp::PipeControl, NO_IDS, || {
        match bound(p.pid(), fd) {
            Some(Served::Pipe(end)) => end.nonblock.store(on, Ordering::Relaxed),
            Some(Served::Sock(s)) => {
                s.nonblock.store(on, Ordering::Relaxed);
                for end in s.sides.lock().iter().flatten() {
                    end.nonblock.store(on, Ordering::Relaxed);
                }
            }
            _ => return Err(Error::NotFound),
        }
        Ok(())
    })
}

/// `linux_pipe(STATE)`; of a socket's end, of the pipe it reads (`side`
/// 0) or writes (1).
pub fn state_of(p: &Process, fd: u64, side: u64) -> Result<u64, Error> {
    let (end, nonblock) = match bound(p.pid(), fd) {
        Some(Served::Pipe(end)) => {
            let nb = end.nonblock();
            (end, nb)
        }
        Some(Served::Sock(s)) if side <= 1 => {
            let nb = s.nonblock.load(Ordering::Relaxed);
            let flag = if nb { state::NONBLOCK } else { 0 };
            match s.side(side == 1) {
                Some(end) => (end, nb),
                None => return Ok(state::SHUT | flag),
            }
        }
        Some(Served::Sock(_)) => return Err(Error::Invalid),
        _ => return Err(Error::NotFound),
    };
    let mut w = end.pipe.inner.lock().state();
    if end.write {
        w |= state::WRITE_END;
    }
    if nonblock {
        w |= state::NONBLOCK;
    }
    Ok(w)
}

/// `linux_pipe(ID)`: of a socket's end, its pair's first pipe (the same
/// from either end).
pub fn id_of(p: &Process, fd: u64) -> Result<u64, Error> {
    match bound(p.pid(), fd) {
        Some(Served::Pipe(end)) => Ok(end.pipe.inner.lock().id.raw()),
        Some(Served::Sock(s)) => {
            // The sides copied out first: no pipe's lock is taken under
            // the socket's, and nothing is allocated.
            let sides = s.sides.lock().clone();
            sides
                .iter()
                .flatten()
                .map(|e| e.pipe.inner.lock().id.raw())
                .min()
                .ok_or(Error::NotFound)
        }
        _ => Err(Error::NotFound),
    }
}

/// `linux_pipe(WATCH)`: `watcher` gets an event on its port's `entry` at
/// the next change of `fd`'s pipe (of either pipe of a socket's end).
pub fn watch(p: &Process, fd: u64, watcher: u64, entry: u64) -> Result<(), Error> {
    if entry >= 61 {
        return Err(Error::Invalid);
    }
    invoke(p.pid(), ResOp::PipeControl, NO_IDS, || {
        let ends: [Option<Arc<End>>; 2] = match bound(p.pid(), fd) {
            Some(Served::Pipe(end)) => [Some(end), None],
            Some(Served::Sock(s)) => s.sides.lock().clone(),
            _ => return Err(Error::NotFound),
        };
        for end in ends.iter().flatten() {
            let mut g = end.pipe.inner.lock();
            if g.watchers.contains(&(watcher, entry)) {
                continue;
            }
            if g.watchers.len() >= MAX_WATCHERS {
                return Err(Error::Limit);
            }
            g.watchers.try_reserve(1).map_err(|_| Error::NoMemory)?;
            g.watchers.push((watcher, entry));
        }
        Ok(())
    })
}

/// `linux_pipe(RESIZE)` (F_SETPIPE_SZ): the capacity becomes `size`
/// rounded up to a power of two pages, at least one. Invalid beyond
/// 2^31, Denied beyond the most, Busy if what it holds would not fit.
/// A larger ring is charged to `p`.
pub fn resize(p: &Process, fd: u64, size: u64) -> Result<u64, Error> {
    invoke(p.pid(), ResOp::PipeControl, NO_IDS, || {
        if size > 1 << 31 {
            return Err(Error::Invalid);
        }
        let bytes = (size as usize).max(PAGE).next_power_of_two();
        if bytes > MAX_CAPACITY {
            return Err(Error::Denied);
        }
        let end = end_at(p.pid(), fd)?;
        let mut g = end.pipe.inner.lock();
        if bytes / PAGE < g.used_pages {
            return Err(Error::Busy);
        }
        // The ring grows as bytes come; the capacity is charged now.
        if bytes > g.charged {
            g.grown = super::charge(p.pid(), (bytes - CAPACITY) as u64)?;
            g.charged = bytes;
        }
        g.max_pages = bytes / PAGE;
        let w = g.changed();
        drop(g);
        w.run();
        Ok(bytes as u64)
    })
}

/// Fork: the child's table is a copy of the parent's (the same ends,
/// close-on-exec marks included).
pub fn inherit(parent: &Process, child: &Process) -> Result<(), Error> {
    copy_table(parent.pid(), child, false)
}

/// Exec: a Linux process's new program (a new Tessera process on the same
/// route) keeps its descriptors but the close-on-exec ones, which it can
/// never reach: they are only held (`Bound::closing`) until its
/// supervisor closes them, before the process runs on.
pub fn inherit_exec(child: &Process) -> Result<(), Error> {
    let route = route_of(child);
    let from = BOUND
        .lock()
        .iter()
        .find(|t| t.route == route && t.pid != child.pid())
        .map(|t| t.pid);
    match from {
        Some(pid) => copy_table(pid, child, true),
        None => Ok(()),
    }
}

/// `child`'s table becomes a copy of `from`'s; for an exec (`exec`), its
/// close-on-exec numbers are held aside, not bound.
fn copy_table(from: u64, child: &Process, exec: bool) -> Result<(), Error> {
    let mut b = BOUND.lock();
    let Some(t) = b.iter().find(|t| t.pid == from) else {
        return Ok(());
    };
    let mut new = Bound::new(child);
    new.fds.try_reserve_exact(t.fds.len()).map_err(|_| Error::NoMemory)?;
    if exec {
        let held = t
            .fds
            .iter()
            .enumerate()
            .filter(|(i, s)| s.is_some() && t.is_cloexec(*i))
            .count();
        new.closing.try_reserve_exact(held).map_err(|_| Error::NoMemory)?;
        for (i, s) in t.fds.iter().enumerate() {
            match s {
                Some(s) if t.is_cloexec(i) => {
                    new.closing.push((i as u64, s.clone()));
                    new.fds.push(None);
                }
                s => new.fds.push(s.clone()),
            }
        }
        while new.fds.last().is_some_and(Option::is_none) {
            new.fds.pop();
        }
    } else {
        new.fds.extend(t.fds.iter().cloned());
        new.cloexec
            .try_reserve_exact(t.cloexec.len())
            .map_err(|_| Error::NoMemory)?;
        new.cloexec.extend_from_slice(&t.cloexec);
    }
    b.try_reserve(1).map_err(|_| Error::NoMemory)?;
    let old = b.iter().position(|t| t.pid == child.pid()).map(|i| b.swap_remove(i));
    b.push(new);
    drop(b);
    drop(old);
    Ok(())
}

/// The end of process `pid`: its descriptors close.
pub fn release_bindings(pid: u64) {
    let gone = {
        let mut b = BOUND.lock();
        b.iter().position(|t| t.pid == pid).map(|i| b.swap_remove(i))
    };
    drop(gone);
}

/// Descriptors bound in all tables (leak checks).
pub fn bindings() -> usize {
    BOUND
        .lock()
        .iter()
        .map(|t| t.fds.iter().flatten().count() + t.closing.len())
        .sum()
}

pub struct Pipes;

impl Resource for Pipes {
    table_methods!(TABLE);

    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |p| {
            let g = p.inner.lock();
            // Its capacity, not its ring, which grows as bytes come.
            ((g.max_pages * PAGE) as u64, g.held as u64, [ResId::NONE; 3])
        })
    }

    /// A pipe goes with its last end, not on request.
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        super::check_in(&TABLE.lock(), id, caller, true)?;
        Err(Error::Busy)
    }

    /// The maker's pipes its children still hold become the kernel's.
    fn release_owned_by(&self, pid: u64) {
        let mut t = TABLE.lock();
        let mut from = 0;
        while let Some(id) = t.find_from(from, |e| e.owner == pid) {
            super::give(&mut t, id, KERNEL);
            from = id.index() + 1;
        }
    }
}
