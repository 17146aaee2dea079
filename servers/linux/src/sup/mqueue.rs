//! POSIX message queue calls and `/proc/sys/fs/mqueue`: the queues are
//! the shared server's (`shared/mqueue.rs`); a descriptor is one of its
//! objects. The supervisor checks what Linux checks before the queue (the
//! name, the attributes' and timeout's memory, the descriptor) and passes
//! sends and receives there, where they wait.

use super::fdtable::{self as fdt, Kind, Ofd};
use super::{Out, Sup};
use crate::proto::{self, ctl, mqueue as op, obj, pass, word};
use alloc::format;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::mqueue::{self as mq, MQ_PRIO_MAX, SETTINGS};

const RLIMIT_MSGQUEUE: usize = 12;
const O_NONBLOCK: u64 = 0o4000;
const NS: u64 = 1_000_000_000;

/// The setting a path of `/proc/sys/fs/mqueue` names.
pub fn setting_of(abs: &str) -> Option<usize> {
    let name = abs.strip_prefix("/proc/sys/fs/mqueue/")?;
    SETTINGS.iter().position(|s| *s == name)
}

impl Sup {
    fn mq_ctl(&self, words: &[u64]) -> Result<Vec<u64>, i64> {
        let mut w = alloc::vec![ctl::MQUEUE];
        w.extend_from_slice(words);
        let r = self.ctl(&w);
        match errno::of(word(&r, 0)) {
            Some(e) => Err(e),
            None => Ok(r),
        }
    }

    /// Setting `index` of `/proc/sys/fs/mqueue`, after setting it to `new`.
    pub(super) fn mq_setting(&self, index: usize, new: Option<u64>) -> Result<u64, i64> {
        let r = self.mq_ctl(&[op::SETTING, index as u64, new.unwrap_or(u64::MAX)])?;
        Ok(word(&r, 0))
    }

    /// The object of message queue descriptor `fd`.
    fn mq_object(&self, fd: u64) -> Result<u64, i64> {
        match self.fds.ofd(fd)?.borrow().kind {
            Kind::Obj { id, kind: obj::MQUEUE } => Ok(id),
            _ => Err(errno::EBADF),
        }
    }

    /// A queue's name from the caller, checked as Linux's lookup does.
    fn mq_name(&self, rid: u64, at: u64) -> Result<Vec<u8>, i64> {
        let name = self.read_cstr(rid, at, 4095)?;
        mq::check_name(&name)?;
        Ok(name)
    }

    pub(super) fn mq_open(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (oflag, mode, attr) = (a[1], a[2], a[3]);
        let (mut maxmsg, mut msgsize) = (0, 0);
        if attr != 0 {
            let b = self.read_mem(rid, attr, 32)?;
            maxmsg = u64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8]));
            msgsize = u64::from_le_bytes(b[16..24].try_into().unwrap_or([0; 8]));
            // Zero is no request for the defaults when asked for.
            if maxmsg == 0 && msgsize == 0 {
                maxmsg = u64::MAX;
            }
        }
        let raw = self.read_cstr(rid, a[0], 4095)?;
        // Linux takes a descriptor number before it looks the name up.
        self.fds.free_from(0, self.limit())?;
        mq::check_name(&raw)?;
        let who = self.cred.euid as u64 | (self.cred.egid as u64) << 32;
        let mut w = alloc::vec![
            op::OPEN,
            who,
            oflag,
            mode & !(self.umask as u64) & 0o777,
            maxmsg,
            msgsize,
            (self.cred.euid == 0) as u64,
            self.limits[RLIMIT_MSGQUEUE][0],
            raw.len() as u64,
        ];
        w.extend(proto::name_words(&raw));
        let id = word(&self.mq_ctl(&w)?, 0);
        let access = (oflag & 3) as u32;
        let nonblock = (oflag & O_NONBLOCK) as u32;
        let mut path = alloc::string::String::from("/");
        path.push_str(&alloc::string::String::from_utf8_lossy(&raw));
        let o = Ofd::new(Kind::Obj { id, kind: obj::MQUEUE }, access | nonblock, path);
        // Linux makes every queue descriptor close-on-exec.
        match self.fds.insert(o.clone(), true, self.limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.release(&o);
                Err(e)
            }
        }
    }

    pub(super) fn mq_unlink(&mut self, rid: u64, at: u64) -> Result<u64, i64> {
        let name = self.mq_name(rid, at)?;
        let who = self.cred.euid as u64 | (self.cred.egid as u64) << 32;
        let mut w = alloc::vec![op::UNLINK, who, (self.cred.euid == 0) as u64, name.len() as u64];
        w.extend(proto::name_words(&name));
        self.mq_ctl(&w).map(|_| 0)
    }

    /// An absolute CLOCK_REALTIME timeout as a deadline in ns since boot
    /// (u64::MAX: none).
    fn mq_deadline(&self, rid: u64, at: u64) -> Result<u64, i64> {
        if at == 0 {
            return Ok(u64::MAX);
        }
        let b = self.read_mem(rid, at, 16)?;
        let s = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let ns = u64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8]));
        if s >> 63 != 0 || ns >= NS {
            return Err(errno::EINVAL);
        }
        let epoch = linuxabi::ptimer::EPOCH_AT_BOOT * NS;
        Ok(s.saturating_mul(NS).saturating_add(ns).saturating_sub(epoch))
    }

    /// mq_timedsend (`send`) or mq_timedreceive.
    pub(super) fn mq_transfer(&mut self, rid: u64, n: u64, a: [u64; 6], send: bool) -> Out {
        let r = (|| {
            let deadline = self.mq_deadline(rid, a[4])?;
            if send && a[3] >= MQ_PRIO_MAX {
                return Err(errno::EINVAL);
            }
            let id = self.mq_object(a[0])?;
            Ok((deadline, id))
        })();
        let (deadline, id) = match r {
            Ok(v) => v,
            Err(e) => return Out::Ret(errno::fail(e)),
        };
        let o = if send { op::SEND } else { op::RECEIVE };
        let w = [
            pass::MQ,
            self.pid as u64,
            self.cred.euid as u64,
            id | o << 48,
            a[1],
            a[2],
            a[3],
            deadline,
        ];
        self.pass(rid, n, a, &w)
    }

    pub(super) fn mq_notify(&mut self, rid: u64, fd: u64, sevp: u64) -> Result<u64, i64> {
        let mut reg = [0u64; 3];
        if sevp != 0 {
            let b = self.read_mem(rid, sevp, 64)?;
            let value = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
            let signo = u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4]));
            let kind = u32::from_le_bytes(b[12..16].try_into().unwrap_or([0; 4]));
            match kind {
                mq::SIGEV_NONE => {}
                mq::SIGEV_SIGNAL if signo <= 64 => {}
                // Its notice would come through a netlink socket, which
                // Tessera has none of: whatever descriptor it names is not
                // one.
                mq::SIGEV_THREAD => {
                    self.fds.ofd(signo as u64)?;
                    return Err(errno::ENOTSOCK);
                }
                _ => return Err(errno::EINVAL),
            }
            reg = [kind as u64, signo as u64, value];
        }
        let id = self.mq_object(fd)?;
        let w = [
            op::NOTIFY,
            id,
            self.pid as u64,
            self.cred.euid as u64,
            (sevp != 0) as u64,
            reg[0],
            reg[1],
            reg[2],
        ];
        self.mq_ctl(&w).map(|_| 0)
    }

    /// A descriptor of queue description `id` closed: as Linux's flush,
    /// the queue's registration goes if this process owns it.
    pub(super) fn mq_closed(&self, id: u64) {
        let _ = self.mq_ctl(&[op::NOTIFY, id, self.pid as u64, self.cred.euid as u64, 0]);
    }

    pub(super) fn mq_getsetattr(&mut self, rid: u64, fd: u64, new: u64, old: u64) -> Result<u64, i64> {
        let mut set = u64::MAX;
        if new != 0 {
            let b = self.read_mem(rid, new, 64)?;
            let flags = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
            if flags & !O_NONBLOCK != 0 {
                return Err(errno::EINVAL);
            }
            set = flags;
        }
        let id = self.mq_object(fd)?;
        let r = self.mq_ctl(&[op::ATTR, id, set])?;
        if set != u64::MAX {
            // The description's own copy of its flags (fcntl F_GETFL).
            let d = self.fds.ofd(fd)?;
            let mut d = d.borrow_mut();
            d.flags = (d.flags & !fdt::O_NONBLOCK) | (set as u32 & fdt::O_NONBLOCK);
        }
        if old != 0 {
            let mut b = Vec::with_capacity(64);
            for v in [word(&r, 1), word(&r, 2), word(&r, 3), word(&r, 4), 0, 0, 0, 0] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            self.write_mem(rid, old, &b)?;
        }
        Ok(0)
    }

    /// `/proc/sys/fs/mqueue/NAME`'s text.
    pub(super) fn mq_setting_text(&self, index: usize) -> Result<Vec<u8>, i64> {
        Ok(format!("{}\n", self.mq_setting(index, None)?).into_bytes())
    }
}
