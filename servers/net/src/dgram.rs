//! Datagram sockets: UDP, and ICMP echo (Linux's ping sockets: the
//! program writes an echo request, the server stamps it with the socket's
//! identifier, and only echo replies come back). A socket bound to any
//! address has a smoltcp socket on each link.

use crate::pending::Outcome;
use crate::server::{Context, Server};
use crate::socket::{Handle, Kind};
use crate::tcp::{listen_addr, sockaddr};
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::socket::icmp;
use smoltcp::wire::{Icmpv4Packet, IpAddress, IpEndpoint};
use tessera_api::errno::Errno;
use tessera_api::net::*;
use tessera_rt::sys;

/// The largest UDP payload in an IPv4 packet.
const MAX_DATAGRAM: usize = 65507;

fn ip(a: [u8; 4]) -> IpAddress {
    IpAddress::v4(a[0], a[1], a[2], a[3])
}

impl Server {
    /// Binds a datagram socket to `local` (port 0: one of the ephemeral
    /// ports; for ICMP the port is the echo identifier).
    pub fn dgram_bind(&mut self, caller: u64, id: u32, mut local: SockAddr) -> Result<(), Errno> {
        let s = self.table.get(id, caller)?;
        let (protocol, options) = (s.protocol, s.options);
        let Kind::Dgram { icmp, handles, .. } = &s.kind else {
            return Err(Errno::EINVAL);
        };
        if !handles.is_empty() {
            return Err(Errno::EINVAL);
        }
        let icmp = *icmp;
        let links = self.stack.links_for(local.addr)?;
        if local.port == 0 {
            local.port = self.ephemeral_port(protocol)?;
        } else if self.port_used(protocol, local, options.reuseaddr) {
            return Err(Errno::EADDRINUSE);
        }
        let bytes = (options.rcvbuf + options.sndbuf) * links.len();
        self.reserve(bytes)?;
        let mut made: Vec<Handle> = Vec::new();
        for link in links {
            let h = if icmp {
                let h = self.stack.icmp(link, options.rcvbuf, options.sndbuf);
                let _ = self.stack.icmp_mut(h).bind(icmp::Endpoint::Ident(local.port));
                h
            } else {
                let h = self.stack.udp(link, options.rcvbuf, options.sndbuf);
                let u = self.stack.udp_mut(h);
                let _ = u.bind(listen_addr(local));
                u.set_hop_limit(options.ttl);
                h
            };
            made.push(h);
        }
        let s = self.table.get(id, caller)?;
        s.local = local;
        s.buffers = bytes;
        if let Kind::Dgram { handles, .. } = &mut s.kind {
            *handles = made;
        }
        Ok(())
    }

    fn dgram_autobind(&mut self, caller: u64, id: u32) -> Result<(), Errno> {
        let s = self.table.get(id, caller)?;
        match &s.kind {
            Kind::Dgram { handles, .. } if handles.is_empty() => self.dgram_bind(caller, id, SockAddr::default()),
            _ => Ok(()),
        }
    }

    /// Sets (or with None, removes) the socket's default destination and
    /// the only source it receives from.
    pub fn dgram_connect(&mut self, caller: u64, id: u32, to: Option<SockAddr>) -> Result<(), Errno> {
        self.dgram_autobind(caller, id)?;
        let s = self.table.get(id, caller)?;
        if let Kind::Dgram { peer, .. } = &mut s.kind {
            *peer = to.map(|mut t| {
                if t.addr == [0; 4] {
                    t.addr = [127, 0, 0, 1];
                }
                t
            });
        }
        Ok(())
    }

    /// The smoltcp socket a datagram to `dst` leaves through.
    fn dgram_route(&mut self, caller: u64, id: u32, dst: [u8; 4]) -> Result<(Handle, bool, u16), Errno> {
        self.dgram_autobind(caller, id)?;
        let link = self.stack.route(dst)?;
        let s = self.table.get(id, caller)?;
        let port = s.local.port;
        let Kind::Dgram { icmp, handles, .. } = &s.kind else {
            return Err(Errno::EINVAL);
        };
        let h = handles
            .iter()
            .find(|h| h.0 == link)
            .copied()
            .ok_or(Errno::ENETUNREACH)?;
        Ok((h, *icmp, port))
    }

    pub fn dgram_send(&mut self, rid: u64, caller: u64, context: Context, len: usize) -> Outcome {
        let s = match self.table.get(context.socket, caller) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(e),
        };
        let Kind::Dgram { peer, .. } = &s.kind else {
            return Outcome::Fail(Errno::EINVAL);
        };
        let Some(mut dst) = context.to.or(*peer) else {
            return Outcome::Fail(Errno::EDESTADDRREQ);
        };
        if dst.addr == [0; 4] {
            dst.addr = [127, 0, 0, 1];
        }
        if len > MAX_DATAGRAM {
            return Outcome::Fail(Errno::EMSGSIZE);
        }
        let (h, icmp, ident) = match self.dgram_route(caller, context.socket, dst.addr) {
            Ok(r) => r,
            Err(e) => return Outcome::Fail(e),
        };
        if icmp {
            return self.echo_send(rid, h, ident, dst, len);
        }
        if dst.port == 0 {
            return Outcome::Fail(Errno::EINVAL);
        }
        let sock = self.stack.udp_mut(h);
        if len > sock.payload_send_capacity() {
            return Outcome::Fail(Errno::EMSGSIZE);
        }
        let to = IpEndpoint::new(ip(dst.addr), dst.port);
        // `send` (unlike `send_with`) starts an empty ring over at its
        // beginning, so a large datagram fits whenever the ring is empty.
        match sock.send(len, to) {
            Ok(buf) => {
                if sys::rv_read(rid, 0, buf).is_err() {
                    // The datagram is queued: it goes out empty rather than
                    // with another's bytes.
                    buf.fill(0);
                    return Outcome::Fail(Errno::EFAULT);
                }
                self.stats.copied_in += len as u64;
                Outcome::Value(len as i64, Vec::new())
            }
            Err(_) => Outcome::Wait,
        }
    }

    /// An echo request: the program's ICMP header and data, with the
    /// socket's identifier and the checksum put in.
    fn echo_send(&mut self, rid: u64, h: Handle, ident: u16, dst: SockAddr, len: usize) -> Outcome {
        if len < 8 {
            return Outcome::Fail(Errno::EINVAL);
        }
        let mut packet = vec![0u8; len];
        if sys::rv_read(rid, 0, &mut packet).is_err() {
            return Outcome::Fail(Errno::EFAULT);
        }
        if packet[0] != 8 || packet[1] != 0 {
            return Outcome::Fail(Errno::EINVAL);
        }
        packet[4..6].copy_from_slice(&ident.to_be_bytes());
        let mut p = Icmpv4Packet::new_unchecked(&mut packet[..]);
        p.fill_checksum();
        match self.stack.icmp_mut(h).send_slice(&packet, ip(dst.addr)) {
            Ok(()) => {
                self.stats.copied_in += len as u64;
                Outcome::Value(len as i64, Vec::new())
            }
            Err(icmp::SendError::BufferFull) => Outcome::Wait,
            Err(_) => Outcome::Fail(Errno::EINVAL),
        }
    }

    pub fn dgram_recv(&mut self, rid: u64, caller: u64, id: u32, flags: u32, len: usize) -> Outcome {
        let s = match self.table.get(id, caller) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(e),
        };
        let Kind::Dgram { icmp, handles, peer } = &s.kind else {
            return Outcome::Fail(Errno::EINVAL);
        };
        let (icmp, handles, peer) = (*icmp, handles.clone(), *peer);
        let base = if flags & ADDR_FIRST != 0 { SockAddr::LEN } else { 0 };
        let peek = flags & MSG_PEEK != 0;
        for h in handles {
            loop {
                let (from, n) = if icmp {
                    let sock = self.stack.icmp_mut(h);
                    let Ok((data, addr)) = sock.recv() else { break };
                    // Only replies: a ping of this host shows the request too.
                    if data.first() != Some(&0) {
                        continue;
                    }
                    let IpAddress::Ipv4(a) = addr;
                    let n = data.len().min(len);
                    if sys::rv_write(rid, base as u64, &data[..n]).is_err() {
                        return Outcome::Fail(Errno::EFAULT);
                    }
                    (SockAddr::new(a.octets(), 0), n)
                } else {
                    let sock = self.stack.udp_mut(h);
                    let from = match sock.peek() {
                        Ok((_, meta)) => sockaddr(meta.endpoint),
                        Err(_) => break,
                    };
                    if peer.is_some_and(|p| p != from) {
                        let _ = sock.recv();
                        continue;
                    }
                    let data: &[u8] = if peek {
                        sock.peek().map(|(d, _)| d)
                    } else {
                        sock.recv().map(|(d, _)| d)
                    }
                    .unwrap_or(&[]);
                    let n = data.len().min(len);
                    if sys::rv_write(rid, base as u64, &data[..n]).is_err() {
                        return Outcome::Fail(Errno::EFAULT);
                    }
                    (from, n)
                };
                self.stats.copied_out += n as u64;
                if base > 0 && sys::rv_write(rid, 0, &from.encode()).is_err() {
                    return Outcome::Fail(Errno::EFAULT);
                }
                return Outcome::Data(base + n);
            }
        }
        Outcome::Wait
    }

    pub fn dgram_revents(&mut self, id: u32) -> u16 {
        let Some(s) = self.table.any(id) else {
            return POLLNVAL;
        };
        let Kind::Dgram { icmp, handles, .. } = &s.kind else {
            return 0;
        };
        let (icmp, handles) = (*icmp, handles.clone());
        if handles.is_empty() {
            return POLLOUT | POLLWRNORM;
        }
        let mut bits = 0;
        for h in handles {
            let (recv, send) = if icmp {
                let s = self.stack.icmp_mut(h);
                (s.can_recv(), s.can_send())
            } else {
                let s = self.stack.udp_mut(h);
                (s.can_recv(), s.can_send())
            };
            if recv {
                bits |= POLLIN | POLLRDNORM;
            }
            if send {
                bits |= POLLOUT | POLLWRNORM;
            }
        }
        bits
    }
}
