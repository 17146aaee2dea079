//! The server's state and its turn: after each call that changed
//! something, the stack takes in what arrived and sends what is due, held
//! calls that can now be answered are answered, and the timer child is told
//! when the next turn is due.

use crate::link::Nic;
use crate::pending::Pending;
use crate::socket::{Handle, Kind, Link, MAX_PER_CLIENT, Socket, Table, Tcp};
use crate::stack::{Stack, now_ns};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use smoltcp::socket::tcp;
use tessera_api::errno::Errno;
use tessera_api::net::SockAddr;
use tessera_rt::ring::Ring;
use tessera_rt::sys;

/// Bytes of socket buffers the server allocates at most: a client cannot
/// exhaust its memory (the runtime's heap is 64 MiB).
pub const BUDGET: usize = 40 << 20;
/// Calls one client may have held at once.
pub const MAX_HELD: usize = 64;
/// Closed connections still finishing (FIN, TIME-WAIT) kept at most.
const MAX_ORPHANS: usize = 256;
/// How often the server looks for clients that ended, while it has some.
const SWEEP_NS: u64 = 500_000_000;
/// Rounds of a turn at most (each: packets in, packets out, held calls).
const ROUNDS: usize = 64;

/// The socket protocol's entries by number, as the report names them.
pub const ENTRY_NAMES: [&str; 21] = [
    "socket",
    "bind",
    "listen",
    "accept",
    "connect",
    "send_to",
    "send",
    "recv",
    "shutdown",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
    "close",
    "poll",
    "fcntl",
    "share",
    "errno",
    "stats",
    "watch",
    "send_ica",
];

/// Where a client's next SENDs go.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    pub socket: u32,
    pub flags: u32,
    pub to: Option<SockAddr>,
}

pub struct Client {
    /// The errno of its last failed RECV.
    pub errno: Errno,
    pub context: Option<Context>,
}

#[derive(Default)]
pub struct Stats {
    pub calls: u64,
    /// Calls by entry of the socket protocol (`tessera_api::net`).
    pub by_entry: [u64; ENTRY_NAMES.len()],
    pub refused: u64,
    /// SYNs dropped for a listener whose backlog was full.
    pub syns_dropped: u64,
    pub held: u64,
    pub sockets_made: u64,
    pub accepted: u64,
    pub connected: u64,
    /// Bytes read from a client's message into a socket's buffer, and
    /// written from a socket's buffer into a client's reply: the one copy
    /// between a program and the stack, each way.
    pub copied_in: u64,
    pub copied_out: u64,
    /// Bytes copied from an ICA taken from a client (SEND_ICA) into a
    /// socket's buffer: the one copy of that path.
    pub ica_copied_in: u64,
    pub clients_gone: u64,
    pub turns: u64,
    pub alarms: u64,
    pub over_budget: u64,
    pub attaches: u64,
    pub pages_moved: u64,
    pub tx_requests: u64,
    pub watch_wakes: u64,
}

pub struct Server {
    pub stack: Stack,
    pub table: Table,
    pub clients: BTreeMap<u64, Client>,
    pub pending: Vec<Pending>,
    /// Clients' watches (WATCH), and wake-up requests not yet fetched.
    pub watches: Vec<crate::watch::Watch>,
    pub unfetched: usize,
    /// Listening sockets, whose pools are refilled as SYNs arrive.
    pub listeners: Vec<u32>,
    /// Connections closed by their programs, still finishing, and the
    /// buffer bytes they hold.
    pub orphans: Vec<(Handle, usize)>,
    pub buffers: usize,
    /// The most `buffers` ever was: the server's heap keeps the pages its
    /// deepest burst of sockets touched (a first-fit heap gives none back),
    /// so this, not the sockets of the moment, says how much it holds.
    pub buffer_peak: usize,
    pub next_port: u16,
    pub ring: Option<Ring>,
    pub ticker: u64,
    /// The timer child's ALARM call, held, and when it will wake anyway.
    pub alarm: Option<u64>,
    pub alarm_at: u64,
    pub next_sweep: u64,
    pub stats: Stats,
}

impl Server {
    pub fn new(stack: Stack) -> Server {
        Server {
            stack,
            table: Table::new(sys::getpid()),
            clients: BTreeMap::new(),
            pending: Vec::new(),
            watches: Vec::new(),
            unfetched: 0,
            listeners: Vec::new(),
            orphans: Vec::new(),
            buffers: 0,
            buffer_peak: 0,
            // A restarted server must not reuse its predecessor's ports at
            // once: a peer may still hold those connections.
            next_port: 49152 + (sys::rdtsc() % 16384) as u16,
            ring: None,
            ticker: 0,
            alarm: None,
            alarm_at: u64::MAX,
            next_sweep: u64::MAX,
            stats: Stats::default(),
        }
    }

    pub fn client(&mut self, pid: u64) -> &mut Client {
        if self.clients.is_empty() {
            self.next_sweep = now_ns() + SWEEP_NS;
        }
        self.clients.entry(pid).or_insert(Client {
            errno: Errno::EIO,
            context: None,
        })
    }

    /// Takes `bytes` of the buffer budget.
    pub fn reserve(&mut self, bytes: usize) -> Result<(), Errno> {
        if self.buffers + bytes > BUDGET {
            self.stats.over_budget += 1;
            return Err(Errno::ENOBUFS);
        }
        self.take_buffers(bytes);
        Ok(())
    }

    fn take_buffers(&mut self, bytes: usize) {
        self.buffers += bytes;
        self.buffer_peak = self.buffer_peak.max(self.buffers);
    }

    /// A new socket for `pid`.
    pub fn add_socket(&mut self, pid: u64, s: Socket) -> Result<u32, Errno> {
        if self.table.held_by(pid) >= MAX_PER_CLIENT {
            return Err(Errno::EMFILE);
        }
        let id = self.table.insert(s)?;
        self.stats.sockets_made += 1;
        Ok(id)
    }

    /// A turn: packets in and out on both links until nothing moves, held
    /// calls answered, the NIC's frames sent to its driver, the timer set.
    pub fn turn(&mut self) {
        self.stats.turns += 1;
        // An ACCEPT may have made room in a backlog: listen again first,
        // so that the next SYN does not meet a reset.
        self.refill_listeners();
        for _ in 0..ROUNDS {
            for &link in self.stack.links() {
                loop {
                    if link == Link::Loopback && self.syn_meets_full_backlog() {
                        self.stack.lo_dev.drop_front();
                        self.stats.syns_dropped += 1;
                        continue;
                    }
                    // Only a SYN takes a listening socket, and only a reset
                    // sends one back to listening: other segments leave the
                    // listeners as they are.
                    let listeners_may_change = link != Link::Loopback
                        || self
                            .stack
                            .lo_dev
                            .front()
                            .and_then(tcp_flags)
                            .is_none_or(|f| f & (SYN | RST) != 0);
                    if !self.stack.ingress_one(link) {
                        break;
                    }
                    if listeners_may_change {
                        self.refill_listeners();
                    }
                }
            }
            for &link in self.stack.links() {
                self.stack.egress(link);
            }
            self.flush_nic();
            let answered = self.wake();
            self.watch_wakes();
            self.reap_orphans();
            if !answered && !self.stack.has_ingress(Link::Loopback) {
                break;
            }
        }
        self.arm_alarm();
    }

    /// Listening sockets whose smoltcp sockets took a connection: the
    /// connection joins the accept queue and a fresh socket listens in its
    /// place, while the backlog has room (a SYN with no socket listening
    /// is answered with a reset).
    pub fn refill_listeners(&mut self) {
        for i in 0..self.listeners.len() {
            let id = self.listeners[i];
            let Some(s) = self.table.any(id) else { continue };
            let (local, options) = (s.local, s.options);
            let Kind::Tcp(Tcp::Listening(l)) = &mut s.kind else {
                continue;
            };
            let mut listening = core::mem::take(&mut l.listening);
            let mut queue = core::mem::take(&mut l.queue);
            let backlog = l.backlog;
            // Refills owed from earlier passes first.
            let mut made = core::mem::take(&mut l.owed);
            listening.retain(|&h| {
                let st = self.stack.tcp_mut(h).state();
                if st == tcp::State::Listen {
                    return true;
                }
                queue.push_back(h);
                made.push(h.0);
                false
            });
            // A connection reset in its handshake listens again.
            queue.retain(|&h| {
                if self.stack.tcp_mut(h).state() == tcp::State::Listen {
                    listening.push(h);
                    return false;
                }
                true
            });
            let mut owed = Vec::new();
            for link in made {
                let bytes = options.rcvbuf + options.sndbuf;
                if queue.len() + listening.len() >= backlog + 2 || self.buffers + bytes > BUDGET {
                    owed.push(link);
                    continue;
                }
                self.take_buffers(bytes);
                let h = self.stack.tcp(link, options.rcvbuf, options.sndbuf);
                crate::tcp::apply_options(self.stack.tcp_mut(h), &options);
                let addr = crate::tcp::listen_addr(local);
                if self.stack.tcp_mut(h).listen(addr).is_ok() {
                    listening.push(h);
                } else {
                    self.stack.remove(h);
                    self.buffers -= bytes;
                }
            }
            if let Some(Socket {
                kind: Kind::Tcp(Tcp::Listening(l)),
                ..
            }) = self.table.any(id)
            {
                l.listening = listening;
                l.queue = queue;
                l.owed = owed;
            }
        }
    }

    /// Whether the next loopback packet is a SYN for a listener whose
    /// backlog is full (no socket of it listening): Linux drops such a SYN
    /// and the client sends it again later, where smoltcp, finding no
    /// socket, would answer with a reset and the client's connect would
    /// fail with ECONNREFUSED while the server is only slow to accept.
    fn syn_meets_full_backlog(&self) -> bool {
        let Some((addr, port)) = self.stack.lo_dev.front().and_then(syn_to) else {
            return false;
        };
        self.table.iter().any(|s| {
            matches!(&s.kind, Kind::Tcp(Tcp::Listening(l)) if l.listening.is_empty())
                && s.local.port == port
                && (s.local.addr == [0; 4] || s.local.addr == addr)
        })
    }

    /// Connections that finished closing leave the stack.
    fn reap_orphans(&mut self) {
        let mut i = 0;
        while i < self.orphans.len() {
            let (h, bytes) = self.orphans[i];
            let st = self.stack.tcp_mut(h).state();
            if st == tcp::State::Closed || st == tcp::State::TimeWait {
                self.stack.remove(h);
                self.buffers -= bytes;
                self.orphans.swap_remove(i);
            } else {
                i += 1;
            }
        }
        while self.orphans.len() > MAX_ORPHANS {
            let (h, _) = self.orphans[0];
            self.stack.tcp_mut(h).abort();
            let (h, bytes) = self.orphans.remove(0);
            self.stack.egress(h.0);
            self.stack.remove(h);
            self.buffers -= bytes;
        }
    }

    /// Lets a closing connection finish on its own.
    pub fn orphan(&mut self, h: Handle, bytes: usize) {
        self.orphans.push((h, bytes));
    }

    /// When the next turn is due (ns since boot), if ever.
    fn next_deadline(&mut self) -> u64 {
        let mut next = self.stack.next_deadline().unwrap_or(u64::MAX);
        for p in &self.pending {
            if let Some(d) = p.deadline {
                next = next.min(d);
            }
        }
        for w in &self.watches {
            if let Some(d) = w.deadline {
                next = next.min(d);
            }
        }
        for s in self.table.iter() {
            if let Kind::Tcp(Tcp::Conn(c)) = &s.kind
                && let Some(d) = c.deadline
            {
                next = next.min(d);
            }
        }
        if !self.clients.is_empty() {
            next = next.min(self.next_sweep);
        }
        next
    }

    /// Tells the timer child about a deadline sooner than it knows.
    pub fn arm_alarm(&mut self) {
        let next = self.next_deadline();
        if next < self.alarm_at
            && let Some(rid) = self.alarm.take()
        {
            let delay = next.saturating_sub(now_ns());
            let _ = sys::endr(rid, &delay.to_le_bytes());
            self.alarm_at = next;
            self.stats.alarms += 1;
        }
    }

    /// The timer child's TICK: a turn, a look for ended clients, and the
    /// delay until the next deadline.
    pub fn tick(&mut self) -> u64 {
        let now = now_ns();
        if now >= self.next_sweep {
            self.sweep();
            self.next_sweep = now + SWEEP_NS;
        }
        self.turn();
        let next = self.next_deadline();
        self.alarm_at = next;
        next.saturating_sub(now_ns())
    }

    /// Releases what clients that ended held: their sockets (closed if no
    /// one else holds them) and their held calls.
    pub fn sweep(&mut self) {
        let gone: Vec<u64> = self.clients.keys().copied().filter(|&pid| !sys::alive(pid)).collect();
        for pid in gone {
            self.clients.remove(&pid);
            self.stats.clients_gone += 1;
            self.pending.retain(|p| p.caller != pid);
            self.forget_watches(pid);
            for id in self.table.ids() {
                if self.table.any(id).is_some_and(|s| s.held_by(pid)) {
                    let _ = self.release(id, pid);
                }
            }
        }
    }

    /// `pid` lets go of socket `id`; the socket closes with its last
    /// holder. True if it closed.
    pub fn release(&mut self, id: u32, pid: u64) -> bool {
        let Some(s) = self.table.any(id) else { return false };
        s.holders.retain(|&h| h != pid);
        if !s.holders.is_empty() {
            return false;
        }
        let Some(s) = self.table.remove(id) else { return false };
        self.listeners.retain(|&l| l != id);
        self.clients.values_mut().for_each(|c| {
            if c.context.is_some_and(|x| x.socket == id) {
                c.context = None;
            }
        });
        // Calls held on it (of other holders, or requests) end with EBADF.
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].socket == id {
                let p = self.pending.swap_remove(i);
                self.fail_pending(p, Errno::EBADF);
            } else {
                i += 1;
            }
        }
        self.destroy(s);
        true
    }

    /// Takes a socket apart: a connection closes gracefully (with a reset
    /// if data it received was never read), a listener resets what it has
    /// not accepted, datagram sockets just go.
    fn destroy(&mut self, s: Socket) {
        let per = s.options.rcvbuf + s.options.sndbuf;
        match s.kind {
            Kind::Tcp(Tcp::Conn(c)) => {
                let sock = self.stack.tcp_mut(c.handle);
                if sock.recv_queue() > 0 {
                    sock.abort();
                } else {
                    sock.close();
                }
                self.orphan(c.handle, per);
            }
            Kind::Tcp(Tcp::Listening(l)) => {
                for h in l.listening.into_iter().chain(l.queue) {
                    self.stack.tcp_mut(h).abort();
                    self.orphan(h, per);
                }
            }
            Kind::Tcp(_) => {}
            Kind::Dgram { handles, .. } => {
                for h in handles {
                    self.stack.remove(h);
                }
                self.buffers -= s.buffers;
            }
        }
    }

    /// A port nobody uses for this protocol, from the ephemeral range.
    pub fn ephemeral_port(&mut self, protocol: u32) -> Result<u16, Errno> {
        for _ in 0..16384 {
            let port = self.next_port;
            self.next_port = if port == u16::MAX { 49152 } else { port + 1 };
            if !self.port_used(protocol, SockAddr::new([0; 4], port), true) {
                return Ok(port);
            }
        }
        Err(Errno::EADDRINUSE)
    }

    /// Whether binding `addr` for `protocol` clashes with a socket's
    /// (with `reuse`, closing connections do not count).
    pub fn port_used(&mut self, protocol: u32, addr: SockAddr, reuse: bool) -> bool {
        let overlaps = |a: [u8; 4], b: [u8; 4]| a == [0; 4] || b == [0; 4] || a == b;
        let clash = self
            .table
            .iter()
            .any(|s| s.protocol == protocol && s.local.port == addr.port && overlaps(s.local.addr, addr.addr));
        if clash || reuse || protocol != tessera_api::net::IPPROTO_TCP {
            return clash;
        }
        self.orphans.iter().any(|&(h, _)| {
            let s = self.stack.tcp_mut(h);
            s.local_endpoint().is_some_and(|e| e.port == addr.port)
        })
    }

    /// Frames the stack built for the NIC go to its driver: the pages are
    /// moved, and a request names them (the server never waits for the
    /// driver). Results of earlier requests are read from the ring.
    pub fn flush_nic(&mut self) {
        let Some(driver) = self.stack.nic.driver else {
            return;
        };
        let Some(ring) = self.ring.as_mut() else { return };
        let mut gone = false;
        while let Some(r) = ring.take() {
            if r.result() == Err(tessera_rt::abi::Error::NotFound) {
                gone = true;
            }
        }
        let nic: &mut Nic = &mut self.stack.nic;
        while !gone && !nic.built.is_empty() {
            let mut frames = Vec::new();
            while frames.len() < tessera_api::nic::MAX_TX
                && let Some((page, len)) = nic.built.pop()
            {
                let id = page.id();
                match page.move_to(driver, 0) {
                    Ok(_) => {
                        frames.push(tessera_api::nic::FrameRef {
                            page: id,
                            len: len as u32,
                        });
                        nic.frames_out += 1;
                        nic.bytes_out += len as u64;
                    }
                    Err((page, _)) => {
                        nic.free.push(page);
                        gone = true;
                        break;
                    }
                }
            }
            if frames.is_empty() {
                break;
            }
            self.stats.pages_moved += frames.len() as u64;
            let mut msg = [0u8; 64];
            let len = tessera_api::nic::encode_tx(&frames, &mut msg);
            let c = tessera_rt::abi::Control {
                server: driver,
                entry: tessera_api::nic::TX,
                msg: msg.as_ptr() as u64,
                msg_len: len as u64,
                ..Default::default()
            };
            if ring.push(&c).is_err() || ring.submit(1).is_err() {
                gone = true;
            }
            self.stats.tx_requests += 1;
        }
        if gone && !sys::alive(driver) {
            self.detach();
        }
    }

    /// The driver ended: the link is down until one attaches again. Pages
    /// it held went with it; the ones here are kept for the next.
    pub fn detach(&mut self) {
        let nic = &mut self.stack.nic;
        nic.driver = None;
        let read: Vec<_> = nic.read.drain(..).collect();
        nic.free.extend(read);
        let built: Vec<_> = nic.built.drain(..).map(|(p, _)| p).collect();
        nic.free.extend(built);
        nic.received.clear();
    }
}

const SYN: u8 = 0x02;
const RST: u8 = 0x04;

/// The TCP flags of IPv4 packet `p`, if it is a TCP segment.
fn tcp_flags(p: &[u8]) -> Option<u8> {
    let first = *p.first()?;
    if first >> 4 != 4 || *p.get(9)? != 6 {
        return None;
    }
    p.get((first & 0x0f) as usize * 4 + 13).copied()
}

/// The destination of IPv4 packet `p` if it is a TCP SYN without ACK (a
/// connection's first packet).
fn syn_to(p: &[u8]) -> Option<([u8; 4], u16)> {
    let first = *p.first()?;
    if first >> 4 != 4 || *p.get(9)? != 6 {
        return None;
    }
    let tcp = p.get((first & 0x0f) as usize * 4..)?;
    let flags = *tcp.get(13)?;
    let addr: [u8; 4] = p.get(16..20)?.try_into().ok()?;
    (flags & 0x12 == 0x02).then(|| (addr, u16::from_be_bytes([tcp[2], tcp[3]])))
}
