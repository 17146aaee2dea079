//! fanotify's numbers, the argument checks of fanotify_init and
//! fanotify_mark in Linux's order (fs/notify/fanotify/fanotify_user.c),
//! and a group's queue: an event of the same object and process as one
//! still queued merges into it (its mask is or'ed in), a full queue ends
//! with one FAN_Q_OVERFLOW, a read takes whole records only.

use crate::errno;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

pub const FAN_ACCESS: u64 = 0x1;
pub const FAN_MODIFY: u64 = 0x2;
pub const FAN_CLOSE_WRITE: u64 = 0x8;
pub const FAN_CLOSE_NOWRITE: u64 = 0x10;
pub const FAN_OPEN: u64 = 0x20;
pub const FAN_OPEN_EXEC: u64 = 0x1000;
pub const FAN_Q_OVERFLOW: u64 = 0x4000;
pub const FAN_OPEN_PERM: u64 = 0x1_0000;
pub const FAN_ACCESS_PERM: u64 = 0x2_0000;
pub const FAN_OPEN_EXEC_PERM: u64 = 0x4_0000;
pub const FAN_EVENT_ON_CHILD: u64 = 0x0800_0000;
pub const FAN_ONDIR: u64 = 0x4000_0000;
/// The events of files a group without file handles may ask for.
pub const EVENTS: u64 = FAN_ACCESS | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE | FAN_OPEN | FAN_OPEN_EXEC;
/// Events only a group reporting file handles may ask for (ATTRIB,
/// MOVED_*, CREATE, DELETE*, MOVE_SELF, RENAME).
pub const FID_EVENTS: u64 = 0x4 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x1000_0000;
pub const PERM_EVENTS: u64 = FAN_OPEN_PERM | FAN_ACCESS_PERM | FAN_OPEN_EXEC_PERM;

pub const FAN_CLOEXEC: u64 = 0x1;
pub const FAN_NONBLOCK: u64 = 0x2;
pub const FAN_CLASS_NOTIF: u64 = 0x0;
pub const FAN_CLASS_CONTENT: u64 = 0x4;
pub const FAN_CLASS_PRE_CONTENT: u64 = 0x8;
pub const FAN_UNLIMITED_QUEUE: u64 = 0x10;
pub const FAN_UNLIMITED_MARKS: u64 = 0x20;
pub const FAN_ENABLE_AUDIT: u64 = 0x40;
/// FAN_REPORT_PIDFD, _TID, _FID, _DIR_FID, _NAME, _TARGET_FID.
pub const FAN_REPORT_ANY: u64 = 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x1000;
const INIT_FLAGS: u64 = FAN_CLOEXEC
    | FAN_NONBLOCK
    | FAN_CLASS_CONTENT
    | FAN_CLASS_PRE_CONTENT
    | FAN_UNLIMITED_QUEUE
    | FAN_UNLIMITED_MARKS
    | FAN_ENABLE_AUDIT
    | FAN_REPORT_ANY;
/// O_ACCMODE, O_APPEND, O_NONBLOCK, O_SYNC, O_DSYNC, O_CLOEXEC,
/// O_LARGEFILE, O_NOATIME: what the listener's descriptors may be opened
/// with.
const EVENT_F_FLAGS: u64 = 0o3 | 0o2000 | 0o4000 | 0o4010000 | 0o10000 | 0o2000000 | 0o100000 | 0o1000000;

pub const FAN_MARK_ADD: u64 = 0x1;
pub const FAN_MARK_REMOVE: u64 = 0x2;
pub const FAN_MARK_DONT_FOLLOW: u64 = 0x4;
pub const FAN_MARK_ONLYDIR: u64 = 0x8;
pub const FAN_MARK_MOUNT: u64 = 0x10;
pub const FAN_MARK_IGNORED_MASK: u64 = 0x20;
pub const FAN_MARK_IGNORED_SURV_MODIFY: u64 = 0x40;
pub const FAN_MARK_FLUSH: u64 = 0x80;
pub const FAN_MARK_FILESYSTEM: u64 = 0x100;
const MARK_FLAGS: u64 = FAN_MARK_ADD
    | FAN_MARK_REMOVE
    | FAN_MARK_DONT_FOLLOW
    | FAN_MARK_ONLYDIR
    | FAN_MARK_MOUNT
    | FAN_MARK_IGNORED_MASK
    | FAN_MARK_IGNORED_SURV_MODIFY
    | FAN_MARK_FLUSH
    | FAN_MARK_FILESYSTEM;

/// Linux's limits without FAN_UNLIMITED_QUEUE / FAN_UNLIMITED_MARKS.
pub const MAX_QUEUED_EVENTS: usize = 16384;
pub const MAX_MARKS: usize = 8192;
/// Groups a user may hold (fanotify's max_user_groups).
pub const MAX_USER_GROUPS: usize = 128;
/// `struct fanotify_event_metadata`'s size and version.
pub const METADATA_LEN: usize = 24;
pub const METADATA_VERSION: u8 = 3;
pub const FAN_NOFD: i32 = -1;

/// fanotify_init's checks of `flags` and `event_f_flags`: Ok(class
/// bits), EPERM without privilege, EINVAL for what Linux refuses and for
/// the file-handle reports, which are not built.
pub fn check_init(flags: u64, event_f_flags: u64, privileged: bool) -> Result<u64, i64> {
    if flags & !INIT_FLAGS != 0 {
        return Err(errno::EINVAL);
    }
    if !privileged {
        return Err(errno::EPERM);
    }
    if event_f_flags & !EVENT_F_FLAGS != 0 || event_f_flags & 3 == 3 {
        return Err(errno::EINVAL);
    }
    let class = flags & (FAN_CLASS_CONTENT | FAN_CLASS_PRE_CONTENT);
    if class == FAN_CLASS_CONTENT | FAN_CLASS_PRE_CONTENT {
        return Err(errno::EINVAL);
    }
    if flags & FAN_REPORT_ANY != 0 {
        return Err(errno::EINVAL);
    }
    Ok(class)
}

/// What a mark is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    Inode,
    Mount,
    Filesystem,
}

/// fanotify_mark's checks of `flags` and `mask` before the descriptor and
/// path are looked at; `class` is the group's.
pub fn check_mark(flags: u64, mask: u64) -> Result<On, i64> {
    let on = match flags & (FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM) {
        0 => On::Inode,
        FAN_MARK_MOUNT => On::Mount,
        FAN_MARK_FILESYSTEM => On::Filesystem,
        _ => return Err(errno::EINVAL),
    };
    match flags & (FAN_MARK_ADD | FAN_MARK_REMOVE | FAN_MARK_FLUSH) {
        FAN_MARK_ADD | FAN_MARK_REMOVE if mask == 0 => return Err(errno::EINVAL),
        FAN_MARK_ADD | FAN_MARK_REMOVE => {}
        FAN_MARK_FLUSH if flags & !(FAN_MARK_FLUSH | FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM) != 0 => {
            return Err(errno::EINVAL);
        }
        FAN_MARK_FLUSH => {}
        _ => return Err(errno::EINVAL),
    }
    if flags & !MARK_FLAGS != 0 {
        return Err(errno::EINVAL);
    }
    if mask & !(EVENTS | FID_EVENTS | PERM_EVENTS | FAN_EVENT_ON_CHILD | FAN_ONDIR) != 0 {
        return Err(errno::EINVAL);
    }
    Ok(on)
}

/// One event as queued: `fd` is opened for the reader when it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub mask: u64,
    pub pid: i32,
    /// The object: (device, inode), (0, 0) for an overflow.
    pub key: (u64, u64),
    /// Its path, by which the reader's descriptor is opened.
    pub path: Vec<u8>,
}

/// What makes two events one: the object, the process, whether it is a
/// directory (Linux keeps FAN_ONDIR events apart).
type MergeKey = ((u64, u64), i32, bool);

#[derive(Debug, Default)]
pub struct Queue {
    events: VecDeque<Event>,
    /// The sequence number of the first queued event.
    head: u64,
    /// The queued event each merge key names, by sequence number: Linux
    /// looks through a hash table of the whole queue, not the last event.
    index: BTreeMap<MergeKey, u64>,
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
        self.events.len() * METADATA_LEN
    }

    /// Queues `e`, or merges it into a queued event of the same object
    /// and process; at `max` events the queue ends with one overflow.
    /// True if queued or merged.
    pub fn push(&mut self, e: Event, max: usize) -> bool {
        if self.events.len() >= max {
            if self.events.back().is_some_and(|q| q.mask == FAN_Q_OVERFLOW) {
                return false;
            }
            self.events.push_back(Event {
                mask: FAN_Q_OVERFLOW,
                pid: 0,
                key: (0, 0),
                path: Vec::new(),
            });
            return false;
        }
        // A full queue merges nothing, as Linux's fsnotify_insert_event.
        let k = (e.key, e.pid, e.mask & FAN_ONDIR != 0);
        if let Some(&seq) = self.index.get(&k)
            && let Some(q) = self.events.get_mut((seq - self.head) as usize)
        {
            q.mask |= e.mask;
            return true;
        }
        self.index.insert(k, self.head + self.events.len() as u64);
        self.events.push_back(e);
        true
    }

    /// Takes the events whose records fit in `len` bytes; EINVAL if not
    /// even one does, None if the queue is empty.
    pub fn take(&mut self, len: usize) -> Result<Option<Vec<Event>>, i64> {
        if self.events.is_empty() {
            return Ok(None);
        }
        if len < METADATA_LEN {
            return Err(errno::EINVAL);
        }
        let n = (len / METADATA_LEN).min(self.events.len());
        let taken: Vec<Event> = self.events.drain(..n).collect();
        for e in &taken {
            let k = (e.key, e.pid, e.mask & FAN_ONDIR != 0);
            if self.index.get(&k).is_some_and(|&s| s < self.head + n as u64) {
                self.index.remove(&k);
            }
        }
        self.head += n as u64;
        Ok(Some(taken))
    }
}

/// `struct fanotify_event_metadata` of an event whose descriptor is `fd`.
pub fn metadata(mask: u64, fd: i32, pid: i32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(METADATA_LEN as u32).to_le_bytes());
    out.push(METADATA_VERSION);
    out.push(0);
    out.extend_from_slice(&(METADATA_LEN as u16).to_le_bytes());
    out.extend_from_slice(&mask.to_le_bytes());
    out.extend_from_slice(&fd.to_le_bytes());
    out.extend_from_slice(&pid.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(mask: u64, pid: i32, ino: u64) -> Event {
        Event {
            mask,
            pid,
            key: (1, ino),
            path: b"/f".to_vec(),
        }
    }

    #[test]
    fn init_checks_in_linux_order() {
        assert_eq!(check_init(0x8000_0000, 0, false), Err(errno::EINVAL));
        assert_eq!(check_init(0, 0, false), Err(errno::EPERM));
        assert_eq!(check_init(0, 3, true), Err(errno::EINVAL));
        assert_eq!(check_init(0, 0o40000000, true), Err(errno::EINVAL));
        assert_eq!(
            check_init(FAN_CLASS_CONTENT | FAN_CLASS_PRE_CONTENT, 0, true),
            Err(errno::EINVAL)
        );
        assert_eq!(check_init(0x200, 0, true), Err(errno::EINVAL));
        assert_eq!(check_init(FAN_CLOEXEC | FAN_NONBLOCK, 0o2, true), Ok(FAN_CLASS_NOTIF));
    }

    #[test]
    fn mark_checks() {
        assert_eq!(check_mark(FAN_MARK_ADD, FAN_OPEN), Ok(On::Inode));
        assert_eq!(check_mark(FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN), Ok(On::Mount));
        assert_eq!(
            check_mark(FAN_MARK_ADD | FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM, FAN_OPEN),
            Err(errno::EINVAL)
        );
        assert_eq!(check_mark(FAN_MARK_ADD, 0), Err(errno::EINVAL));
        assert_eq!(check_mark(FAN_MARK_ADD | FAN_MARK_REMOVE, FAN_OPEN), Err(errno::EINVAL));
        assert_eq!(check_mark(FAN_MARK_FLUSH | FAN_MARK_ONLYDIR, 0), Err(errno::EINVAL));
        assert_eq!(check_mark(FAN_MARK_FLUSH, 0), Ok(On::Inode));
        assert_eq!(check_mark(FAN_MARK_ADD | 0x8000, FAN_OPEN), Err(errno::EINVAL));
        assert_eq!(check_mark(FAN_MARK_ADD, 1 << 40), Err(errno::EINVAL));
    }

    #[test]
    fn events_of_one_object_and_process_merge() {
        let mut q = Queue::default();
        assert!(q.push(ev(FAN_OPEN, 5, 1), 10));
        assert!(q.push(ev(FAN_ACCESS, 6, 1), 10));
        assert!(q.push(ev(FAN_CLOSE_NOWRITE, 5, 1), 10));
        assert_eq!(q.len(), 2);
        let e = q.take(100).unwrap().unwrap();
        assert_eq!(e[0].mask, FAN_OPEN | FAN_CLOSE_NOWRITE);
        assert_eq!(e[1].pid, 6);
        assert_eq!(q.take(100), Ok(None));
        // Not only with the last one: with any still queued, not with
        // one already read.
        q.push(ev(FAN_OPEN, 5, 1), 10);
        q.push(ev(FAN_OPEN, 5, 2), 10);
        q.push(ev(FAN_MODIFY, 5, 1), 10);
        assert_eq!(q.len(), 2);
        assert_eq!(q.take(24).unwrap().unwrap()[0].mask, FAN_OPEN | FAN_MODIFY);
        q.push(ev(FAN_ACCESS, 5, 1), 10);
        q.push(ev(FAN_ACCESS, 5, 2), 10);
        let e = q.take(100).unwrap().unwrap();
        assert_eq!((e.len(), e[0].mask, e[1].mask), (2, FAN_OPEN | FAN_ACCESS, FAN_ACCESS));
    }

    #[test]
    fn a_full_queue_ends_with_one_overflow_and_short_reads_fail() {
        let mut q = Queue::default();
        for i in 0..5 {
            q.push(ev(FAN_OPEN, 1, i), 3);
        }
        assert_eq!(q.len(), 4);
        assert_eq!(q.take(23), Err(errno::EINVAL));
        let e = q.take(48).unwrap().unwrap();
        assert_eq!(e.len(), 2);
        let e = q.take(480).unwrap().unwrap();
        assert_eq!(e[1].mask, FAN_Q_OVERFLOW);
        let mut out = Vec::new();
        metadata(FAN_OPEN, 3, 7, &mut out);
        assert_eq!(out.len(), METADATA_LEN);
        assert_eq!(out[4], 3);
        assert_eq!(&out[16..20], &3i32.to_le_bytes());
    }
}
