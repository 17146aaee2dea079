//! TCP sockets: listening with a backlog, accepting, connecting, and the
//! byte stream, each byte copied once between the caller's memory and the
//! connection's buffer (`rv_read`, `rv_write`).

use crate::pending::Outcome;
use crate::server::{Context, Server};
use crate::socket::{Conn, Kind, Link, Listener, Options, Socket, Tcp};
use crate::stack::now_ns;
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::socket::tcp::{self, RecvError, State};
use smoltcp::time::Duration;
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint};
use tessera_api::errno::Errno;
use tessera_api::net::*;
use tessera_rt::sys;

/// How long a connection attempt goes on (SYNs resent meanwhile).
const CONNECT_NS: u64 = 30_000_000_000;
/// Listening smoltcp sockets per link: each takes one connection, and is
/// replaced as soon as the packet that made it arrives.
const POOL: usize = 2;

pub fn apply_options(s: &mut tcp::Socket, o: &Options) {
    s.set_nagle_enabled(!o.nodelay);
    s.set_keep_alive(o.keepalive.then(|| Duration::from_secs(75)));
    s.set_hop_limit(o.ttl);
}

pub fn listen_addr(local: SockAddr) -> IpListenEndpoint {
    IpListenEndpoint {
        addr: (local.addr != [0; 4]).then(|| IpAddress::v4(local.addr[0], local.addr[1], local.addr[2], local.addr[3])),
        port: local.port,
    }
}

pub fn sockaddr(e: IpEndpoint) -> SockAddr {
    let IpAddress::Ipv4(a) = e.addr;
    SockAddr::new(a.octets(), e.port)
}

/// What the receiving half of a connection says when its buffer is empty.
enum Eof {
    Open,
    Fin,
    Reset,
}

fn eof(sock: &mut tcp::Socket, established: bool) -> Eof {
    if sock.can_recv() {
        return Eof::Open;
    }
    match sock.recv(|_| (0, ())) {
        Err(RecvError::Finished) => Eof::Fin,
        Err(RecvError::InvalidState) if established && sock.state() == State::Closed => Eof::Reset,
        _ => Eof::Open,
    }
}

fn synchronized(st: State) -> bool {
    !matches!(st, State::Closed | State::Listen | State::SynSent | State::SynReceived)
}

impl Server {
    pub fn tcp_listen(&mut self, caller: u64, id: u32, backlog: u32) -> Result<(), Errno> {
        let backlog = (backlog as usize).clamp(1, 128);
        let s = self.table.get(id, caller)?;
        match &mut s.kind {
            Kind::Tcp(Tcp::Fresh) => {}
            Kind::Tcp(Tcp::Listening(l)) => {
                l.backlog = backlog;
                return Ok(());
            }
            Kind::Tcp(_) => return Err(Errno::EINVAL),
            Kind::Dgram { .. } => return Err(Errno::EOPNOTSUPP),
        }
        let mut local = s.local;
        let options = s.options;
        if local.port == 0 {
            local.port = self.ephemeral_port(IPPROTO_TCP)?;
        }
        let links = self.stack.links_for(local.addr)?;
        let bytes = options.rcvbuf + options.sndbuf;
        let mut listening = Vec::new();
        for link in links {
            for _ in 0..POOL.min(backlog) {
                if let Err(e) = self.reserve(bytes) {
                    for h in listening {
                        self.stack.remove(h);
                        self.buffers -= bytes;
                    }
                    return Err(e);
                }
                let h = self.stack.tcp(link, options.rcvbuf, options.sndbuf);
                apply_options(self.stack.tcp_mut(h), &options);
                let _ = self.stack.tcp_mut(h).listen(listen_addr(local));
                listening.push(h);
            }
        }
        let s = self.table.get(id, caller)?;
        s.local = local;
        s.kind = Kind::Tcp(Tcp::Listening(Listener {
            backlog,
            listening,
            owed: Vec::new(),
            queue: VecDeque::new(),
        }));
        self.listeners.push(id);
        Ok(())
    }

    pub fn tcp_accept(&mut self, caller: u64, id: u32, flags: u32) -> Outcome {
        let s = match self.table.get(id, caller) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(e),
        };
        let options = s.options;
        let Kind::Tcp(Tcp::Listening(l)) = &mut s.kind else {
            return Outcome::Fail(Errno::EINVAL);
        };
        let mut queue = core::mem::take(&mut l.queue);
        // Connections reset before they were accepted are forgotten.
        let bytes = options.rcvbuf + options.sndbuf;
        let mut dropped = Vec::new();
        queue.retain(|&h| {
            let closed = self.stack.tcp_mut(h).state() == State::Closed;
            if closed {
                dropped.push(h);
            }
            !closed
        });
        let ready = queue.iter().position(|&h| synchronized(self.stack.tcp_mut(h).state()));
        let full = self.table.held_by(caller) >= crate::socket::MAX_PER_CLIENT;
        let taken = match ready {
            Some(i) if !full => queue.remove(i),
            _ => None,
        };
        if let Ok(Socket {
            kind: Kind::Tcp(Tcp::Listening(l)),
            ..
        }) = self.table.get(id, caller)
        {
            l.queue = queue;
        }
        for h in dropped {
            self.stack.remove(h);
            self.buffers -= bytes;
        }
        let Some(h) = taken else {
            return if full && ready.is_some() {
                Outcome::Fail(Errno::EMFILE)
            } else {
                Outcome::Wait
            };
        };
        let sock = self.stack.tcp_mut(h);
        let (local, peer) = (sock.local_endpoint(), sock.remote_endpoint());
        let conn = Socket {
            generation: 0,
            holders: vec![caller],
            kind: Kind::Tcp(Tcp::Conn(Conn {
                handle: h,
                established: true,
                deadline: None,
                shut_rd: false,
                shut_wr: false,
                reset_told: false,
            })),
            protocol: IPPROTO_TCP,
            options: Options {
                nonblock: flags & SOCK_NONBLOCK != 0,
                ..options
            },
            local: local.map(sockaddr).unwrap_or_default(),
            error: None,
            buffers: bytes,
        };
        let new = match self.add_socket(caller, conn) {
            Ok(n) => n,
            Err(e) => {
                self.stack.tcp_mut(h).abort();
                self.orphan(h, bytes);
                return Outcome::Fail(e);
            }
        };
        self.stats.accepted += 1;
        self.refill_listeners();
        let peer = peer.map(sockaddr).unwrap_or_default();
        Outcome::Value(new as i64, peer.encode().to_vec())
    }

    /// CONNECT on a TCP socket: starts the handshake (SYN).
    pub fn tcp_connect(&mut self, caller: u64, id: u32, mut to: SockAddr) -> Outcome {
        let s = match self.table.get(id, caller) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(e),
        };
        match &s.kind {
            Kind::Tcp(Tcp::Fresh | Tcp::Dead) => {}
            Kind::Tcp(Tcp::Conn(c)) if c.established => return Outcome::Fail(Errno::EISCONN),
            Kind::Tcp(Tcp::Conn(_)) => return Outcome::Fail(Errno::EALREADY),
            _ => return Outcome::Fail(Errno::EINVAL),
        }
        let (mut local, options) = (s.local, s.options);
        if to.addr == [0; 4] {
            to.addr = [127, 0, 0, 1];
        }
        if to.port == 0 {
            return Outcome::Fail(Errno::ECONNREFUSED);
        }
        let link = match self.stack.route(to.addr) {
            Ok(l) => l,
            Err(e) => return Outcome::Fail(e),
        };
        if local.addr != [0; 4] && local.addr[0] == 127 && link != Link::Loopback {
            return Outcome::Fail(Errno::ENETUNREACH);
        }
        if local.port == 0 {
            local.port = match self.ephemeral_port(IPPROTO_TCP) {
                Ok(p) => p,
                Err(e) => return Outcome::Fail(e),
            };
        }
        let bytes = options.rcvbuf + options.sndbuf;
        if let Err(e) = self.reserve(bytes) {
            return Outcome::Fail(e);
        }
        let h = self.stack.tcp(link, options.rcvbuf, options.sndbuf);
        apply_options(self.stack.tcp_mut(h), &options);
        let remote = IpEndpoint::new(IpAddress::v4(to.addr[0], to.addr[1], to.addr[2], to.addr[3]), to.port);
        if self.stack.connect(h, remote, listen_addr(local)).is_err() {
            self.stack.remove(h);
            self.buffers -= bytes;
            return Outcome::Fail(Errno::EADDRNOTAVAIL);
        }
        if let Ok(s) = self.table.get(id, caller) {
            s.local = local;
            s.buffers = bytes;
            s.error = None;
            s.kind = Kind::Tcp(Tcp::Conn(Conn {
                handle: h,
                established: false,
                deadline: Some(now_ns() + CONNECT_NS),
                shut_rd: false,
                shut_wr: false,
                reset_told: false,
            }));
        }
        Outcome::Wait
    }

    /// Brings a connection's record up to date with its smoltcp socket: a
    /// handshake that completed, or an attempt that failed (refused, or
    /// timed out), which leaves the error for the next call.
    pub fn tcp_refresh(&mut self, id: u32) {
        let Some(s) = self.table.any(id) else { return };
        let Kind::Tcp(Tcp::Conn(c)) = &mut s.kind else {
            return;
        };
        if c.established {
            return;
        }
        let h = c.handle;
        let sock = self.stack.tcp_mut(h);
        let st = sock.state();
        if synchronized(st) {
            c.established = true;
            c.deadline = None;
            self.stats.connected += 1;
            return;
        }
        let timed_out = c.deadline.is_some_and(|d| now_ns() >= d);
        if st != State::Closed && !timed_out {
            return;
        }
        sock.abort();
        s.error = Some(if timed_out {
            Errno::ETIMEDOUT
        } else {
            Errno::ECONNREFUSED
        });
        s.kind = Kind::Tcp(Tcp::Dead);
        let bytes = s.buffers;
        s.buffers = 0;
        self.orphan(h, bytes);
    }

    /// A held CONNECT: done once the handshake is.
    pub fn tcp_connect_progress(&mut self, caller: u64, id: u32) -> Outcome {
        self.tcp_refresh(id);
        let s = match self.table.get(id, caller) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(e),
        };
        match &s.kind {
            Kind::Tcp(Tcp::Conn(c)) if c.established => Outcome::ok(),
            Kind::Tcp(Tcp::Conn(_)) => Outcome::Wait,
            Kind::Tcp(Tcp::Dead) => Outcome::Fail(s.error.take().unwrap_or(Errno::ECONNABORTED)),
            _ => Outcome::Fail(Errno::ENOTCONN),
        }
    }

    /// The connection of socket `id`, once established.
    fn conn(&mut self, caller: u64, id: u32) -> Result<(Conn, bool), Outcome> {
        self.tcp_refresh(id);
        let s = self.table.get(id, caller).map_err(Outcome::Fail)?;
        match &s.kind {
            Kind::Tcp(Tcp::Conn(c)) => Ok((
                Conn {
                    handle: c.handle,
                    established: c.established,
                    deadline: c.deadline,
                    shut_rd: c.shut_rd,
                    shut_wr: c.shut_wr,
                    reset_told: c.reset_told,
                },
                c.established,
            )),
            Kind::Tcp(Tcp::Dead) => Err(Outcome::Fail(s.error.take().unwrap_or(Errno::EPIPE))),
            _ => Err(Outcome::Fail(Errno::ENOTCONN)),
        }
    }

    /// Copies as much of SEND call `rid`'s message as fits into the
    /// connection's buffer, from byte `done` on.
    pub fn tcp_send(&mut self, rid: u64, caller: u64, context: Context, done: &mut usize, len: usize) -> Outcome {
        let (c, established) = match self.conn(caller, context.socket) {
            Ok(c) => c,
            // A socket never connected (or listening) cannot carry data:
            // EPIPE, as Linux answers (SIGPIPE is the caller's).
            Err(Outcome::Fail(Errno::ENOTCONN)) => return Outcome::Fail(Errno::EPIPE),
            Err(o) => return o,
        };
        if c.shut_wr {
            return Outcome::Fail(Errno::EPIPE);
        }
        if !established {
            return Outcome::Wait;
        }
        let sock = self.stack.tcp_mut(c.handle);
        while *done < len {
            let at = *done;
            let r = sock.send(|buf| {
                let n = buf.len().min(len - at);
                match sys::rv_read(rid, at as u64, &mut buf[..n]) {
                    Ok(_) => (n, Ok(n)),
                    Err(e) => (0, Err(e)),
                }
            });
            match r {
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => {
                    *done += n;
                    self.stats.copied_in += n as u64;
                }
                Ok(Err(_)) => return Outcome::Fail(Errno::EFAULT),
                // The connection closed under a send in progress: what went
                // is the answer.
                Err(_) if *done > 0 => return Outcome::Value(*done as i64, Vec::new()),
                Err(_) => {
                    return Outcome::Fail(match eof(sock, true) {
                        Eof::Reset => self.reset_once(caller, context.socket),
                        _ => Errno::EPIPE,
                    });
                }
            }
        }
        if *done == len {
            Outcome::Value(len as i64, Vec::new())
        } else {
            Outcome::Wait
        }
    }

    /// Copies as much of `data` as fits into socket `id`'s connection
    /// buffer, from byte `done` on (SEND_ICA: the bytes are in this
    /// server's memory already).
    pub fn tcp_send_slice(&mut self, caller: u64, id: u32, data: &[u8], done: &mut usize) -> Outcome {
        let (c, established) = match self.conn(caller, id) {
            Ok(c) => c,
            Err(Outcome::Fail(Errno::ENOTCONN)) => return Outcome::Fail(Errno::EPIPE),
            Err(o) => return o,
        };
        if c.shut_wr {
            return Outcome::Fail(Errno::EPIPE);
        }
        if !established {
            return Outcome::Wait;
        }
        let sock = self.stack.tcp_mut(c.handle);
        while *done < data.len() {
            match sock.send_slice(&data[*done..]) {
                Ok(0) => break,
                Ok(n) => *done += n,
                Err(_) if *done > 0 => return Outcome::Value(*done as i64, Vec::new()),
                Err(_) => {
                    return Outcome::Fail(match eof(sock, true) {
                        Eof::Reset => self.reset_once(caller, id),
                        _ => Errno::EPIPE,
                    });
                }
            }
        }
        if *done == data.len() {
            Outcome::Value(data.len() as i64, Vec::new())
        } else {
            Outcome::Wait
        }
    }

    /// Writes what the connection has received into RECV call `rid`'s
    /// reply, after `base` bytes (the peer's address, if asked for).
    pub fn tcp_recv(&mut self, rid: u64, caller: u64, id: u32, flags: u32, len: usize, done: &mut usize) -> Outcome {
        let (c, established) = match self.conn(caller, id) {
            Ok(c) => c,
            Err(o) => return o,
        };
        if !established {
            return Outcome::Wait;
        }
        let base = if flags & ADDR_FIRST != 0 { SockAddr::LEN } else { 0 };
        let sock = self.stack.tcp_mut(c.handle);
        let peer = sock.remote_endpoint().map(sockaddr).unwrap_or_default();
        if c.shut_rd {
            return Outcome::Data(base + *done);
        }
        while *done < len {
            let at = base + *done;
            let want = len - *done;
            let r = if flags & MSG_PEEK != 0 {
                match sock.peek(want) {
                    Ok(d) if !d.is_empty() => match sys::rv_write(rid, at as u64, d) {
                        Ok(_) => Ok(Ok(d.len())),
                        Err(e) => Ok(Err(e)),
                    },
                    Ok(_) => Ok(Ok(0)),
                    Err(e) => Err(e),
                }
            } else {
                sock.recv(|buf| {
                    let n = buf.len().min(want);
                    match sys::rv_write(rid, at as u64, &buf[..n]) {
                        Ok(_) => (n, Ok(n)),
                        Err(e) => (0, Err(e)),
                    }
                })
            };
            match r {
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => {
                    *done += n;
                    self.stats.copied_out += n as u64;
                    if flags & MSG_PEEK != 0 {
                        break;
                    }
                }
                Ok(Err(_)) => return Outcome::Fail(Errno::EFAULT),
                Err(_) => break,
            }
        }
        let state = eof(sock, true);
        let more = matches!(state, Eof::Open);
        if *done == 0 || (flags & MSG_WAITALL != 0 && *done < len && more) {
            match state {
                Eof::Open => return Outcome::Wait,
                Eof::Reset if *done == 0 => {
                    return match self.reset_once(caller, id) {
                        Errno::ECONNRESET => Outcome::Fail(Errno::ECONNRESET),
                        // Told already: the stream has ended.
                        _ => Outcome::Data(0),
                    };
                }
                _ => {}
            }
        }
        if base > 0 && sys::rv_write(rid, 0, &peer.encode()).is_err() {
            return Outcome::Fail(Errno::EFAULT);
        }
        Outcome::Data(base + *done)
    }

    /// ECONNRESET the first time a connection's reset is reported, EPIPE
    /// after.
    fn reset_once(&mut self, caller: u64, id: u32) -> Errno {
        if let Ok(Socket {
            kind: Kind::Tcp(Tcp::Conn(c)),
            ..
        }) = self.table.get(id, caller)
        {
            if c.reset_told {
                return Errno::EPIPE;
            }
            c.reset_told = true;
        }
        Errno::ECONNRESET
    }

    pub fn tcp_shutdown(&mut self, caller: u64, id: u32, how: u32) -> Result<(), Errno> {
        if how > SHUT_RDWR {
            return Err(Errno::EINVAL);
        }
        self.tcp_refresh(id);
        let s = self.table.get(id, caller)?;
        let Kind::Tcp(Tcp::Conn(c)) = &mut s.kind else {
            return Err(Errno::ENOTCONN);
        };
        if !c.established {
            return Err(Errno::ENOTCONN);
        }
        if how != SHUT_WR {
            c.shut_rd = true;
        }
        if how != SHUT_RD {
            c.shut_wr = true;
            let h = c.handle;
            self.stack.tcp_mut(h).close();
        }
        Ok(())
    }

    /// POLL's bits for a TCP socket.
    pub fn tcp_revents(&mut self, id: u32) -> u16 {
        self.tcp_refresh(id);
        let Some(s) = self.table.any(id) else {
            return POLLNVAL;
        };
        let error = if s.error.is_some() { POLLERR } else { 0 };
        match &s.kind {
            Kind::Tcp(Tcp::Fresh) => POLLOUT | POLLHUP,
            Kind::Tcp(Tcp::Dead) => POLLOUT | POLLHUP | error,
            Kind::Tcp(Tcp::Listening(l)) => {
                let queue: Vec<_> = l.queue.iter().copied().collect();
                if queue.iter().any(|&h| synchronized(self.stack.tcp_mut(h).state())) {
                    POLLIN | POLLRDNORM
                } else {
                    0
                }
            }
            Kind::Tcp(Tcp::Conn(c)) => {
                if !c.established {
                    return 0;
                }
                let (shut_rd, shut_wr, h) = (c.shut_rd, c.shut_wr, c.handle);
                let sock = self.stack.tcp_mut(h);
                let mut bits = 0;
                match eof(sock, true) {
                    _ if shut_rd => bits |= POLLIN | POLLRDNORM | POLLRDHUP,
                    Eof::Open if sock.can_recv() => bits |= POLLIN | POLLRDNORM,
                    Eof::Open => {}
                    Eof::Fin => bits |= POLLIN | POLLRDNORM | POLLRDHUP,
                    Eof::Reset => bits |= POLLIN | POLLERR | POLLHUP | POLLRDHUP,
                }
                if sock.may_send() && sock.send_queue() < sock.send_capacity() {
                    bits |= POLLOUT | POLLWRNORM;
                }
                if shut_wr && bits & POLLRDHUP != 0 {
                    bits |= POLLHUP;
                }
                bits | error
            }
            Kind::Dgram { .. } => 0,
        }
    }
}
