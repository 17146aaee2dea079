//! sendmmsg and recvmmsg on the TCP/IP server's sockets: a batch of
//! `struct mmsghdr`, each message served by the socket's own sendmsg or
//! recvmsg path (`socket.rs`), so a batch copies no byte more than its
//! messages sent one by one would.
//!
//! The rules are Linux's `net/socket.c` (`__sys_sendmmsg`,
//! `do_recvmmsg`): each message's count goes to its `msg_len`; the call
//! returns how many messages were done, and an error after the first
//! message ends the batch with that count. sendmmsg then drops the error;
//! recvmmsg keeps it, but for EAGAIN, as the socket's pending error
//! (Linux's `sk_err`), which the next recvmmsg returns before reading.
//!
//! **Blocking.** A message that must wait is held as its sendmsg or
//! recvmsg would be (the server's watch); the held call is then the
//! batch itself, its `Progress` saying how many messages are done, so the
//! wake goes on from that message. A signal ends it with the count when
//! some messages are done (`mmsg_interrupted`), as Linux's batch ends
//! with the count when a message's wait is interrupted.
//!
//! **Timeout.** recvmmsg's timeout is Linux's: checked after each
//! datagram, never bounding a wait; what is left is written back after
//! each one.

use super::fdtable::Kind;
use super::socket::Progress;
use super::{Out, Sup, ret};
use linuxabi::errno;
use linuxabi::nr;
use linuxabi::structs as st;
use tessera_rt::sys;

/// Linux's cap on a sendmmsg batch (UIO_MAXIOV).
const MAX_BATCH: u64 = 1024;
/// The size of a `struct mmsghdr`: a msghdr, then msg_len (and padding).
const MMSGHDR: u64 = 64;
const MSG_LEN_AT: u64 = 56;
/// recvmmsg: after the first message, take only what is there.
const MSG_WAITFORONE: u64 = 0x1_0000;
const MSG_DONTWAIT: u64 = 0x40;
/// A 32-bit caller's flag, refused on the 64-bit call.
const MSG_CMSG_COMPAT: u64 = 0x8000_0000;
const MSG_ERRQUEUE: u64 = 0x2000;
const NS: i64 = 1_000_000_000;

impl Sup {
    /// sendmmsg [fd, vec, vlen, flags] and recvmmsg [fd, vec, vlen, flags,
    /// timeout] on an AF_INET socket, from the start (`resume` None) or
    /// from where a held batch stopped.
    pub(super) fn mmsg(&mut self, rid: u64, n: u64, a: [u64; 6], resume: Option<Progress>) -> Out {
        let recv = n == nr::RECVMMSG;
        let mut p = match resume {
            Some(p) => p,
            None => match self.mmsg_start(rid, recv, a) {
                Ok(p) => p,
                Err(e) => return ret(Err(e)),
            },
        };
        let vlen = if recv {
            a[2] & 0xffff_ffff
        } else {
            (a[2] & 0xffff_ffff).min(MAX_BATCH)
        };
        let mut err = 0i64;
        while p.msgs < vlen {
            let entry = a[1].wrapping_add(p.msgs * MMSGHDR);
            let mut flags = a[3] & 0xffff_ffff & !MSG_WAITFORONE;
            if recv && a[3] & MSG_WAITFORONE != 0 && p.msgs > 0 {
                flags |= MSG_DONTWAIT;
            }
            let one = [a[0], entry, flags, 0, 0, 0];
            let inner = Progress {
                done: p.done,
                ..Default::default()
            };
            let out = if recv {
                self.sock_recvmsg(rid, one, inner)
            } else {
                self.sock_sendmsg(rid, one, inner)
            };
            let v = match out {
                Out::Ret(v) if (v as i64) < 0 => {
                    err = v as i64;
                    break;
                }
                Out::Ret(v) => v,
                Out::Done => return self.mmsg_hold(rid, n, a, p),
            };
            p.done = 0;
            if let Err(e) = self.write_u32(rid, entry + MSG_LEN_AT, v as u32) {
                err = errno::fail(e) as i64;
                break;
            }
            p.msgs += 1;
            if !recv {
                // A message sent in part ends the batch (a non-blocking
                // stream's full buffer).
                match self.msghdr(rid, entry) {
                    Ok(h) if h.pieces.iter().map(|x| x.1).sum::<u64>() > v => break,
                    _ => {}
                }
                continue;
            }
            if a[4] != 0 {
                let left = p.deadline as i64 - sys::now_ns() as i64;
                let left = left.max(0);
                let ts = [(left / NS) as u64, (left % NS) as u64];
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&ts[0].to_le_bytes());
                b[8..].copy_from_slice(&ts[1].to_le_bytes());
                if let Err(e) = self.write_mem(rid, a[4], &b) {
                    return ret(Err(e));
                }
                if left == 0 {
                    break;
                }
            }
        }
        if err == 0 || p.msgs == 0 {
            return Out::Ret(if err == 0 { p.msgs } else { err as u64 });
        }
        if recv
            && err != errno::fail(errno::EAGAIN) as i64
            && let Ok((id, ..)) = self.sock_of(a[0])
        {
            self.net.pending_error.insert(id, -err);
        }
        Out::Ret(p.msgs)
    }

    /// The checks before the first message, in Linux's order: the flags,
    /// the timeout (EFAULT, then EINVAL), the socket, its pending error.
    fn mmsg_start(&mut self, rid: u64, recv: bool, a: [u64; 6]) -> Result<Progress, i64> {
        if a[3] & MSG_CMSG_COMPAT != 0 {
            return Err(errno::EINVAL);
        }
        let mut p = Progress::default();
        if recv && a[4] != 0 {
            let t = self.read_mem(rid, a[4], 16)?;
            let (s, ns) = (st::u64_at(&t, 0) as i64, st::u64_at(&t, 8) as i64);
            if !(0..NS).contains(&ns) || s < 0 {
                return Err(errno::EINVAL);
            }
            let span = (s as u64).saturating_mul(NS as u64).saturating_add(ns as u64);
            // A deadline past the clock's range is never reached.
            p.deadline = sys::now_ns().saturating_add(span).min(i64::MAX as u64);
        }
        // AF_UNIX batches are not served yet: their messages go through
        // the shared server or the kernel, which end the call themselves.
        if let Ok(o) = self.fds.ofd(a[0])
            && matches!(
                o.borrow().kind,
                Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
            )
        {
            return Err(errno::ENOSYS);
        }
        let (id, ..) = self.sock_of(a[0])?;
        if recv
            && a[3] & MSG_ERRQUEUE == 0
            && let Some(e) = self.net.pending_error.remove(&id)
        {
            return Err(e);
        }
        Ok(p)
    }

    /// A message of the batch waits: the held call becomes the batch, to
    /// go on from message `p.msgs` (the message's own progress kept).
    fn mmsg_hold(&mut self, rid: u64, n: u64, a: [u64; 6], p: Progress) -> Out {
        if let Some(w) = self.net.wait.as_mut()
            && w.rid == rid
            && matches!(w.nr, nr::SENDMSG | nr::RECVMSG)
        {
            w.nr = n;
            w.args = a;
            w.progress = Progress {
                done: w.progress.done,
                ..p
            };
            self.passed = Some((n, a));
        }
        Out::Done
    }

    /// The count a held batch ends with when a signal interrupts it: the
    /// messages it did (None: none, the call fails as its message would).
    /// recvmmsg keeps the interruption as the socket's error, which the
    /// next recvmmsg returns: Linux's `do_recvmmsg` keeps every error but
    /// EAGAIN. Linux keeps ERESTARTSYS, which reaches the program as -512
    /// with no signal to restart it; here it is EINTR, as the supervisor
    /// restarts any ERESTARTSYS it returns.
    pub(super) fn mmsg_interrupted(&mut self) -> Option<u64> {
        let w = self.net.wait?;
        if !self.sock_held() || !matches!(w.nr, nr::SENDMMSG | nr::RECVMMSG) || w.progress.msgs == 0 {
            return None;
        }
        if w.nr == nr::RECVMMSG
            && let Ok((id, ..)) = self.sock_of(w.args[0])
        {
            self.net.pending_error.insert(id, errno::EINTR);
        }
        Some(w.progress.msgs)
    }
}
