//! The TCP/IP stack: two smoltcp interfaces, each with its link and its
//! own set of smoltcp sockets (a socket lives on the interface its traffic
//! goes through), the clock, and routing between them.
//!
//! - The loopback (`127.0.0.1/8`, and the NIC's address as Linux routes a
//!   host's own addresses through `lo`), IP medium, 64 KiB packets.
//! - The NIC: Ethernet with ARP, the address and gateway of QEMU's user
//!   network by default (10.0.2.15/24 via 10.0.2.2).

use crate::link::{Loopback, Nic};
use crate::socket::{Handle, Link};
use alloc::vec;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::socket::{AnySocket, icmp, tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint, IpListenEndpoint, Ipv4Address, Ipv4Cidr,
};
use tessera_api::errno::Errno;
use tessera_rt::sys;

/// Datagrams a UDP or ICMP socket buffers each way.
const DGRAM_PACKETS: usize = 64;

/// Closed TCP sockets kept for the next connection, at most: a socket's
/// buffers (96 KiB at the defaults) are zeroed when it is made, and a web
/// request made two (the client's, and the listener's refill), which was
/// the largest part of the server's own work per request.
const SPARE_TCP: usize = 8;

pub struct Stack {
    pub lo: Interface,
    pub lo_dev: Loopback,
    pub lo_set: SocketSet<'static>,
    pub eth: Interface,
    pub nic: Nic,
    pub eth_set: SocketSet<'static>,
    pub addr: Ipv4Cidr,
    /// Closed TCP sockets still in their link's set, inert (no
    /// connection, no endpoint: they neither send nor accept anything),
    /// with their receive and send buffers' sizes.
    spare_tcp: alloc::vec::Vec<(Handle, usize, usize)>,
}

/// Microseconds since boot, from the TSC (no system call).
pub fn now() -> Instant {
    Instant::from_micros((sys::tsc_to_ns(sys::rdtsc()) / 1000) as i64)
}

pub fn now_ns() -> u64 {
    sys::tsc_to_ns(sys::rdtsc())
}

/// The port a spare socket listens on for the instant between its reset
/// and its close (any but 0: no packet is taken in meanwhile).
const SPARE_PORT: u16 = 9;

/// A locally administered MAC until a driver attaches and gives its own.
const NO_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];

impl Stack {
    pub fn new(addr: Ipv4Cidr, gateway: Ipv4Address) -> Stack {
        let seed = sys::rdtsc();
        let mut lo_dev = Loopback::default();
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = seed;
        let mut lo = Interface::new(config, &mut lo_dev, now());
        lo.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::v4(127, 0, 0, 1), 8));
            let _ = a.push(IpCidr::Ipv4(Ipv4Cidr::new(addr.address(), 32)));
        });
        let mut nic = Nic::default();
        nic.mac = NO_MAC;
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(NO_MAC)));
        config.random_seed = seed.rotate_left(17);
        let mut eth = Interface::new(config, &mut nic, now());
        eth.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::Ipv4(addr));
        });
        let _ = eth.routes_mut().add_default_ipv4_route(gateway);
        Stack {
            lo,
            lo_dev,
            lo_set: SocketSet::new(vec![]),
            eth,
            nic,
            eth_set: SocketSet::new(vec![]),
            addr,
            spare_tcp: alloc::vec::Vec::new(),
        }
    }

    pub fn set(&mut self, link: Link) -> &mut SocketSet<'static> {
        match link {
            Link::Loopback => &mut self.lo_set,
            Link::Nic => &mut self.eth_set,
        }
    }

    /// A new MAC (a driver attached).
    pub fn set_mac(&mut self, mac: [u8; 6]) {
        self.nic.mac = mac;
        self.eth
            .set_hardware_addr(HardwareAddress::Ethernet(EthernetAddress(mac)));
    }

    /// Whether `addr` is one of this host's.
    pub fn is_local(&self, addr: [u8; 4]) -> bool {
        addr[0] == 127 || addr == self.addr.address().octets()
    }

    /// The link traffic to `addr` goes out on.
    pub fn route(&self, addr: [u8; 4]) -> Result<Link, Errno> {
        if self.is_local(addr) {
            Ok(Link::Loopback)
        } else if addr == [0; 4] || addr == [255; 4] {
            Err(Errno::ENETUNREACH)
        } else if self.nic.driver.is_some() {
            Ok(Link::Nic)
        } else {
            Err(Errno::ENETUNREACH)
        }
    }

    /// The links a socket bound to `addr` (0.0.0.0: any) receives on.
    pub fn links_for(&self, addr: [u8; 4]) -> Result<alloc::vec::Vec<Link>, Errno> {
        if addr == [0; 4] {
            Ok(Link::ALL.to_vec())
        } else if addr[0] == 127 {
            Ok(vec![Link::Loopback])
        } else if addr == self.addr.address().octets() {
            Ok(Link::ALL.to_vec())
        } else {
            Err(Errno::EADDRNOTAVAIL)
        }
    }

    /// A closed TCP socket on `link` with buffers of these sizes: a spare
    /// one if there is (its listen or connect starts it afresh, as
    /// smoltcp's reuse of a closed socket does), else a new one. Its
    /// options are the caller's to set (`tcp::apply_options`).
    pub fn tcp(&mut self, link: Link, rcvbuf: usize, sndbuf: usize) -> Handle {
        if let Some(i) = self
            .spare_tcp
            .iter()
            .position(|&(h, r, w)| h.0 == link && r == rcvbuf && w == sndbuf)
        {
            return self.spare_tcp.swap_remove(i).0;
        }
        let s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0u8; rcvbuf]),
            tcp::SocketBuffer::new(vec![0u8; sndbuf]),
        );
        (link, self.set(link).add(s))
    }

    pub fn udp(&mut self, link: Link, rcvbuf: usize, sndbuf: usize) -> Handle {
        let s = udp::Socket::new(
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; DGRAM_PACKETS], vec![0u8; rcvbuf]),
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; DGRAM_PACKETS], vec![0u8; sndbuf]),
        );
        (link, self.set(link).add(s))
    }

    pub fn icmp(&mut self, link: Link, rcvbuf: usize, sndbuf: usize) -> Handle {
        let s = icmp::Socket::new(
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; DGRAM_PACKETS], vec![0u8; rcvbuf]),
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; DGRAM_PACKETS], vec![0u8; sndbuf]),
        );
        (link, self.set(link).add(s))
    }

    pub fn tcp_mut(&mut self, h: Handle) -> &mut tcp::Socket<'static> {
        self.set(h.0).get_mut::<tcp::Socket>(h.1)
    }

    pub fn udp_mut(&mut self, h: Handle) -> &mut udp::Socket<'static> {
        self.set(h.0).get_mut::<udp::Socket>(h.1)
    }

    pub fn icmp_mut(&mut self, h: Handle) -> &mut icmp::Socket<'static> {
        self.set(h.0).get_mut::<icmp::Socket>(h.1)
    }

    /// Starts a TCP connection from smoltcp socket `h`.
    pub fn connect(&mut self, h: Handle, remote: IpEndpoint, local: IpListenEndpoint) -> Result<(), tcp::ConnectError> {
        match h.0 {
            Link::Loopback => self
                .lo_set
                .get_mut::<tcp::Socket>(h.1)
                .connect(self.lo.context(), remote, local),
            Link::Nic => self
                .eth_set
                .get_mut::<tcp::Socket>(h.1)
                .connect(self.eth.context(), remote, local),
        }
    }

    /// Takes socket `h` out of use. A TCP socket that is closed (or in
    /// TIME-WAIT, which this stack does not keep) is kept as a spare while
    /// there is room, made inert first: `listen` resets it (no connection,
    /// buffers emptied), `close` takes it out of LISTEN with no endpoint
    /// left, so it neither answers nor sends anything while it waits.
    pub fn remove(&mut self, h: Handle) {
        if self.spare_tcp.len() < SPARE_TCP
            && let Some(t) = tcp::Socket::downcast_mut(self.set(h.0).get_mut::<smoltcp::socket::Socket>(h.1))
            && !t.is_open()
            && t.listen(SPARE_PORT).is_ok()
        {
            t.close();
            let sizes = (t.recv_capacity(), t.send_capacity());
            self.spare_tcp.push((h, sizes.0, sizes.1));
            return;
        }
        self.set(h.0).remove(h.1);
    }

    /// Takes in at most one packet on `link`; false if there was none.
    pub fn ingress_one(&mut self, link: Link) -> bool {
        use smoltcp::iface::PollIngressSingleResult as R;
        let t = now();
        let r = match link {
            Link::Loopback => self.lo.poll_ingress_single(t, &mut self.lo_dev, &mut self.lo_set),
            Link::Nic => self.eth.poll_ingress_single(t, &mut self.nic, &mut self.eth_set),
        };
        r != R::None
    }

    /// Sends what the sockets on `link` have to send (and its timers' due).
    pub fn egress(&mut self, link: Link) {
        let t = now();
        match link {
            Link::Loopback => {
                self.lo.poll_maintenance(t);
                self.lo.poll_egress(t, &mut self.lo_dev, &mut self.lo_set);
            }
            Link::Nic => {
                self.eth.poll_maintenance(t);
                self.eth.poll_egress(t, &mut self.nic, &mut self.eth_set);
            }
        }
    }

    /// The links with a device behind them: the NIC's only while a
    /// driver is attached (without one it neither receives nor sends, so
    /// polling its interface would only walk its sockets).
    pub fn links(&self) -> &'static [Link] {
        if self.nic.driver.is_some() {
            &Link::ALL
        } else {
            &[Link::Loopback]
        }
    }

    /// Whether `link` has packets waiting to be taken in.
    pub fn has_ingress(&self, link: Link) -> bool {
        match link {
            Link::Loopback => self.lo_dev.pending(),
            Link::Nic => !self.nic.received.is_empty(),
        }
    }

    /// When the stack next needs a turn (ns since boot), if ever.
    pub fn next_deadline(&mut self) -> Option<u64> {
        let t = now();
        let a = self.lo.poll_at(t, &self.lo_set);
        let b = match self.nic.driver {
            Some(_) => self.eth.poll_at(t, &self.eth_set),
            None => None,
        };
        [a, b]
            .into_iter()
            .flatten()
            .map(|i| (i.total_micros().max(0) as u64) * 1000)
            .min()
    }
}
