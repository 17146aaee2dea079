//! Objects Linux processes share through their descriptors: pipes, the
//! terminal, and the positions of open files whose descriptors went to a
//! child. Each counts the processes that hold it; a pipe's end with no
//! holder left gives its reader an end of file, its writer EPIPE.
//!
//! Reads and writes that may wait are passed here by the supervisors; the
//! data goes once between the pipe's buffer (or the terminal's line) and
//! the waiting process's memory.

use super::{End, Held, Shared, Waiting, reply, result};
use crate::proto::{self, obj, pass, word};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::pipe::Pipe;
use linuxabi::signal as sig;
use linuxabi::termios::{self as tio, Ldisc, Termios, WinSize};
use tessera_rt::abi::AccInfo;
use tessera_rt::sys;
use tessera_rt::sys::calls;

const O_NONBLOCK: u64 = 0o4000;

/// poll's event bits.
pub const POLLIN: u64 = 1;
pub const POLLOUT: u64 = 4;
pub const POLLERR: u64 = 8;
pub const POLLHUP: u64 = 0x10;

pub struct Object {
    pub kind: u64,
    pub refs: u32,
    /// Status flags shared by every descriptor of it (O_NONBLOCK, O_APPEND).
    pub flags: u64,
    /// A pipe end's pipe.
    pub pipe: u64,
    /// A shared file's position.
    pub pos: u64,
}

pub struct Tty {
    pub ldisc: Ldisc,
    /// The session it controls, and its foreground process group.
    pub session: u32,
    pub fg_pgrp: u32,
    pub winsize: WinSize,
}

/// A poll that waits: its supervisor is told when one of its objects is
/// ready, or at its deadline.
pub struct PollWait {
    pub pid: u32,
    pub sup: u64,
    pub token: u64,
    pub objs: Vec<(u64, u64)>,
    pub deadline: u64,
}

pub struct Objects {
    objs: BTreeMap<u64, Object>,
    pipes: BTreeMap<u64, Pipe>,
    next: u64,
    pub tty: Tty,
    pub polls: Vec<PollWait>,
    next_token: u64,
    /// eventfd objects' counts (`eventfd.rs`).
    pub(super) counters: BTreeMap<u64, linuxabi::eventfd::Counter>,
    /// AF_UNIX names and listeners (`unix.rs`).
    pub(super) unix: super::unix::Names,
    /// flock's locks: (device, inode) → (the description's object, exclusive).
    flocks: BTreeMap<(u64, u64), Vec<(u64, bool)>>,
    /// Shared files' positions taken for a read or write: object → the
    /// supervisor holding it and the calls waiting their turn. Linux
    /// serializes these on the description (f_pos_lock), so two processes
    /// writing through one description never write at the same offset.
    pos_holds: BTreeMap<u64, PosHold>,
    /// Named FIFOs: pipe → what it is the pipe of. Their pipes live here,
    /// not in the kernel, for a FIFO is joined by name by processes with
    /// no common parent, and read and written through one description
    /// (O_RDWR): a kernel pipe's ends are bound once, in the process that
    /// made it, each one way. A FIFO end's object keeps in `pos` the other
    /// side's `opened` count when it opened (Linux's f_version).
    fifos: BTreeMap<u64, Fifo>,
    /// inotify instances (`inotify.rs`).
    pub(super) notify: super::inotify::Notify,
    /// pidfd objects' processes (`pidfd.rs`).
    pub(super) pidfds: BTreeMap<u64, super::pidfd::Pidfd>,
    /// POSIX message queues (`mqueue.rs`).
    pub(super) mq: super::mqueue::Mq,
}

struct Fifo {
    /// Its inode: (device, inode number).
    key: (u64, u64),
    /// How many times a reader and a writer opened it (Linux's r_counter
    /// and w_counter): an opener waiting for the other side goes on once
    /// its count moved, even if that opener closed again meanwhile.
    opened: [u64; 2],
}

struct PosHold {
    holder: u64,
    waiting: VecDeque<(u64, u64)>,
}

impl Objects {
    pub fn new() -> Objects {
        let mut objs = BTreeMap::new();
        objs.insert(
            obj::TTY_ID,
            Object {
                kind: obj::TTY,
                refs: 0,
                flags: 0,
                pipe: 0,
                pos: 0,
            },
        );
        Objects {
            objs,
            pipes: BTreeMap::new(),
            next: obj::TTY_ID + 1,
            tty: Tty {
                ldisc: Ldisc::new(),
                session: 0,
                fg_pgrp: 0,
                winsize: WinSize::default(),
            },
            polls: Vec::new(),
            next_token: 1,
            counters: BTreeMap::new(),
            unix: super::unix::Names::default(),
            flocks: BTreeMap::new(),
            pos_holds: BTreeMap::new(),
            fifos: BTreeMap::new(),
            notify: Default::default(),
            pidfds: BTreeMap::new(),
            mq: Default::default(),
        }
    }

    pub(super) fn insert(&mut self, o: Object) -> u64 {
        let id = self.next;
        self.next += 1;
        self.objs.insert(id, o);
        id
    }

    /// A pipe's two ends (`messages`: one whose writes are messages).
    pub fn pipe(&mut self, messages: bool) -> [u64; 2] {
        let pid = self.next;
        self.next += 1;
        self.pipes
            .insert(pid, if messages { Pipe::of_messages() } else { Pipe::new() });
        let end = |kind| Object {
            kind,
            refs: 1,
            flags: 0,
            pipe: pid,
            pos: 0,
        };
        [self.insert(end(obj::PIPE_READ)), self.insert(end(obj::PIPE_WRITE))]
    }

    pub fn add_ref(&mut self, id: u64, n: u32) {
        let Some(o) = self.objs.get_mut(&id) else { return };
        o.refs += n;
        if let Some(p) = self.pipes.get_mut(&o.pipe) {
            if reads(o.kind) {
                p.readers += n;
            }
            if writes(o.kind) {
                p.writers += n;
            }
        }
    }

    /// An open of the named FIFO `key` (`ctl::FIFO_OPEN`): a new end of
    /// its pipe, made if none is open (so a FIFO all closed starts
    /// empty), as [object, kind, whether the other side is open]; `flags`
    /// are the description's status flags.
    pub fn fifo_open(&mut self, key: (u64, u64), access: u64, flags: u64) -> Vec<u64> {
        let nonblock = flags & O_NONBLOCK != 0;
        let kind = match access {
            0 => obj::PIPE_READ,
            1 => obj::PIPE_WRITE,
            2 => obj::PIPE_RDWR,
            _ => return vec![errno::fail(errno::EINVAL)],
        };
        let found = self.fifos.iter().find(|(_, f)| f.key == key).map(|(&p, _)| p);
        let readers = found.and_then(|p| self.pipes.get(&p)).map_or(0, |p| p.readers);
        // Linux's fifo_open: a writer that may not wait finds no reader.
        if kind == obj::PIPE_WRITE && nonblock && readers == 0 {
            return vec![errno::fail(errno::ENXIO)];
        }
        let pipe = match found {
            Some(p) => p,
            None => {
                let p = self.next;
                self.next += 1;
                self.pipes.insert(p, Pipe::default());
                self.fifos.insert(p, Fifo { key, opened: [0, 0] });
                p
            }
        };
        let (Some(p), Some(f)) = (self.pipes.get_mut(&pipe), self.fifos.get_mut(&pipe)) else {
            return vec![errno::fail(errno::EIO)];
        };
        if reads(kind) {
            p.readers += 1;
            f.opened[0] += 1;
        }
        if writes(kind) {
            p.writers += 1;
            f.opened[1] += 1;
        }
        let (seen, there) = match kind {
            obj::PIPE_READ => (f.opened[1], p.writers > 0),
            obj::PIPE_WRITE => (f.opened[0], p.readers > 0),
            _ => (0, true),
        };
        let id = self.insert(Object {
            kind,
            refs: 1,
            flags,
            pipe,
            pos: seen,
        });
        vec![id, kind, there as u64]
    }

    /// `FIFO_PARTNER` if FIFO end `id`'s other side is open, or opened
    /// since it did; a vanished end too (its waiter looks and fails).
    fn fifo_partner(&self, id: u64) -> u64 {
        let Some(o) = self.objs.get(&id) else {
            return obj::FIFO_PARTNER;
        };
        let (Some(f), Some(p)) = (self.fifos.get(&o.pipe), self.pipes.get(&o.pipe)) else {
            return obj::FIFO_PARTNER;
        };
        let there = match o.kind {
            obj::PIPE_READ => p.writers > 0 || f.opened[1] != o.pos,
            obj::PIPE_WRITE => p.readers > 0 || f.opened[0] != o.pos,
            _ => true,
        };
        if there { obj::FIFO_PARTNER } else { 0 }
    }

    pub fn release(&mut self, id: u64) {
        if id == obj::TTY_ID {
            return;
        }
        let Some(o) = self.objs.get_mut(&id) else { return };
        o.refs = o.refs.saturating_sub(1);
        let (kind, pipe, gone) = (o.kind, o.pipe, o.refs == 0);
        let mut unread = false;
        if let Some(p) = self.pipes.get_mut(&pipe) {
            if reads(kind) {
                p.readers = p.readers.saturating_sub(1);
            }
            if writes(kind) {
                p.writers = p.writers.saturating_sub(1);
            }
            unread = kind == obj::PIPE_READ && p.readers == 0;
            if p.readers == 0 && p.writers == 0 {
                self.pipes.remove(&pipe);
                self.fifos.remove(&pipe);
            }
        }
        if gone {
            self.objs.remove(&id);
            // (Whoever holds or waits for the position holds a reference:
            // none is left here, but none must wait on a gone object.)
            if let Some(h) = self.pos_holds.remove(&id) {
                for (rid, _) in h.waiting {
                    let _ = sys::endr(rid, &proto::bytes(&[0]));
                }
            }
            self.counters.remove(&id);
            self.notify.gone(id);
            self.pidfds.remove(&id);
            self.mq.close(id);
            self.unix.senders.remove(&id);
            if kind == obj::FILE {
                // The last descriptor of a description closed: its flock goes.
                self.flocks.retain(|_, held| {
                    held.retain(|&(owner, _)| owner != id);
                    !held.is_empty()
                });
            }
        }
        if !self.pipes.contains_key(&pipe) {
            self.unix.tags.remove(&pipe);
        }
        if unread && self.pipes.contains_key(&pipe) {
            self.unix_queue_gone(pipe);
        }
        if gone && kind == obj::UNIX_NAME {
            self.unix_listener_gone(id);
        }
    }

    /// One more write end of pipe `pipe`.
    pub(super) fn pipe_writer(&mut self, pipe: u64) -> Option<u64> {
        self.pipes.get_mut(&pipe)?.writers += 1;
        Some(self.insert(Object {
            kind: obj::PIPE_WRITE,
            refs: 1,
            flags: 0,
            pipe,
            pos: 0,
        }))
    }

    /// The pipe of pipe end `id`.
    pub(super) fn pipe_of(&self, id: u64) -> Option<u64> {
        self.objs
            .get(&id)
            .filter(|o| matches!(o.kind, obj::PIPE_READ | obj::PIPE_WRITE | obj::PIPE_RDWR))
            .map(|o| o.pipe)
    }

    /// [kind, flags, bytes readable] (kind 0: no such object).
    pub fn info(&self, id: u64) -> Vec<u64> {
        match self.objs.get(&id) {
            None => vec![0, 0, 0],
            Some(o) => {
                let avail = match o.kind {
                    obj::PIPE_READ | obj::PIPE_RDWR => self.pipes.get(&o.pipe).map_or(0, |p| p.len()) as u64,
                    obj::TTY => self.tty.ldisc.available() as u64,
                    obj::INOTIFY => self.inotify_bytes(id),
                    obj::FANOTIFY => self.fanotify_bytes(id),
                    _ => 0,
                };
                vec![o.kind, o.flags, avail]
            }
        }
    }

    pub fn set_flags(&mut self, id: u64, flags: u64) {
        if let Some(o) = self.objs.get_mut(&id) {
            o.flags = flags;
        }
    }

    /// The capacity of pipe end `id`'s pipe, first set from `size` unless
    /// that is `u64::MAX`; -EBADF for anything but a pipe.
    pub fn pipe_size(&mut self, id: u64, size: u64) -> i64 {
        let pipe = match self.objs.get(&id) {
            Some(o) if matches!(o.kind, obj::PIPE_READ | obj::PIPE_WRITE | obj::PIPE_RDWR) => o.pipe,
            _ => return -errno::EBADF,
        };
        let Some(p) = self.pipes.get_mut(&pipe) else {
            return -errno::EBADF;
        };
        if size == u64::MAX {
            return p.size() as i64;
        }
        p.resize(size).map_or_else(|e| -e, |n| n as i64)
    }

    /// flock by the description of object `owner` on file `file`: `want`
    /// 0 unlocks, 1 takes a shared lock, 2 an exclusive one (converting
    /// the description's own, which goes first). EWOULDBLOCK when another description's
    /// lock is in the way; EBADF for an object that is not a file's.
    pub fn flock(&mut self, owner: u64, file: (u64, u64), want: u64) -> i64 {
        if self.objs.get(&owner).map(|o| o.kind) != Some(obj::FILE) {
            return -linuxabi::errno::EBADF;
        }
        let held = self.flocks.entry(file).or_default();
        let exclusive = want == 2;
        if want != 0 && held.contains(&(owner, exclusive)) {
            return 0;
        }
        // A conversion gives up the old lock first, as Linux's
        // flock_lock_inode does: two holders of a shared lock that both
        // wait for the exclusive one do not wait for each other for ever
        // (and a LOCK_NB conversion that fails has lost the old lock).
        held.retain(|&(o, _)| o != owner);
        if want != 0 {
            if held.iter().any(|&(_, x)| x || exclusive) {
                if held.is_empty() {
                    self.flocks.remove(&file);
                }
                return -linuxabi::errno::EAGAIN;
            }
            held.push((owner, exclusive));
        }
        if held.is_empty() {
            self.flocks.remove(&file);
        }
        0
    }

    pub fn share_file(&mut self, pos: u64, flags: u64) -> u64 {
        self.insert(Object {
            kind: obj::FILE,
            refs: 1,
            flags,
            pipe: 0,
            pos,
        })
    }

    /// A shared file's position: read (0), set (1), or moved on by
    /// `value` (2); the position before.
    pub fn file_pos(&mut self, id: u64, op: u64, value: u64) -> u64 {
        let Some(o) = self.objs.get_mut(&id) else { return 0 };
        let before = o.pos;
        match op {
            1 => o.pos = value,
            2 => o.pos = o.pos.wrapping_add(value),
            _ => {}
        }
        before
    }

    /// Takes shared file `id`'s position for supervisor `sup`'s read or
    /// write (call `rid`): the position, or None while another holds it
    /// (the call waits; `pos_put` answers it).
    pub fn pos_take(&mut self, id: u64, sup: u64, rid: u64) -> Option<u64> {
        // No such object (a stale or foreign id): 0 at once, nothing held,
        // as `file_pos` answers.
        let Some(pos) = self.objs.get(&id).map(|o| o.pos) else {
            return Some(0);
        };
        match self.pos_holds.get_mut(&id) {
            Some(h) if h.holder != sup => {
                h.waiting.push_back((rid, sup));
                None
            }
            Some(_) => Some(pos),
            None => {
                self.pos_holds.insert(
                    id,
                    PosHold {
                        holder: sup,
                        waiting: VecDeque::new(),
                    },
                );
                Some(pos)
            }
        }
    }

    /// Supervisor `sup` is done with shared file `id`'s position (its new
    /// value, if it moved): the next waiting call gets it.
    pub fn pos_put(&mut self, id: u64, sup: u64, new: Option<u64>) {
        let Some(h) = self.pos_holds.get_mut(&id) else { return };
        if h.holder != sup {
            return;
        }
        let pos = match self.objs.get_mut(&id) {
            Some(o) => {
                if let Some(p) = new {
                    o.pos = p;
                }
                o.pos
            }
            None => 0,
        };
        // A waiter whose call cannot be answered any more (its supervisor
        // ended) is passed over, or the position would stay held by it.
        while let Some((rid, next)) = h.waiting.pop_front() {
            if sys::endr(rid, &proto::bytes(&[pos])).is_ok() {
                h.holder = next;
                return;
            }
        }
        self.pos_holds.remove(&id);
    }

    fn nonblocking(&self, id: u64, flags: u64) -> bool {
        flags & pass::NONBLOCK != 0 || self.objs.get(&id).is_some_and(|o| o.flags & O_NONBLOCK != 0)
    }

    /// poll's events of object `id` now (of those asked in `events`, plus
    /// the ones always reported).
    pub fn events(&self, id: u64, events: u64) -> u64 {
        if events == obj::FIFO_PARTNER {
            return self.fifo_partner(id);
        }
        let Some(o) = self.objs.get(&id) else { return 0x20 };
        // A FIFO's reader hangs up only once a writer came and went since
        // it opened (Linux's pipe_poll and f_version): a reader opened
        // before any writer waits for one.
        let hung = |p: &Pipe| p.writers == 0 && self.fifos.get(&o.pipe).is_none_or(|f| f.opened[1] != o.pos);
        let got = match o.kind {
            obj::PIPE_READ => match self.pipes.get(&o.pipe) {
                Some(p) if p.readable() => POLLIN | if hung(p) { POLLHUP } else { 0 },
                Some(p) if hung(p) => POLLHUP,
                _ => 0,
            },
            obj::PIPE_RDWR => match self.pipes.get(&o.pipe) {
                Some(p) => (if p.readable() { POLLIN } else { 0 }) | if p.room_for(1) > 0 { POLLOUT } else { 0 },
                None => 0,
            },
            obj::PIPE_WRITE => match self.pipes.get(&o.pipe) {
                Some(p) if p.readers == 0 => POLLERR | POLLOUT,
                Some(p) if p.room_for(1) > 0 => POLLOUT,
                _ => 0,
            },
            obj::TTY => {
                let r = if self.tty.ldisc.readable() { POLLIN } else { 0 };
                r | POLLOUT
            }
            obj::EVENTFD => self.counter_events(id),
            // Linux's pidfd_poll: readable once the process ended, hung
            // up too once it is reaped.
            obj::PIDFD => match self.pidfds.get(&id).map(|p| p.state) {
                Some(super::pidfd::State::Exited) => POLLIN,
                Some(super::pidfd::State::Reaped) => POLLIN | POLLHUP,
                _ => 0,
            },
            obj::TIMERFD => self.counter_events(id) & POLLIN,
            obj::INOTIFY => self.inotify_events(id),
            obj::MQUEUE => self.mq_events(id),
            obj::FANOTIFY => self.fanotify_events(id),
            obj::UNIX_NAME => {
                (if self.unix_waiting(id) { POLLIN } else { 0 }) | if self.unix_room(id) { POLLOUT } else { 0 }
            }
            _ => POLLIN | POLLOUT,
        };
        got & (events | POLLERR | POLLHUP)
    }

    pub fn poll_deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.polls
            .iter()
            .map(|p| p.deadline)
            .filter(|&d| d != 0 && d != u64::MAX)
    }
}

/// Whether a pipe's end of `kind` reads it, writes it.
fn reads(kind: u64) -> bool {
    matches!(kind, obj::PIPE_READ | obj::PIPE_RDWR)
}

fn writes(kind: u64) -> bool {
    matches!(kind, obj::PIPE_WRITE | obj::PIPE_RDWR)
}

impl Default for Objects {
    fn default() -> Self {
        Self::new()
    }
}

impl Shared {
    /// A held read or write: moves what it can; true once it ended.
    pub(super) fn io_step(&mut self, h: &mut Held) -> bool {
        match h.what {
            Waiting::Read {
                obj,
                buf,
                len,
                flags,
                from,
            } => self.read_step(h, obj, (buf, len), flags, from),
            Waiting::Write { .. } => self.write_step(h),
            _ => true,
        }
    }

    fn read_step(&mut self, h: &Held, id: u64, (buf, len): (u64, u64), flags: u64, from: (u64, u64)) -> bool {
        let Some(o) = self.objs.objs.get(&id) else {
            self.finish(h, errno::fail(errno::EBADF));
            return true;
        };
        let nonblock = self.objs.nonblocking(id, flags);
        match o.kind {
            obj::PIPE_READ | obj::PIPE_RDWR => {
                let pipe_id = o.pipe;
                let Some(p) = self.objs.pipes.get(&pipe_id) else {
                    self.finish(h, 0);
                    return true;
                };
                if !p.readable() {
                    if p.writers == 0 {
                        self.finish(h, 0);
                        return true;
                    }
                    if nonblock {
                        self.finish(h, errno::fail(errno::EAGAIN));
                        return true;
                    }
                    return false;
                }
                if p.holds_messages() {
                    // A datagram: one message, what does not fit dropped.
                    let Some(p) = self.objs.pipes.get_mut(&pipe_id) else {
                        return true;
                    };
                    let data = p.take_message(len as usize);
                    self.woke = true;
                    // The sender's name, or none (length 0): an unnamed
                    // sender's, a pair's.
                    let sender = self.objs.unix_tag_take(pipe_id).unwrap_or_default();
                    if from.0 != 0 {
                        self.put_name(h, from, &sender);
                    }
                    let v = if self.put(h, buf, &data) {
                        data.len() as u64
                    } else {
                        errno::fail(errno::EFAULT)
                    };
                    self.finish(h, v);
                    return true;
                }
                let n = (len as usize).min(p.len());
                let data = p.peek(n);
                if !self.put(h, buf, &data) {
                    self.finish(h, errno::fail(errno::EFAULT));
                    return true;
                }
                if let Some(p) = self.objs.pipes.get_mut(&pipe_id) {
                    p.consume(n);
                }
                self.finish(h, n as u64);
                true
            }
            obj::TTY => self.tty_read(h, buf, len, flags, nonblock),
            obj::EVENTFD | obj::TIMERFD => self.eventfd_read(h, id, buf, len, nonblock),
            obj::INOTIFY => self.inotify_read(h, id, buf, len, nonblock),
            _ => {
                self.finish(h, errno::fail(errno::EINVAL));
                true
            }
        }
    }

    fn write_step(&mut self, h: &mut Held) -> bool {
        let Waiting::Write {
            obj: id,
            buf,
            len,
            mut done,
            flags,
        } = h.what
        else {
            return true;
        };
        let nonblock = self.objs.nonblocking(id, flags);
        if self.objs.counters.contains_key(&id) {
            return self.eventfd_write(h, nonblock);
        }
        let Some(pipe_id) = self.objs.objs.get(&id).filter(|o| writes(o.kind)).map(|o| o.pipe) else {
            self.finish(h, errno::fail(errno::EBADF));
            return true;
        };
        loop {
            let Some(p) = self.objs.pipes.get(&pipe_id) else {
                self.finish(h, errno::fail(errno::EPIPE));
                return true;
            };
            if p.readers == 0 && self.objs.unix.tags.contains_key(&pipe_id) {
                // A named datagram socket that closed: refused, as
                // Linux's, and no SIGPIPE.
                self.finish(h, errno::fail(errno::ECONNREFUSED));
                return true;
            }
            if p.readers == 0 {
                // SIGPIPE first: the writer's supervisor hears of it before
                // the process's stop on its way back (the attention).
                if let Some(sup) = self.procs.get(h.pid).map(|q| q.sup) {
                    let s = proto::Signal {
                        sig: sig::SIGPIPE as u64,
                        code: 0,
                        pid: h.pid as u64,
                        ..proto::Signal::default()
                    };
                    self.notify(sup, &s);
                    let _ = calls::linux_attention(h.tpid);
                }
                let v = if done > 0 { done } else { errno::fail(errno::EPIPE) };
                self.finish(h, v);
                return true;
            }
            if p.holds_messages() {
                return self.write_message(h, pipe_id, buf, len, nonblock);
            }
            if done == len {
                self.finish(h, len);
                return true;
            }
            let room = p.room_for((len - done) as usize);
            if room == 0 {
                if nonblock {
                    let v = if done > 0 { done } else { errno::fail(errno::EAGAIN) };
                    self.finish(h, v);
                    return true;
                }
                h.what = Waiting::Write {
                    obj: id,
                    buf,
                    len,
                    done,
                    flags,
                };
                return false;
            }
            let mut data = vec![0u8; room];
            if calls::caller_read(h.rid, buf + done, &mut data).is_err() {
                let v = if done > 0 { done } else { errno::fail(errno::EFAULT) };
                self.finish(h, v);
                return true;
            }
            if let Some(p) = self.objs.pipes.get_mut(&pipe_id) {
                p.push(&data);
            }
            done += room as u64;
            // Readers may go on now; the writer goes on writing (the next
            // pass of `progress` wakes them).
            self.woke = true;
        }
    }

    /// A write to a pipe of messages: whole, or it waits (EMSGSIZE if it
    /// could never fit).
    fn write_message(&mut self, h: &Held, pipe_id: u64, buf: u64, len: u64, nonblock: bool) -> bool {
        let Some(p) = self.objs.pipes.get(&pipe_id) else {
            return true;
        };
        if len as usize > p.size() {
            self.finish(h, errno::fail(errno::EMSGSIZE));
            return true;
        }
        if !p.fits_message(len as usize) {
            if nonblock {
                self.finish(h, errno::fail(errno::EAGAIN));
                return true;
            }
            return false;
        }
        let mut data = vec![0u8; len as usize];
        if calls::caller_read(h.rid, buf, &mut data).is_err() {
            self.finish(h, errno::fail(errno::EFAULT));
            return true;
        }
        if let Some(p) = self.objs.pipes.get_mut(&pipe_id) {
            p.push_message(&data);
        }
        if let Waiting::Write { obj, .. } = h.what {
            self.objs.unix_tag_push(pipe_id, obj);
        }
        self.woke = true;
        self.finish(h, len);
        true
    }

    fn tty_read(&mut self, h: &Held, buf: u64, len: u64, flags: u64, nonblock: bool) -> bool {
        let (pgid, sid) = self.procs.get(h.pid).map_or((0, 0), |p| (p.pgid, p.sid));
        let tty = &self.objs.tty;
        if sid == tty.session && tty.fg_pgrp != 0 && pgid != tty.fg_pgrp {
            // A background read: SIGTTIN for its group, or EIO.
            if flags & pass::TTIN_MASKED != 0 || self.procs.orphaned(pgid) {
                self.finish(h, errno::fail(errno::EIO));
            } else {
                self.signal_group(pgid, sig::SIGTTIN, 0x80, 0, 0);
                let _ = calls::linux_attention(h.tpid);
                self.finish(h, errno::fail(errno::ERESTARTSYS));
            }
            return true;
        }
        match self.objs.tty.ldisc.read(len as usize) {
            Some(data) => {
                let v = if self.put(h, buf, &data) {
                    data.len() as u64
                } else {
                    errno::fail(errno::EFAULT)
                };
                self.finish(h, v);
                true
            }
            None if nonblock => {
                self.finish(h, errno::fail(errno::EAGAIN));
                true
            }
            None => false,
        }
    }

    /// `TTY_WRITE`: the bytes of the message (the Linux process's buffer)
    /// go to the console, processed as the terminal's settings say.
    pub(super) fn tty_write(&mut self, info: &AccInfo, rid: u64) -> End {
        let total = info.len as usize;
        let mut done = 0;
        let mut chunk = vec![0u8; total.min(4096)];
        let mut out = Vec::with_capacity(chunk.len() + 64);
        while done < total {
            let n = (total - done).min(chunk.len());
            if sys::rv_read(rid, done as u64, &mut chunk[..n]).is_err() {
                if done == 0 {
                    return result(-errno::EFAULT);
                }
                break;
            }
            out.clear();
            self.objs.tty.ldisc.output(&chunk[..n], &mut out);
            let _ = sys::console_write(&out);
            done += n;
        }
        result(done as i64)
    }

    /// Console input: through the line discipline; echo, signals for the
    /// foreground group, readers woken.
    pub(super) fn input(&mut self) {
        let mut buf = [0u8; 256];
        loop {
            let n = match sys::console_read(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            let mut echo = Vec::new();
            for &b in &buf[..n] {
                let fx = self.objs.tty.ldisc.input(b);
                echo.extend_from_slice(&fx.echo);
                if let Some(s) = fx.signal {
                    let fg = self.objs.tty.fg_pgrp;
                    if fg != 0 {
                        self.signal_group(fg, s, 0x80, 0, 0);
                    }
                }
            }
            if !echo.is_empty() {
                let mut out = Vec::with_capacity(echo.len() + 8);
                self.objs.tty.ldisc.output(&echo, &mut out);
                let _ = sys::console_write(&out);
            }
        }
        self.woke = true;
    }

    /// Whether process `pid` may change the terminal now (`write`: write
    /// to it, which only TOSTOP makes a change): 0, -errno, or SIGTTOU (it
    /// is in a background group: its supervisor stops it unless it
    /// ignores or blocks the signal). -EIO, for an orphaned background
    /// group, also holds only if the signal is not ignored or blocked.
    pub(super) fn tty_check(&self, pid: u32, write: bool) -> i64 {
        let Some(p) = self.procs.get(pid) else {
            return -errno::ESRCH;
        };
        let tty = &self.objs.tty;
        if tty.session == 0 || p.sid != tty.session {
            return -errno::ENOTTY;
        }
        if tty.fg_pgrp == 0 || p.pgid == tty.fg_pgrp {
            return 0;
        }
        if write && tty.ldisc.termios.lflag & tio::TOSTOP == 0 {
            return 0;
        }
        if self.procs.orphaned(p.pgid) {
            return -errno::EIO;
        }
        sig::SIGTTOU as i64
    }

    pub(super) fn tty_ioctl(&mut self, w: &[u64]) -> End {
        let pid = word(w, 1) as u32;
        let req = word(w, 2);
        let arg = &w[3.min(w.len())..];
        let (sid, pgid) = self.procs.get(pid).map_or((0, 0), |p| (p.sid, p.pgid));
        let tty = &mut self.objs.tty;
        let ours = tty.session != 0 && tty.session == sid;
        match req {
            tio::TCGETS => {
                let b = tty.ldisc.termios.to_bytes();
                let mut padded = [0u8; 40];
                padded[..36].copy_from_slice(&b);
                let mut out = vec![0u64];
                out.extend(proto::words(&padded));
                End::Reply(out)
            }
            tio::TCSETS | tio::TCSETSW | tio::TCSETSF => {
                let b = proto::bytes(arg);
                let Some(t) = b.get(..36).and_then(|s| <&[u8; 36]>::try_from(s).ok()) else {
                    return result(-errno::EINVAL);
                };
                if req == tio::TCSETSF {
                    tty.ldisc.flush_input();
                }
                tty.ldisc.set(Termios::from_bytes(t));
                self.woke = true;
                result(0)
            }
            tio::TIOCGWINSZ => reply(&[0, u64::from_le_bytes(tty.winsize.to_bytes())]),
            tio::TIOCSWINSZ => {
                let ws = WinSize::from_bytes(&word(arg, 0).to_le_bytes());
                let changed = ws != tty.winsize;
                tty.winsize = ws;
                let fg = tty.fg_pgrp;
                if !changed || fg == 0 {
                    return reply(&[0, 0]);
                }
                // The caller's own SIGWINCH its supervisor delivers before
                // the call returns, as Linux's is there on its return.
                let mine = pgid == fg;
                let others: Vec<u64> = self
                    .procs
                    .live()
                    .filter(|p| p.pgid == fg && p.pid != pid)
                    .map(|p| p.sup)
                    .collect();
                let s = proto::Signal {
                    sig: sig::SIGWINCH as u64,
                    code: 0x80,
                    ..proto::Signal::default()
                };
                for sup in others {
                    self.notify(sup, &s);
                }
                reply(&[0, mine as u64])
            }
            tio::TIOCGPGRP => {
                if !ours {
                    return result(-errno::ENOTTY);
                }
                result(tty.fg_pgrp as i64)
            }
            tio::TIOCSPGRP => {
                if !ours {
                    return result(-errno::ENOTTY);
                }
                let want = word(arg, 0) as u32;
                if (want as i32) < 0 {
                    return result(-errno::EINVAL);
                }
                // No such group: ESRCH; one of another session: EPERM.
                let group: Vec<u32> = self
                    .procs
                    .live()
                    .filter(|p| p.pgid == want && p.zombie.is_none())
                    .map(|p| p.sid)
                    .collect();
                if group.is_empty() {
                    return result(-errno::ESRCH);
                }
                if !group.contains(&sid) {
                    return result(-errno::EPERM);
                }
                self.objs.tty.fg_pgrp = want;
                self.woke = true;
                result(0)
            }
            tio::TIOCGSID => {
                if !ours {
                    return result(-errno::ENOTTY);
                }
                result(tty.session as i64)
            }
            tio::TIOCSCTTY => {
                if sid != pid {
                    return result(-errno::EPERM);
                }
                if tty.session != 0 && tty.session != sid {
                    return result(-errno::EPERM);
                }
                tty.session = sid;
                tty.fg_pgrp = pgid;
                result(0)
            }
            tio::TIOCNOTTY => {
                if !ours {
                    return result(-errno::ENOTTY);
                }
                if sid == pid {
                    let fg = tty.fg_pgrp;
                    tty.session = 0;
                    tty.fg_pgrp = 0;
                    if fg != 0 {
                        self.signal_group(fg, sig::SIGHUP, 0x80, 0, 0);
                        self.signal_group(fg, sig::SIGCONT, 0x80, 0, 0);
                    }
                }
                result(0)
            }
            tio::FIONREAD => reply(&[0, tty.ldisc.available() as u64]),
            tio::TCFLSH => {
                // TCIFLUSH, TCOFLUSH, TCIOFLUSH; output is never queued.
                if word(arg, 0) > 2 {
                    return result(-errno::EINVAL);
                }
                if word(arg, 0) != 1 {
                    tty.ldisc.flush_input();
                }
                result(0)
            }
            tio::TCSBRK | tio::TCXONC | tio::TIOCOUTQ => reply(&[0, 0]),
            _ => result(-errno::ENOTTY),
        }
    }

    /// [pid, deadline, (object, events)...]: the events now; if there are
    /// none and the caller will wait (deadline ≠ 0), a registration whose
    /// supervisor is told (WAKE) when an object is ready or at the deadline.
    pub(super) fn poll(&mut self, w: &[u64], sup: u64) -> End {
        let pid = word(w, 1) as u32;
        let deadline = word(w, 2);
        let pairs: Vec<(u64, u64)> = w
            .get(3..)
            .unwrap_or(&[])
            .chunks_exact(2)
            .map(|c| (c[0], c[1]))
            .collect();
        let mut out = vec![0u64];
        let mut ready = 0;
        for &(o, ev) in &pairs {
            let r = if o == 0 { 0 } else { self.objs.events(o, ev) };
            if r != 0 {
                ready += 1;
            }
            out.push(r);
        }
        self.objs.polls.retain(|p| p.pid != pid);
        if ready == 0 && deadline != 0 {
            let token = self.objs.next_token;
            self.objs.next_token += 1;
            self.objs.polls.push(super::objects::PollWait {
                pid,
                sup,
                token,
                objs: pairs,
                deadline,
            });
            return reply(&[0, token]);
        }
        out[0] = ready;
        End::Reply(out)
    }

    /// Polls that can go on now: their supervisors are told.
    pub(super) fn poll_wakes(&mut self) {
        // Looked at after every request: the clock only when a poll waits.
        if self.objs.polls.is_empty() {
            return;
        }
        let now = sys::now_ns();
        let mut fire = Vec::new();
        let objs = &self.objs;
        self.objs.polls.iter().enumerate().for_each(|(i, p)| {
            let ready = p.objs.iter().any(|&(o, ev)| o != 0 && objs.events(o, ev) != 0);
            if ready || (p.deadline != u64::MAX && p.deadline <= now) {
                fire.push(i);
            }
        });
        for i in fire.into_iter().rev() {
            let p = self.objs.polls.remove(i);
            let msg = proto::bytes(&[p.token]);
            let room = core::ptr::slice_from_raw_parts_mut(core::ptr::null_mut::<u8>(), 0);
            if calls::request(p.sup, proto::sup::WAKE, &msg, room).is_ok() {
                self.requests += 1;
            }
        }
    }

    pub(super) fn poll_timeouts(&mut self, _now: u64) {
        self.poll_wakes();
    }
}
