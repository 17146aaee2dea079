//! epoll: an interest list kept by the supervisor as a description of its
//! own, waited on as a poll of its entries (`ready.rs`; a set inside a
//! set is readable while one of its entries is ready). Level-triggered
//! entries are reported while ready, those reported going to the back of
//! the list so that a buffer smaller than the ready entries sees each in
//! turn (Linux requeues them at the tail of its ready list).
//! Edge-triggered ones (`EPOLLET`) are reported when they gain an event
//! since the last look, when a pipe's read end holds more bytes than then
//! (a write came, as Linux's wakeup of each write), and after the program
//! drained the socket (a call of it answered EAGAIN); `EPOLLONESHOT`
//! disables an entry once reported, until `EPOLL_CTL_MOD`. An entry goes
//! with the last descriptor of its description, as Linux's. A forked child
//! gets a copy of the list (Linux shares it).

use super::fdtable::{Kind, Ofd, OfdRef};
use super::{Hold, Out, Sup, ret};
use alloc::rc::{Rc, Weak};
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use linuxabi::epoll::{
    EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, EPOLLET, EPOLLEXCLUSIVE, EPOLLONESHOT, EPOLLWAKEUP, EVENT_LEN, EVENTS,
    MAX_NESTS,
};
use linuxabi::errno;
use linuxabi::signal as sig;
use tessera_rt::sys;

const O_CLOEXEC: u64 = linuxabi::fcntl::O_CLOEXEC as u64;
const PIPE_HELD: u64 = tessera_rt::abi::linux::pipe::state::HELD;
const PIPE_WRITE_END: u64 = tessera_rt::abi::linux::pipe::state::WRITE_END;

pub struct Entry {
    pub fd: i32,
    pub ofd: Weak<RefCell<Ofd>>,
    pub events: u32,
    pub data: u64,
    /// The events seen at the last look (edge-triggered bookkeeping).
    pub seen: u32,
    /// The socket's EAGAIN count at the last look.
    pub drained: u64,
    /// The bytes a kernel pipe's read end held at the last look.
    pub held: u64,
    pub disabled: bool,
}

#[derive(Default)]
pub struct Epoll {
    pub entries: Vec<Entry>,
}

impl core::fmt::Debug for Epoll {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        write!(f, "Epoll({} entries)", self.entries.len())
    }
}

/// An epoll_wait the supervisor holds.
pub struct EpWait {
    pub rid: u64,
    pub ep: Rc<RefCell<Epoll>>,
    pub at: u64,
    pub max: usize,
    pub deadline: u64,
}

/// The epoll sets an entry of `ep` names.
fn inner_sets(ep: &RefCell<Epoll>) -> Vec<Rc<RefCell<Epoll>>> {
    ep.borrow()
        .entries
        .iter()
        .filter_map(|x| x.ofd.upgrade())
        .filter_map(|o| match &o.borrow().kind {
            Kind::Epoll(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `from` reaches `to` through the sets its entries name (ELOOP
/// past the nesting limit, which no legal graph reaches).
fn reaches(from: &Rc<RefCell<Epoll>>, to: &Rc<RefCell<Epoll>>, level: usize) -> Result<bool, i64> {
    if level > MAX_NESTS + 1 {
        return Err(errno::ELOOP);
    }
    for e in inner_sets(from) {
        if Rc::ptr_eq(&e, to) || reaches(&e, to, level + 1)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Levels of sets below `ep` (itself included).
fn depth(ep: &Rc<RefCell<Epoll>>, level: usize) -> usize {
    if level > MAX_NESTS + 1 {
        return level;
    }
    1 + inner_sets(ep).iter().map(|e| depth(e, level + 1)).max().unwrap_or(0)
}

impl Sup {
    /// Levels of this process's sets above `ep` (those holding it, and
    /// theirs).
    fn height_above(&self, ep: &Rc<RefCell<Epoll>>, level: usize) -> usize {
        if level > MAX_NESTS + 1 {
            return level;
        }
        self.fds
            .distinct()
            .iter()
            .filter_map(|o| match &o.borrow().kind {
                Kind::Epoll(e) => Some(e.clone()),
                _ => None,
            })
            .filter(|s| inner_sets(s).iter().any(|i| Rc::ptr_eq(i, ep)))
            .map(|s| 1 + self.height_above(&s, level + 1))
            .max()
            .unwrap_or(0)
    }

    pub(super) fn epoll_create(&mut self, flags: u64) -> Result<u64, i64> {
        if flags & !O_CLOEXEC != 0 {
            return Err(errno::EINVAL);
        }
        let o = Ofd::new(
            Kind::Epoll(Rc::new(RefCell::new(Epoll::default()))),
            super::fdtable::O_RDWR,
            String::from("anon_inode:[eventpoll]"),
        );
        let limit = self.limits[7][0].min(1 << 20) as usize;
        self.fds.insert(o, flags & O_CLOEXEC != 0, limit).map(|f| f as u64)
    }

    fn epoll_of(&self, epfd: u64) -> Result<Rc<RefCell<Epoll>>, i64> {
        let o = self.fds.ofd(epfd)?;
        match &o.borrow().kind {
            Kind::Epoll(e) => Ok(e.clone()),
            _ => Err(errno::EINVAL),
        }
    }

    /// epoll_ctl(epfd, op, fd, event).
    pub(super) fn epoll_ctl(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (epfd, op, fd, at) = (a[0], a[1], a[2], a[3]);
        let o = self.fds.ofd(epfd)?;
        let target = self.fds.ofd(fd)?;
        // An O_PATH descriptor names a file without opening it: no
        // descriptor for calls that use the file (Linux's fdget).
        if target.borrow().flags & linuxabi::fcntl::O_PATH != 0 {
            return Err(errno::EBADF);
        }
        let ep = self.epoll_of(epfd)?;
        if Rc::ptr_eq(&o, &target) {
            return Err(errno::EINVAL);
        }
        // What Linux cannot poll: files, directories, /dev/null, zero
        // and full, and the files of /proc and /sys but mounts and
        // mountinfo (which say when a mount changes).
        let unpollable = match &target.borrow().kind {
            Kind::File { .. } | Kind::VDir(_) | Kind::Null | Kind::Zero | Kind::Full => true,
            Kind::Mem(_) => {
                let path = &target.borrow().path;
                !(path.ends_with("/mounts") || path.ends_with("/mountinfo"))
            }
            _ => false,
        };
        if unpollable {
            return Err(errno::EPERM);
        }
        let event = if op == EPOLL_CTL_DEL {
            (0, 0)
        } else {
            let b = self.read_mem(rid, at, EVENT_LEN)?;
            (
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]),
            )
        };
        // A set inside a set: no cycle, and at most EPOLL_MAX_NESTS (4)
        // levels below the outermost one (checked before the list is
        // borrowed for the change: the walk reads every set).
        let inner = match &target.borrow().kind {
            Kind::Epoll(inner) => Some(inner.clone()),
            _ => None,
        };
        if let (EPOLL_CTL_ADD, Some(inner)) = (op, &inner) {
            if Rc::ptr_eq(inner, &ep) || reaches(inner, &ep, 0)? {
                return Err(errno::ELOOP);
            }
            if depth(inner, 0) + self.height_above(&ep, 0) > MAX_NESTS {
                return Err(errno::EINVAL);
            }
        }
        let mut e = ep.borrow_mut();
        e.entries.retain(|x| x.ofd.strong_count() > 0);
        let at = e
            .entries
            .iter()
            .position(|x| x.fd == fd as i32 && x.ofd.upgrade().is_some_and(|t| Rc::ptr_eq(&t, &target)));
        match (op, at) {
            (EPOLL_CTL_ADD, Some(_)) => Err(errno::EEXIST),
            (EPOLL_CTL_ADD, None) => {
                e.entries.push(Entry {
                    fd: fd as i32,
                    ofd: Rc::downgrade(&target),
                    events: event.0 & !EPOLLWAKEUP,
                    data: event.1,
                    seen: 0,
                    drained: 0,
                    held: 0,
                    disabled: false,
                });
                Ok(0)
            }
            (EPOLL_CTL_DEL, Some(i)) => {
                e.entries.remove(i);
                Ok(0)
            }
            (EPOLL_CTL_MOD, Some(i)) => {
                let x = &mut e.entries[i];
                if x.events & EPOLLEXCLUSIVE != 0 || event.0 & EPOLLEXCLUSIVE != 0 {
                    return Err(errno::EINVAL);
                }
                x.events = event.0 & !EPOLLWAKEUP;
                x.data = event.1;
                x.seen = 0;
                x.held = 0;
                x.disabled = false;
                Ok(0)
            }
            (EPOLL_CTL_DEL | EPOLL_CTL_MOD, None) => Err(errno::ENOENT),
            _ => Err(errno::EINVAL),
        }
    }

    /// epoll_wait / epoll_pwait / epoll_pwait2: [epfd, events, max,
    /// deadline] and the signal mask's (address, size).
    pub(super) fn epoll_wait(&mut self, rid: u64, a: [u64; 6], deadline: u64, mask: (u64, u64)) -> Out {
        let max = a[2] as i32;
        if max <= 0 || max as usize > i32::MAX as usize / EVENT_LEN {
            return ret(Err(errno::EINVAL));
        }
        let ep = match self.fds.ofd(a[0]).and_then(|_| self.epoll_of(a[0])) {
            Ok(e) => e,
            Err(e) => return ret(Err(e)),
        };
        // The buffer must be writable (Linux checks it first), and keeps
        // what it holds when no event comes: its first event's bytes are
        // written back as they are.
        if let Err(e) = self
            .read_mem(rid, a[1], EVENT_LEN)
            .and_then(|b| self.write_mem(rid, a[1], &b))
        {
            return ret(Err(e));
        }
        if mask.0 != 0 {
            if mask.1 != 8 {
                return ret(Err(errno::EINVAL));
            }
            match self.read_u64(rid, mask.0) {
                Ok(m) => {
                    self.sig.saved_mask = Some(self.sig.mask);
                    self.sig.mask = m & !sig::UNBLOCKABLE;
                }
                Err(e) => return ret(Err(e)),
            }
        }
        let w = EpWait {
            rid,
            ep,
            at: a[1],
            max: max as usize,
            deadline,
        };
        self.epoll_go(w)
    }

    fn epoll_go(&mut self, w: EpWait) -> Out {
        if self.sig.deliverable() != 0 {
            return Out::Ret(errno::fail(errno::EINTR));
        }
        let expired = w.deadline <= sys::now_ns();
        let (items, idx, et) = {
            let mut e = w.ep.borrow_mut();
            e.entries.retain(|x| x.ofd.strong_count() > 0);
            let mut items = Vec::new();
            let mut idx = Vec::new();
            let mut et = Vec::new();
            for (i, x) in e.entries.iter().enumerate() {
                if x.disabled {
                    continue;
                }
                let ev = (x.events & EVENTS) as u64;
                items.push((x.ofd.upgrade(), ev));
                idx.push(i);
                et.push(x.events & EPOLLET != 0);
            }
            (items, idx, et)
        };
        let (_, revents, token) = self.readiness(&items, if expired { 0 } else { w.deadline });
        // What edge-triggered entries compare with their last look.
        let marks: Vec<(u64, u64)> = items
            .iter()
            .zip(&et)
            .map(
                |((o, _), &et)| match o.as_ref().filter(|_| et).map(|o| (o, o.borrow().kind.clone())) {
                    Some((_, Kind::Socket { id, .. })) => (1, self.net.drained.get(&id).copied().unwrap_or(0)),
                    Some((o, Kind::KPipe { .. })) => match self.kpipe_state(o) {
                        Ok(s) if s & PIPE_WRITE_END == 0 => (0, s & PIPE_HELD),
                        _ => (0, 0),
                    },
                    _ => (0, 0),
                },
            )
            .collect();
        let mut out = Vec::new();
        {
            let mut e = w.ep.borrow_mut();
            let mut sent = Vec::new();
            for (k, &i) in idx.iter().enumerate() {
                if out.len() >= w.max {
                    break;
                }
                let x = &mut e.entries[i];
                let r = revents[k] as u32 & (x.events | 0x18);
                if x.events & EPOLLET != 0 {
                    let (is_sock, mark) = marks[k];
                    let (drained, held) = if is_sock == 1 { (mark, 0) } else { (0, mark) };
                    let edge = r & !x.seen != 0 || drained != x.drained || held > x.held;
                    x.seen = r;
                    x.drained = drained;
                    x.held = held;
                    if r == 0 || !edge {
                        continue;
                    }
                } else if r == 0 {
                    continue;
                }
                if x.events & EPOLLONESHOT != 0 {
                    x.disabled = true;
                }
                out.push((r, x.data));
                sent.push(i);
            }
            let mut moved: Vec<Entry> = sent.iter().rev().map(|&i| e.entries.remove(i)).collect();
            moved.reverse();
            e.entries.extend(moved);
        }
        if !out.is_empty() || expired || token == 0 {
            if let Some(m) = self.sig.saved_mask.take() {
                self.sig.mask = m;
            }
            let mut b = Vec::with_capacity(out.len() * EVENT_LEN);
            for (r, data) in &out {
                b.extend_from_slice(&r.to_le_bytes());
                b.extend_from_slice(&data.to_le_bytes());
            }
            if let Err(e) = self.write_mem(w.rid, w.at, &b) {
                return ret(Err(e));
            }
            return Out::Ret(out.len() as u64);
        }
        let rid = w.rid;
        self.net.ep_wait = Some(w);
        self.held = Some((rid, Hold::Poll { token }));
        Out::Done
    }

    /// A wake for a held epoll_wait: it looks again. Returns whether the
    /// token was for it.
    pub(super) fn epoll_woken(&mut self, token: u64) -> bool {
        let Some(w) = self.net.ep_wait.take() else {
            return false;
        };
        let held = match self.held {
            Some((rid, Hold::Poll { token: t })) if rid == w.rid => t,
            _ => return false,
        };
        if token != held && token != self.net.watch_token {
            self.net.ep_wait = Some(w);
            return false;
        }
        self.held = None;
        self.in_call = true;
        let rid = w.rid;
        let o = self.epoll_go(w);
        self.in_call = false;
        if let Out::Ret(v) = o {
            self.answer(rid, v);
        }
        true
    }
}

/// A list's entries for a forked child: (description's index in `ofds`,
/// fd, events, data) each.
pub fn encode(ep: &Epoll, ofds: &[OfdRef]) -> Vec<u64> {
    let mut out = Vec::new();
    for x in &ep.entries {
        let Some(o) = x.ofd.upgrade() else { continue };
        let Some(i) = ofds.iter().position(|d| Rc::ptr_eq(d, &o)) else {
            continue;
        };
        out.extend_from_slice(&[
            i as u64,
            x.fd as u64,
            (x.events as u64) | (x.disabled as u64) << 32,
            x.data,
        ]);
    }
    out
}

/// The child's list from `encode`'s words.
pub fn decode(ep: &mut Epoll, words: &[u64], ofds: &[OfdRef]) {
    for w in words.chunks_exact(4) {
        let Some(o) = ofds.get(w[0] as usize) else { continue };
        ep.entries.push(Entry {
            fd: w[1] as i32,
            ofd: Rc::downgrade(o),
            events: w[2] as u32,
            data: w[3],
            seen: 0,
            drained: 0,
            held: 0,
            disabled: w[2] >> 32 != 0,
        });
    }
}
