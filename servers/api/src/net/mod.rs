//! The TCP/IP server's socket protocol, shaped for the Linux personality
//! that will map Linux's socket calls onto it: address families, types,
//! flags, options, poll events and errors are Linux's values, and an
//! address is Linux's `struct sockaddr_in` byte for byte (16 bytes:
//! family, port in network order, address in network order, zeros).
//!
//! **Sockets.** `SOCKET` gives the caller a socket number; only the
//! processes holding a socket may use it (the creator, the processes an
//! `ACCEPT` or a `SHARE` gave it to). A number has a generation part, so a
//! closed socket's number is refused (`EBADF`) even once its slot is
//! reused. A socket is closed when the last process holding it closes it
//! or ends; a TCP connection then closes gracefully (FIN), or with a reset
//! if unread data is left, as Linux does.
//!
//! **Blocking.** A socket blocks unless it was made with `SOCK_NONBLOCK`
//! or set `O_NONBLOCK` (`FCNTL`), and a call may add `MSG_DONTWAIT`. A
//! blocking call is held by the server until it can be answered; a
//! non-blocking one fails with `EAGAIN` (`EINPROGRESS` for `CONNECT`).
//! `POLL` reports readiness (Linux's `POLL*` bits) for a set of sockets,
//! held until one is ready or the timeout passes: the personality's poll,
//! select and epoll stand on it.
//!
//! **Data.** Bytes cross between the caller and the server once: a `SEND`
//! message is the data itself, read by the server straight into the
//! socket's buffer, and a `RECV` reply is the data itself, written by the
//! server straight from the socket's buffer into the caller's. So that a
//! `SEND`'s message can be the caller's own buffer (passed on by
//! reference), where it goes is said first: `SEND_TO` sets the socket,
//! the `MSG_*` flags and the destination of this client's next `SEND`s.
//!
//! **Results.** Most entries reply with an `i64`: a value, or a negated
//! errno; some add a structure after it. `RECV`, whose reply is the data,
//! has its length as the call's status (0: the peer closed the stream);
//! it fails with [`AGAIN`] for `EAGAIN`, and with [`FAILED`] for any other
//! errno, which `ERRNO` then gives.
//!
//! | entry | message | reply |
//! |---|---|---|
//! | `SOCKET` | domain u32, type u32 (`SOCK_*` with `SOCK_NONBLOCK`), protocol u32, 0 u32 | socket |
//! | `BIND` | socket u32, address length u32, [`SockAddr`] | 0 |
//! | `LISTEN` | socket u32, backlog u32 | 0 |
//! | `ACCEPT` | socket u32, flags u32 (`SOCK_NONBLOCK`) | socket, then the peer's [`SockAddr`] |
//! | `CONNECT` | socket u32, address length u32, [`SockAddr`] | 0 |
//! | `SEND_TO` | socket u32, flags u32 (`MSG_*`), address length u32 (0: none), 0 u32, [`SockAddr`] | 0 |
//! | `SEND` | the bytes | bytes sent |
//! | `RECV` | socket u32, flags u32 (`MSG_*`, [`ADDR_FIRST`]), length u64 | the bytes |
//! | `SHUTDOWN` | socket u32, how u32 (`SHUT_*`) | 0 |
//! | `GETSOCKOPT` | socket u32, 0 u32, level u32, name u32 | value length, then the value |
//! | `SETSOCKOPT` | socket u32, value length u32, level u32, name u32, value | 0 |
//! | `GETSOCKNAME` | socket u32, 0 u32 | 0, then [`SockAddr`] |
//! | `GETPEERNAME` | socket u32, 0 u32 | 0, then [`SockAddr`] |
//! | `CLOSE` | socket u32, 0 u32 | 0 |
//! | `POLL` | timeout ns i64 (< 0: none), count u32, 0 u32, then per socket: socket u32, events u16, 0 u16 | ready count, then per socket: revents u16 |
//! | `FCNTL` | socket u32, command u32 (`F_GETFL`, `F_SETFL`), argument u64 | the value |
//! | `SHARE` | socket u32, 0 u32, pid u64 | 0 |
//! | `ERRNO` | | the errno of the last failed RECV (EIO if none) |
//! | `STATS` | | text, `name value` per line |
//! | `WATCH` | token u64, entry u32, count u32, then per socket as in `POLL`, then optionally a timeout ns i64 (< 0: none) | ready count, then per socket: revents u16 (none ready: the watch is kept) |
//! | `SEND_ICA` | socket u32, flags u32 (`MSG_*`), ICA u64, offset u32, length u32, home u64 | bytes sent, then the ICA's id |
//!
//! **Watches.** `WATCH` is `POLL` for a client that must not wait in the
//! server (the Linux personality's supervisor, which serves its process's
//! signals meanwhile): if no socket is ready, the server keeps the watch
//! (one per client, a new one replaces it, none cancels it) and, once one
//! is ready or closes, sends the client a request (AnT's non-blocking
//! `request`) on the entry it named with the token as its message. A
//! watch given a timeout is told the same way once that passes, none
//! ready: a client waiting on sockets alone needs no timer of its own.

//!
//! **Data from an ICA.** `SEND_ICA` sends bytes that reach the server as
//! pages rather than as a message (AnT's copy-less transfer): the caller,
//! which has granted the server (`peer_grant`), names one of its ICAs and
//! the range to send; the server takes the pages (a container steal, no
//! copy), copies the range into the socket's buffer (the one copy, as a
//! SEND's) and moves the ICA back to the caller, at `home` if that address
//! is free there, whatever the outcome. The reply is the result (bytes
//! sent or a negated errno), then the ICA's id, which the move back may
//! have changed. Without the grant the call fails with `EACCES`; an ICA
//! that is not the caller's (stale, another process's) with `EBADF`;
//! either way nothing moves and the reply is the errno alone. A caller
//! that ends meanwhile loses the ICA: the server deletes it.

pub mod client;

use crate::wire::{Reader, Writer};
use tessera_rt::abi::Error;

pub const NAME: &str = "net";

pub const SOCKET: u64 = 0;
pub const BIND: u64 = 1;
pub const LISTEN: u64 = 2;
pub const ACCEPT: u64 = 3;
pub const CONNECT: u64 = 4;
pub const SEND_TO: u64 = 5;
pub const SEND: u64 = 6;
pub const RECV: u64 = 7;
pub const SHUTDOWN: u64 = 8;
pub const GETSOCKOPT: u64 = 9;
pub const SETSOCKOPT: u64 = 10;
pub const GETSOCKNAME: u64 = 11;
pub const GETPEERNAME: u64 = 12;
pub const CLOSE: u64 = 13;
pub const POLL: u64 = 14;
pub const FCNTL: u64 = 15;
pub const SHARE: u64 = 16;
pub const ERRNO: u64 = 17;
pub const STATS: u64 = 18;
pub const WATCH: u64 = 19;
pub const SEND_ICA: u64 = 20;
pub const ENTRIES: u64 = (1 << 21) - 1;

/// How RECV fails for `EAGAIN`.
pub const AGAIN: Error = Error::Busy;
/// How RECV fails for any other errno (`ERRNO` gives it).
pub const FAILED: Error = Error::Limit;

/// Most sockets one POLL names.
pub const MAX_POLL: usize = 1024;
/// Most bytes of an option's value.
pub const MAX_OPTION: usize = 16;

// Address families, types and protocols (Linux's).
pub const AF_INET: u32 = 2;
pub const SOCK_STREAM: u32 = 1;
pub const SOCK_DGRAM: u32 = 2;
pub const SOCK_RAW: u32 = 3;
pub const SOCK_TYPE_MASK: u32 = 0xf;
pub const SOCK_NONBLOCK: u32 = 0o4000;
pub const SOCK_CLOEXEC: u32 = 0o2000000;
pub const IPPROTO_IP: u32 = 0;
pub const IPPROTO_ICMP: u32 = 1;
pub const IPPROTO_TCP: u32 = 6;
pub const IPPROTO_UDP: u32 = 17;

// `send`/`recv` flags (Linux's).
pub const MSG_PEEK: u32 = 0x2;
pub const MSG_TRUNC: u32 = 0x20;
pub const MSG_DONTWAIT: u32 = 0x40;
pub const MSG_WAITALL: u32 = 0x100;
pub const MSG_NOSIGNAL: u32 = 0x4000;
/// More data follows: the stack waits for it before sending (Linux's cork).
pub const MSG_MORE: u32 = 0x8000;
/// RECV flag of this protocol (not Linux's): the reply starts with the
/// sender's [`SockAddr`], then the data (for `recvfrom` on a datagram
/// socket in one call).
pub const ADDR_FIRST: u32 = 0x8000_0000;

pub const SHUT_RD: u32 = 0;
pub const SHUT_WR: u32 = 1;
pub const SHUT_RDWR: u32 = 2;

// Options (Linux's levels and names).
pub const SOL_SOCKET: u32 = 1;
pub const SO_REUSEADDR: u32 = 2;
pub const SO_TYPE: u32 = 3;
pub const SO_ERROR: u32 = 4;
pub const SO_SNDBUF: u32 = 7;
pub const SO_RCVBUF: u32 = 8;
pub const SO_KEEPALIVE: u32 = 9;
pub const SO_OOBINLINE: u32 = 10;
pub const SO_PROTOCOL: u32 = 38;
pub const SO_DOMAIN: u32 = 39;
pub const SO_ACCEPTCONN: u32 = 30;
pub const TCP_NODELAY: u32 = 1;
pub const IP_TTL: u32 = 2;

// `fcntl` (Linux's).
pub const F_GETFL: u32 = 3;
pub const F_SETFL: u32 = 4;
pub const O_NONBLOCK: u64 = 0o4000;

// `poll` events (Linux's).
pub const POLLIN: u16 = 0x1;
pub const POLLPRI: u16 = 0x2;
pub const POLLOUT: u16 = 0x4;
pub const POLLERR: u16 = 0x8;
pub const POLLHUP: u16 = 0x10;
pub const POLLNVAL: u16 = 0x20;
pub const POLLRDNORM: u16 = 0x40;
pub const POLLWRNORM: u16 = 0x100;
pub const POLLRDHUP: u16 = 0x2000;

/// An IPv4 address and port: Linux's `struct sockaddr_in`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SockAddr {
    pub addr: [u8; 4],
    pub port: u16,
}

impl SockAddr {
    pub const LEN: usize = 16;

    pub const fn new(addr: [u8; 4], port: u16) -> SockAddr {
        SockAddr { addr, port }
    }

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..2].copy_from_slice(&(AF_INET as u16).to_le_bytes());
        b[2..4].copy_from_slice(&self.port.to_be_bytes());
        b[4..8].copy_from_slice(&self.addr);
        b
    }

    pub fn write(&self, w: &mut Writer) {
        w.bytes(&self.encode());
    }

    /// A `sockaddr_in` of `len` bytes at the start of `b`: `EAFNOSUPPORT`
    /// for another family, `EINVAL` if it is short.
    pub fn decode(b: &[u8], len: usize) -> Result<SockAddr, crate::errno::Errno> {
        use crate::errno::Errno;
        if len < Self::LEN || b.len() < Self::LEN {
            return Err(Errno::EINVAL);
        }
        if u16::from_le_bytes([b[0], b[1]]) as u32 != AF_INET {
            return Err(Errno::EAFNOSUPPORT);
        }
        Ok(SockAddr {
            port: u16::from_be_bytes([b[2], b[3]]),
            addr: [b[4], b[5], b[6], b[7]],
        })
    }

    pub fn read(r: &mut Reader) -> Option<SockAddr> {
        SockAddr::decode(r.bytes(Self::LEN)?, Self::LEN).ok()
    }
}

impl core::fmt::Display for SockAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        let [a, b, c, d] = self.addr;
        write!(f, "{a}.{b}.{c}.{d}:{}", self.port)
    }
}

/// One socket of a POLL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollFd {
    pub socket: u32,
    pub events: u16,
    pub revents: u16,
}

/// A `SEND_ICA` message: `len` bytes at `offset` of ICA `ica` on socket
/// `socket`, the ICA to come back at `home`.
pub const SEND_ICA_LEN: usize = 32;

pub fn encode_send_ica(socket: u32, flags: u32, ica: u64, offset: u32, len: u32, home: u64) -> [u8; SEND_ICA_LEN] {
    let mut b = [0u8; SEND_ICA_LEN];
    Writer::new(&mut b)
        .u32(socket)
        .u32(flags)
        .u64(ica)
        .u32(offset)
        .u32(len)
        .u64(home);
    b
}

/// Bytes of a POLL message naming `n` sockets, and of its reply.
pub const fn poll_len(n: usize) -> usize {
    16 + 8 * n
}

/// A WATCH message's length with its timeout.
pub const fn watch_len(n: usize) -> usize {
    poll_len(n) + 8
}

pub const fn poll_reply_len(n: usize) -> usize {
    8 + 2 * n
}

/// A POLL message: the sockets and events, and the timeout (None: none).
pub fn encode_poll(fds: &[PollFd], timeout_ns: Option<u64>, buf: &mut [u8]) -> usize {
    let mut w = Writer::new(buf);
    w.i64(timeout_ns.map_or(-1, |t| t.min(i64::MAX as u64) as i64));
    w.u32(fds.len() as u32).u32(0);
    for f in fds {
        w.u32(f.socket).bytes(&f.events.to_le_bytes()).bytes(&[0, 0]);
    }
    w.len()
}
