//! AF_UNIX sockets made by socket() and given names: bind (a socket file
//! made on the file server, or an abstract name), listen, accept and
//! connect, and datagrams sent to a name. Which name leads to which socket
//! is the shared server's table (`shared/unix.rs`), which every process's
//! calls reach and which forgets a socket with its last reference; a
//! connection, once made, is two of the shared server's pipes, as a pair's
//! (`unix.rs`), so unlinking the file leaves it working.

use super::fdtable::{self as fdt, Kind, Ofd, OfdRef};
use super::files::Target;
use super::socket::AF_UNIX;
use super::{Out, Sup, ret};
use crate::proto::{ctl, name_words, word};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::structs as st;
use tessera_api::fs as api;
use tessera_api::net;

const SOCK_STREAM: u8 = 1;
const SOCK_DGRAM: u8 = 2;
const SOCK_SEQPACKET: u8 = 5;
/// `offsetof(struct sockaddr_un, sun_path)` and `sizeof(struct sockaddr_un)`.
const SUN_PATH: usize = 2;
const SUN_LEN: usize = 110;
const POLLIN: u64 = 1;
const POLLOUT: u64 = 4;
/// Names a datagram socket keeps a reference to (sendto's destinations).
const DESTS_MAX: usize = 8;

/// A socket's name, its peer's, its peer's credentials (pid, uid, gid)
/// and the datagram names it sent to (key, queue's write end).
#[derive(Clone, Debug, Default)]
pub struct Names {
    pub own: Vec<u8>,
    pub peer: Vec<u8>,
    pub cred: Option<[u32; 3]>,
    pub dests: Vec<(Vec<u64>, u64)>,
}

impl Names {
    /// As words, for a child's supervisor.
    pub fn encode(&self) -> Vec<u64> {
        let mut v = Vec::new();
        for s in [&self.own, &self.peer] {
            v.push(s.len() as u64);
            v.extend(name_words(s));
        }
        let c = self.cred.unwrap_or_default();
        v.extend([self.cred.is_some() as u64, c[0] as u64, c[1] as u64, c[2] as u64]);
        v.push(self.dests.len() as u64);
        for (k, o) in &self.dests {
            v.push(k.len() as u64);
            v.extend_from_slice(k);
            v.push(*o);
        }
        v
    }

    pub fn decode(mut next: impl FnMut() -> u64) -> Names {
        let mut bytes = || {
            let n = (next() as usize).min(SUN_LEN);
            let mut b = Vec::with_capacity(n.div_ceil(8) * 8);
            for _ in 0..n.div_ceil(8) {
                b.extend_from_slice(&next().to_le_bytes());
            }
            b.truncate(n);
            b
        };
        let own = bytes();
        let peer = bytes();
        let has = next() != 0;
        let c = [next() as u32, next() as u32, next() as u32];
        let n = (next() as usize).min(DESTS_MAX);
        let dests = (0..n)
            .map(|_| {
                let k = (next() as usize).min(32);
                let key = (0..k).map(|_| next()).collect();
                (key, next())
            })
            .collect();
        Names {
            own,
            peer,
            cred: has.then_some(c),
            dests,
        }
    }
}

/// A `sockaddr_un` as given: the name as getsockname reports it, and a
/// path to look up or an abstract name's key.
struct Addr {
    name: Vec<u8>,
    path: Option<String>,
    key: Vec<u64>,
}

impl Sup {
    /// socket(AF_UNIX, type, protocol): a socket with no name yet.
    pub(super) fn unix_socket(&mut self, kind: u64, protocol: u64) -> Result<u64, i64> {
        if protocol > 1 {
            return Err(errno::EPROTONOSUPPORT);
        }
        // SOCK_RAW is a datagram socket here, as Linux has it.
        let ty = match (kind & 0xf) as u8 {
            3 => SOCK_DGRAM,
            t => t,
        };
        if !matches!(ty, SOCK_STREAM | SOCK_DGRAM | SOCK_SEQPACKET) {
            return Err(errno::ESOCKTNOSUPPORT);
        }
        let nonblock = if kind & net::SOCK_NONBLOCK as u64 != 0 {
            fdt::O_NONBLOCK
        } else {
            0
        };
        let o = Ofd::new(
            Kind::UnixSock {
                ty,
                obj: 0,
                listening: false,
            },
            fdt::O_RDWR | nonblock,
            String::from("socket:"),
        );
        let cloexec = kind & net::SOCK_CLOEXEC as u64 != 0;
        let limit = self.limits[7][0].min(1 << 20) as usize;
        self.fds.insert(o, cloexec, limit).map(|f| f as u64)
    }

    /// The AF_UNIX description behind `fd` (ENOTSOCK: another kind).
    fn unix_of(&self, fd: u64) -> Result<OfdRef, i64> {
        let o = self.fds.ofd(fd)?;
        if !matches!(
            o.borrow().kind,
            Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }
        ) {
            return Err(errno::ENOTSOCK);
        }
        Ok(o)
    }

    fn unix_addr(&self, rid: u64, at: u64, len: u64) -> Result<Addr, i64> {
        let len = len as usize;
        if !(SUN_PATH + 1..=SUN_LEN).contains(&len) {
            return Err(errno::EINVAL);
        }
        let b = self.read_mem(rid, at, len)?;
        if u16::from_le_bytes([b[0], b[1]]) as u64 != AF_UNIX {
            return Err(errno::EINVAL);
        }
        if b[SUN_PATH] == 0 {
            // An abstract name: every byte given counts.
            let mut key = vec![1, len as u64];
            key.extend(name_words(&b[SUN_PATH..]));
            return Ok(Addr {
                name: b,
                path: None,
                key,
            });
        }
        let end = b[SUN_PATH..].iter().position(|&c| c == 0).map_or(len, |i| SUN_PATH + i);
        let path = String::from_utf8_lossy(&b[SUN_PATH..end]).into_owned();
        let mut name = b[..end].to_vec();
        name.push(0);
        Ok(Addr {
            name,
            path: Some(path),
            key: Vec::new(),
        })
    }

    /// bind with the family alone: an abstract name of five hex digits,
    /// as Linux's autobind makes.
    fn unix_autoname(&self, rid: u64, at: u64) -> Result<Addr, i64> {
        let b = self.read_mem(rid, at, SUN_PATH)?;
        if u16::from_le_bytes([b[0], b[1]]) as u64 != AF_UNIX {
            return Err(errno::EINVAL);
        }
        let t = tessera_rt::sys::now_ns();
        let n = (t ^ (t >> 20) ^ (self.pid as u64).wrapping_mul(0x9e37_79b9)) & 0xfffff;
        let mut name = b;
        name.push(0);
        name.extend_from_slice(alloc::format!("{n:05x}").as_bytes());
        let mut key = vec![1, name.len() as u64];
        key.extend(name_words(&name[SUN_PATH..]));
        Ok(Addr { name, path: None, key })
    }

    /// The key of the socket file at `path`: ENOENT (and the rest of a
    /// lookup's errors), ECONNREFUSED for a file that is no socket,
    /// EACCES without write permission on it (`write`: connect and
    /// sendto ask it; bind made the file itself).
    fn unix_file_key(&self, path: &str, write: bool) -> Result<Vec<u64>, i64> {
        let s = self.stat_at(super::files::AT_FDCWD as u64, path, 0)?;
        if s.mode & 0o170000 != st::S_IFSOCK {
            return Err(errno::ECONNREFUSED);
        }
        let c = &self.cred;
        let bit = if c.euid == s.uid {
            0o200
        } else if c.egid == s.gid || c.groups.contains(&s.gid) {
            0o020
        } else {
            0o002
        };
        if write && c.euid != 0 && s.mode & bit == 0 {
            return Err(errno::EACCES);
        }
        Ok(vec![0, s.dev, s.ino])
    }

    /// bind(fd, addr, len).
    pub(super) fn unix_bind(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let o = self.unix_of(a[0])?;
        let (ty, bound) = match o.borrow().kind {
            Kind::UnixSock { ty, obj, .. } => (ty, obj != 0),
            Kind::Unix { ty, rx, .. } => (ty, ty != SOCK_DGRAM || rx != 0),
            Kind::KUnix { .. } => (SOCK_STREAM, true),
            _ => return Err(errno::ENOTSOCK),
        };
        if bound || !o.borrow().unix.own.is_empty() {
            return Err(errno::EINVAL);
        }
        let mut addr = if a[2] == SUN_PATH as u64 {
            self.unix_autoname(rid, a[1])?
        } else {
            self.unix_addr(rid, a[1], a[2])?
        };
        if let Some(path) = &addr.path {
            let Target::Fs(d, rel) = self.target(super::files::AT_FDCWD as u64, path)? else {
                return Err(errno::EADDRINUSE);
            };
            let mut fields = [0u8; 8];
            fields[..4].copy_from_slice(&(st::S_IFSOCK | (0o777 & !self.umask)).to_le_bytes());
            match self.fs.path_op(api::MKNOD, d, 0, &fields, &[rel.as_bytes()]) {
                Err(errno::EEXIST | errno::EBUSY) => return Err(errno::EADDRINUSE),
                r => r?,
            };
            addr.key = self.unix_file_key(path, false)?;
        }
        let mut m = vec![ctl::UNIX_BIND, ty as u64];
        m.extend_from_slice(&addr.key);
        let mut id = self.ctl1(&m);
        // An automatic name taken already: another one.
        for _ in 0..64 {
            if a[2] != SUN_PATH as u64 || id != Err(errno::EADDRINUSE) {
                break;
            }
            addr = self.unix_autoname(rid, a[1])?;
            m.truncate(2);
            m.extend_from_slice(&addr.key);
            id = self.ctl1(&m);
        }
        let id = id?;
        let mut d = o.borrow_mut();
        // Datagrams sent before went out unnamed; from now on they
        // carry the name.
        for (_, w) in core::mem::take(&mut d.unix.dests) {
            self.ctl(&[ctl::RELEASE, w]);
        }
        d.kind = match d.kind {
            Kind::Unix { tx, ty, .. } => Kind::Unix { rx: id, tx, ty },
            _ => Kind::UnixSock {
                ty,
                obj: id,
                listening: false,
            },
        };
        d.unix.own = addr.name;
        Ok(0)
    }

    /// listen(fd, backlog).
    pub(super) fn unix_listen(&mut self, fd: u64, backlog: u64) -> Result<u64, i64> {
        let o = self.unix_of(fd)?;
        let (ty, obj) = match o.borrow().kind {
            Kind::UnixSock { ty, obj, .. } => (ty, obj),
            _ => return Err(errno::EINVAL),
        };
        if ty == SOCK_DGRAM {
            return Err(errno::EOPNOTSUPP);
        }
        // An unbound socket would get an automatic abstract name on
        // Linux; none is made here.
        if obj == 0 {
            return Err(errno::EINVAL);
        }
        let b = if (backlog as i32) < 0 {
            4096
        } else {
            (backlog as i32).min(4096) as u64
        };
        let c = &self.cred;
        self.ctl1(&[ctl::UNIX_LISTEN, obj, b, self.pid as u64, c.euid as u64, c.egid as u64])?;
        o.borrow_mut().kind = Kind::UnixSock {
            ty,
            obj,
            listening: true,
        };
        Ok(0)
    }

    /// accept and accept4 (`flags`): a connection from the listener's
    /// queue, waiting for one unless the socket does not block.
    pub(super) fn unix_accept(&mut self, rid: u64, n: u64, a: [u64; 6], flags: u64) -> Out {
        let o = match self.unix_of(a[0]) {
            Ok(o) => o,
            Err(e) => return ret(Err(e)),
        };
        let (ty, obj, nonblock) = {
            let d = o.borrow();
            match d.kind {
                Kind::UnixSock {
                    ty,
                    obj,
                    listening: true,
                    ..
                } => (ty, obj, d.flags & fdt::O_NONBLOCK != 0),
                Kind::UnixSock { ty: SOCK_DGRAM, .. } | Kind::Unix { ty: SOCK_DGRAM, .. } => {
                    return ret(Err(errno::EOPNOTSUPP));
                }
                _ => return ret(Err(errno::EINVAL)),
            }
        };
        if flags & !(net::SOCK_NONBLOCK | net::SOCK_CLOEXEC) as u64 != 0 {
            return ret(Err(errno::EINVAL));
        }
        let r = self.ctl(&[ctl::UNIX_ACCEPT, obj]);
        match errno::of(word(&r, 0)) {
            None => {}
            Some(errno::EAGAIN) if !nonblock => return self.unix_wait(rid, n, a, obj, POLLIN),
            Some(e) => return ret(Err(e)),
        }
        let (rx, tx) = (word(&r, 1), word(&r, 2));
        let new = Ofd::new(
            Kind::Unix { rx, tx, ty },
            fdt::O_RDWR
                | if flags & net::SOCK_NONBLOCK as u64 != 0 {
                    fdt::O_NONBLOCK
                } else {
                    0
                },
            String::from("socket:"),
        );
        {
            let mut d = new.borrow_mut();
            d.unix.own = o.borrow().unix.own.clone();
            d.unix.cred = Some([word(&r, 3) as u32, word(&r, 4) as u32, word(&r, 5) as u32]);
        }
        let limit = self.limits[7][0].min(1 << 20) as usize;
        let cloexec = flags & net::SOCK_CLOEXEC as u64 != 0;
        let fd = match self.fds.insert(new.clone(), cloexec, limit) {
            Ok(fd) => fd as u64,
            Err(e) => {
                self.release(&new);
                return ret(Err(e));
            }
        };
        // The connecting socket has no name: the family alone.
        if let Err(e) = self.put_addr(rid, a[1], a[2], &(AF_UNIX as u16).to_le_bytes()) {
            return ret(Err(e));
        }
        Out::Ret(fd)
    }

    /// Holds accept call `rid` until listener `obj` has a connection:
    /// the shared server's poll wakes the supervisor, which serves the
    /// call again (`sock_woken`); a signal ends or restarts it.
    fn unix_wait(&mut self, rid: u64, n: u64, a: [u64; 6], obj: u64, events: u64) -> Out {
        let r = self.ctl(&[ctl::POLL, self.pid as u64, u64::MAX, obj, events]);
        if word(&r, 0) != 0 {
            // Ready since: at once, once more.
            return self.sock_call(rid, n, a, None);
        }
        let token = word(&r, 1);
        self.hold_until_ready(rid, n, a, token, Default::default())
    }

    /// UNIX_CONNECT's words: who asks, the name's key, the caller's own
    /// name (a datagram's sender's).
    fn unix_connect_msg(&self, ty: u8, key: &[u64], own: &[u8]) -> Vec<u64> {
        let c = &self.cred;
        let mut m = vec![
            ctl::UNIX_CONNECT,
            ty as u64,
            self.pid as u64,
            c.euid as u64,
            c.egid as u64,
        ];
        m.push(key.len() as u64);
        m.extend_from_slice(key);
        m.push(own.len() as u64);
        m.extend(name_words(own));
        m
    }

    /// The key of the name `addr` gives.
    fn unix_key(&self, addr: &Addr) -> Result<Vec<u64>, i64> {
        match &addr.path {
            Some(p) => self.unix_file_key(p, true),
            None => Ok(addr.key.clone()),
        }
    }

    /// connect(fd, addr, len): a stream socket gets a connection at once
    /// (queued at the listener until accepted); a datagram socket sends
    /// to that name from now on.
    pub(super) fn unix_connect(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        let mut full = 0;
        match self.unix_connect_try(rid, a, &mut full) {
            // A full backlog: a blocking socket waits for room.
            Err(errno::EAGAIN)
                if full != 0
                    && self
                        .fds
                        .ofd(a[0])
                        .is_ok_and(|o| o.borrow().flags & fdt::O_NONBLOCK == 0) =>
            {
                self.unix_wait(rid, n, a, full, POLLOUT)
            }
            r => ret(r),
        }
    }

    /// connect, once: `full` gets the listener whose backlog is full.
    fn unix_connect_try(&mut self, rid: u64, a: [u64; 6], full: &mut u64) -> Result<u64, i64> {
        let o = self.unix_of(a[0])?;
        let kind = o.borrow().kind.clone();
        let ty = match kind {
            Kind::Unix { ty, .. } if ty != SOCK_DGRAM => return Err(errno::EISCONN),
            Kind::KUnix { .. } => return Err(errno::EISCONN),
            Kind::UnixSock { listening: true, .. } => return Err(errno::EINVAL),
            Kind::Unix { ty, .. } | Kind::UnixSock { ty, .. } => ty,
            _ => return Err(errno::ENOTSOCK),
        };
        let addr = self.unix_addr(rid, a[1], a[2])?;
        let key = self.unix_key(&addr)?;
        let m = self.unix_connect_msg(ty, &key, &o.borrow().unix.own);
        let r = self.ctl(&m);
        if let Some(e) = errno::of(word(&r, 0)) {
            *full = word(&r, 1);
            return Err(e);
        }
        let mut d = o.borrow_mut();
        match kind {
            Kind::Unix { rx, tx, ty } => {
                // A datagram socket connected anew: the old name goes.
                if tx != 0 {
                    self.ctl(&[ctl::RELEASE, tx]);
                }
                d.kind = Kind::Unix {
                    rx,
                    tx: word(&r, 1),
                    ty,
                };
            }
            Kind::UnixSock { obj, .. } if ty == SOCK_DGRAM => {
                d.kind = Kind::Unix {
                    rx: obj,
                    tx: word(&r, 1),
                    ty,
                };
            }
            Kind::UnixSock { obj, .. } => {
                // A bound socket that connects keeps its name, though
                // nothing can connect to it.
                if obj != 0 {
                    self.ctl(&[ctl::RELEASE, obj]);
                }
                d.kind = Kind::Unix {
                    rx: word(&r, 1),
                    tx: word(&r, 2),
                    ty,
                };
                d.unix.cred = Some([word(&r, 3) as u32, word(&r, 4) as u32, word(&r, 5) as u32]);
            }
            _ => {}
        }
        d.unix.peer = addr.name;
        Ok(0)
    }

    /// The queue a datagram to `addr` goes into: a write end this
    /// description keeps a reference to (the newest few names).
    pub(super) fn unix_dest(&mut self, rid: u64, o: &OfdRef, at: u64, len: u64) -> Result<u64, i64> {
        let ty = match o.borrow().kind {
            Kind::Unix { ty, .. } | Kind::UnixSock { ty, .. } => ty,
            Kind::KUnix { .. } => SOCK_STREAM,
            _ => return Err(errno::ENOTSOCK),
        };
        if ty != SOCK_DGRAM {
            return Err(errno::EISCONN);
        }
        let addr = self.unix_addr(rid, at, len)?;
        let key = self.unix_key(&addr)?;
        if let Some(&(_, w)) = o.borrow().unix.dests.iter().find(|d| d.0 == key) {
            return Ok(w);
        }
        let m = self.unix_connect_msg(ty, &key, &o.borrow().unix.own);
        let r = self.ctl(&m);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        let w = word(&r, 1);
        let mut d = o.borrow_mut();
        if d.unix.dests.len() >= DESTS_MAX {
            let (_, old) = d.unix.dests.remove(0);
            self.ctl(&[ctl::RELEASE, old]);
        }
        d.unix.dests.push((key, w));
        Ok(w)
    }

    /// getsockname and getpeername of an AF_UNIX socket.
    pub(super) fn unix_name(&mut self, rid: u64, a: [u64; 6], o: &OfdRef, peer: bool) -> Result<u64, i64> {
        let name = {
            let d = o.borrow();
            let connected = matches!(d.kind, Kind::Unix { tx, ty, .. } if tx != 0 || ty != SOCK_DGRAM)
                || matches!(d.kind, Kind::KUnix { .. });
            if peer && !connected && d.unix.peer.is_empty() {
                return Err(errno::ENOTCONN);
            }
            let n = if peer { &d.unix.peer } else { &d.unix.own };
            if n.is_empty() {
                (AF_UNIX as u16).to_le_bytes().to_vec()
            } else {
                n.clone()
            }
        };
        self.read_mem(rid, a[2], 4)?;
        self.put_addr(rid, a[1], a[2], &name)?;
        Ok(0)
    }
}
