//! inotify instances: each one's watches and queue of events live here,
//! for the events are born in the supervisors of the processes that touch
//! a file and must reach a reader in any other process.
//!
//! A supervisor reports a file's events only while some watch exists
//! anywhere: when the number of watches leaves or reaches zero, every
//! supervisor is told (`tell_watching`), so that with none the file calls
//! pay nothing (docs/linux.md, "inotify").

use super::objects::{Object, Objects, POLLIN};
use super::{Held, Shared, result};
use crate::proto::{self, obj, word};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::inotify::{self as ino, Event, Queue};
use tessera_rt::sys::calls;

/// The most bytes of events queued in all instances together: the
/// shared server's memory is every process's, and max_queued_events may
/// be raised to 2^31 (past it, an instance's queue ends with an overflow).
const BUDGET: usize = 16 << 20;

struct Watch {
    wd: i32,
    /// The inode: (device, inode number).
    key: (u64, u64),
    mask: u32,
}

struct Instance {
    uid: u32,
    /// max_queued_events when it was made (Linux reads it then only).
    max: u64,
    watches: Vec<Watch>,
    next_wd: i32,
    queue: Queue,
}

pub struct Notify {
    instances: BTreeMap<u64, Instance>,
    /// max_user_instances, max_user_watches, max_queued_events.
    pub limits: [u64; 3],
    /// The last rename's cookie.
    cookie: u32,
    /// fanotify groups (`fanotify.rs`), fed by the same reports.
    pub(super) fan: BTreeMap<u64, super::fanotify::Group>,
    /// What the supervisors were told exists (1: inotify watches, 2:
    /// fanotify marks, 0: neither), and the number of that notice (a
    /// supervisor keeps the newest it got).
    told: u64,
    generation: u64,
}

impl Default for Notify {
    fn default() -> Notify {
        Notify {
            instances: BTreeMap::new(),
            limits: [ino::MAX_USER_INSTANCES, ino::MAX_USER_WATCHES, ino::MAX_QUEUED_EVENTS],
            cookie: 0,
            fan: BTreeMap::new(),
            told: 0,
            generation: 0,
        }
    }
}

impl Notify {
    fn watching(&self) -> u64 {
        let ino = self.instances.values().any(|i| !i.watches.is_empty());
        let fan = self.fan.values().any(|g| g.has_marks());
        ino as u64 | (fan as u64) << 1
    }

    /// An instance's or group's end: its watches go with it.
    pub fn gone(&mut self, id: u64) {
        self.instances.remove(&id);
        self.fan.remove(&id);
    }
}

impl Objects {
    /// poll's events of inotify instance `id`.
    pub(super) fn inotify_events(&self, id: u64) -> u64 {
        match self.notify.instances.get(&id) {
            Some(i) if !i.queue.is_empty() => POLLIN,
            _ => 0,
        }
    }

    /// Bytes a read of instance `id` could take (FIONREAD).
    pub(super) fn inotify_bytes(&self, id: u64) -> u64 {
        self.notify.instances.get(&id).map_or(0, |i| i.queue.bytes() as u64)
    }
}

impl Shared {
    /// `ctl::INOTIFY`: the operations of `proto::inotify`.
    pub(super) fn inotify_ctl(&mut self, w: &[u64]) -> super::End {
        let r = match word(w, 1) {
            proto::inotify::INIT => self.inotify_init(word(w, 2) as u32),
            proto::inotify::ADD => self.inotify_add(w),
            proto::inotify::RM => self.inotify_rm(word(w, 2), word(w, 3) as i32),
            proto::inotify::EVENT => {
                self.inotify_event(w.get(2..).unwrap_or(&[]));
                Ok(0)
            }
            proto::inotify::LIMIT => {
                let (which, new) = (word(w, 2) as usize, word(w, 3));
                match self.objs.notify.limits.get_mut(which) {
                    // Linux's proc_dointvec_minmax: 0 to INT_MAX.
                    Some(_) if new != u64::MAX && new > i32::MAX as u64 => Err(errno::EINVAL),
                    Some(l) => {
                        if new != u64::MAX {
                            *l = new;
                        }
                        Ok(*l as i64)
                    }
                    None => Err(errno::EINVAL),
                }
            }
            proto::inotify::FAN_INIT => return self.fanotify_init(w),
            proto::inotify::FAN_MARK => return self.fanotify_mark(w),
            proto::inotify::FAN_TAKE => return self.fanotify_take(w),
            proto::inotify::LIST => {
                let mut out = alloc::vec![0];
                if let Some(i) = self.objs.notify.instances.get(&word(w, 2)) {
                    for wa in i.watches.iter().take(15) {
                        out[0] += 1;
                        out.extend([wa.wd as u64, wa.key.0, wa.key.1, wa.mask as u64]);
                    }
                }
                return super::End::Reply(out);
            }
            _ => Err(errno::EINVAL),
        };
        result(r.unwrap_or_else(|e| -e))
    }

    fn inotify_init(&mut self, uid: u32) -> Result<i64, i64> {
        let n = &self.objs.notify;
        if n.instances.values().filter(|i| i.uid == uid).count() as u64 >= n.limits[0] {
            return Err(errno::EMFILE);
        }
        let id = self.objs.insert(Object {
            kind: obj::INOTIFY,
            refs: 1,
            flags: 0,
            pipe: 0,
            pos: 0,
        });
        self.objs.notify.instances.insert(
            id,
            Instance {
                uid,
                max: self.objs.notify.limits[2],
                watches: Vec::new(),
                next_wd: 1,
                queue: Queue::default(),
            },
        );
        Ok(id as i64)
    }

    /// [op, object, device, inode, mask] → wd: a new watch, or the mask
    /// of the instance's watch of that inode replaced or added to.
    fn inotify_add(&mut self, w: &[u64]) -> Result<i64, i64> {
        let (id, key, mask) = (word(w, 2), (word(w, 3), word(w, 4)), word(w, 5) as u32);
        let n = &mut self.objs.notify;
        let max = n.limits[1];
        let Some(uid) = n.instances.get(&id).map(|i| i.uid) else {
            return Err(errno::EINVAL);
        };
        let used: u64 = n
            .instances
            .values()
            .filter(|i| i.uid == uid)
            .map(|i| i.watches.len() as u64)
            .sum();
        let Some(i) = n.instances.get_mut(&id) else {
            return Err(errno::EINVAL);
        };
        let keep = mask & !(ino::IN_MASK_ADD | ino::IN_MASK_CREATE | ino::IN_ONLYDIR | ino::IN_DONT_FOLLOW);
        if let Some(wa) = i.watches.iter_mut().find(|wa| wa.key == key) {
            if mask & ino::IN_MASK_CREATE != 0 {
                return Err(errno::EEXIST);
            }
            wa.mask = if mask & ino::IN_MASK_ADD != 0 {
                wa.mask | keep
            } else {
                keep
            };
            return Ok(wa.wd as i64);
        }
        if used >= max {
            return Err(errno::ENOSPC);
        }
        let wd = i.next_wd;
        // Linux's idr_alloc_cyclic: numbers are not reused soon.
        i.next_wd = if wd == i32::MAX { 1 } else { wd + 1 };
        i.watches.push(Watch { wd, key, mask: keep });
        Ok(wd as i64)
    }

    fn inotify_rm(&mut self, id: u64, wd: i32) -> Result<i64, i64> {
        let Some(i) = self.objs.notify.instances.get_mut(&id) else {
            return Err(errno::EINVAL);
        };
        let Some(at) = i.watches.iter().position(|wa| wa.wd == wd) else {
            return Err(errno::EINVAL);
        };
        i.watches.remove(at);
        i.queue.push(ignored(wd), i.max);
        self.woke = true;
        Ok(0)
    }

    /// Events a supervisor saw: records of [device, inode, mask, name
    /// length, the name's bytes in words]; a move's two records share one
    /// new cookie.
    fn inotify_event(&mut self, mut w: &[u64]) {
        // The report's first record is fanotify's (process and path) when
        // fanotify marks exist: inotify's watches never match its key.
        self.fanotify_event(w);
        let n = &mut self.objs.notify;
        let mut cookie = 0;
        while w.len() >= 4 {
            let (key, mask, len) = ((w[0], w[1]), w[2] as u32, w[3] as usize);
            let words = len.div_ceil(8);
            let Some(name) = w.get(4..4 + words) else { break };
            let name: Vec<u8> = proto::bytes(name).into_iter().take(len.min(255)).collect();
            w = &w[4 + words..];
            if mask & (ino::IN_MOVED_FROM | ino::IN_MOVED_TO) != 0 && cookie == 0 {
                n.cookie = n.cookie.wrapping_add(1).max(1);
                cookie = n.cookie;
            }
            let full = n.instances.values().map(|i| i.queue.bytes()).sum::<usize>() >= BUDGET;
            for i in n.instances.values_mut() {
                let max = if full { (i.queue.len() as u64).min(i.max) } else { i.max };
                let mut ended = Vec::new();
                if mask & ino::IN_UNMOUNT != 0 {
                    // Every watch of the device's files: key (device, 0).
                    for wa in i.watches.iter().filter(|wa| wa.key.0 == key.0) {
                        i.queue.push(
                            Event {
                                wd: wa.wd,
                                mask: ino::IN_UNMOUNT,
                                cookie: 0,
                                name: Vec::new(),
                            },
                            max,
                        );
                        ended.push(wa.wd);
                    }
                }
                // IN_EXCL_UNLINK in an event: of a file no name leads to.
                let unlinked = mask & ino::IN_EXCL_UNLINK != 0;
                for wa in i
                    .watches
                    .iter()
                    .filter(|wa| wa.key == key && !(unlinked && wa.mask & ino::IN_EXCL_UNLINK != 0))
                {
                    let deleted = mask & ino::IN_DELETE_SELF != 0;
                    if mask & wa.mask & ino::IN_ALL_EVENTS != 0 {
                        let c = if mask & (ino::IN_MOVED_FROM | ino::IN_MOVED_TO) != 0 {
                            cookie
                        } else {
                            0
                        };
                        let e = Event {
                            wd: wa.wd,
                            mask: mask & (ino::IN_ALL_EVENTS | ino::IN_ISDIR),
                            cookie: c,
                            name: name.clone(),
                        };
                        i.queue.push(e, max);
                        if wa.mask & ino::IN_ONESHOT != 0 {
                            ended.push(wa.wd);
                        }
                    }
                    if deleted && !ended.contains(&wa.wd) {
                        ended.push(wa.wd);
                    }
                }
                for wd in ended {
                    i.watches.retain(|wa| wa.wd != wd);
                    i.queue.push(ignored(wd), max);
                }
            }
        }
        self.woke = true;
    }

    /// A held read of instance `id`; true once it ended.
    pub(super) fn inotify_read(&mut self, h: &Held, id: u64, buf: u64, len: u64, nonblock: bool) -> bool {
        let Some(i) = self.objs.notify.instances.get_mut(&id) else {
            self.finish(h, errno::fail(errno::EBADF));
            return true;
        };
        match i.queue.read(len.min(1 << 20) as usize) {
            Ok(Some(data)) => {
                let r = if self.put(h, buf, &data) {
                    data.len() as u64
                } else {
                    errno::fail(errno::EFAULT)
                };
                self.finish(h, r);
                true
            }
            Ok(None) if !nonblock => false,
            Ok(None) => {
                self.finish(h, errno::fail(errno::EAGAIN));
                true
            }
            Err(e) => {
                self.finish(h, errno::fail(e));
                true
            }
        }
    }

    /// Tells every supervisor, pooled ones too, when watches come to
    /// exist or all go (called after each message).
    pub(super) fn tell_watching(&mut self) {
        let now = self.objs.notify.watching();
        if now == self.objs.notify.told {
            return;
        }
        self.objs.notify.told = now;
        self.objs.notify.generation += 1;
        let mut sups: Vec<u64> = self.pool.clone();
        for pid in self.procs.pids() {
            if let Some(p) = self.procs.get(pid) {
                sups.push(p.sup);
            }
        }
        sups.sort_unstable();
        sups.dedup();
        for s in sups {
            self.tell_one(s);
        }
    }

    /// Tells supervisor `sup` that watches exist, if they do (one handed
    /// out after the last notice learns it so; with none, a new one's
    /// default and a pooled one's last notice both say so already).
    pub(super) fn tell_one(&mut self, sup: u64) {
        let n = &self.objs.notify;
        if n.told == 0 {
            return;
        }
        let s = proto::Signal {
            sig: 0,
            code: proto::sup::WATCHING,
            value: n.generation,
            status: n.told as i64,
            ..proto::Signal::default()
        };
        let msg = proto::bytes(&s.to_words());
        let room = core::ptr::slice_from_raw_parts_mut(core::ptr::null_mut::<u8>(), 0);
        if calls::request(sup, proto::sup::SIGNAL, &msg, room).is_ok() {
            self.requests += 1;
        }
    }
}

fn ignored(wd: i32) -> Event {
    Event {
        wd,
        mask: ino::IN_IGNORED,
        cookie: 0,
        name: Vec::new(),
    }
}
