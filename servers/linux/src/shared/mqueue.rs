//! POSIX message queues: system-wide objects named in their own name
//! space, so this server holds them (as SysV's). A descriptor is an
//! object of kind `obj::MQUEUE` (one per open: its access mode and
//! O_NONBLOCK are the description's), pollable like a pipe's end. A
//! supervisor passes mq_timedsend and mq_timedreceive here (`pass::MQ`):
//! this server copies the message from or to the caller's memory itself
//! and ends the call, at once or, when it must wait, when another call
//! makes room or a message, at its deadline (ETIMEDOUT) or at a signal.
//! A queue lives while it is linked or a description is open. Its memory
//! is bounded: each owner's queues against RLIMIT_MSGQUEUE at their
//! largest (as Linux), and all queued bytes of all queues together.

use super::Shared;
use super::objects::{Object, POLLIN, POLLOUT};
use super::{End, result};
use crate::proto::{self, mqueue as op, obj, word};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::mqueue::{self as mq, Queue, Settings};
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// Message bytes queued in all queues at most: this server's heap holds
/// them (past it a send is ENOMEM rather than the server failing).
const BYTES_MAX: u64 = 32 << 20;
/// Queues at most, whatever root set queues_max to (each holds its name
/// and a record here).
const QUEUES_MAX: usize = 4096;
const O_NONBLOCK: u64 = 0o4000;
const O_CREAT: u64 = 0o100;
const O_EXCL: u64 = 0o200;
const O_ACCMODE: u64 = 3;

struct Notify {
    pid: u32,
    kind: u32,
    signo: u32,
    value: u64,
}

struct MQueue {
    q: Queue,
    mode: u32,
    uid: u32,
    gid: u32,
    /// What it costs its owner (`mq::charge`).
    charge: u64,
    /// Open descriptions.
    opens: u32,
    linked: bool,
    notify: Option<Notify>,
}

/// A send or receive waiting.
#[derive(Clone, Copy)]
struct Call {
    rid: u64,
    pid: u32,
    tid: u32,
    uid: u32,
    obj: u64,
    send: bool,
    buf: u64,
    len: u64,
    /// Send: the priority; receive: where it goes (0: not wanted).
    prio: u64,
    deadline: u64,
}

#[derive(Default)]
pub struct Mq {
    names: BTreeMap<Vec<u8>, u64>,
    queues: BTreeMap<u64, MQueue>,
    next: u64,
    /// Description object → (queue, access mode).
    descs: BTreeMap<u64, (u64, u64)>,
    settings: Settings,
    /// Owner uid → bytes charged.
    charged: BTreeMap<u32, u64>,
    /// Message bytes queued in all queues.
    bytes: u64,
    waits: Vec<Call>,
    /// A message a sender's data waits in (read once, at the call's start).
    data: BTreeMap<u64, Vec<u8>>,
}

impl Mq {
    pub fn deadline(&self) -> Option<u64> {
        self.waits.iter().map(|c| c.deadline).filter(|&d| d != u64::MAX).min()
    }

    /// Description `id` closed for good.
    pub fn close(&mut self, id: u64) {
        let Some((qid, _)) = self.descs.remove(&id) else { return };
        if let Some(q) = self.queues.get_mut(&qid) {
            q.opens = q.opens.saturating_sub(1);
        }
        self.drop_if_unused(qid);
    }

    fn drop_if_unused(&mut self, qid: u64) {
        let Some(q) = self.queues.get(&qid) else { return };
        if q.linked || q.opens > 0 {
            return;
        }
        let q = self.queues.remove(&qid).unwrap_or_else(|| unreachable!());
        self.bytes -= q.q.bytes;
        if let Some(c) = self.charged.get_mut(&q.uid) {
            *c = c.saturating_sub(q.charge);
            if *c == 0 {
                self.charged.remove(&q.uid);
            }
        }
    }

    /// poll's events of description `id`.
    pub fn events(&self, id: u64) -> u64 {
        let Some(q) = self.descs.get(&id).and_then(|d| self.queues.get(&d.0)) else {
            return 0;
        };
        (if q.q.is_empty() { 0 } else { POLLIN }) | if q.q.full() { 0 } else { POLLOUT }
    }

    fn allows(q: &MQueue, uid: u32, gid: u32, want: u32) -> bool {
        if uid == 0 {
            return true;
        }
        let bits = if uid == q.uid {
            q.mode >> 6
        } else if gid == q.gid {
            q.mode >> 3
        } else {
            q.mode
        } & 7;
        bits & want == want
    }
}

impl Shared {
    /// `ctl::MQUEUE`.
    pub(super) fn mq_ctl(&mut self, w: &[u64]) -> End {
        let r = match word(w, 1) {
            op::OPEN => self.mq_open(w),
            op::UNLINK => self.mq_unlink(w),
            op::ATTR => return self.mq_attr(word(w, 2), word(w, 3)),
            op::NOTIFY => self.mq_notify(w),
            op::SETTING => {
                let (i, v) = (word(w, 2) as usize, word(w, 3));
                let s = &mut self.objs.mq.settings;
                match (i < mq::SETTINGS.len(), v) {
                    (false, _) => Err(errno::EINVAL),
                    (true, u64::MAX) => Ok(s.values[i] as i64),
                    (true, v) => s.set(i, v).map(|()| v as i64),
                }
            }
            _ => Err(errno::EINVAL),
        };
        result(r.unwrap_or_else(|e| -e))
    }

    fn mq_open(&mut self, w: &[u64]) -> Result<i64, i64> {
        let who = word(w, 2);
        let (uid, gid) = (who as u32, (who >> 32) as u32);
        let (oflag, mode) = (word(w, 3), word(w, 4) as u32 & 0o777);
        let (maxmsg, msgsize) = (word(w, 5) as i64, word(w, 6) as i64);
        let (privileged, rlimit) = (word(w, 7) != 0, word(w, 8));
        let len = word(w, 9) as usize;
        let name = proto::bytes(w.get(10..).unwrap_or(&[]));
        let name = name.get(..len).ok_or(errno::EINVAL)?;
        mq::check_name(name)?;
        let m = &mut self.objs.mq;
        let (qid, made) = match m.names.get(name) {
            Some(&qid) => {
                if oflag & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                    return Err(errno::EEXIST);
                }
                (qid, false)
            }
            None => {
                if oflag & O_CREAT == 0 {
                    return Err(errno::ENOENT);
                }
                let count = m.queues.len();
                if (count as u64 >= m.settings.queues_max() && !privileged) || m.queues.len() >= QUEUES_MAX {
                    return Err(errno::ENOSPC);
                }
                let (maxmsg, msgsize) = if maxmsg == 0 && msgsize == 0 {
                    let s = &m.settings;
                    (
                        s.msg_default().min(s.msg_max()),
                        s.msgsize_default().min(s.msgsize_max()),
                    )
                } else {
                    m.settings.attr_ok(maxmsg, msgsize, privileged)?;
                    (maxmsg as u64, msgsize as u64)
                };
                let charge = mq::charge(maxmsg, msgsize).ok_or(errno::EOVERFLOW)?;
                let had = m.charged.get(&uid).copied().unwrap_or(0);
                if had.checked_add(charge).is_none_or(|t| t > rlimit) {
                    return Err(errno::EMFILE);
                }
                m.charged.insert(uid, had + charge);
                m.next += 1;
                let qid = m.next;
                m.queues.insert(
                    qid,
                    MQueue {
                        q: Queue::new(maxmsg, msgsize),
                        mode,
                        uid,
                        gid,
                        charge,
                        opens: 0,
                        linked: true,
                        notify: None,
                    },
                );
                m.names.insert(name.to_vec(), qid);
                (qid, true)
            }
        };
        let access = oflag & O_ACCMODE;
        let q = m.queues.get_mut(&qid).ok_or(errno::ENOENT)?;
        // Linux checks the access mode and the right to it only of a queue
        // that was there: its maker opens a new one as it asked.
        if !made {
            if access == O_ACCMODE {
                return Err(errno::EINVAL);
            }
            let want = [4, 2, 6][access as usize];
            if !Mq::allows(q, uid, gid, want) {
                return Err(errno::EACCES);
            }
        }
        q.opens += 1;
        let id = self.objs.insert(Object {
            kind: obj::MQUEUE,
            refs: 1,
            flags: oflag & O_NONBLOCK,
            pipe: 0,
            pos: 0,
        });
        self.objs.mq.descs.insert(id, (qid, access));
        Ok(id as i64)
    }

    fn mq_unlink(&mut self, w: &[u64]) -> Result<i64, i64> {
        let who = word(w, 2);
        let uid = who as u32;
        let len = word(w, 4) as usize;
        let name = proto::bytes(w.get(5..).unwrap_or(&[]));
        let name = name.get(..len).ok_or(errno::EINVAL)?;
        mq::check_name(name)?;
        let m = &mut self.objs.mq;
        let qid = *m.names.get(name).ok_or(errno::ENOENT)?;
        let q = m.queues.get_mut(&qid).ok_or(errno::ENOENT)?;
        // The queues' directory is sticky: a queue goes by its owner's
        // hand or a privileged one.
        if uid != 0 && uid != q.uid {
            return Err(errno::EACCES);
        }
        q.linked = false;
        m.names.remove(name);
        m.drop_if_unused(qid);
        Ok(0)
    }

    fn mq_attr(&mut self, id: u64, new: u64) -> End {
        let Some(&(qid, _)) = self.objs.mq.descs.get(&id) else {
            return result(-errno::EBADF);
        };
        let Some(q) = self.objs.mq.queues.get(&qid) else {
            return result(-errno::EBADF);
        };
        let (maxmsg, msgsize, cur) = (q.q.maxmsg, q.q.msgsize, q.q.len() as u64);
        let old = self.objs.info(id).get(1).copied().unwrap_or(0);
        if new != u64::MAX {
            self.objs.set_flags(id, (old & !O_NONBLOCK) | (new & O_NONBLOCK));
        }
        End::Reply(alloc::vec![0, old & O_NONBLOCK, maxmsg, msgsize, cur])
    }

    fn mq_notify(&mut self, w: &[u64]) -> Result<i64, i64> {
        let (id, pid) = (word(w, 2), word(w, 3) as u32);
        let &(qid, _) = self.objs.mq.descs.get(&id).ok_or(errno::EBADF)?;
        let q = self.objs.mq.queues.get_mut(&qid).ok_or(errno::EBADF)?;
        if word(w, 5) == 0 {
            if q.notify.as_ref().is_some_and(|n| n.pid == pid) {
                q.notify = None;
            }
            return Ok(0);
        }
        if q.notify.is_some() {
            return Err(errno::EBUSY);
        }
        q.notify = Some(Notify {
            pid,
            kind: word(w, 6) as u32,
            signo: word(w, 7) as u32,
            value: word(w, 8),
        });
        Ok(0)
    }

    /// `pass::MQ`: a send or receive.
    pub(super) fn mq_pass(&mut self, rid: u64, w: &[u64]) {
        let o = word(w, 3);
        let c = Call {
            rid,
            pid: word(w, 1) as u32,
            tid: (word(w, 1) >> 32) as u32,
            uid: word(w, 2) as u32,
            obj: o & ((1 << 48) - 1),
            send: o >> 48 == op::SEND,
            buf: word(w, 4),
            len: word(w, 5),
            prio: word(w, 6),
            deadline: word(w, 7),
        };
        let r = match self.mq_start(&c) {
            Some(r) => Some(r),
            None => self.mq_step(&c),
        };
        match r {
            Some(v) => {
                self.objs.mq.data.remove(&rid);
                let _ = calls::caller_return(rid, v as u64);
            }
            None => self.objs.mq.waits.push(c),
        }
    }

    /// The checks before a call may wait, in Linux's order; Some(result)
    /// if it ends here.
    fn mq_start(&mut self, c: &Call) -> Option<i64> {
        let fail = |e: i64| Some(-e);
        let m = &mut self.objs.mq;
        let Some(&(qid, access)) = m.descs.get(&c.obj) else {
            return fail(errno::EBADF);
        };
        let Some(q) = m.queues.get(&qid) else {
            return fail(errno::EBADF);
        };
        if c.send {
            // Access 3 (O_RDWR | O_WRONLY, allowed at creation) is
            // neither reading nor writing, as Linux's f_mode makes it.
            if access != 1 && access != 2 {
                return fail(errno::EBADF);
            }
            if c.len > q.q.msgsize {
                return fail(errno::EMSGSIZE);
            }
            let mut data = Vec::new();
            if data.try_reserve_exact(c.len as usize).is_err() {
                return fail(errno::ENOMEM);
            }
            data.resize(c.len as usize, 0);
            if c.len > 0 && calls::caller_read(c.rid, c.buf, &mut data).is_err() {
                return fail(errno::EFAULT);
            }
            m.data.insert(c.rid, data);
        } else {
            if access != 0 && access != 2 {
                return fail(errno::EBADF);
            }
            if c.len < q.q.msgsize {
                return fail(errno::EMSGSIZE);
            }
        }
        None
    }

    /// Ends call `c` if it can go on now (Some(result)); None: it waits.
    fn mq_step(&mut self, c: &Call) -> Option<i64> {
        let nonblock = self.objs.info(c.obj).get(1).is_some_and(|f| f & O_NONBLOCK != 0);
        let m = &mut self.objs.mq;
        let Some(&(qid, _)) = m.descs.get(&c.obj) else {
            return Some(-errno::EBADF);
        };
        let receivers = m
            .waits
            .iter()
            .any(|w| !w.send && m.descs.get(&w.obj).is_some_and(|d| d.0 == qid));
        let Some(q) = m.queues.get_mut(&qid) else {
            return Some(-errno::EBADF);
        };
        if c.send {
            if q.q.full() {
                return if nonblock { Some(-errno::EAGAIN) } else { None };
            }
            if m.bytes + c.len > BYTES_MAX {
                return Some(-errno::ENOMEM);
            }
            let data = m.data.remove(&c.rid).unwrap_or_default();
            m.bytes += data.len() as u64;
            q.q.push(c.prio as u32, data);
            // Linux hands a message to a waiting receiver at once and tells
            // nobody; a message into an empty queue nobody waits on fires
            // the registration, which then goes.
            let fire = if q.q.len() == 1 && !receivers {
                q.notify.take()
            } else {
                None
            };
            if let Some(n) = fire {
                self.mq_fire(n, c);
            }
            return Some(0);
        }
        if q.q.is_empty() {
            return if nonblock { Some(-errno::EAGAIN) } else { None };
        }
        let (prio, data) = q.q.pop().unwrap_or_default();
        m.bytes -= data.len() as u64;
        // Linux takes the message off before copying it out: a fault loses it.
        if calls::caller_write(c.rid, c.buf, &data).is_err() {
            return Some(-errno::EFAULT);
        }
        if c.prio != 0 && calls::caller_write(c.rid, c.prio, &prio.to_le_bytes()).is_err() {
            return Some(-errno::EFAULT);
        }
        Some(data.len() as i64)
    }

    /// A registration fires for sender `by`.
    fn mq_fire(&mut self, n: Notify, by: &Call) {
        if n.kind != mq::SIGEV_SIGNAL || n.signo == 0 {
            return;
        }
        let Some(p) = self.procs.get(n.pid) else { return };
        if p.zombie.is_some() {
            return;
        }
        let s = proto::Signal {
            sig: n.signo as u64,
            code: mq::SI_MESGQ,
            pid: by.pid as u64,
            uid: by.uid as u64,
            status: 0,
            value: n.value,
            target: n.pid as u64,
        };
        let sup = p.sup;
        self.notify(sup, &s);
    }

    /// The waiting calls that can go on now; true if any ended.
    pub(super) fn mq_progress(&mut self) -> bool {
        let mut any = false;
        // Looked at after every request: the clock only when a call waits.
        while !self.objs.mq.waits.is_empty() {
            let now = sys::now_ns();
            let mut ended = false;
            let mut i = 0;
            while i < self.objs.mq.waits.len() {
                let c = self.objs.mq.waits[i];
                let r = match self.mq_step(&c) {
                    None if now >= c.deadline => Some(-errno::ETIMEDOUT),
                    r => r,
                };
                match r {
                    Some(v) => {
                        self.objs.mq.waits.remove(i);
                        self.objs.mq.data.remove(&c.rid);
                        let _ = calls::caller_return(c.rid, v as u64);
                        ended = true;
                    }
                    None => i += 1,
                }
            }
            if !ended {
                return any;
            }
            any = true;
        }
        any
    }

    /// A signal came for thread `tid` of `pid` (0: any): its waiting send
    /// or receive gives up (restarted under SA_RESTART, as Linux's).
    pub(super) fn mq_interrupt(&mut self, pid: u32, tid: u32) -> bool {
        let m = &mut self.objs.mq;
        let Some(i) = m.waits.iter().position(|c| c.pid == pid && (tid == 0 || c.tid == tid)) else {
            return false;
        };
        let c = m.waits.remove(i);
        m.data.remove(&c.rid);
        let _ = calls::caller_return(c.rid, errno::fail(errno::ERESTARTSYS));
        true
    }

    /// `pid` ended: its waiting calls and its registrations go.
    pub(super) fn mq_exit(&mut self, pid: u32) {
        let m = &mut self.objs.mq;
        let gone: Vec<u64> = m.waits.iter().filter(|c| c.pid == pid).map(|c| c.rid).collect();
        for rid in gone {
            m.data.remove(&rid);
        }
        m.waits.retain(|c| c.pid != pid);
        for q in m.queues.values_mut() {
            if q.notify.as_ref().is_some_and(|n| n.pid == pid) {
                q.notify = None;
            }
        }
    }

    /// Whether `pid` waits in a send or receive (asleep in `/proc`).
    pub(super) fn mq_waits(&self, pid: u32) -> bool {
        self.objs.mq.waits.iter().any(|c| c.pid == pid)
    }
}

impl super::objects::Objects {
    /// poll's events of a message queue's description.
    pub(super) fn mq_events(&self, id: u64) -> u64 {
        self.mq.events(id)
    }
}
