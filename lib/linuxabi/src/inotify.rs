//! inotify's numbers and an instance's queue of events, as Linux keeps it:
//! an event the same as the last one still queued is not queued again, a
//! full queue ends with one IN_Q_OVERFLOW, and a read takes whole records
//! only (EINVAL if the first does not fit).

use crate::errno;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

pub const IN_ACCESS: u32 = 0x1;
pub const IN_MODIFY: u32 = 0x2;
pub const IN_ATTRIB: u32 = 0x4;
pub const IN_CLOSE_WRITE: u32 = 0x8;
pub const IN_CLOSE_NOWRITE: u32 = 0x10;
pub const IN_OPEN: u32 = 0x20;
pub const IN_MOVED_FROM: u32 = 0x40;
pub const IN_MOVED_TO: u32 = 0x80;
pub const IN_CREATE: u32 = 0x100;
pub const IN_DELETE: u32 = 0x200;
pub const IN_DELETE_SELF: u32 = 0x400;
pub const IN_MOVE_SELF: u32 = 0x800;
pub const IN_ALL_EVENTS: u32 = 0xfff;
pub const IN_UNMOUNT: u32 = 0x2000;
pub const IN_Q_OVERFLOW: u32 = 0x4000;
pub const IN_IGNORED: u32 = 0x8000;
pub const IN_ONLYDIR: u32 = 0x0100_0000;
pub const IN_DONT_FOLLOW: u32 = 0x0200_0000;
pub const IN_EXCL_UNLINK: u32 = 0x0400_0000;
pub const IN_MASK_CREATE: u32 = 0x1000_0000;
pub const IN_MASK_ADD: u32 = 0x2000_0000;
pub const IN_ISDIR: u32 = 0x4000_0000;
pub const IN_ONESHOT: u32 = 0x8000_0000;
/// Every bit inotify_add_watch accepts.
pub const VALID: u32 =
    IN_ALL_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_CREATE | IN_MASK_ADD | IN_ISDIR | IN_ONESHOT;
pub const IN_CLOEXEC: u64 = 0o2000000;
pub const IN_NONBLOCK: u64 = 0o4000;

/// The size of `struct inotify_event` without its name.
pub const HEADER: usize = 16;
/// Linux's defaults of /proc/sys/fs/inotify.
pub const MAX_USER_INSTANCES: u64 = 128;
pub const MAX_USER_WATCHES: u64 = 8192;
pub const MAX_QUEUED_EVENTS: u64 = 16384;

/// One event as queued: the name is padded when it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub wd: i32,
    pub mask: u32,
    pub cookie: u32,
    pub name: Vec<u8>,
}

impl Event {
    /// The name's room in the record: its bytes, a NUL, padded to 16
    /// bytes (Linux's round_event_name_len), none without a name.
    fn name_room(&self) -> usize {
        if self.name.is_empty() {
            0
        } else {
            (self.name.len() + 1).div_ceil(HEADER) * HEADER
        }
    }

    pub fn size(&self) -> usize {
        HEADER + self.name_room()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.wd.to_le_bytes());
        out.extend_from_slice(&self.mask.to_le_bytes());
        out.extend_from_slice(&self.cookie.to_le_bytes());
        out.extend_from_slice(&(self.name_room() as u32).to_le_bytes());
        out.extend_from_slice(&self.name);
        out.resize(out.len() + self.name_room() - self.name.len(), 0);
    }
}

#[derive(Debug, Default)]
pub struct Queue {
    events: VecDeque<Event>,
    bytes: usize,
}

impl Queue {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Bytes a read could take (FIONREAD).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Queues `e` unless it repeats the last event; past `max` events the
    /// queue ends with one overflow event instead. True if queued.
    pub fn push(&mut self, e: Event, max: u64) -> bool {
        if self.events.back() == Some(&e) {
            return false;
        }
        let overflow = Event {
            wd: -1,
            mask: IN_Q_OVERFLOW,
            cookie: 0,
            name: Vec::new(),
        };
        let e = if self.events.len() as u64 >= max {
            if self.events.back() == Some(&overflow) {
                return false;
            }
            overflow
        } else {
            e
        };
        self.bytes += e.size();
        self.events.push_back(e);
        true
    }

    /// The whole records that fit in `len` bytes, taken off the queue;
    /// EINVAL if not even the first fits, None if the queue is empty.
    pub fn read(&mut self, len: usize) -> Result<Option<Vec<u8>>, i64> {
        let Some(first) = self.events.front() else {
            return Ok(None);
        };
        if first.size() > len {
            return Err(errno::EINVAL);
        }
        let mut out = Vec::new();
        while let Some(e) = self.events.front() {
            if out.len() + e.size() > len {
                break;
            }
            e.encode(&mut out);
            self.bytes -= e.size();
            self.events.pop_front();
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(wd: i32, mask: u32, name: &[u8]) -> Event {
        Event {
            wd,
            mask,
            cookie: 0,
            name: name.to_vec(),
        }
    }

    #[test]
    fn records_are_padded_and_repeats_merge() {
        let mut q = Queue::default();
        assert!(q.push(ev(1, IN_MODIFY, b""), 10));
        assert!(!q.push(ev(1, IN_MODIFY, b""), 10));
        assert!(q.push(ev(1, IN_CREATE, b"abc"), 10));
        assert_eq!(q.bytes(), 16 + 32);
        let r = q.read(100).unwrap().unwrap();
        assert_eq!(r.len(), 48);
        assert_eq!(&r[16..20], &1i32.to_le_bytes());
        assert_eq!(&r[28..32], &16u32.to_le_bytes());
        assert_eq!(&r[32..35], b"abc");
        assert_eq!(r[35], 0);
        assert!(q.is_empty());
        assert_eq!(q.read(100), Ok(None));
    }

    #[test]
    fn a_short_buffer_takes_whole_records_or_is_einval() {
        let mut q = Queue::default();
        q.push(ev(1, IN_CREATE, b"0123456789abcdef"), 10);
        q.push(ev(1, IN_DELETE, b""), 10);
        assert_eq!(q.read(40), Err(errno::EINVAL));
        assert_eq!(q.read(60).unwrap().unwrap().len(), 48);
        assert_eq!(q.read(16).unwrap().unwrap().len(), 16);
    }

    #[test]
    fn a_full_queue_ends_with_one_overflow() {
        let mut q = Queue::default();
        for i in 0..5 {
            q.push(ev(1, IN_MODIFY, &[b'a' + i]), 3);
        }
        let r = q.read(1000).unwrap().unwrap();
        assert_eq!(r.len(), 3 * 32 + 16);
        assert_eq!(&r[96..100], &(-1i32).to_le_bytes());
        assert_eq!(&r[100..104], &IN_Q_OVERFLOW.to_le_bytes());
    }
}
