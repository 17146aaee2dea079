//! The socket protocol's entries (`tessera_api::net`): each message is
//! checked field by field (a short, long or garbled one is `EINVAL`), each
//! socket number against the caller (`EBADF` unless it holds it), and the
//! call is answered, or held until it can be.

use crate::pending::{Op, Outcome, Pending};
use crate::server::{Context, Server};
use crate::socket::{Kind, Options, Socket, Tcp};
use crate::stack::now_ns;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;
use tessera_api::errno::Errno;
use tessera_api::net::*;
use tessera_api::wire::Reader;
use tessera_rt::abi::AccInfo;
use tessera_rt::sys;

/// Default buffer sizes: a TCP receive buffer of 64 KiB (which needs
/// window scaling), UDP's room for the largest datagram.
const TCP_RCVBUF: usize = 64 << 10;
const TCP_SNDBUF: usize = 32 << 10;
const DGRAM_BUF: usize = 64 << 10;
const ICMP_BUF: usize = 8 << 10;
/// Limits of SO_RCVBUF and SO_SNDBUF.
const MIN_BUF: usize = 4 << 10;
const MAX_BUF: usize = 1 << 20;

/// The message of call `rid`, at most `max` bytes (`EINVAL` if longer).
fn message(rid: u64, info: &AccInfo, max: usize) -> Result<Vec<u8>, Errno> {
    let len = info.len as usize;
    if len > max {
        return Err(Errno::EINVAL);
    }
    if len <= info.inline.len() {
        return Ok(info.inline[..len].to_vec());
    }
    let mut buf = vec![0u8; len];
    sys::rv_read(rid, 0, &mut buf).map_err(|_| Errno::EFAULT)?;
    Ok(buf)
}

fn socket_and(msg: &[u8]) -> Result<(u32, u32, Reader<'_>), Errno> {
    let mut r = Reader::new(msg);
    let id = r.u32().ok_or(Errno::EINVAL)?;
    let second = r.u32().ok_or(Errno::EINVAL)?;
    Ok((id, second, r))
}

/// The `revents` of a POLL reply.
pub fn revents(fds: &[PollFd]) -> Vec<u8> {
    fds.iter().flat_map(|f| f.revents.to_le_bytes()).collect()
}

fn int(v: &[u8]) -> Result<i32, Errno> {
    Ok(i32::from_le_bytes(
        v.get(..4).ok_or(Errno::EINVAL)?.try_into().map_err(|_| Errno::EINVAL)?,
    ))
}

impl Server {
    /// Serves one call of the socket protocol; returns whether it may have
    /// changed the stack (a turn is due).
    pub fn serve(&mut self, rid: u64, info: &AccInfo) -> bool {
        self.stats.calls += 1;
        if let Some(n) = self.stats.by_entry.get_mut(info.entry as usize) {
            *n += 1;
        }
        let caller = info.caller;
        self.client(caller);
        let (recv, outcome, changes) = match info.entry {
            // More to come (MSG_MORE): the stack sends nothing until the
            // rest is there, so one write of several buffers goes out as
            // one segment, not as one held back by Nagle.
            SEND => {
                let more = self.client(caller).context.is_some_and(|c| c.flags & MSG_MORE != 0);
                (false, self.send_call(rid, info), !more)
            }
            // A receive that failed (EAGAIN, mostly) took nothing out of
            // a buffer: no window to announce.
            RECV => {
                let outcome = self.recv_call(rid, info);
                let changes = !matches!(outcome, Outcome::Fail(_));
                (true, outcome, changes)
            }
            SEND_ICA => (false, self.send_ica_call(rid, info), true),
            STATS => {
                let _ = sys::endr(rid, self.report().as_bytes());
                return false;
            }
            ERRNO => {
                let e = self.client(caller).errno;
                (false, Outcome::Value(e.0 as i64, Vec::new()), false)
            }
            entry => match message(rid, info, watch_len(MAX_POLL)) {
                Ok(msg) => self.entry(rid, info, entry, &msg),
                Err(e) => (false, Outcome::Fail(e), false),
            },
        };
        if let Outcome::Fail(Errno::EINVAL) = outcome {
            self.stats.refused += 1;
        }
        if !matches!(outcome, Outcome::Wait) {
            self.finish(rid, caller, recv, outcome);
        }
        changes
    }

    /// The entries whose message is a structure: (RECV?, outcome, changes).
    fn entry(&mut self, rid: u64, info: &AccInfo, entry: u64, msg: &[u8]) -> (bool, Outcome, bool) {
        let caller = info.caller;
        let r = match entry {
            SOCKET => self
                .socket_call(caller, msg)
                .map(|id| Outcome::Value(id as i64, Vec::new())),
            BIND => self.bind_call(caller, msg).map(|()| Outcome::ok()),
            LISTEN => socket_and(msg)
                .and_then(|(id, backlog, _)| self.tcp_listen(caller, id, backlog).map(|()| Outcome::ok())),
            ACCEPT => socket_and(msg).and_then(|(id, flags, _)| {
                let nonblock = self.table.get(id, caller)?.options.nonblock;
                Ok(self.start(rid, caller, id, Op::Accept { flags }, !nonblock, None))
            }),
            CONNECT => self.connect_call(rid, caller, msg),
            SEND_TO => self.send_to_call(caller, msg).map(|()| Outcome::ok()),
            SHUTDOWN => socket_and(msg).and_then(|(id, how, _)| {
                let s = self.table.get(id, caller)?;
                match &s.kind {
                    Kind::Tcp(_) => self.tcp_shutdown(caller, id, how).map(|()| Outcome::ok()),
                    Kind::Dgram { peer: Some(_), .. } if how <= SHUT_RDWR => Ok(Outcome::ok()),
                    Kind::Dgram { .. } if how > SHUT_RDWR => Err(Errno::EINVAL),
                    Kind::Dgram { .. } => Err(Errno::ENOTCONN),
                }
            }),
            GETSOCKOPT => self.getsockopt(caller, msg),
            SETSOCKOPT => match self.setsockopt(caller, msg) {
                Ok(live) => return (false, Outcome::ok(), live),
                Err(e) => Err(e),
            },
            GETSOCKNAME | GETPEERNAME => socket_and(msg).and_then(|(id, _, _)| {
                let a = self.name(caller, id, entry == GETPEERNAME)?;
                Ok(Outcome::Value(0, a.encode().to_vec()))
            }),
            // A socket other processes still hold (a forked child's copy)
            // stays as it is: no turn.
            CLOSE => match socket_and(msg).and_then(|(id, _, _)| self.table.get(id, caller).map(|_| id)) {
                Ok(id) => return (false, Outcome::ok(), self.release(id, caller)),
                Err(e) => Err(e),
            },
            POLL => self.poll_call(rid, info, msg),
            WATCH => self.watch_call(info, msg),
            FCNTL => self.fcntl(caller, msg),
            SHARE => self.share(caller, msg).map(|()| Outcome::ok()),
            _ => Err(Errno::ENOSYS),
        };
        // What changes neither the stack nor the held calls needs no turn:
        // a new socket has no smoltcp socket yet, a watch only waits, and
        // an accept only moves a connection from a listener's queue to the
        // table (the room it makes in the backlog is refilled at the start
        // of the next turn, before any SYN is taken in).
        let quiet = matches!(
            entry,
            GETSOCKOPT | GETSOCKNAME | GETPEERNAME | FCNTL | SEND_TO | SHARE | SOCKET | WATCH | ACCEPT
        );
        let changes = !quiet;
        (false, r.unwrap_or_else(Outcome::Fail), changes)
    }

    /// Tries a call that may have to wait; holds it if it must and may.
    pub fn start(
        &mut self,
        rid: u64,
        caller: u64,
        socket: u32,
        mut op: Op,
        may_wait: bool,
        deadline: Option<u64>,
    ) -> Outcome {
        let outcome = self.attempt(rid, caller, socket, &mut op, may_wait);
        if let Outcome::Wait = outcome {
            self.hold(Pending {
                rid,
                caller,
                socket,
                op,
                deadline,
            });
        }
        outcome
    }

    fn socket_call(&mut self, caller: u64, msg: &[u8]) -> Result<u32, Errno> {
        let mut r = Reader::new(msg);
        let (domain, kind, protocol) = (
            r.u32().ok_or(Errno::EINVAL)?,
            r.u32().ok_or(Errno::EINVAL)?,
            r.u32().ok_or(Errno::EINVAL)?,
        );
        if domain != AF_INET {
            return Err(Errno::EAFNOSUPPORT);
        }
        if kind & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let (socket_kind, protocol, buf) = match (kind & SOCK_TYPE_MASK, protocol) {
            (SOCK_STREAM, 0 | IPPROTO_TCP) => (Kind::Tcp(Tcp::Fresh), IPPROTO_TCP, 0),
            (SOCK_DGRAM, 0 | IPPROTO_UDP) => (
                Kind::Dgram {
                    icmp: false,
                    handles: Vec::new(),
                    peer: None,
                },
                IPPROTO_UDP,
                DGRAM_BUF,
            ),
            (SOCK_DGRAM, IPPROTO_ICMP) => (
                Kind::Dgram {
                    icmp: true,
                    handles: Vec::new(),
                    peer: None,
                },
                IPPROTO_ICMP,
                ICMP_BUF,
            ),
            // A raw socket names its protocol (Linux's lookup finds none
            // for 0); raw sockets themselves are not served.
            (SOCK_STREAM | SOCK_DGRAM, _) | (SOCK_RAW, 0) => return Err(Errno::EPROTONOSUPPORT),
            _ => return Err(Errno::ESOCKTNOSUPPORT),
        };
        let (rcvbuf, sndbuf) = if protocol == IPPROTO_TCP {
            (TCP_RCVBUF, TCP_SNDBUF)
        } else {
            (buf, buf)
        };
        let s = Socket {
            generation: 0,
            holders: vec![caller],
            kind: socket_kind,
            protocol,
            options: Options {
                nonblock: kind & SOCK_NONBLOCK != 0,
                reuseaddr: false,
                keepalive: false,
                oobinline: false,
                nodelay: false,
                rcvbuf,
                sndbuf,
                ttl: None,
            },
            local: SockAddr::default(),
            error: None,
            buffers: 0,
        };
        self.add_socket(caller, s)
    }

    fn bind_call(&mut self, caller: u64, msg: &[u8]) -> Result<(), Errno> {
        let (id, len, r) = socket_and(msg)?;
        let addr = SockAddr::decode(r.rest(), len as usize)?;
        let s = self.table.get(id, caller)?;
        let (protocol, reuse, bound) = (s.protocol, s.options.reuseaddr, s.local.port != 0);
        match &s.kind {
            Kind::Tcp(Tcp::Fresh) if !bound => {}
            Kind::Tcp(_) => return Err(Errno::EINVAL),
            Kind::Dgram { .. } => return self.dgram_bind(caller, id, addr),
        }
        self.stack.links_for(addr.addr)?;
        let mut local = addr;
        if local.port == 0 {
            local.port = self.ephemeral_port(protocol)?;
        } else if self.port_used(protocol, local, reuse) {
            return Err(Errno::EADDRINUSE);
        }
        self.table.get(id, caller)?.local = local;
        Ok(())
    }

    fn connect_call(&mut self, rid: u64, caller: u64, msg: &[u8]) -> Result<Outcome, Errno> {
        let (id, len, r) = socket_and(msg)?;
        let s = self.table.get(id, caller)?;
        let nonblock = s.options.nonblock;
        if let Kind::Dgram { .. } = s.kind {
            // AF_UNSPEC dissolves the association.
            if r.rest().len() >= 2 && r.rest()[..2] == [0, 0] {
                return self.dgram_connect(caller, id, None).map(|()| Outcome::ok());
            }
            let to = SockAddr::decode(r.rest(), len as usize)?;
            return self.dgram_connect(caller, id, Some(to)).map(|()| Outcome::ok());
        }
        let to = SockAddr::decode(r.rest(), len as usize)?;
        match self.tcp_connect(caller, id, to) {
            Outcome::Wait => Ok(self.start(rid, caller, id, Op::Connect, !nonblock, None)),
            o => Ok(o),
        }
    }

    fn send_to_call(&mut self, caller: u64, msg: &[u8]) -> Result<(), Errno> {
        let (id, flags, mut r) = socket_and(msg)?;
        let len = r.u32().ok_or(Errno::EINVAL)? as usize;
        r.u32().ok_or(Errno::EINVAL)?;
        self.table.get(id, caller)?;
        let to = if len == 0 {
            None
        } else {
            Some(SockAddr::decode(r.rest(), len)?)
        };
        self.client(caller).context = Some(Context { socket: id, flags, to });
        Ok(())
    }

    fn send_call(&mut self, rid: u64, info: &AccInfo) -> Outcome {
        let caller = info.caller;
        let Some(context) = self.client(caller).context else {
            return Outcome::Fail(Errno::EBADF);
        };
        let (nonblock, stream) = match self.table.get(context.socket, caller) {
            Ok(s) => (s.options.nonblock, matches!(s.kind, Kind::Tcp(_))),
            Err(e) => return Outcome::Fail(e),
        };
        let len = info.len as usize;
        // An empty datagram is a datagram; an empty stream write is nothing.
        if len == 0 && stream {
            return Outcome::Value(0, Vec::new());
        }
        let may_wait = !nonblock && context.flags & MSG_DONTWAIT == 0;
        let op = Op::Send { context, done: 0, len };
        self.start(rid, caller, context.socket, op, may_wait, None)
    }

    pub fn send_some(&mut self, rid: u64, caller: u64, context: Context, done: &mut usize, len: usize) -> Outcome {
        match self.table.get(context.socket, caller) {
            Ok(Socket { kind: Kind::Tcp(_), .. }) => self.tcp_send(rid, caller, context, done, len),
            Ok(_) => self.dgram_send(rid, caller, context, len),
            Err(e) => Outcome::Fail(e),
        }
    }

    fn recv_call(&mut self, rid: u64, info: &AccInfo) -> Outcome {
        let caller = info.caller;
        let msg = &info.inline[..(info.len as usize).min(info.inline.len())];
        let (id, flags, mut r) = match socket_and(msg) {
            Ok(x) => x,
            Err(e) => return Outcome::Fail(e),
        };
        let Some(len) = r.u64() else {
            return Outcome::Fail(Errno::EINVAL);
        };
        let nonblock = match self.table.get(id, caller) {
            Ok(s) => s.options.nonblock,
            Err(e) => return Outcome::Fail(e),
        };
        let base = if flags & ADDR_FIRST != 0 { SockAddr::LEN } else { 0 };
        let Some(room) = (info.reply_cap as usize).checked_sub(base) else {
            return Outcome::Fail(Errno::EINVAL);
        };
        let len = (len.min(room as u64)) as usize;
        let may_wait = !nonblock && flags & MSG_DONTWAIT == 0;
        self.start(rid, caller, id, Op::Recv { flags, len, done: 0 }, may_wait, None)
    }

    pub fn recv_some(&mut self, rid: u64, caller: u64, id: u32, flags: u32, len: usize, done: &mut usize) -> Outcome {
        match self.table.get(id, caller) {
            Ok(Socket { kind: Kind::Tcp(_), .. }) => self.tcp_recv(rid, caller, id, flags, len, done),
            Ok(_) => self.dgram_recv(rid, caller, id, flags, len),
            Err(e) => Outcome::Fail(e),
        }
    }

    fn poll_call(&mut self, rid: u64, info: &AccInfo, msg: &[u8]) -> Result<Outcome, Errno> {
        let mut r = Reader::new(msg);
        let timeout = r.i64().ok_or(Errno::EINVAL)?;
        let n = r.u32().ok_or(Errno::EINVAL)? as usize;
        r.u32().ok_or(Errno::EINVAL)?;
        if n > MAX_POLL || msg.len() != poll_len(n) || (info.reply_cap as usize) < poll_reply_len(n) {
            return Err(Errno::EINVAL);
        }
        let mut fds = Vec::with_capacity(n);
        for _ in 0..n {
            let socket = r.u32().ok_or(Errno::EINVAL)?;
            let events = u16::from_le_bytes(r.bytes(2).ok_or(Errno::EINVAL)?.try_into().map_err(|_| Errno::EINVAL)?);
            r.bytes(2).ok_or(Errno::EINVAL)?;
            fds.push(PollFd {
                socket,
                events,
                revents: 0,
            });
        }
        let deadline = (timeout > 0).then(|| now_ns().saturating_add(timeout as u64));
        Ok(self.start(rid, info.caller, 0, Op::Poll { fds }, timeout != 0, deadline))
    }

    /// POLL: the sockets' readiness; `Wait` if none is ready.
    pub fn poll_ready(&mut self, caller: u64, fds: &mut [PollFd]) -> Outcome {
        let mut ready = 0;
        for f in fds.iter_mut() {
            let bits = match self.table.get(f.socket, caller) {
                Err(_) => POLLNVAL,
                Ok(Socket { kind: Kind::Tcp(_), .. }) => self.tcp_revents(f.socket),
                Ok(_) => self.dgram_revents(f.socket),
            };
            f.revents = bits & (f.events | POLLERR | POLLHUP | POLLNVAL);
            if f.revents != 0 {
                ready += 1;
            }
        }
        if ready == 0 {
            Outcome::Wait
        } else {
            Outcome::Value(ready, revents(fds))
        }
    }

    fn name(&mut self, caller: u64, id: u32, peer: bool) -> Result<SockAddr, Errno> {
        self.tcp_refresh(id);
        let s = self.table.get(id, caller)?;
        let local = s.local;
        match &s.kind {
            Kind::Tcp(Tcp::Conn(c)) => {
                let h = c.handle;
                let sock = self.stack.tcp_mut(h);
                let e = if peer {
                    sock.remote_endpoint()
                } else {
                    sock.local_endpoint()
                };
                match e {
                    Some(e) => Ok(crate::tcp::sockaddr(e)),
                    None if peer => Err(Errno::ENOTCONN),
                    None => Ok(local),
                }
            }
            Kind::Dgram { peer: Some(p), .. } if peer => Ok(*p),
            _ if peer => Err(Errno::ENOTCONN),
            _ => Ok(local),
        }
    }

    fn getsockopt(&mut self, caller: u64, msg: &[u8]) -> Result<Outcome, Errno> {
        let (id, _, mut r) = socket_and(msg)?;
        let (level, name) = (r.u32().ok_or(Errno::EINVAL)?, r.u32().ok_or(Errno::EINVAL)?);
        self.tcp_refresh(id);
        let s = self.table.get(id, caller)?;
        let o = s.options;
        let tcp = matches!(s.kind, Kind::Tcp(_));
        let v: i32 = match (level, name) {
            (SOL_SOCKET, SO_REUSEADDR) => o.reuseaddr as i32,
            (SOL_SOCKET, SO_TYPE) => (if tcp { SOCK_STREAM } else { SOCK_DGRAM }) as i32,
            (SOL_SOCKET, SO_ERROR) => s.error.take().map_or(0, |e| e.0),
            (SOL_SOCKET, SO_SNDBUF) => o.sndbuf as i32,
            (SOL_SOCKET, SO_RCVBUF) => o.rcvbuf as i32,
            (SOL_SOCKET, SO_KEEPALIVE) => o.keepalive as i32,
            (SOL_SOCKET, SO_OOBINLINE) => o.oobinline as i32,
            (SOL_SOCKET, SO_PROTOCOL) => s.protocol as i32,
            (SOL_SOCKET, SO_DOMAIN) => AF_INET as i32,
            (SOL_SOCKET, SO_ACCEPTCONN) => matches!(s.kind, Kind::Tcp(Tcp::Listening(_))) as i32,
            (IPPROTO_TCP, TCP_NODELAY) if tcp => o.nodelay as i32,
            (IPPROTO_IP, IP_TTL) => o.ttl.unwrap_or(64) as i32,
            // A level of no protocol of the socket falls through to IP's,
            // which refuses what is not its own (Linux's ip_getsockopt).
            (SOL_SOCKET | IPPROTO_IP, _) => return Err(Errno::ENOPROTOOPT),
            (IPPROTO_TCP, _) if tcp => return Err(Errno::ENOPROTOOPT),
            (IPPROTO_UDP, _) if !tcp => return Err(Errno::ENOPROTOOPT),
            _ => return Err(Errno::EOPNOTSUPP),
        };
        Ok(Outcome::Value(4, v.to_le_bytes().to_vec()))
    }

    /// Sets an option; true if it reached smoltcp sockets (Nagle turned
    /// off may let held data go, a keep-alive timer starts at the next
    /// egress: a turn is due).
    fn setsockopt(&mut self, caller: u64, msg: &[u8]) -> Result<bool, Errno> {
        let (id, len, mut r) = socket_and(msg)?;
        let (level, name) = (r.u32().ok_or(Errno::EINVAL)?, r.u32().ok_or(Errno::EINVAL)?);
        let value = r.rest();
        if len as usize != value.len() || value.len() > MAX_OPTION {
            return Err(Errno::EINVAL);
        }
        let v = int(value)?;
        let s = self.table.get(id, caller)?;
        let tcp = matches!(s.kind, Kind::Tcp(_));
        // Buffer sizes apply to the smoltcp sockets made from now on.
        let fresh = matches!(s.kind, Kind::Tcp(Tcp::Fresh))
            || matches!(&s.kind, Kind::Dgram { handles, .. } if handles.is_empty());
        let size = (v.max(0) as usize).clamp(MIN_BUF, MAX_BUF);
        let o = &mut s.options;
        match (level, name) {
            (SOL_SOCKET, SO_REUSEADDR) => o.reuseaddr = v != 0,
            (SOL_SOCKET, SO_KEEPALIVE) => o.keepalive = v != 0,
            (SOL_SOCKET, SO_OOBINLINE) => o.oobinline = v != 0,
            (SOL_SOCKET, SO_SNDBUF) if fresh => o.sndbuf = size,
            (SOL_SOCKET, SO_RCVBUF) if fresh => o.rcvbuf = size,
            (SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) => {}
            (IPPROTO_TCP, TCP_NODELAY) if tcp => o.nodelay = v != 0,
            (IPPROTO_IP, IP_TTL) if (1..=255).contains(&v) => o.ttl = Some(v as u8),
            (IPPROTO_IP, IP_TTL) if v == -1 => o.ttl = None,
            (IPPROTO_IP, IP_TTL) => return Err(Errno::EINVAL),
            _ => return Err(Errno::ENOPROTOOPT),
        }
        let options = *o;
        let mut live = false;
        for h in s.handles() {
            live = true;
            match s.kind {
                Kind::Tcp(_) => crate::tcp::apply_options(self.stack.tcp_mut(h), &options),
                Kind::Dgram { icmp: false, .. } => self.stack.udp_mut(h).set_hop_limit(options.ttl),
                Kind::Dgram { icmp: true, .. } => self.stack.icmp_mut(h).set_hop_limit(options.ttl),
            }
        }
        Ok(live)
    }

    fn fcntl(&mut self, caller: u64, msg: &[u8]) -> Result<Outcome, Errno> {
        let (id, cmd, mut r) = socket_and(msg)?;
        let arg = r.u64().ok_or(Errno::EINVAL)?;
        let s = self.table.get(id, caller)?;
        match cmd {
            F_GETFL => Ok(Outcome::Value(
                2 | if s.options.nonblock { O_NONBLOCK as i64 } else { 0 },
                Vec::new(),
            )),
            F_SETFL => {
                s.options.nonblock = arg & O_NONBLOCK != 0;
                Ok(Outcome::ok())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn share(&mut self, caller: u64, msg: &[u8]) -> Result<(), Errno> {
        let (id, _, mut r) = socket_and(msg)?;
        let pid = r.u64().ok_or(Errno::EINVAL)?;
        self.table.get(id, caller)?;
        if pid == caller {
            return Ok(());
        }
        if !sys::alive(pid) {
            return Err(Errno::EINVAL);
        }
        if self.table.held_by(pid) >= crate::socket::MAX_PER_CLIENT {
            return Err(Errno::EMFILE);
        }
        self.client(pid);
        let s = self.table.get(id, caller)?;
        if !s.held_by(pid) {
            s.holders.push(pid);
        }
        Ok(())
    }

    pub fn report(&self) -> String {
        let s = &self.stats;
        let nic = &self.stack.nic;
        let lo = &self.stack.lo_dev;
        let mut out = String::new();
        let _ = write!(
            out,
            "sockets {}\nclients {}\nheld_now {}\norphans {}\nbuffer_bytes {}\nbuffer_peak {}\ncalls {}\nrefused {}\nheld {}\n\
             sockets_made {}\naccepted {}\nconnected {}\nclients_gone {}\nover_budget {}\nturns {}\nalarms {}\n\
             copied_in {}\ncopied_out {}\nloopback_packets {}\nloopback_bytes {}\nnic_attached {}\nnic_attaches {}\n\
             nic_frames_in {}\nnic_bytes_in {}\nnic_frames_out {}\nnic_bytes_out {}\nnic_dropped {}\n\
             nic_pages_moved {}\nnic_tx_requests {}\nnic_bytes_copied 0\nwatches {}\nwatch_wakes {}\n\
             ica_copied_in {}\nica_sends_held {}\nsyns_dropped {}\n",
            self.table.count,
            self.clients.len(),
            self.pending.len(),
            self.orphans.len(),
            self.buffers,
            self.buffer_peak,
            s.calls,
            s.refused,
            s.held,
            s.sockets_made,
            s.accepted,
            s.connected,
            s.clients_gone,
            s.over_budget,
            s.turns,
            s.alarms,
            s.copied_in,
            s.copied_out,
            lo.packets,
            lo.bytes,
            nic.driver.is_some() as u8,
            s.attaches,
            nic.frames_in,
            nic.bytes_in,
            nic.frames_out,
            nic.bytes_out,
            nic.dropped,
            s.pages_moved,
            s.tx_requests,
            self.watches.len(),
            s.watch_wakes,
            s.ica_copied_in,
            self.pending.iter().filter(|p| matches!(p.op, Op::SendIca(_))).count(),
            s.syns_dropped,
        );
        for (name, n) in crate::server::ENTRY_NAMES.iter().zip(s.by_entry) {
            let _ = writeln!(out, "calls_{name} {n}");
        }
        out
    }
}
