//! eventfd objects: a counter every descriptor of it shares (across fork
//! too), read and written through the shared server like a pipe's end, so
//! that a read waiting for a count or a write waiting for room is held
//! here and ends when another process's write or read lets it.

use super::objects::{Object, Objects, POLLIN, POLLOUT};
use super::{Held, Shared, Waiting};
use crate::proto::obj;
use linuxabi::errno;
use linuxabi::eventfd::Counter;
use tessera_rt::sys::calls;

impl Objects {
    /// A new eventfd object with count `value`.
    pub(super) fn eventfd(&mut self, value: u64, semaphore: bool) -> u64 {
        let id = self.insert(Object {
            kind: obj::EVENTFD,
            refs: 1,
            flags: 0,
            pipe: 0,
            pos: 0,
        });
        self.counters.insert(id, Counter::new(value, semaphore));
        id
    }

    /// poll's events of eventfd `id`.
    pub(super) fn counter_events(&self, id: u64) -> u64 {
        self.counters.get(&id).map_or(0, |c| {
            (if c.readable() { POLLIN } else { 0 }) | if c.writable() { POLLOUT } else { 0 }
        })
    }
}

impl Shared {
    /// A held read of eventfd `id`; true once it ended.
    pub(super) fn eventfd_read(&mut self, h: &Held, id: u64, buf: u64, len: u64, nonblock: bool) -> bool {
        let Some(c) = self.objs.counters.get_mut(&id) else {
            self.finish(h, errno::fail(errno::EBADF));
            return true;
        };
        let v = match c.read(len) {
            Ok(Some(v)) => v,
            Ok(None) if !nonblock => return false,
            Ok(None) => {
                self.finish(h, errno::fail(errno::EAGAIN));
                return true;
            }
            Err(e) => {
                self.finish(h, errno::fail(e));
                return true;
            }
        };
        // Writers waiting for room may go on.
        self.woke = true;
        let r = if self.put(h, buf, &v.to_le_bytes()) {
            8
        } else {
            errno::fail(errno::EFAULT)
        };
        self.finish(h, r);
        true
    }

    /// A held write to an eventfd; true once it ended.
    pub(super) fn eventfd_write(&mut self, h: &mut Held, nonblock: bool) -> bool {
        let Waiting::Write { obj: id, buf, len, .. } = h.what else {
            return true;
        };
        // A timerfd is not written.
        if len < 8 || self.objs.info(id).first() == Some(&obj::TIMERFD) {
            self.finish(h, errno::fail(errno::EINVAL));
            return true;
        }
        let mut b = [0u8; 8];
        if calls::caller_read(h.rid, buf, &mut b).is_err() {
            self.finish(h, errno::fail(errno::EFAULT));
            return true;
        }
        let Some(c) = self.objs.counters.get_mut(&id) else {
            self.finish(h, errno::fail(errno::EBADF));
            return true;
        };
        match c.write(u64::from_le_bytes(b)) {
            Ok(true) => {
                self.woke = true;
                self.finish(h, 8);
                true
            }
            Ok(false) if !nonblock => false,
            Ok(false) => {
                self.finish(h, errno::fail(errno::EAGAIN));
                true
            }
            Err(e) => {
                self.finish(h, errno::fail(e));
                true
            }
        }
    }
}
