//! Readiness of descriptions of every kind at once, for poll, select and
//! epoll: the shared server's objects (named pipes, the terminal, AF_UNIX
//! ends) in one POLL to it, the kernel's pipes each by its state there,
//! the TCP/IP server's sockets in one WATCH (or POLL) to that server, the
//! rest ready at once. When nothing is ready and the caller will wait,
//! both servers keep a registration that wakes the supervisor
//! (`sup::WAKE`): the shared server's token is returned, the TCP/IP
//! server's is `net.watch_token`; the kernel posts an event on
//! `sup::KWAKE` at a watched pipe's next change. With none of the shared
//! server's objects in the set, the TCP/IP server's watch alone keeps the
//! wait, its timeout included, and its token is the one returned.

use super::Sup;
use super::fdtable::{Kind, OfdRef};
use crate::proto::{ctl, word};
use alloc::vec;
use alloc::vec::Vec;

const POLLIN: u64 = 1;
const POLLPRI: u64 = 2;
const POLLOUT: u64 = 4;
const POLLERR: u64 = 8;
const POLLHUP: u64 = 0x10;
const POLLNVAL: u64 = 0x20;
const POLLRDNORM: u64 = 0x40;
const POLLWRNORM: u64 = 0x100;
const POLLRDHUP: u64 = 0x2000;

/// The events of a request as the servers see them (RDNORM is IN, WRNORM
/// is OUT).
fn plain(ev: u64) -> u64 {
    ev | if ev & POLLRDNORM != 0 { POLLIN } else { 0 } | if ev & POLLWRNORM != 0 { POLLOUT } else { 0 }
}

/// What was asked of what the servers answered (the NORM aliases back).
fn asked(got: u64, ev: u64) -> u64 {
    let mut got = got;
    if got & POLLIN != 0 && ev & POLLRDNORM != 0 {
        got |= POLLRDNORM;
    }
    if got & POLLOUT != 0 && ev & POLLWRNORM != 0 {
        got |= POLLWRNORM;
    }
    got & (ev | POLLERR | POLLHUP | POLLNVAL)
}

impl Sup {
    /// The events of each item now (None: a closed descriptor, POLLNVAL):
    /// (ready count, revents, the shared server's token if it registered a
    /// wait). `deadline` 0: do not wait.
    pub(super) fn readiness(&mut self, given: &[(Option<OfdRef>, u64)], deadline: u64) -> (u64, Vec<u64>, u64) {
        // Sets inside sets: the entries of each set (to the nesting limit)
        // are looked at with the rest, so that a wait registers for their
        // objects too; a set is readable while one of them has an event
        // (Linux's ep_eventpoll_poll).
        let mut items: Vec<(Option<OfdRef>, u64)> = given.to_vec();
        let mut parent: Vec<(usize, usize)> = vec![(usize::MAX, 0); given.len()];
        let mut k = 0;
        while k < items.len() {
            let level = parent[k].1;
            let inner = match items[k].0.as_ref().map(|o| o.borrow().kind.clone()) {
                Some(Kind::Epoll(e)) if level < linuxabi::epoll::MAX_NESTS + 1 => Some(e),
                _ => None,
            };
            if let Some(e) = inner {
                for x in e.borrow().entries.iter().filter(|x| !x.disabled) {
                    if let Some(o) = x.ofd.upgrade() {
                        items.push((Some(o), (x.events & linuxabi::epoll::EVENTS) as u64));
                        parent.push((k, level + 1));
                    }
                }
            }
            k += 1;
        }
        let mut revents = vec![0u64; items.len()];
        // (item, object, events asked of it)
        let mut objs: Vec<(usize, u64, u64)> = Vec::new();
        let mut socks: Vec<(usize, u32, u16)> = Vec::new();
        for (i, (o, ev)) in items.iter().enumerate() {
            let Some(o) = o else {
                revents[i] = POLLNVAL;
                continue;
            };
            let d = o.borrow();
            match d.kind {
                Kind::Obj { id, .. } => objs.push((i, id, plain(*ev))),
                Kind::Unix { rx, tx, .. } => {
                    let e = plain(*ev);
                    if rx != 0 {
                        objs.push((i, rx, e & !(POLLOUT | POLLWRNORM)));
                    } else {
                        revents[i] |= asked(POLLIN | POLLRDHUP, *ev);
                    }
                    if tx != 0 {
                        objs.push((i, tx, e & !(POLLIN | POLLRDNORM | POLLPRI | POLLRDHUP)));
                    } else {
                        revents[i] |= POLLHUP;
                    }
                }
                // A listener is readable with a connection waiting, a
                // bound datagram socket with a message; an unconnected
                // stream socket is hung up, as Linux's.
                Kind::UnixSock {
                    listening: true, obj, ..
                } => {
                    objs.push((i, obj, plain(*ev) & (POLLIN | POLLRDNORM)));
                }
                Kind::UnixSock { ty: 2, obj, .. } => {
                    if obj != 0 {
                        objs.push((i, obj, plain(*ev) & (POLLIN | POLLRDNORM)));
                    }
                    revents[i] |= asked(POLLOUT, *ev);
                }
                Kind::UnixSock { .. } => revents[i] = asked(POLLOUT | POLLHUP, *ev),
                Kind::Socket { id, .. } => socks.push((i, id, plain(*ev) as u16)),
                // A kernel pipe: its state now; a wait has the kernel tell
                // this supervisor of its next change (`sup::KWAKE`), asked
                // before the look so that no change falls between.
                Kind::KPipe { .. } => revents[i] = asked(self.kpipe_poll(o, deadline != 0), *ev),
                Kind::KUnix { .. } => revents[i] = asked(self.kunix_poll(o, deadline != 0), *ev),
                // An epoll set: readable from its entries (below).
                Kind::Epoll(_) => {}
                Kind::SignalFd(mask) if self.sig.pending_all() & mask != 0 => revents[i] = ev & (POLLIN | POLLRDNORM),
                Kind::SignalFd(_) => {}
                // Files and devices: always ready (Linux's DEFAULT_POLLMASK).
                _ => revents[i] = ev & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM),
            }
        }
        let mut immediate = revents.iter().any(|&r| r != 0);
        // Waiting on sockets (and kernel pipes, which the kernel watches)
        // alone, the TCP/IP server's watch keeps the deadline too, and the
        // shared server, with nothing of its own to watch, is not asked.
        let mut net_waits = false;
        if !socks.is_empty() {
            let list: Vec<(u32, u16)> = socks.iter().map(|&(_, s, e)| (s, e)).collect();
            let watch = !immediate && deadline != 0;
            let net_deadline = if objs.is_empty() { deadline } else { u64::MAX };
            match self.net_poll(&list, watch, net_deadline) {
                Ok(r) => {
                    for (k, &(i, _, _)) in socks.iter().enumerate() {
                        revents[i] |= asked(r[k] as u64, items[i].1);
                    }
                    net_waits = watch && objs.is_empty();
                }
                Err(_) => {
                    for &(i, _, _) in &socks {
                        revents[i] = POLLNVAL;
                    }
                }
            }
            immediate = revents.iter().any(|&r| r != 0);
        }
        let mut token = 0;
        if net_waits && !immediate {
            token = self.net.watch_token;
            // The kernel's alarm at the deadline as well (a look again at
            // it, as at a watched pipe's change): the wait still ends then
            // if the TCP/IP server, which keeps it, has died meanwhile.
            if deadline != u64::MAX {
                let _ = tessera_rt::sys::calls::port_alarm(crate::proto::sup::KWAKE, deadline);
            }
        } else if !objs.is_empty() || (!immediate && deadline != 0) {
            let wait = if immediate { 0 } else { deadline };
            let mut m = vec![ctl::POLL, self.pid as u64, wait];
            for &(_, id, ev) in &objs {
                m.push(id);
                m.push(ev);
            }
            let r = self.ctl(&m);
            if word(&r, 0) == 0 && r.len() == 2 {
                token = word(&r, 1);
            } else {
                for (k, &(i, _, _)) in objs.iter().enumerate() {
                    revents[i] |= asked(word(&r, 1 + k), items[i].1);
                }
            }
        }
        for j in (given.len()..revents.len()).rev() {
            let (up, _) = parent[j];
            if revents[j] != 0 {
                revents[up] |= asked(POLLIN, items[up].1);
            }
        }
        revents.truncate(given.len());
        let ready = revents.iter().filter(|&&r| r != 0).count() as u64;
        (ready, revents, token)
    }
}
