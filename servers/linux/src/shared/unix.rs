//! AF_UNIX names: the one table every process's supervisor reaches that
//! maps a bound socket's name to what connects to it. A name is a socket
//! file's (device, inode), so that unlinking the file forgets it for new
//! connections while connected sockets go on, or an abstract name (the
//! bytes after a leading NUL). A stream (or seqpacket) socket bound to a
//! name is a listener object here; a connection is two pipes, the
//! connecting end's at once and the other end's queued at the listener
//! until accepted (at most its backlog plus one waiting, as Linux). A
//! datagram socket bound to a name reads a pipe of messages whose write
//! end the table keeps for the senders. The table forgets an entry with
//! the last reference to its socket, so a process that dies takes its
//! names with it.

use super::objects::Objects;
use crate::proto::{self, obj, word};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;

const SOCK_DGRAM: u64 = 2;
/// Linux's somaxconn: the longest queue a listener gets.
pub const BACKLOG_MAX: u64 = 4096;

/// A connection not yet accepted: the listener's side's pipe ends and
/// who connected (pid, uid, gid).
struct Pending {
    rx: u64,
    tx: u64,
    cred: [u64; 3],
}

/// A bound stream or seqpacket socket.
pub struct Listener {
    /// listen() was called: the backlog it gave.
    backlog: Option<u64>,
    queue: VecDeque<Pending>,
    /// Who listens (pid, uid, gid): the connecting side's SO_PEERCRED.
    cred: [u64; 3],
}

/// A name in the table: its socket's type and object (a listener, or a
/// datagram socket's queue's write end, whose reference the table holds).
#[derive(Clone, Copy)]
struct Entry {
    ty: u64,
    obj: u64,
}

#[derive(Default)]
pub struct Names {
    table: BTreeMap<Vec<u64>, Entry>,
    listeners: BTreeMap<u64, Listener>,
    /// A datagram queue's pipe → its messages' senders' names, oldest
    /// first, as its messages.
    pub(super) tags: BTreeMap<u64, VecDeque<Vec<u8>>>,
    /// A sender's write end → its socket's name.
    pub(super) senders: BTreeMap<u64, Vec<u8>>,
}

impl Objects {
    /// [type, key...] → [object or -errno]: a listener for a stream
    /// socket, the read end of its queue for a datagram socket.
    pub(super) fn unix_bind(&mut self, w: &[u64]) -> Vec<u64> {
        let ty = word(w, 1);
        let key = w.get(2..).unwrap_or(&[]).to_vec();
        if key.is_empty() {
            return vec![errno::fail(errno::EINVAL)];
        }
        if let Some(old) = self.unix.table.get(&key).copied() {
            // An abstract name is taken while its socket lives; a file's
            // (device, inode) already here is a file unlinked and its
            // number given again: the old socket is no longer reachable.
            if key[0] == 1 {
                return vec![errno::fail(errno::EADDRINUSE)];
            }
            self.unix.table.remove(&key);
            if old.ty == SOCK_DGRAM {
                self.release(old.obj);
            }
        }
        if ty == SOCK_DGRAM {
            let [r, wr] = self.pipe(true);
            if let Some(p) = self.pipe_of(r) {
                self.unix.tags.insert(p, VecDeque::new());
            }
            self.unix.table.insert(key, Entry { ty, obj: wr });
            return vec![r];
        }
        let id = self.insert(super::objects::Object {
            kind: obj::UNIX_NAME,
            refs: 1,
            flags: 0,
            pipe: 0,
            pos: 0,
        });
        self.unix.listeners.insert(
            id,
            Listener {
                backlog: None,
                queue: VecDeque::new(),
                cred: [0; 3],
            },
        );
        self.unix.table.insert(key, Entry { ty, obj: id });
        vec![id]
    }

    /// [listener, backlog, pid, uid, gid] → [0 or -errno].
    pub(super) fn unix_listen(&mut self, w: &[u64]) -> Vec<u64> {
        let Some(l) = self.unix.listeners.get_mut(&word(w, 1)) else {
            return vec![errno::fail(errno::EINVAL)];
        };
        l.backlog = Some(word(w, 2).min(BACKLOG_MAX));
        l.cred = [word(w, 3), word(w, 4), word(w, 5)];
        vec![0]
    }

    /// [type, pid, uid, gid, key...] → a stream: [0, read end, write
    /// end, the listener's pid, uid, gid]; a datagram socket: [0, its
    /// queue's write end, one more reference to it]; or [-errno].
    pub(super) fn unix_connect(&mut self, w: &[u64]) -> Vec<u64> {
        let ty = word(w, 1);
        let cred = [word(w, 2), word(w, 3), word(w, 4)];
        let k = (word(w, 5) as usize).min(w.len().saturating_sub(6));
        let key = w.get(6..6 + k).unwrap_or(&[]);
        let Some(e) = self.unix.table.get(key).copied() else {
            return vec![errno::fail(errno::ECONNREFUSED)];
        };
        if e.ty != ty {
            return vec![errno::fail(errno::EPROTOTYPE)];
        }
        if ty == SOCK_DGRAM {
            // A write end of the sender's own: its messages carry its name.
            let Some(wr) = self.pipe_of(e.obj).and_then(|p| self.pipe_writer(p)) else {
                return vec![errno::fail(errno::ECONNREFUSED)];
            };
            let n = (word(w, 6 + k) as usize).min(110);
            let name = proto::bytes(w.get(7 + k..).unwrap_or(&[]));
            if n > 0 && name.len() >= n {
                self.unix.senders.insert(wr, name[..n].to_vec());
            }
            return vec![0, wr];
        }
        let Some(l) = self.unix.listeners.get(&e.obj) else {
            return vec![errno::fail(errno::ECONNREFUSED)];
        };
        let Some(backlog) = l.backlog else {
            return vec![errno::fail(errno::ECONNREFUSED)];
        };
        if l.queue.len() as u64 > backlog {
            // The listener: a blocking connect waits for its room.
            return vec![errno::fail(errno::EAGAIN), e.obj];
        }
        let lcred = l.cred;
        let messages = ty != 1;
        let [ar, aw] = self.pipe(messages);
        let [br, bw] = self.pipe(messages);
        if let Some(l) = self.unix.listeners.get_mut(&e.obj) {
            l.queue.push_back(Pending { rx: br, tx: aw, cred });
        }
        vec![0, ar, bw, lcred[0], lcred[1], lcred[2]]
    }

    /// [listener] → [0, read end, write end, pid, uid, gid of who
    /// connected], or [-EAGAIN] with none waiting.
    pub(super) fn unix_accept(&mut self, w: &[u64]) -> Vec<u64> {
        let Some(l) = self.unix.listeners.get_mut(&word(w, 1)) else {
            return vec![errno::fail(errno::EINVAL)];
        };
        if l.backlog.is_none() {
            return vec![errno::fail(errno::EINVAL)];
        }
        match l.queue.pop_front() {
            Some(p) => vec![0, p.rx, p.tx, p.cred[0], p.cred[1], p.cred[2]],
            None => vec![errno::fail(errno::EAGAIN)],
        }
    }

    /// A message went into pipe `pipe` through write end `obj`: its
    /// sender's name is kept with it (a datagram queue's only).
    pub(super) fn unix_tag_push(&mut self, pipe: u64, obj: u64) {
        if let Some(t) = self.unix.tags.get_mut(&pipe) {
            t.push_back(self.unix.senders.get(&obj).cloned().unwrap_or_default());
        }
    }

    /// The sender's name of the message just taken from pipe `pipe`.
    pub(super) fn unix_tag_take(&mut self, pipe: u64) -> Option<Vec<u8>> {
        self.unix.tags.get_mut(&pipe)?.pop_front()
    }

    /// Whether listener `id` has room for one more connection (or is
    /// no listener any more: the connect that waits then fails).
    pub(super) fn unix_room(&self, id: u64) -> bool {
        self.unix
            .listeners
            .get(&id)
            .is_none_or(|l| l.backlog.is_none_or(|b| l.queue.len() as u64 <= b))
    }

    /// Whether listener `id` has a connection waiting.
    pub(super) fn unix_waiting(&self, id: u64) -> bool {
        self.unix.listeners.get(&id).is_some_and(|l| !l.queue.is_empty())
    }

    /// Listener `id` lost its last reference: its name goes, and the
    /// connections it did not accept end (their other sides see EOF).
    pub(super) fn unix_listener_gone(&mut self, id: u64) {
        self.unix.table.retain(|_, e| e.obj != id);
        if let Some(l) = self.unix.listeners.remove(&id) {
            for p in l.queue {
                self.release(p.rx);
                self.release(p.tx);
            }
        }
    }

    /// Pipe `pipe` has no reader left: a datagram name whose queue it is
    /// goes (the table's reference to its write end with it).
    pub(super) fn unix_queue_gone(&mut self, pipe: u64) {
        let gone: Vec<(Vec<u64>, u64)> = self
            .unix
            .table
            .iter()
            .filter(|(_, e)| e.ty == SOCK_DGRAM && self.pipe_of(e.obj) == Some(pipe))
            .map(|(k, e)| (k.clone(), e.obj))
            .collect();
        for (k, o) in gone {
            self.unix.table.remove(&k);
            self.release(o);
        }
    }
}
