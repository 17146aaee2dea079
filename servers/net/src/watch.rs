//! WATCH: readiness told later, without a held call. A client that must not
//! wait in a call to this server (the Linux personality's supervisor, which
//! has its process's signals to serve meanwhile) names sockets and events;
//! if none is ready the watch is kept, and once one is (or a socket of it
//! closes) the server sends the client a request on the entry it named,
//! carrying its token, and forgets the watch. The request is the kernel's
//! non-blocking `request` (AnT): the server waits for no client.

use crate::calls::revents;
use crate::pending::Outcome;
use crate::server::Server;
use crate::stack::now_ns;
use alloc::vec::Vec;
use tessera_api::errno::Errno;
use tessera_api::net::{MAX_POLL, PollFd, poll_len, poll_reply_len, watch_len};
use tessera_api::wire::Reader;
use tessera_rt::abi::AccInfo;
use tessera_rt::sys;

/// A kept watch: one per client (a new one replaces it).
pub struct Watch {
    pub caller: u64,
    pub entry: u64,
    pub token: u64,
    pub fds: Vec<PollFd>,
    /// When it is told anyway, none ready (ns since boot).
    pub deadline: Option<u64>,
}

/// Wake-up requests in flight at most before their results are collected.
const MAX_UNFETCHED: usize = 32;

impl Server {
    /// WATCH: the events now; if none, the watch is kept.
    pub fn watch_call(&mut self, info: &AccInfo, msg: &[u8]) -> Result<Outcome, Errno> {
        let mut r = Reader::new(msg);
        let token = r.u64().ok_or(Errno::EINVAL)?;
        let entry = r.u32().ok_or(Errno::EINVAL)? as u64;
        let n = r.u32().ok_or(Errno::EINVAL)? as usize;
        if n > MAX_POLL
            || (msg.len() != poll_len(n) && msg.len() != watch_len(n))
            || (info.reply_cap as usize) < poll_reply_len(n)
            || entry >= 61
        {
            return Err(Errno::EINVAL);
        }
        let mut fds = Vec::with_capacity(n);
        for _ in 0..n {
            let socket = r.u32().ok_or(Errno::EINVAL)?;
            let ev = r.bytes(2).ok_or(Errno::EINVAL)?;
            r.bytes(2).ok_or(Errno::EINVAL)?;
            fds.push(PollFd {
                socket,
                events: u16::from_le_bytes([ev[0], ev[1]]),
                revents: 0,
            });
        }
        let timeout = match msg.len() == watch_len(n) {
            true => r.i64().ok_or(Errno::EINVAL)?,
            false => -1,
        };
        let caller = info.caller;
        self.watches.retain(|w| w.caller != caller);
        match self.poll_ready(caller, &mut fds) {
            Outcome::Wait if n > 0 => {
                let deadline = (timeout >= 0).then(|| now_ns().saturating_add(timeout as u64));
                self.watches.push(Watch {
                    caller,
                    entry,
                    token,
                    fds,
                    deadline,
                });
                if deadline.is_some() {
                    self.arm_alarm();
                }
                Ok(Outcome::Value(0, revents(&[])))
            }
            Outcome::Wait => Ok(Outcome::Value(0, Vec::new())),
            o => Ok(o),
        }
    }

    /// Tells the clients whose watches are ready; keeps the others.
    pub fn watch_wakes(&mut self) {
        if self.watches.is_empty() {
            return;
        }
        let now = now_ns();
        let mut kept = Vec::with_capacity(self.watches.len());
        for mut w in core::mem::take(&mut self.watches) {
            let expired = w.deadline.is_some_and(|d| now >= d);
            if let (Outcome::Wait, false) = (self.poll_ready(w.caller, &mut w.fds), expired) {
                kept.push(w);
                continue;
            }
            self.collect_wakes();
            let room = core::ptr::slice_from_raw_parts_mut(core::ptr::null_mut::<u8>(), 0);
            if sys::calls::request(w.caller, w.entry, &w.token.to_le_bytes(), room).is_ok() {
                self.unfetched += 1;
                self.stats.watch_wakes += 1;
            }
        }
        self.watches = kept;
    }

    /// Collects the results of earlier wake-up requests (nothing to learn
    /// from them but that they ended).
    fn collect_wakes(&mut self) {
        while self.unfetched > 0 {
            match sys::fetch(0) {
                Ok(_) => self.unfetched -= 1,
                Err(_) if self.unfetched < MAX_UNFETCHED => break,
                // Too many in flight: wait for the oldest (a client's port
                // takes a request at once; only a dead one refuses it).
                Err(_) => match sys::fetch(1_000_000) {
                    Ok(_) => self.unfetched -= 1,
                    Err(_) => self.unfetched = 0,
                },
            }
        }
    }

    /// A client that ended leaves no watch.
    pub fn forget_watches(&mut self, pid: u64) {
        self.watches.retain(|w| w.caller != pid);
    }
}
