//! Linux's socket calls on AF_INET sockets, mapped onto the TCP/IP
//! server's socket protocol (`tessera_api::net`). The supervisor is the
//! server's client: the sockets are held in its name, shared with a forked
//! child's supervisor (`SHARE`), closed with their last description.
//!
//! **Blocking.** The supervisor must stay free to serve its process's
//! signals, so it never waits in the server: every socket there is
//! non-blocking, and `O_NONBLOCK` is the description's own flag here. A
//! blocking call that gets `EAGAIN` (`EINPROGRESS` for a connect) is held
//! by the supervisor, which names the socket in a `WATCH`; the server
//! tells it (`sup::WAKE` with the watch's token) once the socket is ready,
//! and the call is tried again. A signal ends the wait as Linux's
//! `ERESTARTSYS` (restarted under `SA_RESTART`).
//!
//! **Data.** A send's message and a receive's reply are the process's own
//! buffer (`call_for`): the server copies between it and the socket's
//! buffer, once. A datagram's sender address (`recvfrom`, `recvmsg`) and a
//! datagram gathered from several buffers go through the supervisor's
//! memory: a second copy.

use super::fdtable::{self as fdt, Kind, Ofd};
use super::{Hold, Out, Sup, ret};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::nr;
use linuxabi::signal as sig;
use linuxabi::structs as st;
use tessera_api::net;
use tessera_api::peer;
use tessera_api::wire::Writer;
use tessera_rt::abi::Error;
use tessera_rt::abi::linux::{CallFor, MSG_IN_CALLER, REPLY_IN_CALLER};
use tessera_rt::sys;
use tessera_rt::sys::calls;

pub const AF_UNIX: u64 = 1;
pub const AF_INET: u64 = 2;
const SOCK_TYPE_MASK: u64 = 0xf;
const SOCK_FLAGS: u64 = (net::SOCK_NONBLOCK | net::SOCK_CLOEXEC) as u64;
/// The `MSG_*` flags the server takes; others are ignored (`MSG_MORE`)
/// or refused.
const MSG_SERVER: u64 =
    (net::MSG_PEEK | net::MSG_TRUNC | net::MSG_DONTWAIT | net::MSG_WAITALL | net::MSG_NOSIGNAL) as u64;
const MSG_MORE: u64 = 0x8000;
/// Urgent data, which the server does not carry.
const MSG_OOB: u64 = 0x1;
/// The socket's error queue (ICMP errors, timestamps): always empty here.
const MSG_ERRQUEUE: u64 = 0x2000;
const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;
/// Linux's largest single read or write.
const MAX_RW: u64 = 0x7fff_f000;
/// The largest datagram a gathered send or an addressed receive takes.
const MAX_DGRAM: usize = 65_536;

/// The supervisor's side of the TCP/IP server.
#[derive(Default)]
pub struct Net {
    /// The server's pid (0: not looked up yet).
    server: u64,
    /// The socket, flags and destination the server's SENDs of this client
    /// go to (the server keeps it per client).
    context: Option<(u32, u32, Option<[u8; 16]>)>,
    next_token: u64,
    /// The token of the newest watch: its wake makes a held poll look again.
    pub watch_token: u64,
    /// A socket call held until its socket is ready.
    pub wait: Option<Wait>,
    /// Times each socket answered EAGAIN (an edge-triggered epoll entry
    /// reports again after one).
    pub drained: BTreeMap<u32, u64>,
    /// An epoll_wait held until an entry is ready.
    pub ep_wait: Option<super::epoll::EpWait>,
    /// A blocked call is being tried once more (its socket was ready).
    retrying: bool,
    /// Errors a recvmmsg batch ended with after its first message, for the
    /// next one (Linux's `sk_err`), by socket.
    pub pending_error: BTreeMap<u32, i64>,
}

/// A held socket call: the system call, and what of it is done.
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    pub rid: u64,
    pub token: u64,
    pub nr: u64,
    pub args: [u64; 6],
    pub progress: Progress,
}

/// What a held call did before it waited.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Bytes sent or received already.
    pub done: u64,
    /// A connect is under way (wait for it, do not start another).
    pub connecting: bool,
    /// Messages of a sendmmsg or recvmmsg batch done already.
    pub msgs: u64,
    /// A recvmmsg timeout's end (`sys::now_ns`; 0: none).
    pub deadline: u64,
}

/// Tokens of watches carry this bit, so that they never equal the shared
/// server's poll tokens (which count from 1).
const WATCH_BIT: u64 = 1 << 63;

impl Net {
    pub fn token(&mut self) -> u64 {
        self.next_token += 1;
        WATCH_BIT | self.next_token
    }

    /// Forgets the last process's calls (the sockets were closed with its
    /// descriptors).
    pub fn reset(&mut self) {
        self.wait = None;
        self.ep_wait = None;
        self.drained.clear();
        self.pending_error.clear();
        self.context = None;
    }
}

/// A `struct msghdr` as read: the name's address and length, the
/// buffers (its ancillary data is not carried).
pub(super) struct MsgHdr {
    name: u64,
    namelen: u64,
    pub pieces: Vec<(u64, u64)>,
}

/// An address read from the process: 16 bytes (shorter ones padded with
/// zeros) and the length it gave.
type RawAddr = ([u8; 16], u32);

impl Sup {
    // ---- the server ----

    fn net_server(&mut self) -> Result<u64, i64> {
        if self.net.server == 0 {
            self.net.server = sys::name_lookup(net::NAME).map_err(|_| errno::ENETDOWN)?;
            self.net.context = None;
        }
        Ok(self.net.server)
    }

    /// The errno of a call the kernel refused: a server gone took the
    /// sockets with it (the next call looks it up again).
    fn net_gone(&mut self, e: Error) -> i64 {
        if e == Error::NotFound {
            self.net.server = 0;
            self.net.context = None;
            errno::ENETDOWN
        } else {
            errno::EFAULT
        }
    }

    /// A call whose reply is an `i64` result, then `extra`'s bytes.
    pub(super) fn net_call(&mut self, entry: u64, msg: &[u8], extra: &mut [u8]) -> Result<u64, i64> {
        let server = self.net_server()?;
        peer::call_result(server, entry, msg, extra, |e| self.net_gone(e))
    }

    fn net_pair(&mut self, entry: u64, socket: u32, second: u32) -> Result<u64, i64> {
        let mut m = [0u8; 8];
        Writer::new(&mut m).u32(socket).u32(second);
        self.net_call(entry, &m, &mut [])
    }

    pub(super) fn net_close(&mut self, socket: u32) {
        if self.net.context.is_some_and(|c| c.0 == socket) {
            self.net.context = None;
        }
        self.net.drained.remove(&socket);
        self.net.pending_error.remove(&socket);
        let _ = self.net_pair(net::CLOSE, socket, 0);
    }

    /// Lets `pid` (a child's supervisor) hold the socket too.
    pub(super) fn net_share(&mut self, socket: u32, pid: u64) {
        let mut m = [0u8; 16];
        Writer::new(&mut m).u32(socket).u32(0).u64(pid);
        let _ = self.net_call(net::SHARE, &m, &mut []);
    }

    /// Readiness of sockets now; if none is ready and `watch`, the server
    /// keeps a watch whose token is `net.watch_token`, told also at
    /// `deadline` (ns since boot; u64::MAX: never).
    pub(super) fn net_poll(&mut self, fds: &[(u32, u16)], watch: bool, deadline: u64) -> Result<Vec<u16>, i64> {
        let n = fds.len().min(net::MAX_POLL);
        let timed = watch && deadline != u64::MAX;
        let mut m = vec![0u8; if timed { net::watch_len(n) } else { net::poll_len(n) }];
        let mut w = Writer::new(&mut m);
        let entry = if watch {
            self.net.watch_token = self.net.token();
            w.u64(self.net.watch_token)
                .u32(crate::proto::sup::WAKE as u32)
                .u32(n as u32);
            net::WATCH
        } else {
            w.i64(0).u32(n as u32).u32(0);
            net::POLL
        };
        for &(s, ev) in &fds[..n] {
            w.u32(s).bytes(&ev.to_le_bytes()).bytes(&[0, 0]);
        }
        if timed {
            w.i64(deadline.saturating_sub(sys::now_ns()).min(i64::MAX as u64) as i64);
        }
        let mut out = vec![0u8; 2 * n];
        self.net_call(entry, &m, &mut out)?;
        let mut r: Vec<u16> = out.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        r.resize(fds.len(), net::POLLNVAL);
        Ok(r)
    }

    /// Sends bytes of the process's memory (`MSG_DONTWAIT` always).
    fn net_send(
        &mut self,
        rid: u64,
        socket: u32,
        flags: u32,
        to: Option<[u8; 16]>,
        buf: u64,
        len: u64,
    ) -> Result<u64, i64> {
        let server = self.net_server()?;
        let flags = flags | net::MSG_DONTWAIT;
        if self.net.context != Some((socket, flags, to)) {
            let mut m = [0u8; 32];
            let mut w = Writer::new(&mut m);
            w.u32(socket).u32(flags).u32(if to.is_some() { 16 } else { 0 }).u32(0);
            w.bytes(&to.unwrap_or([0; 16]));
            self.net.context = None;
            self.net_call(net::SEND_TO, &m, &mut [])?;
            self.net.context = Some((socket, flags, to));
        }
        let mut reply = [0u8; 8];
        let req = CallFor {
            rid,
            server,
            entry: net::SEND,
            msg_addr: buf,
            msg_len: len.min(MAX_RW),
            reply_addr: reply.as_mut_ptr() as u64,
            reply_len: 8,
            flags: MSG_IN_CALLER,
        };
        calls::call_for(&req).map_err(|e| self.net_gone(e))?;
        let v = i64::from_le_bytes(reply);
        if v < 0 { Err(-v) } else { Ok(v as u64) }
    }

    /// Sends bytes of the supervisor's own memory (a gathered datagram).
    fn net_send_own(&mut self, socket: u32, flags: u32, to: Option<[u8; 16]>, data: &[u8]) -> Result<u64, i64> {
        let server = self.net_server()?;
        let flags = flags | net::MSG_DONTWAIT;
        let mut m = [0u8; 32];
        let mut w = Writer::new(&mut m);
        w.u32(socket).u32(flags).u32(if to.is_some() { 16 } else { 0 }).u32(0);
        w.bytes(&to.unwrap_or([0; 16]));
        self.net.context = None;
        self.net_call(net::SEND_TO, &m, &mut [])?;
        self.net.context = Some((socket, flags, to));
        let mut reply = [0u8; 8];
        sys::call(server, net::SEND, data, &mut reply).map_err(|e| self.net_gone(e))?;
        let v = i64::from_le_bytes(reply);
        if v < 0 { Err(-v) } else { Ok(v as u64) }
    }

    /// Receives into the process's memory (`own`: into the supervisor's
    /// buffer instead, the sender's address first).
    fn net_recv(&mut self, rid: u64, socket: u32, flags: u32, dst: Result<(u64, u64), &mut [u8]>) -> Result<u64, i64> {
        let server = self.net_server()?;
        let flags = flags | net::MSG_DONTWAIT;
        let (len, r) = match dst {
            Ok((buf, len)) => {
                let len = len.min(MAX_RW);
                let mut m = [0u8; 16];
                Writer::new(&mut m).u32(socket).u32(flags).u64(len);
                let req = CallFor {
                    rid,
                    server,
                    entry: net::RECV,
                    msg_addr: m.as_ptr() as u64,
                    msg_len: 16,
                    reply_addr: buf,
                    reply_len: len,
                    flags: REPLY_IN_CALLER,
                };
                (len, calls::call_for(&req))
            }
            Err(own) => {
                let mut m = [0u8; 16];
                let len = own.len() as u64;
                Writer::new(&mut m).u32(socket).u32(flags | net::ADDR_FIRST).u64(len);
                (len, sys::call(server, net::RECV, &m, own).map(|n| n as u64))
            }
        };
        let _ = len;
        match r {
            Ok(n) => Ok(n),
            Err(e) if e == net::AGAIN => Err(errno::EAGAIN),
            Err(e) if e == net::FAILED => {
                let mut reply = [0u8; 8];
                match sys::call(server, net::ERRNO, &[], &mut reply) {
                    Ok(8) => Err(i64::from_le_bytes(reply)),
                    _ => Err(errno::EIO),
                }
            }
            Err(e) => Err(self.net_gone(e)),
        }
    }

    // ---- descriptors ----

    /// The socket behind `fd`: EBADF for no descriptor, ENOTSOCK for
    /// another kind.
    pub(super) fn sock_of(&self, fd: u64) -> Result<(u32, bool, u32), i64> {
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        match d.kind {
            // An O_PATH descriptor serves no call on what it names.
            _ if d.flags & fdt::O_PATH != 0 => Err(errno::EBADF),
            Kind::Socket { id, stream } => Ok((id, stream, d.flags)),
            _ => Err(errno::ENOTSOCK),
        }
    }

    fn fd_limit(&self) -> usize {
        self.limits[7][0].min(1 << 20) as usize
    }

    /// A new descriptor for socket `id` (closed again if there is no room).
    fn sock_fd(&mut self, id: u32, stream: bool, flags: u64) -> Result<u64, i64> {
        let nonblock = if flags & net::SOCK_NONBLOCK as u64 != 0 {
            fdt::O_NONBLOCK
        } else {
            0
        };
        let ofd = Ofd::new(
            Kind::Socket { id, stream },
            fdt::O_RDWR | nonblock,
            String::from("socket:"),
        );
        let cloexec = flags & net::SOCK_CLOEXEC as u64 != 0;
        match self.fds.insert(ofd, cloexec, self.fd_limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.net_close(id);
                Err(e)
            }
        }
    }

    fn read_addr(&self, rid: u64, at: u64, len: u64) -> Result<RawAddr, i64> {
        if (len as i32) < 0 || len > 128 {
            return Err(errno::EINVAL);
        }
        let mut a = [0u8; 16];
        let n = (len as usize).min(16);
        if n > 0 {
            a[..n].copy_from_slice(&self.read_mem(rid, at, n)?);
        }
        Ok((a, len as u32))
    }

    /// Writes an address for the process (`addr_at` 0: none wanted); its
    /// length word says how much room there is and gets the full length.
    pub(super) fn put_addr(&self, rid: u64, addr_at: u64, len_at: u64, name: &[u8]) -> Result<(), i64> {
        if addr_at == 0 {
            return Ok(());
        }
        let b = self.read_mem(rid, len_at, 4)?;
        let room = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if room < 0 {
            return Err(errno::EINVAL);
        }
        let n = (room as usize).min(name.len());
        self.write_mem(rid, addr_at, &name[..n])?;
        self.write_u32(rid, len_at, name.len() as u32)
    }

    // ---- the calls ----

    /// Serves a socket system call (`resume`: a held one tried again).
    pub(super) fn sock_call(&mut self, rid: u64, n: u64, a: [u64; 6], resume: Option<Progress>) -> Out {
        let p = resume.unwrap_or_default();
        if matches!(
            n,
            nr::BIND | nr::LISTEN | nr::ACCEPT | nr::ACCEPT4 | nr::CONNECT | nr::GETSOCKNAME | nr::GETPEERNAME
        ) && let Ok(o) = self.fds.ofd(a[0])
            && matches!(
                o.borrow().kind,
                Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
            )
        {
            return match n {
                nr::BIND => ret(self.unix_bind(rid, a)),
                nr::LISTEN => ret(self.unix_listen(a[0], a[1])),
                nr::ACCEPT => self.unix_accept(rid, n, a, 0),
                nr::ACCEPT4 => self.unix_accept(rid, n, a, a[3]),
                nr::CONNECT => self.unix_connect(rid, n, a),
                _ => ret(self.unix_name(rid, a, &o, n == nr::GETPEERNAME)),
            };
        }
        match n {
            nr::SOCKET => ret(self.sock_socket(a[0], a[1], a[2])),
            nr::SOCKETPAIR => ret(self.socketpair(rid, a)),
            nr::BIND => ret(self.sock_bind(rid, a)),
            nr::LISTEN => ret(self.sock_listen(a[0], a[1])),
            nr::ACCEPT => self.sock_accept(rid, n, a, 0),
            nr::ACCEPT4 => self.sock_accept(rid, n, a, a[3]),
            nr::CONNECT => self.sock_connect(rid, a, p),
            nr::SENDTO => self.sock_sendto(rid, n, a, p),
            nr::RECVFROM => self.sock_recvfrom(rid, n, a, p),
            nr::SENDMSG => self.sock_sendmsg(rid, a, p),
            nr::RECVMSG => self.sock_recvmsg(rid, a, p),
            nr::SENDMMSG | nr::RECVMMSG => self.mmsg(rid, n, a, resume),
            nr::SHUTDOWN => ret(self.sock_shutdown(a[0], a[1])),
            nr::GETSOCKOPT => ret(self.sock_getsockopt(rid, a)),
            nr::SETSOCKOPT => ret(self.sock_setsockopt(rid, a)),
            nr::GETSOCKNAME => ret(self.sock_name(rid, a, false)),
            nr::GETPEERNAME => ret(self.sock_name(rid, a, true)),
            nr::READ => self.sock_recvfrom(rid, n, [a[0], a[1], a[2], 0, 0, 0], p),
            nr::WRITE => self.sock_sendto(rid, n, [a[0], a[1], a[2], 0, 0, 0], p),
            nr::READV | nr::WRITEV => self.sock_vector(rid, n, a, p),
            _ => ret(Err(errno::ENOSYS)),
        }
    }

    /// A socket call from the table: AF_UNIX ends go to `unix.rs`.
    pub(super) fn socket_dispatch(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        if matches!(n, nr::SENDTO | nr::RECVFROM | nr::SENDMSG | nr::RECVMSG)
            && let Ok(o) = self.fds.ofd(a[0])
            && matches!(
                o.borrow().kind,
                Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
            )
        {
            return self.unix_call(rid, n, a, &o);
        }
        self.sock_call(rid, n, a, None)
    }

    /// readv and writev on a socket: [fd, iovecs, count].
    fn sock_vector(&mut self, rid: u64, n: u64, a: [u64; 6], p: Progress) -> Out {
        let sock = match self.sock_of(a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        if a[2] > 1024 {
            return ret(Err(errno::EINVAL));
        }
        let v = match self.read_mem(rid, a[1], a[2] as usize * 16) {
            Ok(v) => v,
            Err(e) => return ret(Err(e)),
        };
        let pieces: Vec<(u64, u64)> = (0..a[2] as usize)
            .map(|i| (st::u64_at(&v, i * 16), st::u64_at(&v, i * 16 + 8)))
            .collect();
        if pieces.iter().any(|x| (x.1 as i64) < 0) {
            return ret(Err(errno::EINVAL));
        }
        if n == nr::WRITEV {
            self.send_pieces(rid, n, a, p, sock, 0, None, &pieces)
        } else {
            match self.recv_pieces(rid, n, a, p, sock, 0, &pieces, false) {
                Ok((done, _)) => Out::Ret(done),
                Err(o) => o,
            }
        }
    }

    fn sock_socket(&mut self, domain: u64, kind: u64, protocol: u64) -> Result<u64, i64> {
        if kind & !(SOCK_TYPE_MASK | SOCK_FLAGS) != 0 {
            return Err(errno::EINVAL);
        }
        match domain {
            AF_INET => {}
            AF_UNIX => return self.unix_socket(kind, protocol),
            _ => return Err(errno::EAFNOSUPPORT),
        }
        self.net_server().map_err(|_| errno::EAFNOSUPPORT)?;
        let mut m = [0u8; 16];
        let t = (kind & SOCK_TYPE_MASK) as u32 | net::SOCK_NONBLOCK;
        Writer::new(&mut m)
            .u32(AF_INET as u32)
            .u32(t)
            .u32(protocol as u32)
            .u32(0);
        let id = self.net_call(net::SOCKET, &m, &mut [])? as u32;
        self.sock_fd(id, kind & SOCK_TYPE_MASK == net::SOCK_STREAM as u64, kind)
    }

    /// bind and connect: (socket, length, address).
    fn sock_addr_call(&mut self, rid: u64, a: [u64; 6], entry: u64) -> Result<u64, i64> {
        let (id, ..) = self.sock_of(a[0])?;
        let (addr, len) = self.read_addr(rid, a[1], a[2])?;
        let mut m = [0u8; 24];
        Writer::new(&mut m).u32(id).u32(len.min(16)).bytes(&addr);
        self.net_call(entry, &m, &mut [])
    }

    fn sock_bind(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        self.sock_of(a[0])?;
        let (addr, len) = self.read_addr(rid, a[1], a[2])?;
        // Ports below 1024 are root's (CAP_NET_BIND_SERVICE).
        let port = u16::from_be_bytes([addr[2], addr[3]]);
        if len >= 16 && addr[..2] == (AF_INET as u16).to_le_bytes() && port != 0 && port < 1024 && self.cred.euid != 0 {
            return Err(errno::EACCES);
        }
        self.sock_addr_call(rid, a, net::BIND)
    }

    fn sock_listen(&mut self, fd: u64, backlog: u64) -> Result<u64, i64> {
        let (id, stream, _) = self.sock_of(fd)?;
        if !stream {
            return Err(errno::EOPNOTSUPP);
        }
        // Linux caps the backlog (somaxconn 4096); a negative one is that.
        let b = (backlog as i32).clamp(0, 4096) as u32;
        let b = if (backlog as i32) < 0 { 4096 } else { b };
        self.net_pair(net::LISTEN, id, b)
    }

    fn sock_accept(&mut self, rid: u64, n: u64, a: [u64; 6], flags: u64) -> Out {
        if flags & !SOCK_FLAGS != 0 {
            return ret(Err(errno::EINVAL));
        }
        let (id, fl) = match self.sock_of(a[0]) {
            Ok((_, false, _)) => return ret(Err(errno::EOPNOTSUPP)),
            Ok((id, true, fl)) => (id, fl),
            Err(e) => return ret(Err(e)),
        };
        let mut peer = [0u8; 16];
        match self.net_call(net::ACCEPT, &pair(id, net::SOCK_NONBLOCK), &mut peer) {
            Ok(new) => {
                let fd = match self.sock_fd(new as u32, true, flags) {
                    Ok(fd) => fd,
                    Err(e) => return ret(Err(e)),
                };
                if let Err(e) = self.put_addr(rid, a[1], a[2], &peer) {
                    // Linux keeps the connection's descriptor even then;
                    // the program learns only the error.
                    return ret(Err(e));
                }
                Out::Ret(fd)
            }
            Err(errno::EAGAIN) if fl & fdt::O_NONBLOCK == 0 => {
                self.sock_block(rid, n, a, Progress::default(), id, net::POLLIN)
            }
            Err(e) => {
                self.note_again(id, e);
                ret(Err(e))
            }
        }
    }

    fn sock_connect(&mut self, rid: u64, a: [u64; 6], p: Progress) -> Out {
        let (id, stream, fl) = match self.sock_of(a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        if p.connecting {
            // Woken: the outcome is the socket's pending error.
            return ret(self.sock_error(id));
        }
        match self.sock_addr_call(rid, a, net::CONNECT) {
            Err(errno::EINPROGRESS) if stream && fl & fdt::O_NONBLOCK == 0 => {
                let p = Progress {
                    connecting: true,
                    ..Progress::default()
                };
                self.sock_block(rid, nr::CONNECT, a, p, id, net::POLLOUT)
            }
            r => ret(r),
        }
    }

    fn sock_error(&mut self, id: u32) -> Result<u64, i64> {
        let mut m = [0u8; 16];
        Writer::new(&mut m)
            .u32(id)
            .u32(0)
            .u32(net::SOL_SOCKET)
            .u32(net::SO_ERROR);
        let mut v = [0u8; net::MAX_OPTION];
        self.net_call(net::GETSOCKOPT, &m, &mut v)?;
        match i32::from_le_bytes([v[0], v[1], v[2], v[3]]) {
            0 => Ok(0),
            e => Err(e as i64),
        }
    }

    /// sendto, send and write: [fd, buffer, length, flags, address,
    /// address length].
    fn sock_sendto(&mut self, rid: u64, n: u64, a: [u64; 6], p: Progress) -> Out {
        let (id, stream, fl) = match self.sock_of(a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        if (a[2] as i64) < 0 {
            return ret(Err(errno::EINVAL));
        }
        let to = if a[4] != 0 && !stream {
            match self.read_addr(rid, a[4], a[5]) {
                Ok((addr, len)) if len >= 16 => Some(addr),
                Ok(_) => return ret(Err(errno::EINVAL)),
                Err(e) => return ret(Err(e)),
            }
        } else {
            None
        };
        if a[3] & MSG_OOB != 0 {
            return ret(Err(errno::EOPNOTSUPP));
        }
        // MSG_MORE holds a stream's segment back (a datagram's is not
        // corked: it goes at once).
        let more = if stream { a[3] & MSG_MORE } else { 0 };
        let flags = (a[3] & MSG_SERVER | more) as u32;
        let pieces = [(a[1], a[2])];
        self.send_pieces(rid, n, a, p, (id, stream, fl), flags, to, &pieces)
    }

    /// Sends `pieces` of the process's memory in order, from `p.done`.
    #[allow(clippy::too_many_arguments)]
    fn send_pieces(
        &mut self,
        rid: u64,
        n: u64,
        a: [u64; 6],
        p: Progress,
        sock: (u32, bool, u32),
        flags: u32,
        to: Option<[u8; 16]>,
        pieces: &[(u64, u64)],
    ) -> Out {
        let (id, stream, fl) = sock;
        let blocking = fl & fdt::O_NONBLOCK == 0 && flags & net::MSG_DONTWAIT == 0;
        let total: u64 = pieces.iter().map(|x| x.1).sum();
        // One datagram from several buffers is gathered here; so is a
        // stream's first try of a small one, which Linux puts into the
        // socket's buffer whole: sent piece by piece, the TCP/IP server
        // could send the first pieces alone, and the peer read them alone.
        let small_stream = stream && p.done == 0 && total as usize <= MAX_DGRAM;
        let r = if pieces.len() > 1 && (!stream || small_stream) {
            self.gather(rid, pieces)
                .and_then(|data| self.net_send_own(id, flags, to, &data))
        } else {
            let mut done = p.done;
            let mut result = Ok(0);
            let mut skip = p.done;
            // The buffers before the last go with MSG_MORE: one segment.
            let last = pieces.iter().rposition(|x| x.1 > 0).unwrap_or(0);
            for (i, &(buf, len)) in pieces.iter().enumerate() {
                if skip >= len && len > 0 {
                    skip -= len;
                    continue;
                }
                let more = if stream && i < last { net::MSG_MORE } else { 0 };
                let r = self.net_send(rid, id, flags | more, to, buf + skip, len - skip);
                skip = 0;
                match r {
                    Ok(k) => {
                        done += k;
                        if k < len {
                            break;
                        }
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
                if !stream {
                    break;
                }
            }
            match result {
                Err(e) if done == 0 => Err(e),
                _ => Ok(done),
            }
        };
        match r {
            // A blocking stream send takes everything.
            Ok(done) if stream && blocking && done < total && done > p.done => {
                let p = Progress { done, ..p };
                self.sock_block(rid, n, a, p, id, net::POLLOUT)
            }
            Ok(done) => Out::Ret(done),
            Err(errno::EAGAIN) if blocking => self.sock_block(rid, n, a, p, id, net::POLLOUT),
            Err(errno::EAGAIN) if p.done > 0 => Out::Ret(p.done),
            Err(errno::EPIPE) => {
                if flags & net::MSG_NOSIGNAL == 0 {
                    self.raise(sig::SIGPIPE);
                }
                if p.done > 0 {
                    Out::Ret(p.done)
                } else {
                    ret(Err(errno::EPIPE))
                }
            }
            Err(e) => {
                self.note_again(id, e);
                if p.done > 0 { Out::Ret(p.done) } else { ret(Err(e)) }
            }
        }
    }

    /// recvfrom, recv and read: [fd, buffer, length, flags, address,
    /// address length].
    fn sock_recvfrom(&mut self, rid: u64, n: u64, a: [u64; 6], p: Progress) -> Out {
        let (id, stream, fl) = match self.sock_of(a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        if (a[2] as i64) < 0 {
            return ret(Err(errno::EINVAL));
        }
        if a[3] & MSG_OOB != 0 {
            // No urgent data ever waits (Linux: EINVAL on a stream).
            return ret(Err(if stream { errno::EINVAL } else { errno::EOPNOTSUPP }));
        }
        if a[3] & MSG_ERRQUEUE != 0 {
            return ret(Err(errno::EAGAIN));
        }
        let flags = (a[3] & MSG_SERVER) as u32;
        let pieces = [(a[1], a[2])];
        match self.recv_pieces(rid, n, a, p, (id, stream, fl), flags, &pieces, a[4] != 0) {
            Ok((done, from)) => {
                if a[4] != 0 {
                    // A stream socket names no sender: the length is 0.
                    let name = from.map(|f| f.to_vec()).unwrap_or_default();
                    if let Err(e) = self.put_addr(rid, a[4], a[5], &name) {
                        return ret(Err(e));
                    }
                }
                Out::Ret(done)
            }
            Err(o) => o,
        }
    }

    /// Receives into `pieces` of the process's memory; `Err` carries the
    /// call's outcome when it ends otherwise (an error, or held).
    #[allow(clippy::too_many_arguments)]
    fn recv_pieces(
        &mut self,
        rid: u64,
        n: u64,
        a: [u64; 6],
        p: Progress,
        sock: (u32, bool, u32),
        flags: u32,
        pieces: &[(u64, u64)],
        want_from: bool,
    ) -> Result<(u64, Option<[u8; 16]>), Out> {
        let (id, stream, fl) = sock;
        let blocking = fl & fdt::O_NONBLOCK == 0 && flags & net::MSG_DONTWAIT == 0;
        let total: u64 = pieces.iter().map(|x| x.1).sum();
        let mut from = None;
        let r = if !stream && (want_from || pieces.len() > 1) {
            // A datagram with its sender, or scattered: through here.
            let room = (total as usize).min(MAX_DGRAM);
            let mut own = vec![0u8; 16 + room];
            match self.net_recv(rid, id, flags & !net::MSG_WAITALL, Err(&mut own)) {
                Ok(k) => {
                    let k = k as usize;
                    let mut f = [0u8; 16];
                    f.copy_from_slice(
                        &own[..16.min(k)]
                            .iter()
                            .copied()
                            .chain(core::iter::repeat(0))
                            .take(16)
                            .collect::<Vec<u8>>(),
                    );
                    from = Some(f);
                    let data = &own[16.min(k)..k];
                    self.scatter(rid, pieces, data).map(|()| data.len() as u64)
                }
                Err(e) => Err(e),
            }
        } else {
            let mut done = p.done;
            let mut skip = p.done;
            let mut result = Ok(0);
            for &(buf, len) in pieces {
                if skip >= len && len > 0 {
                    skip -= len;
                    continue;
                }
                let r = self.net_recv(rid, id, flags & !net::MSG_WAITALL, Ok((buf + skip, len - skip)));
                let want = len - skip;
                skip = 0;
                match r {
                    Ok(k) => {
                        done += k;
                        if k < want {
                            break;
                        }
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
                if !stream {
                    break;
                }
            }
            match result {
                Err(e) if done == p.done && p.done == 0 => Err(e),
                Err(errno::EAGAIN) => Ok(done),
                Err(e) if done == p.done => Err(e),
                _ => Ok(done),
            }
        };
        let waitall = stream && flags & net::MSG_WAITALL != 0 && blocking;
        match r {
            Ok(done) if waitall && done < total && done > p.done => {
                let p = Progress { done, ..p };
                Err(self.sock_block(rid, n, a, p, id, net::POLLIN))
            }
            Ok(done) if waitall && done == p.done && done > 0 && done < total => {
                Err(self.sock_block(rid, n, a, p, id, net::POLLIN))
            }
            Ok(done) => Ok((done, from)),
            Err(errno::EAGAIN) if blocking => Err(self.sock_block(rid, n, a, p, id, net::POLLIN)),
            Err(e) => {
                self.note_again(id, e);
                Err(if p.done > 0 { Out::Ret(p.done) } else { ret(Err(e)) })
            }
        }
    }

    fn gather(&self, rid: u64, pieces: &[(u64, u64)]) -> Result<Vec<u8>, i64> {
        let total: u64 = pieces.iter().map(|x| x.1).sum();
        if total as usize > MAX_DGRAM {
            return Err(errno::EMSGSIZE);
        }
        let mut data = Vec::with_capacity(total as usize);
        for &(buf, len) in pieces {
            data.extend_from_slice(&self.read_mem(rid, buf, len as usize)?);
        }
        Ok(data)
    }

    fn scatter(&self, rid: u64, pieces: &[(u64, u64)], mut data: &[u8]) -> Result<(), i64> {
        for &(buf, len) in pieces {
            if data.is_empty() {
                break;
            }
            let k = (len as usize).min(data.len());
            self.write_mem(rid, buf, &data[..k])?;
            data = &data[k..];
        }
        Ok(())
    }

    /// A `struct msghdr`: (name, name length, iovecs, control length).
    pub(super) fn msghdr(&self, rid: u64, at: u64) -> Result<MsgHdr, i64> {
        let h = self.read_mem(rid, at, 56)?;
        let (name, namelen) = (st::u64_at(&h, 0), st::u64_at(&h, 8) & 0xffff_ffff);
        let (iov, iovlen) = (st::u64_at(&h, 16), st::u64_at(&h, 24));
        if iovlen > 1024 {
            return Err(errno::EMSGSIZE);
        }
        let v = self.read_mem(rid, iov, iovlen as usize * 16)?;
        let mut pieces = Vec::with_capacity(iovlen as usize);
        let mut total = 0u64;
        for i in 0..iovlen as usize {
            let (b, l) = (st::u64_at(&v, i * 16), st::u64_at(&v, i * 16 + 8));
            if (l as i64) < 0 {
                return Err(errno::EINVAL);
            }
            total = total.saturating_add(l);
            if total > MAX_RW {
                return Err(errno::EINVAL);
            }
            pieces.push((b, l));
        }
        Ok(MsgHdr { name, namelen, pieces })
    }

    pub(super) fn sock_sendmsg(&mut self, rid: u64, a: [u64; 6], p: Progress) -> Out {
        let sock = match self.sock_of(a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        let MsgHdr {
            name, namelen, pieces, ..
        } = match self.msghdr(rid, a[1]) {
            Ok(h) => h,
            Err(e) => return ret(Err(e)),
        };
        let to = if name != 0 && !sock.1 {
            match self.read_addr(rid, name, namelen) {
                Ok((addr, len)) if len >= 16 => Some(addr),
                Ok(_) => return ret(Err(errno::EINVAL)),
                Err(e) => return ret(Err(e)),
            }
        } else {
            None
        };
        if a[2] & MSG_OOB != 0 {
            return ret(Err(errno::EOPNOTSUPP));
        }
        let flags = (a[2] & MSG_SERVER) as u32;
        self.send_pieces(rid, nr::SENDMSG, a, p, sock, flags, to, &pieces)
    }

    pub(super) fn sock_recvmsg(&mut self, rid: u64, a: [u64; 6], p: Progress) -> Out {
        let sock = match self.sock_of(a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        let MsgHdr { name, pieces, .. } = match self.msghdr(rid, a[1]) {
            Ok(h) => h,
            Err(e) => return ret(Err(e)),
        };
        if a[2] & MSG_OOB != 0 {
            return ret(Err(if sock.1 { errno::EINVAL } else { errno::EOPNOTSUPP }));
        }
        if a[2] & MSG_ERRQUEUE != 0 {
            return ret(Err(errno::EAGAIN));
        }
        let flags = (a[2] & MSG_SERVER & !(MSG_CMSG_CLOEXEC | MSG_MORE)) as u32;
        match self.recv_pieces(rid, nr::RECVMSG, a, p, sock, flags, &pieces, name != 0) {
            Ok((done, from)) => {
                let namelen = if name != 0 {
                    match from {
                        Some(f) => {
                            let room = self.read_mem(rid, a[1] + 8, 4).map(|b| st::u32_at(&b, 0)).unwrap_or(0);
                            let _ = self.write_mem(rid, name, &f[..(room as usize).min(16)]);
                            16
                        }
                        None => 0,
                    }
                } else {
                    0
                };
                // msg_namelen, msg_controllen (no ancillary data), msg_flags.
                let _ = self.write_u32(rid, a[1] + 8, namelen);
                let _ = self.write_u64(rid, a[1] + 40, 0);
                let _ = self.write_u32(rid, a[1] + 48, 0);
                Out::Ret(done)
            }
            Err(o) => o,
        }
    }

    fn sock_shutdown(&mut self, fd: u64, how: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        if matches!(
            o.borrow().kind,
            Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
        ) {
            return self.unix_shutdown(&o, how);
        }
        let (id, ..) = self.sock_of(fd)?;
        if how > 2 {
            return Err(errno::EINVAL);
        }
        self.net_pair(net::SHUTDOWN, id, how as u32)
    }

    /// [fd, level, name, value, length address].
    fn sock_getsockopt(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let o = self.fds.ofd(a[0])?;
        let unix = matches!(
            o.borrow().kind,
            Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
        );
        let b = self.read_mem(rid, a[4], 4)?;
        let room = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if room < 0 {
            return Err(errno::EINVAL);
        }
        let value = if unix {
            self.unix_getsockopt(&o, a[1] as u32, a[2] as u32)?
        } else {
            let (id, ..) = self.sock_of(a[0])?;
            let mut m = [0u8; 16];
            Writer::new(&mut m).u32(id).u32(0).u32(a[1] as u32).u32(a[2] as u32);
            let mut v = [0u8; net::MAX_OPTION];
            let n = self.net_call(net::GETSOCKOPT, &m, &mut v)? as usize;
            v[..n.min(net::MAX_OPTION)].to_vec()
        };
        let k = (room as usize).min(value.len());
        self.write_mem(rid, a[3], &value[..k])?;
        self.write_u32(rid, a[4], k as u32)?;
        Ok(0)
    }

    /// [fd, level, name, value, length].
    fn sock_setsockopt(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let o = self.fds.ofd(a[0])?;
        if (a[4] as i32) < 0 {
            return Err(errno::EINVAL);
        }
        let len = (a[4] as usize).min(net::MAX_OPTION);
        let value = self.read_mem(rid, a[3], len)?;
        if matches!(
            o.borrow().kind,
            Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
        ) {
            return self.unix_setsockopt(a[1] as u32, a[2] as u32, &value);
        }
        let (id, ..) = self.sock_of(a[0])?;
        // SO_SNDBUFFORCE and SO_RCVBUFFORCE: root's way past the limits
        // (the server's own limits still hold).
        const SO_SNDBUFFORCE: u64 = 32;
        const SO_RCVBUFFORCE: u64 = 33;
        let name = match (a[1] as u32, a[2]) {
            (net::SOL_SOCKET, SO_SNDBUFFORCE | SO_RCVBUFFORCE) if self.cred.euid != 0 => {
                return Err(errno::EPERM);
            }
            (net::SOL_SOCKET, SO_SNDBUFFORCE) => net::SO_SNDBUF,
            (net::SOL_SOCKET, SO_RCVBUFFORCE) => net::SO_RCVBUF,
            _ => a[2] as u32,
        };
        let mut m = vec![0u8; 16 + value.len()];
        Writer::new(&mut m)
            .u32(id)
            .u32(value.len() as u32)
            .u32(a[1] as u32)
            .u32(name)
            .bytes(&value);
        self.net_call(net::SETSOCKOPT, &m, &mut [])
    }

    fn sock_name(&mut self, rid: u64, a: [u64; 6], peer: bool) -> Result<u64, i64> {
        let o = self.fds.ofd(a[0])?;
        if matches!(o.borrow().kind, Kind::Unix { .. } | Kind::KUnix { .. }) {
            // An unnamed AF_UNIX socket: the family alone.
            self.read_mem(rid, a[2], 4)?;
            self.put_addr(rid, a[1], a[2], &(AF_UNIX as u16).to_le_bytes())?;
            return Ok(0);
        }
        let (id, ..) = self.sock_of(a[0])?;
        let mut name = [0u8; 16];
        let entry = if peer { net::GETPEERNAME } else { net::GETSOCKNAME };
        self.net_call(entry, &pair(id, 0), &mut name)?;
        if a[1] == 0 {
            return Err(errno::EFAULT);
        }
        self.put_addr(rid, a[1], a[2], &name)?;
        Ok(0)
    }

    // ---- waiting ----

    /// Holds call `rid` (system call `n` with `a`, `p` of it done) until
    /// the shared server's poll `token` says its socket is ready.
    pub(super) fn hold_until_ready(&mut self, rid: u64, n: u64, a: [u64; 6], token: u64, p: Progress) -> Out {
        self.passed = Some((n, a));
        self.net.wait = Some(Wait {
            rid,
            token,
            nr: n,
            args: a,
            progress: p,
        });
        self.held = Some((rid, Hold::Poll { token }));
        Out::Done
    }

    /// Holds call `rid` until socket `id` has `events` (a watch), then it
    /// is served again from `p`.
    fn sock_block(&mut self, rid: u64, n: u64, a: [u64; 6], p: Progress, id: u32, events: u16) -> Out {
        self.note_again(id, errno::EAGAIN);
        let token = match self.net_poll(&[(id, events)], true, u64::MAX) {
            // Ready already (it changed since the try): once more at once.
            Ok(r) if r[0] != 0 && !self.net.retrying => {
                self.net.retrying = true;
                let o = self.sock_call(rid, n, a, Some(p));
                self.net.retrying = false;
                return o;
            }
            // Ready, yet the call still cannot go on (a listener's
            // connection not yet accepted whole): look again in 10 ms,
            // by the shared server's timer.
            Ok(r) if r[0] != 0 => {
                let deadline = sys::now_ns() + 10_000_000;
                crate::proto::word(&self.ctl(&[crate::proto::ctl::POLL, self.pid as u64, deadline]), 1)
            }
            Ok(_) => self.net.watch_token,
            Err(e) => return ret(Err(e)),
        };
        // A signal's handler with SA_RESTART makes the process issue the
        // call again (`signals::restart`).
        self.hold_until_ready(rid, n, a, token, p)
    }

    /// A watch's wake for a held socket call: it is tried again. Returns
    /// whether the token was one of this module's.
    pub(super) fn sock_woken(&mut self, token: u64) -> bool {
        let Some(w) = self.net.wait else {
            return false;
        };
        if w.token != token {
            return false;
        }
        if self
            .held
            .is_none_or(|(r, h)| r != w.rid || !matches!(h, Hold::Poll { token: t } if t == token))
        {
            self.net.wait = None;
            return true;
        }
        self.held = None;
        self.net.wait = None;
        self.in_call = true;
        // A fanotify read waits as a socket call does (`fanotify.rs`),
        // told apart from a socket's held read by its descriptor.
        let fanotify = w.nr == nr::READ
            && self.fds.ofd(w.args[0]).is_ok_and(|o| {
                matches!(
                    o.borrow().kind,
                    Kind::Obj {
                        kind: crate::proto::obj::FANOTIFY,
                        ..
                    }
                )
            });
        let o = if fanotify {
            self.fanotify_read(w.rid, w.nr, w.args)
        } else {
            self.sock_call(w.rid, w.nr, w.args, Some(w.progress))
        };
        self.in_call = false;
        if let Out::Ret(v) = o {
            self.answer(w.rid, v);
        }
        true
    }

    /// Whether the held call is a socket call (a signal restarts it).
    pub(super) fn sock_held(&self) -> bool {
        match (self.net.wait, self.held) {
            (Some(w), Some((rid, Hold::Poll { token }))) => w.rid == rid && w.token == token,
            _ => false,
        }
    }

    fn note_again(&mut self, id: u32, e: i64) {
        if e == errno::EAGAIN {
            *self.net.drained.entry(id).or_insert(0) += 1;
        }
    }

    /// Posts `s` to the calling thread (SIGPIPE of a broken stream,
    /// SIGXFSZ), as Linux's `send_sig(s, current, 0)`.
    pub(super) fn raise(&mut self, s: u32) {
        self.post_thread(
            self.served_tid(),
            linuxabi::frame::SigInfo {
                signo: s,
                code: 0,
                pid: self.pid,
                uid: self.cred.uid,
                ..Default::default()
            },
        );
    }
}

fn pair(a: u32, b: u32) -> [u8; 8] {
    let mut m = [0u8; 8];
    Writer::new(&mut m).u32(a).u32(b);
    m
}

/// Whether `n` is a socket call this module serves.
pub fn is_socket_call(n: u64) -> bool {
    matches!(
        n,
        nr::SOCKET
            | nr::SOCKETPAIR
            | nr::BIND
            | nr::LISTEN
            | nr::ACCEPT
            | nr::ACCEPT4
            | nr::CONNECT
            | nr::SENDTO
            | nr::RECVFROM
            | nr::SENDMSG
            | nr::RECVMSG
            | nr::SENDMMSG
            | nr::RECVMMSG
            | nr::SHUTDOWN
            | nr::GETSOCKOPT
            | nr::SETSOCKOPT
            | nr::GETSOCKNAME
            | nr::GETPEERNAME
    )
}
