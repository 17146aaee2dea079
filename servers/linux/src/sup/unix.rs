//! AF_UNIX socket pairs, next to the pipes they are made of. A stream
//! pair's end reads one kernel pipe and writes another (`kpipe.rs`,
//! `Kind::KUnix`): the kernel serves its read, write, send and recv with
//! no rendezvous, this supervisor the rest (shutdown, poll, options).
//! Sockets connected through a name (see below) and datagram and
//! seqpacket pairs are still of the shared server's pipes: an end
//! reads one of them and writes the other, so the
//! waiting, the signals, EOF when the peer closes and EPIPE (with
//! SIGPIPE) when it is gone are the pipes', and the bytes cross once, from
//! the writer's memory into the pipe and from the pipe into the reader's.
//! Datagram and seqpacket pairs are pipes of messages: a write is one
//! message, whole or not at all, a read takes one. Sockets made by
//! socket() and connected through a name (`unix_named.rs`) are the same
//! two pipes once connected.

use super::fdtable::{self as fdt, Kind, Ofd, OfdRef};
use super::socket::AF_UNIX;
use super::{Out, Sup, ret};
use crate::proto::{ctl, pass, word};
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use tessera_api::net;

const SOCK_STREAM: u64 = 1;
const SOCK_DGRAM: u64 = 2;
const SOCK_RAW: u64 = 3;
const SOCK_SEQPACKET: u64 = 5;

impl Sup {
    /// socketpair(domain, type, protocol, sv).
    pub(super) fn socketpair(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (domain, kind, protocol, at) = (a[0], a[1], a[2], a[3]);
        if kind & !(0xf | (net::SOCK_NONBLOCK | net::SOCK_CLOEXEC) as u64) != 0 {
            return Err(errno::EINVAL);
        }
        match domain {
            AF_UNIX => {}
            super::socket::AF_INET => {
                // The sockets are checked as socket() would make them;
                // then TCP/IP has no pairs.
                return Err(match (kind & 0xf, protocol) {
                    (SOCK_STREAM, 0 | 6) | (SOCK_DGRAM, 0 | 1 | 17) | (SOCK_RAW, 1..) => errno::EOPNOTSUPP,
                    (SOCK_STREAM | SOCK_DGRAM | SOCK_RAW, _) => errno::EPROTONOSUPPORT,
                    _ => errno::ESOCKTNOSUPPORT,
                });
            }
            _ => return Err(errno::EAFNOSUPPORT),
        }
        // PF_UNIX (1) is AF_UNIX's one protocol.
        if protocol > 1 {
            return Err(errno::EPROTONOSUPPORT);
        }
        let ty = kind & 0xf;
        if !matches!(ty, SOCK_STREAM | SOCK_DGRAM | SOCK_SEQPACKET) {
            return Err(errno::ESOCKTNOSUPPORT);
        }
        self.write_mem(rid, at, &[0u8; 8])?;
        if ty == SOCK_STREAM {
            let mut f = 0;
            if kind & net::SOCK_NONBLOCK as u64 != 0 {
                f |= fdt::O_NONBLOCK;
            }
            if kind & net::SOCK_CLOEXEC as u64 != 0 {
                f |= fdt::O_CLOEXEC;
            }
            return self.kunix_pair(rid, at, f);
        }
        let messages = (ty != SOCK_STREAM) as u64;
        let one = self.ctl(&[ctl::PIPE, messages]);
        let two = self.ctl(&[ctl::PIPE, messages]);
        let (r1, w1, r2, w2) = (word(&one, 0), word(&one, 1), word(&two, 0), word(&two, 1));
        if errno::of(r1).is_some() || errno::of(r2).is_some() {
            let live: Vec<u64> = [r1, w1, r2, w2]
                .into_iter()
                .filter(|&x| errno::of(x).is_none())
                .collect();
            if !live.is_empty() {
                let mut m = alloc::vec![ctl::RELEASE];
                m.extend_from_slice(&live);
                self.ctl(&m);
            }
            return Err(errno::ENFILE);
        }
        let nonblock = if kind & net::SOCK_NONBLOCK as u64 != 0 {
            fdt::O_NONBLOCK
        } else {
            0
        };
        let cloexec = kind & net::SOCK_CLOEXEC as u64 != 0;
        let end = |rx, tx| {
            Ofd::new(
                Kind::Unix { rx, tx, ty: ty as u8 },
                fdt::O_RDWR | nonblock,
                String::from("socket:"),
            )
        };
        let (x, y) = (end(r1, w2), end(r2, w1));
        let limit = self.limits[7][0].min(1 << 20) as usize;
        let fx = match self.fds.insert(x.clone(), cloexec, limit) {
            Ok(f) => f,
            Err(e) => {
                self.release(&x);
                self.release(&y);
                return Err(e);
            }
        };
        let fy = match self.fds.insert(y.clone(), cloexec, limit) {
            Ok(f) => f,
            Err(e) => {
                let _ = self.fds.take(fx as u64);
                self.release(&x);
                self.release(&y);
                return Err(e);
            }
        };
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(fx as i32).to_le_bytes());
        b[4..].copy_from_slice(&(fy as i32).to_le_bytes());
        self.write_mem(rid, at, &b)?;
        Ok(0)
    }

    /// A read (or recv) of an AF_UNIX end: the pipe it reads, waiting there.
    /// `io`: the buffer, its length and the `MSG_*` flags; a datagram's
    /// sender's name is written at `from` (its address and its length
    /// word's; 0: not wanted).
    pub(super) fn unix_read(
        &mut self,
        rid: u64,
        n: u64,
        a: [u64; 6],
        o: &OfdRef,
        io: (u64, u64, u64),
        from: (u64, u64),
    ) -> Out {
        let (buf, len, flags) = io;
        let (rx, nonblock) = {
            let d = o.borrow();
            let rx = match d.kind {
                Kind::Unix { rx, .. } => rx,
                // A bound datagram socket reads its queue.
                Kind::UnixSock { ty: 2, obj, .. } if obj != 0 => obj,
                Kind::UnixSock { listening: true, .. } => return ret(Err(errno::EINVAL)),
                Kind::UnixSock { ty: 2, .. } if d.flags & fdt::O_NONBLOCK != 0 => return ret(Err(errno::EAGAIN)),
                Kind::UnixSock { .. } => return ret(Err(errno::ENOTCONN)),
                _ => return ret(Err(errno::ENOTSOCK)),
            };
            (
                rx,
                d.flags & fdt::O_NONBLOCK != 0 || flags & net::MSG_DONTWAIT as u64 != 0,
            )
        };
        if rx == 0 {
            return Out::Ret(0);
        }
        let f = if nonblock { pass::NONBLOCK } else { 0 };
        self.pass(
            rid,
            n,
            a,
            &[pass::READ, self.pid as u64, rx, buf, len, f, from.0, from.1],
        )
    }

    /// A write (or send) of an AF_UNIX end: into `to` (a datagram's
    /// destination) or the pipe the peer reads. `io`: the buffer, its
    /// length and the `MSG_*` flags.
    pub(super) fn unix_write(
        &mut self,
        rid: u64,
        n: u64,
        a: [u64; 6],
        o: &OfdRef,
        io: (u64, u64, u64),
        to: Option<u64>,
    ) -> Out {
        let (buf, len, flags) = io;
        let (tx, nonblock) = {
            let d = o.borrow();
            let tx = match d.kind {
                _ if to.is_some() => to.unwrap_or(0),
                Kind::Unix { tx, .. } => tx,
                Kind::UnixSock { .. } => return ret(Err(errno::ENOTCONN)),
                _ => return ret(Err(errno::ENOTSOCK)),
            };
            (
                tx,
                d.flags & fdt::O_NONBLOCK != 0 || flags & net::MSG_DONTWAIT as u64 != 0,
            )
        };
        if tx == 0 {
            if flags & net::MSG_NOSIGNAL as u64 == 0 {
                self.raise(linuxabi::signal::SIGPIPE);
            }
            return ret(Err(errno::EPIPE));
        }
        let f = if nonblock { pass::NONBLOCK } else { 0 };
        self.pass(rid, n, a, &[pass::WRITE, self.pid as u64, tx, buf, len, f])
    }

    /// The socket calls on an AF_UNIX end that move data: the first buffer
    /// of a message only (a short count, which a stream allows).
    pub(super) fn unix_call(&mut self, rid: u64, n: u64, a: [u64; 6], o: &OfdRef) -> Out {
        use linuxabi::nr;
        if matches!(o.borrow().kind, Kind::KUnix { .. }) {
            // The kernel serves the rest: a send here found the peer gone
            // or its own side shut; a recv asked for MSG_OOB.
            return ret(match n {
                nr::SENDTO => self.kunix_epipe(a[3]),
                nr::SENDMSG => self.kunix_epipe(a[2]),
                _ => Err(errno::EOPNOTSUPP),
            });
        }
        match n {
            nr::SENDTO => {
                let to = if a[4] != 0 && self.unix_needs_dest(o) {
                    match self.unix_dest(rid, o, a[4], a[5]) {
                        Ok(w) => Some(w),
                        Err(e) => return ret(Err(e)),
                    }
                } else {
                    None
                };
                self.unix_write(rid, n, a, o, (a[1], a[2], a[3]), to)
            }
            nr::RECVFROM if a[4] != 0 && self.unix_messages(o) => {
                // The shared server writes the sender's name (or its
                // absence) as the message is taken.
                self.unix_read(rid, n, a, o, (a[1], a[2], a[3]), (a[4], a[5]))
            }
            nr::RECVFROM => {
                if a[4] != 0 {
                    // No sender's name (a stream's, or an unnamed
                    // sender's): its length is 0; a named datagram
                    // sender's the shared server writes.
                    if let Err(e) = self.put_addr(rid, a[4], a[5], &[]) {
                        return ret(Err(e));
                    }
                }
                self.unix_read(rid, n, a, o, (a[1], a[2], a[3]), (0, 0))
            }
            nr::SENDMSG | nr::RECVMSG => {
                let h = match self.read_mem(rid, a[1], 56) {
                    Ok(h) => h,
                    Err(e) => return ret(Err(e)),
                };
                let (iov, cnt) = (linuxabi::structs::u64_at(&h, 16), linuxabi::structs::u64_at(&h, 24));
                if cnt > 1024 {
                    return ret(Err(errno::EMSGSIZE));
                }
                let v = match self.read_mem(rid, iov, cnt as usize * 16) {
                    Ok(v) => v,
                    Err(e) => return ret(Err(e)),
                };
                let first = (0..cnt as usize)
                    .map(|i| {
                        (
                            linuxabi::structs::u64_at(&v, i * 16),
                            linuxabi::structs::u64_at(&v, i * 16 + 8),
                        )
                    })
                    .find(|p| p.1 > 0)
                    .unwrap_or((0, 0));
                let (name, namelen) = (
                    linuxabi::structs::u64_at(&h, 0),
                    linuxabi::structs::u32_at(&h, 8) as u64,
                );
                if n == nr::SENDMSG {
                    let to = if name != 0 && self.unix_needs_dest(o) {
                        match self.unix_dest(rid, o, name, namelen) {
                            Ok(w) => Some(w),
                            Err(e) => return ret(Err(e)),
                        }
                    } else {
                        None
                    };
                    self.unix_write(rid, n, a, o, (first.0, first.1, a[2]), to)
                } else {
                    let from = if name != 0 && self.unix_messages(o) {
                        (name, a[1] + 8)
                    } else {
                        let _ = self.write_u32(rid, a[1] + 8, 0);
                        (0, 0)
                    };
                    let _ = self.write_u64(rid, a[1] + 40, 0);
                    let _ = self.write_u32(rid, a[1] + 48, 0);
                    self.unix_read(rid, n, a, o, (first.0, first.1, a[2]), from)
                }
            }
            _ => ret(Err(errno::EOPNOTSUPP)),
        }
    }

    /// Whether its reads take messages (a datagram or seqpacket socket's).
    fn unix_messages(&self, o: &OfdRef) -> bool {
        matches!(o.borrow().kind, Kind::Unix { ty, .. } | Kind::UnixSock { ty, .. } if ty != SOCK_STREAM as u8)
    }

    /// Whether a send with a name goes to that name: a datagram socket's
    /// (a connected stream ignores it, as Linux's).
    fn unix_needs_dest(&self, o: &OfdRef) -> bool {
        matches!(o.borrow().kind, Kind::Unix { ty, .. } | Kind::UnixSock { ty, .. } if ty == SOCK_DGRAM as u8)
    }

    pub(super) fn unix_shutdown(&mut self, o: &OfdRef, how: u64) -> Result<u64, i64> {
        if how > 2 {
            return Err(errno::EINVAL);
        }
        if matches!(o.borrow().kind, Kind::KUnix { .. }) {
            return self.kunix_shutdown(o, how);
        }
        let mut d = o.borrow_mut();
        // An unconnected socket has nothing to shut (Linux answers 0).
        let Kind::Unix { rx, tx, ty } = d.kind else {
            return Ok(0);
        };
        let (mut nrx, mut ntx) = (rx, tx);
        if how != 1 && rx != 0 {
            self.ctl(&[ctl::RELEASE, rx]);
            nrx = 0;
        }
        if how != 0 && tx != 0 {
            self.ctl(&[ctl::RELEASE, tx]);
            ntx = 0;
        }
        d.kind = Kind::Unix { rx: nrx, tx: ntx, ty };
        Ok(0)
    }

    pub(super) fn unix_getsockopt(&mut self, o: &OfdRef, level: u32, name: u32) -> Result<Vec<u8>, i64> {
        let (ty, listening) = match o.borrow().kind {
            Kind::Unix { ty, .. } => (ty as i32, false),
            Kind::KUnix { .. } => (SOCK_STREAM as i32, false),
            Kind::UnixSock { ty, listening, .. } => (ty as i32, listening),
            _ => (SOCK_STREAM as i32, false),
        };
        if level != net::SOL_SOCKET {
            return Err(errno::EOPNOTSUPP);
        }
        const SO_PEERCRED: u32 = 17;
        if name == SO_PEERCRED {
            // A pair's ends are the process's own; a connection's, who
            // listened or connected; none yet: pid 0, ids -1.
            let c = match (&o.borrow().kind, o.borrow().unix.cred) {
                (_, Some(c)) => c,
                (Kind::Unix { .. } | Kind::KUnix { .. }, None) => [self.pid, self.cred.euid, self.cred.egid],
                _ => [0, u32::MAX, u32::MAX],
            };
            let mut v = Vec::with_capacity(12);
            for x in c {
                v.extend_from_slice(&x.to_le_bytes());
            }
            return Ok(v);
        }
        let v: i32 = match name {
            net::SO_TYPE => ty,
            net::SO_DOMAIN => AF_UNIX as i32,
            net::SO_ACCEPTCONN => listening as i32,
            net::SO_PROTOCOL | net::SO_ERROR => 0,
            _ => return Err(errno::ENOPROTOOPT),
        };
        Ok(v.to_le_bytes().to_vec())
    }

    pub(super) fn unix_setsockopt(&mut self, level: u32, name: u32, value: &[u8]) -> Result<u64, i64> {
        if level != net::SOL_SOCKET {
            return Err(errno::EOPNOTSUPP);
        }
        if value.len() < 4 {
            return Err(errno::EINVAL);
        }
        match name {
            // The pipes' sizes stay what they are (F_SETPIPE_SZ's default).
            net::SO_RCVBUF | net::SO_SNDBUF | net::SO_REUSEADDR | net::SO_KEEPALIVE => Ok(0),
            _ => Err(errno::ENOPROTOOPT),
        }
    }
}
