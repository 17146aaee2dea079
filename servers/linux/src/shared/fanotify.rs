//! fanotify groups: their marks and queues live here beside inotify's
//! instances, and take their events from the same reports of the
//! supervisors (`inotify.rs`, `proto::inotify::EVENT`): one pipeline, two
//! kinds of listeners. The reader's supervisor takes the events one by one
//! (`proto::inotify::FAN_TAKE`) and opens each file for its process, which
//! only it can do.

use super::objects::{Object, Objects, POLLIN};
use super::{Shared, result};
use crate::proto::{self, obj, word};
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::fanotify::{self as fan, Event, On, Queue};

/// The most events queued in all groups together: a group with
/// FAN_UNLIMITED_QUEUE must not take the shared server's memory.
const BUDGET: usize = 1 << 17;

struct Mark {
    on: On,
    /// (device, inode) of an inode mark; (device, 0) of the others.
    key: (u64, u64),
    mask: u64,
    ignored: u64,
    /// FAN_MARK_IGNORED_SURV_MODIFY: a modification keeps `ignored`.
    survive: bool,
}

pub struct Group {
    uid: u32,
    unlimited_queue: bool,
    unlimited_marks: bool,
    /// fanotify_init's event_f_flags: the reader's descriptors' flags.
    f_flags: u64,
    marks: Vec<Mark>,
    queue: Queue,
}

impl Group {
    pub fn has_marks(&self) -> bool {
        !self.marks.is_empty()
    }
}

impl Objects {
    /// poll's events of fanotify group `id`.
    pub(super) fn fanotify_events(&self, id: u64) -> u64 {
        match self.notify.fan.get(&id) {
            Some(g) if !g.queue.is_empty() => POLLIN,
            _ => 0,
        }
    }

    /// Bytes a read of group `id` could take (FIONREAD).
    pub(super) fn fanotify_bytes(&self, id: u64) -> u64 {
        self.notify.fan.get(&id).map_or(0, |g| g.queue.bytes() as u64)
    }
}

impl Shared {
    /// [uid, FAN_UNLIMITED_* flags, event_f_flags] → object or -EMFILE.
    pub(super) fn fanotify_init(&mut self, w: &[u64]) -> super::End {
        let (uid, flags) = (word(w, 2) as u32, word(w, 3));
        if self.objs.notify.fan.values().filter(|g| g.uid == uid).count() >= fan::MAX_USER_GROUPS {
            return result(-errno::EMFILE);
        }
        let id = self.objs.insert(Object {
            kind: obj::FANOTIFY,
            refs: 1,
            flags: 0,
            pipe: 0,
            pos: 0,
        });
        self.objs.notify.fan.insert(
            id,
            Group {
                uid,
                unlimited_queue: flags & fan::FAN_UNLIMITED_QUEUE != 0,
                unlimited_marks: flags & fan::FAN_UNLIMITED_MARKS != 0,
                f_flags: word(w, 4),
                marks: Vec::new(),
                queue: Queue::default(),
            },
        );
        result(id as i64)
    }

    /// [object, fanotify_mark flags, device, inode, mask] → 0 or -errno
    /// (the supervisor checked the flags and found the object).
    pub(super) fn fanotify_mark(&mut self, w: &[u64]) -> super::End {
        let (id, flags, key, mask) = (word(w, 2), word(w, 3), (word(w, 4), word(w, 5)), word(w, 6));
        let Ok(on) = fan::check_mark(flags, mask) else {
            return result(-errno::EINVAL);
        };
        let Some(g) = self.objs.notify.fan.get_mut(&id) else {
            return result(-errno::EBADF);
        };
        let key = if on == On::Inode { key } else { (key.0, 0) };
        if flags & fan::FAN_MARK_FLUSH != 0 {
            g.marks.retain(|m| m.on != on);
            return result(0);
        }
        let ignored = flags & fan::FAN_MARK_IGNORED_MASK != 0;
        let at = g.marks.iter().position(|m| m.on == on && m.key == key);
        if flags & fan::FAN_MARK_REMOVE != 0 {
            let Some(at) = at else {
                return result(-errno::ENOENT);
            };
            let m = &mut g.marks[at];
            if ignored {
                m.ignored &= !mask;
            } else {
                m.mask &= !mask;
            }
            if m.mask == 0 && m.ignored == 0 {
                g.marks.remove(at);
            }
            return result(0);
        }
        let at = match at {
            Some(at) => at,
            None => {
                if !g.unlimited_marks && g.marks.len() >= fan::MAX_MARKS {
                    return result(-errno::ENOSPC);
                }
                g.marks.push(Mark {
                    on,
                    key,
                    mask: 0,
                    ignored: 0,
                    survive: false,
                });
                g.marks.len() - 1
            }
        };
        let m = &mut g.marks[at];
        if ignored {
            m.ignored |= mask;
            if flags & fan::FAN_MARK_IGNORED_SURV_MODIFY != 0 {
                m.survive = true;
            }
        } else {
            m.mask |= mask;
        }
        result(0)
    }

    /// [object, bytes the reader has room for] → [0] (nothing queued),
    /// [-errno], or [1, mask, pid, event_f_flags, path length, path in
    /// words]: the
    /// first event, taken off the queue.
    pub(super) fn fanotify_take(&mut self, w: &[u64]) -> super::End {
        let (id, len) = (word(w, 2), word(w, 3));
        let Some(g) = self.objs.notify.fan.get_mut(&id) else {
            return result(-errno::EBADF);
        };
        match g.queue.take(len.min(fan::METADATA_LEN as u64) as usize) {
            Ok(None) => result(0),
            Err(e) => result(-e),
            Ok(Some(mut e)) => {
                let Some(e) = e.pop() else { return result(0) };
                // FAN_ONDIR kept events apart in the queue; a group that
                // reports descriptors does not show it (Linux's legacy mode).
                let mut out = alloc::vec![
                    1,
                    e.mask & !fan::FAN_ONDIR,
                    e.pid as u32 as u64,
                    g.f_flags,
                    e.path.len() as u64
                ];
                out.extend(proto::name_words(&e.path));
                super::End::Reply(out)
            }
        }
    }

    /// The events of one report (`inotify_event`'s records, the first of
    /// them the process and path of the file, key (u64::MAX, pid)) for
    /// every group whose marks ask for them.
    pub(super) fn fanotify_event(&mut self, w: &[u64]) {
        if w.len() < 4 || w[0] != proto::inotify::FAN_INFO {
            return;
        }
        let pid = w[1] as u32 as i32;
        let plen = (w[3] as usize).min(4096);
        let Some(pw) = w.get(4..4 + plen.div_ceil(8)) else {
            return;
        };
        let mut path = proto::bytes(pw);
        path.truncate(plen);
        let mut rest = &w[4 + plen.div_ceil(8)..];
        // (key, mask, whether the record is the file's directory's)
        let mut recs: Vec<((u64, u64), u64, bool)> = Vec::new();
        while rest.len() >= 4 {
            let (key, mask, len) = ((rest[0], rest[1]), rest[2] & 0xffff_ffff, rest[3] as usize);
            recs.push((key, mask, len != 0));
            let Some(next) = rest.get(4 + len.div_ceil(8)..) else {
                break;
            };
            rest = next;
        }
        let Some(&(file, _, _)) = recs.iter().find(|r| !r.2) else {
            return;
        };
        let total: usize = self.objs.notify.fan.values().map(|g| g.queue.len()).sum();
        let full = total >= BUDGET;
        for g in self.objs.notify.fan.values_mut() {
            let (mut want, mut ignore) = (0u64, 0u64);
            for &(key, mask, child) in &recs {
                let dir = mask & fan::FAN_ONDIR != 0;
                for m in g.marks.iter_mut() {
                    let hit = if child {
                        // A directory's mark hears of its entries with
                        // FAN_EVENT_ON_CHILD (an inode mark only).
                        m.on == On::Inode && m.key == key && m.mask & fan::FAN_EVENT_ON_CHILD != 0
                    } else {
                        match m.on {
                            On::Inode => m.key == key,
                            On::Mount | On::Filesystem => m.key.0 == key.0,
                        }
                    };
                    if !hit {
                        continue;
                    }
                    // A modification ends an ignored mask that does not
                    // survive it, as Linux's fsnotify.
                    if mask & fan::FAN_MODIFY != 0 && !m.survive && !child {
                        m.ignored = 0;
                    }
                    if dir && m.mask & fan::FAN_ONDIR == 0 {
                        continue;
                    }
                    want |= m.mask & mask & fan::EVENTS;
                    ignore |= m.ignored & fan::EVENTS;
                }
            }
            let got = want & !ignore;
            if got == 0 {
                continue;
            }
            let dir = recs.iter().any(|r| !r.2 && r.1 & fan::FAN_ONDIR != 0);
            let e = Event {
                mask: got | if dir { fan::FAN_ONDIR } else { 0 },
                pid,
                key: file,
                path: path.clone(),
            };
            let max = if full {
                g.queue.len()
            } else if g.unlimited_queue {
                usize::MAX
            } else {
                fan::MAX_QUEUED_EVENTS
            };
            g.queue.push(e, max);
        }
        self.woke = true;
    }
}
