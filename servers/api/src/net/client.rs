//! The socket API of native programs: sockets of the TCP/IP server (found
//! by name), with Linux's errors. A [`Socket`] closes when dropped.

use super::*;
use crate::errno::Errno;
use crate::peer::{self, Peer};
use alloc::vec;
use alloc::vec::Vec;
use spin::Mutex;
use tessera_rt::sys;

/// Where the server's SEND context points (server, socket, flags,
/// destination): a send that continues it needs no SEND_TO.
type SendContext = (u64, u32, u32, Option<SockAddr>);

static PEER: Mutex<Peer<SendContext>> = Peer::new();

/// The server's pid (waiting up to two seconds for it to start).
pub fn server() -> Result<u64, Errno> {
    peer::server(&PEER, NAME, Errno::ENETDOWN)
}

/// Uses the server registered as `name` from now on (a program that
/// starts its own, or restarts it).
pub fn connect_to(name: &str) -> Result<u64, Errno> {
    peer::connect(&PEER, name, Errno::ENETDOWN)
}

/// A call whose reply starts with an `i64` result; the rest of the reply
/// goes to `extra`.
fn call_result(entry: u64, msg: &[u8], extra: &mut [u8]) -> Result<u64, Errno> {
    peer::call_result(server()?, entry, msg, extra, |e| gone(e).0 as i64).map_err(|e| Errno(e as i32))
}

/// The errno for a call that failed in the kernel: a server that ended
/// took the network with it.
fn gone(e: Error) -> Errno {
    match e {
        Error::NotFound => Errno::ENETDOWN,
        e => Errno::of(e),
    }
}

fn header(socket: u32, second: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    Writer::new(&mut b).u32(socket).u32(second);
    b
}

fn with_addr(socket: u32, addr: &SockAddr) -> [u8; 8 + SockAddr::LEN] {
    let mut b = [0u8; 8 + SockAddr::LEN];
    let mut w = Writer::new(&mut b);
    w.u32(socket).u32(SockAddr::LEN as u32);
    addr.write(&mut w);
    b
}

/// A socket of the TCP/IP server.
pub struct Socket {
    id: u32,
}

impl Socket {
    /// `socket(AF_INET, kind, protocol)`; `kind` may carry `SOCK_NONBLOCK`.
    pub fn new(kind: u32, protocol: u32) -> Result<Socket, Errno> {
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(AF_INET).u32(kind).u32(protocol).u32(0);
        let id = call_result(SOCKET, &msg, &mut [])?;
        Ok(Socket { id: id as u32 })
    }

    pub fn tcp() -> Result<Socket, Errno> {
        Socket::new(SOCK_STREAM, 0)
    }

    pub fn udp() -> Result<Socket, Errno> {
        Socket::new(SOCK_DGRAM, 0)
    }

    /// A socket for ICMP echo (Linux's ping socket).
    pub fn ping() -> Result<Socket, Errno> {
        Socket::new(SOCK_DGRAM, IPPROTO_ICMP)
    }

    /// The object for a socket number this process holds (given by another
    /// process's `share`).
    pub fn from_id(id: u32) -> Socket {
        Socket { id }
    }

    /// The server's number for it.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Gives the socket up without closing it (a test of what a process
    /// that ends without closing leaves).
    pub fn leak(self) -> u32 {
        let id = self.id;
        core::mem::forget(self);
        id
    }

    pub fn bind(&self, addr: SockAddr) -> Result<(), Errno> {
        call_result(BIND, &with_addr(self.id, &addr), &mut []).map(drop)
    }

    pub fn listen(&self, backlog: u32) -> Result<(), Errno> {
        call_result(LISTEN, &header(self.id, backlog), &mut []).map(drop)
    }

    /// The next connection and its peer; `flags` may be `SOCK_NONBLOCK`.
    pub fn accept_with(&self, flags: u32) -> Result<(Socket, SockAddr), Errno> {
        let mut addr = [0u8; SockAddr::LEN];
        let id = call_result(ACCEPT, &header(self.id, flags), &mut addr)?;
        let peer = SockAddr::decode(&addr, SockAddr::LEN).unwrap_or_default();
        Ok((Socket { id: id as u32 }, peer))
    }

    pub fn accept(&self) -> Result<(Socket, SockAddr), Errno> {
        self.accept_with(0)
    }

    pub fn connect(&self, addr: SockAddr) -> Result<(), Errno> {
        call_result(CONNECT, &with_addr(self.id, &addr), &mut []).map(drop)
    }

    /// Sends `data` (to `to`, for a datagram socket not connected) with
    /// `MSG_*` flags; returns the bytes taken.
    pub fn send_with(&self, data: &[u8], flags: u32, to: Option<SockAddr>) -> Result<usize, Errno> {
        let server = server()?;
        let want = (server, self.id, flags, to);
        if PEER.lock().context != Some(want) {
            let mut msg = [0u8; 16 + SockAddr::LEN];
            let mut w = Writer::new(&mut msg);
            w.u32(self.id)
                .u32(flags)
                .u32(if to.is_some() { SockAddr::LEN as u32 } else { 0 })
                .u32(0);
            to.unwrap_or_default().write(&mut w);
            call_result(SEND_TO, &msg, &mut [])?;
            PEER.lock().context = Some(want);
        }
        let mut reply = [0u8; 8];
        let n = sys::call(server, SEND, data, &mut reply).map_err(gone)?;
        let result = Reader::new(&reply[..n]).i64().ok_or(Errno::EIO)?;
        if result < 0 {
            return Err(Errno((-result) as i32));
        }
        Ok(result as usize)
    }

    pub fn send(&self, data: &[u8]) -> Result<usize, Errno> {
        self.send_with(data, 0, None)
    }

    pub fn send_to(&self, data: &[u8], to: SockAddr) -> Result<usize, Errno> {
        self.send_with(data, 0, Some(to))
    }

    /// Sends all of `data` (a blocking socket takes it all at once).
    pub fn send_all(&self, mut data: &[u8]) -> Result<(), Errno> {
        while !data.is_empty() {
            let n = self.send(data)?;
            data = &data[n..];
        }
        Ok(())
    }

    /// Receives into `buf` with `MSG_*` flags; returns the bytes (0: the
    /// peer closed the stream).
    pub fn recv_with(&self, buf: &mut [u8], flags: u32) -> Result<usize, Errno> {
        let server = server()?;
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(self.id).u32(flags).u64(buf.len() as u64);
        match sys::call(server, RECV, &msg, buf) {
            Ok(n) => Ok(n),
            Err(e) if e == AGAIN => Err(Errno::EAGAIN),
            Err(e) if e == FAILED => Err(last_errno(server)),
            Err(e) => Err(gone(e)),
        }
    }

    pub fn recv(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        self.recv_with(buf, 0)
    }

    /// A datagram and its sender.
    pub fn recv_from(&self, buf: &mut [u8]) -> Result<(usize, SockAddr), Errno> {
        let mut both = vec![0u8; SockAddr::LEN + buf.len()];
        let n = self.recv_with(&mut both, ADDR_FIRST)?;
        let from = SockAddr::decode(&both, n).map_err(|_| Errno::EIO)?;
        let data = n - SockAddr::LEN;
        buf[..data].copy_from_slice(&both[SockAddr::LEN..n]);
        Ok((data, from))
    }

    pub fn shutdown(&self, how: u32) -> Result<(), Errno> {
        call_result(SHUTDOWN, &header(self.id, how), &mut []).map(drop)
    }

    /// An option's value (its bytes: an `int` for most).
    pub fn option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(self.id).u32(0).u32(level).u32(name);
        let mut value = [0u8; MAX_OPTION];
        let n = call_result(GETSOCKOPT, &msg, &mut value)? as usize;
        Ok(value[..n.min(MAX_OPTION)].to_vec())
    }

    /// An `int` option's value.
    pub fn option_int(&self, level: u32, name: u32) -> Result<i32, Errno> {
        let v = self.option(level, name)?;
        Ok(i32::from_le_bytes(
            v.get(..4).ok_or(Errno::EIO)?.try_into().map_err(|_| Errno::EIO)?,
        ))
    }

    pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        let mut msg = vec![0u8; 16 + value.len()];
        Writer::new(&mut msg)
            .u32(self.id)
            .u32(value.len() as u32)
            .u32(level)
            .u32(name)
            .bytes(value);
        call_result(SETSOCKOPT, &msg, &mut []).map(drop)
    }

    pub fn set_option_int(&self, level: u32, name: u32, value: i32) -> Result<(), Errno> {
        self.set_option(level, name, &value.to_le_bytes())
    }

    fn name_of(&self, entry: u64) -> Result<SockAddr, Errno> {
        let mut addr = [0u8; SockAddr::LEN];
        call_result(entry, &header(self.id, 0), &mut addr)?;
        SockAddr::decode(&addr, SockAddr::LEN).map_err(|_| Errno::EIO)
    }

    pub fn local_addr(&self) -> Result<SockAddr, Errno> {
        self.name_of(GETSOCKNAME)
    }

    pub fn peer_addr(&self) -> Result<SockAddr, Errno> {
        self.name_of(GETPEERNAME)
    }

    pub fn set_nonblocking(&self, on: bool) -> Result<(), Errno> {
        let mut msg = [0u8; 16];
        Writer::new(&mut msg)
            .u32(self.id)
            .u32(F_SETFL)
            .u64(if on { O_NONBLOCK } else { 0 });
        call_result(FCNTL, &msg, &mut []).map(drop)
    }

    /// Lets process `pid` use the socket too (it holds it until it closes
    /// it or ends).
    pub fn share(&self, pid: u64) -> Result<(), Errno> {
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(self.id).u32(0).u64(pid);
        call_result(SHARE, &msg, &mut []).map(drop)
    }

    pub fn close(self) -> Result<(), Errno> {
        let id = self.leak();
        close_id(id)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = close_id(self.id);
    }
}

fn close_id(id: u32) -> Result<(), Errno> {
    {
        let mut s = PEER.lock();
        if s.context.is_some_and(|c| c.1 == id) {
            s.context = None;
        }
    }
    call_result(CLOSE, &header(id, 0), &mut []).map(drop)
}

/// Why a RECV failed.
fn last_errno(server: u64) -> Errno {
    let mut reply = [0u8; 8];
    match sys::call(server, ERRNO, &[], &mut reply) {
        Ok(8) => Errno(i64::from_le_bytes(reply) as i32),
        _ => Errno::EIO,
    }
}

/// Readiness of `fds` (their `revents` are filled in), waiting up to
/// `timeout_ns` (None: as long as it takes) for one to be ready; returns
/// how many are.
pub fn poll(fds: &mut [PollFd], timeout_ns: Option<u64>) -> Result<usize, Errno> {
    if fds.len() > MAX_POLL {
        return Err(Errno::EINVAL);
    }
    let mut msg = vec![0u8; poll_len(fds.len())];
    encode_poll(fds, timeout_ns, &mut msg);
    let mut revents = vec![0u8; 2 * fds.len()];
    let n = call_result(POLL, &msg, &mut revents)?;
    for (f, r) in fds.iter_mut().zip(revents.chunks(2)) {
        f.revents = u16::from_le_bytes([r[0], r[1]]);
    }
    Ok(n as usize)
}

/// The server's STATS report.
pub fn stats() -> Result<alloc::string::String, Errno> {
    let server = server()?;
    let mut buf = vec![0u8; 4096];
    let n = sys::call(server, STATS, &[], &mut buf).map_err(gone)?;
    buf.truncate(n);
    alloc::string::String::from_utf8(buf).map_err(|_| Errno::EIO)
}
