//! The server's sockets: what each Linux socket is in terms of smoltcp's
//! sockets, and the table that names them for clients.
//!
//! A number is `generation << 16 | epoch << 10 | slot`: a slot is reused,
//! its generation moves on, so a closed socket's number never names its
//! successor. The epoch and the generations' start come from the server's
//! pid (never reused), so that a number a client kept from a server that
//! died names none of a restarted server's sockets: two servers' numbers
//! meet only if their pids are equal modulo 64 and one slot's generation
//! moved on by exactly their difference / 64. Only the processes holding a
//! socket may use it.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use smoltcp::iface::SocketHandle;
use tessera_api::errno::Errno;
use tessera_api::net::SockAddr;

/// Sockets the server holds at most, and one client.
pub const MAX_SOCKETS: usize = 1024;
pub const MAX_PER_CLIENT: usize = 256;

/// Which link a smoltcp socket lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Link {
    Loopback = 0,
    Nic = 1,
}

impl Link {
    pub const ALL: [Link; 2] = [Link::Loopback, Link::Nic];
}

/// A smoltcp socket: its link and handle.
pub type Handle = (Link, SocketHandle);

/// Settings a socket keeps from `SETSOCKOPT` and `FCNTL`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub nonblock: bool,
    pub reuseaddr: bool,
    pub keepalive: bool,
    /// SO_OOBINLINE: kept for getsockopt; no urgent data arrives apart
    /// here (the stack passes none), so it changes nothing else.
    pub oobinline: bool,
    pub nodelay: bool,
    pub rcvbuf: usize,
    pub sndbuf: usize,
    pub ttl: Option<u8>,
}

/// A listening TCP socket: smoltcp sockets listening (one connection
/// each, replaced as they take one), and connections waiting for ACCEPT.
pub struct Listener {
    pub backlog: usize,
    pub listening: Vec<Handle>,
    pub queue: VecDeque<Handle>,
    /// Links whose listening socket took a connection while the backlog
    /// was full: a fresh one listens there once it has room again.
    pub owed: Vec<Link>,
}

/// A TCP connection (or an attempt at one).
pub struct Conn {
    pub handle: Handle,
    /// The handshake completed once.
    pub established: bool,
    /// The connection attempt gives up at this time (ns), if still trying.
    pub deadline: Option<u64>,
    pub shut_rd: bool,
    pub shut_wr: bool,
    /// A reset was reported once (ECONNRESET): later sends are EPIPE and
    /// receives the end of the stream, as Linux's.
    pub reset_told: bool,
}

pub enum Tcp {
    Fresh,
    Listening(Listener),
    Conn(Conn),
    /// Failed or reset: what a later call reports.
    Dead,
}

pub enum Kind {
    Tcp(Tcp),
    /// UDP, or ICMP echo (a ping socket): one smoltcp socket per link the
    /// socket may use; `peer` is the connected destination.
    Dgram {
        icmp: bool,
        handles: Vec<Handle>,
        peer: Option<SockAddr>,
    },
}

pub struct Socket {
    pub generation: u16,
    pub holders: Vec<u64>,
    pub kind: Kind,
    pub protocol: u32,
    pub options: Options,
    /// The address bound to (port 0: none yet).
    pub local: SockAddr,
    /// An error to report once (`SO_ERROR`, the next call).
    pub error: Option<Errno>,
    /// Buffer bytes the socket's smoltcp sockets hold (for the budget).
    pub buffers: usize,
}

impl Socket {
    pub fn held_by(&self, pid: u64) -> bool {
        self.holders.contains(&pid)
    }

    /// Every smoltcp socket it has.
    pub fn handles(&self) -> Vec<Handle> {
        match &self.kind {
            Kind::Tcp(Tcp::Listening(l)) => l.listening.iter().chain(l.queue.iter()).copied().collect(),
            Kind::Tcp(Tcp::Conn(c)) => alloc::vec![c.handle],
            Kind::Tcp(_) => Vec::new(),
            Kind::Dgram { handles, .. } => handles.clone(),
        }
    }
}

/// The table of sockets.
#[derive(Default)]
pub struct Table {
    slots: Vec<(u16, Option<Socket>)>,
    pub count: usize,
    /// This server's 6 bits of the numbers, and where generations start.
    epoch: u32,
    first_generation: u16,
}

/// Bits of a number below the epoch: room for `MAX_SOCKETS` slots.
const SLOT_BITS: u32 = 10;
const _: () = assert!(MAX_SOCKETS <= 1 << SLOT_BITS);

impl Table {
    /// The table of the server with pid `server`.
    pub fn new(server: u64) -> Table {
        Table {
            epoch: (server & 0x3f) as u32,
            first_generation: (server >> 6) as u16,
            ..Table::default()
        }
    }

    /// Puts `s` in a free slot; returns its number.
    pub fn insert(&mut self, mut s: Socket) -> Result<u32, Errno> {
        if self.count >= MAX_SOCKETS {
            return Err(Errno::ENFILE);
        }
        let slot = match self.slots.iter().position(|(_, s)| s.is_none()) {
            Some(i) => i,
            None => {
                self.slots.push((self.first_generation, None));
                self.slots.len() - 1
            }
        };
        let generation = self.slots[slot].0.wrapping_add(1).max(1);
        s.generation = generation;
        self.slots[slot] = (generation, Some(s));
        self.count += 1;
        Ok(self.number(slot, generation))
    }

    fn number(&self, slot: usize, generation: u16) -> u32 {
        (generation as u32) << 16 | self.epoch << SLOT_BITS | slot as u32
    }

    /// The slot and generation a number names; another server's epoch
    /// names no slot.
    fn slot(&self, id: u32) -> (usize, u16) {
        if (id & 0xffff) >> SLOT_BITS != self.epoch {
            return (usize::MAX, 0);
        }
        ((id & ((1 << SLOT_BITS) - 1)) as usize, (id >> 16) as u16)
    }

    /// Socket `id` if it is live and `pid` holds it.
    pub fn get(&mut self, id: u32, pid: u64) -> Result<&mut Socket, Errno> {
        let (slot, generation) = self.slot(id);
        match self.slots.get_mut(slot) {
            Some((g, Some(s))) if *g == generation && s.held_by(pid) => Ok(s),
            _ => Err(Errno::EBADF),
        }
    }

    /// Socket `id` whoever holds it.
    pub fn any(&mut self, id: u32) -> Option<&mut Socket> {
        let (slot, generation) = self.slot(id);
        match self.slots.get_mut(slot) {
            Some((g, Some(s))) if *g == generation => Some(s),
            _ => None,
        }
    }

    pub fn remove(&mut self, id: u32) -> Option<Socket> {
        let (slot, generation) = self.slot(id);
        match self.slots.get_mut(slot) {
            Some((g, s)) if *g == generation && s.is_some() => {
                self.count -= 1;
                s.take()
            }
            _ => None,
        }
    }

    /// Numbers of every live socket.
    pub fn ids(&self) -> Vec<u32> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, (_, s))| s.is_some())
            .map(|(i, (g, _))| self.number(i, *g))
            .collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Socket> {
        self.slots.iter().filter_map(|(_, s)| s.as_ref())
    }

    /// How many sockets `pid` holds.
    pub fn held_by(&self, pid: u64) -> usize {
        self.iter().filter(|s| s.held_by(pid)).count()
    }
}
