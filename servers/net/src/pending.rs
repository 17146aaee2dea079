//! Calls the server holds (seed 003: the caller stays stopped until the
//! rendezvous ends): a blocking ACCEPT, CONNECT, SEND, RECV or POLL that
//! cannot be answered yet. After every turn each is tried again; it ends
//! once it can, or when its deadline passes.

use crate::server::{Context, Server};
use crate::stack::now_ns;
use alloc::vec::Vec;
use tessera_api::errno::Errno;
use tessera_api::net::{self, PollFd};
use tessera_rt::sys;

pub enum Op {
    Accept { flags: u32 },
    Connect,
    Send { context: Context, done: usize, len: usize },
    Recv { flags: u32, len: usize, done: usize },
    Poll { fds: Vec<PollFd> },
    SendIca(crate::icasend::IcaSend),
}

pub struct Pending {
    pub rid: u64,
    pub caller: u64,
    /// The socket it waits on (0 for POLL).
    pub socket: u32,
    pub op: Op,
    pub deadline: Option<u64>,
}

/// How a call ends, or that it waits.
pub enum Outcome {
    /// An `i64` result and the bytes after it.
    Value(i64, Vec<u8>),
    /// The data reply, already written into the caller's buffer.
    Data(usize),
    Fail(Errno),
    Wait,
}

impl Outcome {
    pub fn ok() -> Outcome {
        Outcome::Value(0, Vec::new())
    }
}

impl From<Result<(), Errno>> for Outcome {
    fn from(r: Result<(), Errno>) -> Outcome {
        match r {
            Ok(()) => Outcome::ok(),
            Err(e) => Outcome::Fail(e),
        }
    }
}

impl Pending {
    /// RECV replies with data and fails with call errors; the others
    /// reply with an `i64`.
    fn is_recv(&self) -> bool {
        matches!(self.op, Op::Recv { .. })
    }
}

impl Server {
    /// Ends call `rid` of `caller` with `outcome` (`recv`: a RECV). Returns
    /// false if it waits.
    pub fn finish(&mut self, rid: u64, caller: u64, recv: bool, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Wait => return false,
            Outcome::Value(v, extra) => {
                let mut reply = Vec::with_capacity(8 + extra.len());
                reply.extend_from_slice(&v.to_le_bytes());
                reply.extend_from_slice(&extra);
                let _ = sys::endr(rid, &reply);
            }
            Outcome::Data(0) => {
                let _ = sys::endr(rid, &[]);
            }
            Outcome::Data(n) => {
                let _ = sys::endr_len(rid, n as u64);
            }
            Outcome::Fail(e) if recv => {
                if e == Errno::EAGAIN {
                    let _ = sys::rv_fail(rid, net::AGAIN);
                } else {
                    self.client(caller).errno = e;
                    let _ = sys::rv_fail(rid, net::FAILED);
                }
            }
            Outcome::Fail(e) => {
                let _ = sys::endr(rid, &(-(e.0 as i64)).to_le_bytes());
            }
        }
        true
    }

    /// Ends a held call with an error (a SEND_ICA's pages go back).
    pub fn fail_pending(&mut self, mut p: Pending, e: Errno) {
        let recv = p.is_recv();
        let outcome = match &mut p.op {
            Op::SendIca(send) => send.give_back(p.caller, Outcome::Fail(e)),
            _ => Outcome::Fail(e),
        };
        self.finish(p.rid, p.caller, recv, outcome);
    }

    /// Holds call `p` (its outcome was `Wait`), if the caller may have one
    /// more held.
    pub fn hold(&mut self, p: Pending) {
        let held = self.pending.iter().filter(|q| q.caller == p.caller).count();
        if held >= crate::server::MAX_HELD {
            self.fail_pending(p, Errno::ENOBUFS);
            return;
        }
        self.stats.held += 1;
        self.pending.push(p);
    }

    /// Tries every held call again; returns whether any ended.
    pub fn wake(&mut self) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        let now = now_ns();
        let mut any = false;
        let mut held = core::mem::take(&mut self.pending);
        let mut kept = Vec::with_capacity(held.len());
        for mut p in held.drain(..) {
            let expired = p.deadline.is_some_and(|d| now >= d);
            // Past its deadline (a POLL's timeout) it ends as if it could
            // not wait.
            let outcome = self.attempt(p.rid, p.caller, p.socket, &mut p.op, !expired);
            let recv = p.is_recv();
            if self.finish(p.rid, p.caller, recv, outcome) {
                any = true;
            } else {
                kept.push(p);
            }
        }
        // Calls held while these were tried (none today) stay too.
        kept.append(&mut self.pending);
        self.pending = kept;
        any
    }

    /// One try of a call: its outcome, `Wait` only if `may_wait`.
    pub fn attempt(&mut self, rid: u64, caller: u64, socket: u32, op: &mut Op, may_wait: bool) -> Outcome {
        let outcome = match op {
            Op::Accept { flags } => self.tcp_accept(caller, socket, *flags),
            Op::Connect => self.tcp_connect_progress(caller, socket),
            Op::Send { context, done, len } => self.send_some(rid, caller, *context, done, *len),
            Op::Recv { flags, len, done } => self.recv_some(rid, caller, socket, *flags, *len, done),
            Op::Poll { fds } => self.poll_ready(caller, fds),
            // Ends itself (its pages go back with the outcome).
            Op::SendIca(send) => return self.send_ica_some(caller, send, may_wait),
        };
        match outcome {
            Outcome::Wait if !may_wait => match op {
                Op::Connect => Outcome::Fail(Errno::EINPROGRESS),
                Op::Send { done, .. } if *done > 0 => Outcome::Value(*done as i64, Vec::new()),
                Op::Recv { done, .. } if *done > 0 => Outcome::Data(*done),
                Op::Poll { fds } => Outcome::Value(0, crate::calls::revents(fds)),
                _ => Outcome::Fail(Errno::EAGAIN),
            },
            o => o,
        }
    }
}
