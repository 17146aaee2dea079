//! UDP and ICMP echo over the loopback: datagrams of every size back from
//! an echo server with their sender's address, a connected UDP socket, a
//! datagram too large, and a ping of this host.

use super::*;
use tessera_api::net::*;

const PORT: u16 = 7002;

pub fn run(c: &mut Checks) {
    let echo = spawn_child(&["udp-echo", "7002"]);
    c.check(echo != 0, "UDP echo server started");
    let Some(s) = c.ok(Socket::udp(), "a UDP socket") else {
        return;
    };
    let to = SockAddr::new(LOCAL, PORT);
    let mut buf = alloc::vec![0u8; 65536];
    let mut ok = 0;
    let sizes = [0usize, 1, 100, 1472, 1473, 9000, 30000, 60000, 65000];
    for (i, &n) in sizes.iter().enumerate() {
        let msg = pattern(i as u64, n);
        // The echo server may not be bound yet: the first datagrams are
        // sent again until one comes back.
        let mut got = None;
        for _ in 0..100 {
            if s.send_to(&msg, to).is_err() {
                break;
            }
            s.set_nonblocking(true).ok();
            let r = wait_for(&s, &mut buf);
            s.set_nonblocking(false).ok();
            if let Some(r) = r {
                got = Some(r);
                break;
            }
        }
        match got {
            Some((len, from)) if len == n && buf[..n] == msg[..] && from == to => ok += 1,
            other => c.check(false, &alloc::format!("a {n}-byte datagram came back as {other:?}")),
        }
    }
    c.check(
        ok == sizes.len(),
        "datagrams of every size echoed with the sender's address",
    );
    let local = s.local_addr().unwrap_or_default();
    c.check(local.port >= 49152, "sending bound an ephemeral port");
    c.errno(
        s.send_to(&alloc::vec![0u8; 70000], to),
        Errno::EMSGSIZE,
        "a datagram too large",
    );

    let Some(d) = c.ok(Socket::udp(), "another UDP socket") else {
        return;
    };
    c.ok(d.connect(to), "connect a UDP socket");
    c.ok(d.send(b"connected"), "send without an address");
    let mut b = [0u8; 32];
    c.check(
        d.recv(&mut b) == Ok(9) && &b[..9] == b"connected",
        "recv on the connected socket",
    );
    c.check(d.peer_addr() == Ok(to), "its peer");
    let fresh = Socket::udp().unwrap_or(Socket::from_id(0));
    c.errno(fresh.send(b"x"), Errno::EDESTADDRREQ, "send with no destination");
    drop((s, d, fresh));

    ping(c);
    sys::stop(echo);
}

/// A datagram within about a second, or None.
fn wait_for(s: &Socket, buf: &mut [u8]) -> Option<(usize, SockAddr)> {
    for _ in 0..100 {
        match s.recv_from(buf) {
            Ok(r) => return Some(r),
            Err(Errno::EAGAIN) => sys::sleep_ns(10_000_000),
            Err(_) => return None,
        }
    }
    None
}

/// ICMP echo of 127.0.0.1 through a ping socket.
pub fn ping(c: &mut Checks) {
    let Some(p) = c.ok(Socket::ping(), "a ping socket") else {
        return;
    };
    let mut ok = 0;
    for seq in 1..=3u16 {
        let mut req = alloc::vec![8u8, 0, 0, 0, 0, 0];
        req.extend_from_slice(&seq.to_be_bytes());
        req.extend_from_slice(b"tessera ping");
        if p.send_to(&req, SockAddr::new(LOCAL, 0)).is_err() {
            continue;
        }
        let mut reply = [0u8; 64];
        if let Ok((n, from)) = p.recv_from(&mut reply)
            && n == req.len()
            && reply[0] == 0
            && reply[6..8] == seq.to_be_bytes()
            && from.addr == LOCAL
        {
            ok += 1;
        }
    }
    c.check(ok == 3, "three echo replies from 127.0.0.1");
}
