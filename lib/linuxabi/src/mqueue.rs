//! POSIX message queues' rules (Linux's `ipc/mqueue.c`): names, the
//! attributes a queue may be made with, the settings of
//! `/proc/sys/fs/mqueue` and a queue's order (highest priority first,
//! first in first out within one).

use crate::errno;
use alloc::vec::Vec;

/// Priorities are below this.
pub const MQ_PRIO_MAX: u64 = 32768;
/// The most `msg_max` and a privileged queue's `mq_maxmsg` may be.
pub const HARD_MSGMAX: u64 = 65536;
/// The most `msgsize_max` and a privileged queue's `mq_msgsize` may be.
pub const HARD_MSGSIZEMAX: u64 = 16 << 20;
/// A name's longest (the libc's leading '/' already gone).
pub const NAME_MAX: usize = 255;
/// `mq_notify`'s kinds (`sigev_notify`).
pub const SIGEV_SIGNAL: u32 = 0;
pub const SIGEV_NONE: u32 = 1;
pub const SIGEV_THREAD: u32 = 2;
/// The signal code of a notification.
pub const SI_MESGQ: i64 = -3;

/// The files of `/proc/sys/fs/mqueue`, in `Settings::values`' order.
pub const SETTINGS: [&str; 5] = ["msg_default", "msg_max", "msgsize_default", "msgsize_max", "queues_max"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub values: [u64; 5],
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            values: [10, 10, 8192, 8192, 256],
        }
    }
}

impl Settings {
    pub fn msg_default(&self) -> u64 {
        self.values[0]
    }
    pub fn msg_max(&self) -> u64 {
        self.values[1]
    }
    pub fn msgsize_default(&self) -> u64 {
        self.values[2]
    }
    pub fn msgsize_max(&self) -> u64 {
        self.values[3]
    }
    pub fn queues_max(&self) -> u64 {
        self.values[4]
    }

    /// Sets setting `index` to `v` within Linux's bounds (EINVAL
    /// outside them).
    pub fn set(&mut self, index: usize, v: u64) -> Result<(), i64> {
        let ok = match index {
            0 | 1 => (1..=HARD_MSGMAX).contains(&v),
            2 | 3 => (128..=HARD_MSGSIZEMAX).contains(&v),
            4 => v <= i32::MAX as u64,
            _ => false,
        };
        if !ok {
            return Err(errno::EINVAL);
        }
        self.values[index] = v;
        Ok(())
    }

    /// Whether a queue may be made with these attributes (Linux's
    /// `mq_attr_ok`): `privileged` (CAP_SYS_RESOURCE) goes past the
    /// settings up to the hard limits.
    pub fn attr_ok(&self, maxmsg: i64, msgsize: i64, privileged: bool) -> Result<(), i64> {
        if maxmsg <= 0 || msgsize <= 0 {
            return Err(errno::EINVAL);
        }
        let (mm, ms) = if privileged {
            (HARD_MSGMAX, HARD_MSGSIZEMAX)
        } else {
            (self.msg_max(), self.msgsize_max())
        };
        if maxmsg as u64 > mm || msgsize as u64 > ms {
            return Err(errno::EINVAL);
        }
        Ok(())
    }
}

/// Checks a queue's name as Linux's getname and lookup do: empty is
/// ENOENT; ".", ".." or holding '/' EACCES; longer than NAME_MAX
/// ENAMETOOLONG.
pub fn check_name(name: &[u8]) -> Result<(), i64> {
    if name.is_empty() {
        return Err(errno::ENOENT);
    }
    if name == b"." || name == b".." || name.contains(&b'/') {
        return Err(errno::EACCES);
    }
    if name.len() > NAME_MAX {
        return Err(errno::ENAMETOOLONG);
    }
    Ok(())
}

/// What a queue costs its owner against RLIMIT_MSGQUEUE: its messages at
/// their largest plus Linux's bookkeeping for each (a `msg_msg` and a
/// priority's tree node, 48 bytes each); None if it overflows.
pub fn charge(maxmsg: u64, msgsize: u64) -> Option<u64> {
    let tree = maxmsg.checked_mul(48)?.checked_add(maxmsg.min(MQ_PRIO_MAX) * 48)?;
    maxmsg.checked_mul(msgsize)?.checked_add(tree)
}

/// A queue's messages.
#[derive(Debug, Default)]
pub struct Queue {
    pub maxmsg: u64,
    pub msgsize: u64,
    /// Highest priority first; within one priority, oldest first.
    msgs: Vec<(u32, Vec<u8>)>,
    /// Bytes of message text queued.
    pub bytes: u64,
}

impl Queue {
    pub fn new(maxmsg: u64, msgsize: u64) -> Queue {
        Queue {
            maxmsg,
            msgsize,
            msgs: Vec::new(),
            bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    pub fn full(&self) -> bool {
        self.msgs.len() as u64 >= self.maxmsg
    }

    /// Queues `data` at priority `prio` (the caller checked room, size
    /// and priority).
    pub fn push(&mut self, prio: u32, data: Vec<u8>) {
        let at = self.msgs.partition_point(|m| m.0 >= prio);
        self.bytes += data.len() as u64;
        self.msgs.insert(at, (prio, data));
    }

    /// The first message, taken off the queue.
    pub fn pop(&mut self) -> Option<(u32, Vec<u8>)> {
        if self.msgs.is_empty() {
            return None;
        }
        let m = self.msgs.remove(0);
        self.bytes -= m.1.len() as u64;
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn order_is_priority_then_arrival() {
        let mut q = Queue::new(10, 8);
        q.push(1, vec![1]);
        q.push(5, vec![2]);
        q.push(1, vec![3]);
        q.push(5, vec![4]);
        q.push(0, vec![5]);
        let got: Vec<u8> = core::iter::from_fn(|| q.pop()).map(|m| m.1[0]).collect();
        assert_eq!(got, vec![2, 4, 1, 3, 5]);
        assert_eq!(q.bytes, 0);
    }

    #[test]
    fn full_at_maxmsg() {
        let mut q = Queue::new(2, 8);
        q.push(0, vec![0; 8]);
        assert!(!q.full());
        q.push(0, vec![0; 8]);
        assert!(q.full());
        assert_eq!(q.bytes, 16);
    }

    #[test]
    fn names() {
        assert_eq!(check_name(b""), Err(errno::ENOENT));
        assert_eq!(check_name(b"a/b"), Err(errno::EACCES));
        assert_eq!(check_name(b".."), Err(errno::EACCES));
        assert_eq!(check_name(&[b'a'; 255]), Ok(()));
        assert_eq!(check_name(&[b'a'; 256]), Err(errno::ENAMETOOLONG));
    }

    #[test]
    fn attributes() {
        let s = Settings::default();
        assert_eq!(s.attr_ok(10, 8192, false), Ok(()));
        assert_eq!(s.attr_ok(11, 8192, false), Err(errno::EINVAL));
        assert_eq!(s.attr_ok(20, 16384, true), Ok(()));
        assert_eq!(s.attr_ok(0, 1, true), Err(errno::EINVAL));
        assert_eq!(s.attr_ok(1, -1, true), Err(errno::EINVAL));
        assert_eq!(s.attr_ok(65537, 1, true), Err(errno::EINVAL));
        assert_eq!(charge(10, 8192), Some(82880));
        assert_eq!(charge(u64::MAX, 2), None);
    }

    #[test]
    fn settings_bounds() {
        let mut s = Settings::default();
        assert_eq!(s.set(1, 0), Err(errno::EINVAL));
        assert_eq!(s.set(3, 127), Err(errno::EINVAL));
        assert_eq!(s.set(4, 1), Ok(()));
        assert_eq!(s.queues_max(), 1);
        assert_eq!(s.set(5, 1), Err(errno::EINVAL));
    }
}
