//! TCP over the loopback: a megabyte through an echo server, addresses,
//! half-close, non-blocking calls and POLL, refused connections, ports in
//! use, a hundred connections at once, and connections their process
//! abandoned (killed holding them, or killed waiting in RECV).

use super::*;
use alloc::vec::Vec;
use tessera_api::net::client::poll;
use tessera_api::net::*;

const PORT: u16 = 7001;

pub fn run(c: &mut Checks) {
    let echo = spawn_child(&["tcp-echo", "7001"]);
    c.check(echo != 0, "echo server started");
    let Some(s) = c.ok(connect_retry(PORT), "connect to the echo server") else {
        sys::stop(echo);
        return;
    };
    megabyte(c, &s);
    names(c, &s);
    c.ok(s.shutdown(SHUT_WR), "shutdown(SHUT_WR)");
    let mut b = [0u8; 8];
    c.check(s.recv(&mut b) == Ok(0), "end of stream after a half-close");
    drop(s);

    nonblocking(c);
    refused(c);
    many(c, 100);
    abandoned(c, echo);
    sys::stop(echo);
    c.check(
        wait_until(3000, || stat("sockets") == 0 && stat("held_now") == 0),
        "every socket and held call released",
    );
}

/// A megabyte in 16 KiB pieces, each echoed whole before the next.
fn megabyte(c: &mut Checks, s: &Socket) {
    let data = pattern(1, 1 << 20);
    let mut back = alloc::vec![0u8; 16 << 10];
    let before = stat("copied_in");
    let mut ok = true;
    for chunk in data.chunks(16 << 10) {
        if s.send_all(chunk).is_err() || recv_exact(s, &mut back[..chunk.len()]).is_err() {
            ok = false;
            break;
        }
        if back[..chunk.len()] != *chunk {
            ok = false;
            break;
        }
    }
    c.check(ok, "a megabyte echoed intact");
    // Both ways of the echo: sent twice (by this process and by the echo
    // server), each byte read once from its sender's message.
    let copied = stat("copied_in").wrapping_sub(before);
    c.check(
        copied == 2 << 20,
        &alloc::format!("each byte copied in once per send ({copied})"),
    );
}

fn names(c: &mut Checks, s: &Socket) {
    let local = c.ok(s.local_addr(), "getsockname");
    let peer = c.ok(s.peer_addr(), "getpeername");
    c.check(
        local.is_some_and(|a| a.addr == LOCAL && a.port >= 49152),
        "local address is 127.0.0.1 on an ephemeral port",
    );
    c.check(
        peer == Some(SockAddr::new(LOCAL, PORT)),
        "peer address is the echo server's",
    );
    c.ok(s.set_option_int(IPPROTO_TCP, TCP_NODELAY, 1), "TCP_NODELAY");
    c.check(
        s.option_int(IPPROTO_TCP, TCP_NODELAY) == Ok(1),
        "TCP_NODELAY reads back",
    );
    c.check(s.option_int(SOL_SOCKET, SO_TYPE) == Ok(SOCK_STREAM as i32), "SO_TYPE");
    c.check(
        s.option_int(SOL_SOCKET, SO_RCVBUF) == Ok(64 << 10),
        "SO_RCVBUF is 64 KiB",
    );
    c.errno(s.option_int(SOL_SOCKET, 12345), Errno::ENOPROTOOPT, "an unknown option");
}

fn nonblocking(c: &mut Checks) {
    let Ok(s) = Socket::new(SOCK_STREAM | SOCK_NONBLOCK, 0) else {
        return c.check(false, "a non-blocking socket");
    };
    c.errno(
        s.connect(SockAddr::new(LOCAL, PORT)),
        Errno::EINPROGRESS,
        "non-blocking connect",
    );
    let mut fds = [PollFd {
        socket: s.id(),
        events: POLLOUT | POLLIN,
        revents: 0,
    }];
    let n = poll(&mut fds, Some(2_000_000_000));
    c.check(n == Ok(1) && fds[0].revents == POLLOUT, "POLLOUT once connected");
    c.check(s.option_int(SOL_SOCKET, SO_ERROR) == Ok(0), "SO_ERROR 0");
    let mut b = [0u8; 4];
    c.errno(s.recv(&mut b), Errno::EAGAIN, "recv with nothing there");
    c.ok(s.send(b"ping"), "send");
    fds[0].events = POLLIN;
    c.check(poll(&mut fds, Some(2_000_000_000)) == Ok(1), "POLLIN once echoed");
    c.check(s.recv(&mut b) == Ok(4) && &b == b"ping", "the echo");
    // A timeout with nothing to report.
    let t = sys::now_ns();
    c.check(poll(&mut fds, Some(20_000_000)) == Ok(0), "POLL times out with 0");
    c.check(sys::now_ns() - t >= 20_000_000, "... after its timeout");
    c.ok(s.set_nonblocking(false), "F_SETFL");
}

fn refused(c: &mut Checks) {
    let Ok(s) = Socket::tcp() else { return };
    c.errno(
        s.connect(SockAddr::new(LOCAL, 7999)),
        Errno::ECONNREFUSED,
        "nothing listens",
    );
    let Ok(s) = Socket::new(SOCK_STREAM | SOCK_NONBLOCK, 0) else {
        return;
    };
    c.errno(
        s.connect(SockAddr::new(LOCAL, 7999)),
        Errno::EINPROGRESS,
        "non-blocking, refused",
    );
    let mut fds = [PollFd {
        socket: s.id(),
        events: POLLOUT,
        revents: 0,
    }];
    let _ = poll(&mut fds, Some(2_000_000_000));
    c.check(fds[0].revents & POLLERR != 0, "POLLERR once refused");
    c.check(
        s.option_int(SOL_SOCKET, SO_ERROR) == Ok(Errno::ECONNREFUSED.0),
        "SO_ERROR says refused",
    );
    let a = Socket::tcp().unwrap_or(Socket::from_id(0));
    let b = Socket::tcp().unwrap_or(Socket::from_id(0));
    c.ok(a.bind(SockAddr::new(LOCAL, 7100)), "bind");
    c.errno(
        b.bind(SockAddr::new([0; 4], 7100)),
        Errno::EADDRINUSE,
        "the same port twice",
    );
    c.errno(
        b.bind(SockAddr::new([10, 9, 8, 7], 7101)),
        Errno::EADDRNOTAVAIL,
        "an address not this host's",
    );
    c.errno(a.bind(SockAddr::new(LOCAL, 7102)), Errno::EINVAL, "bound twice");
}

/// `n` connections open at once, each echoed.
fn many(c: &mut Checks, n: usize) {
    let mut conns = Vec::new();
    for _ in 0..n {
        match Socket::tcp().and_then(|s| s.connect(SockAddr::new(LOCAL, PORT)).map(|()| s)) {
            Ok(s) => conns.push(s),
            Err(e) => {
                c.check(false, &alloc::format!("connection {}: {e:?}", conns.len()));
                break;
            }
        }
    }
    let mut ok = 0;
    for (i, s) in conns.iter().enumerate() {
        let msg = pattern(i as u64 + 100, 200 + i);
        let mut back = alloc::vec![0u8; msg.len()];
        if s.send_all(&msg).is_ok() && recv_exact(s, &mut back).is_ok() && back == msg {
            ok += 1;
        }
    }
    c.check(ok == n, &alloc::format!("{ok} of {n} simultaneous connections echoed"));
}

/// A process killed holding connections, and one killed while the server
/// held its RECV: the server lets go of both, and serves on.
fn abandoned(c: &mut Checks, echo: u64) {
    // Only the echo server's listener is left once it has seen every
    // earlier connection close.
    c.check(wait_until(3000, || stat("sockets") == 1), "earlier connections closed");
    let base = stat("sockets");
    // The echo server waits in POLL.
    let held = stat("held_now");
    let hog = spawn_child(&["hog", "7001", "20"]);
    c.check(
        wait_until(3000, || stat("sockets") >= base + 40),
        "the hog's 20 connections are up",
    );
    sys::stop(hog);
    let blocked = spawn_child(&["block", "7001"]);
    c.check(wait_until(3000, || stat("held_now") > held), "a RECV held");
    sys::stop(blocked);
    c.check(
        wait_until(3000, || stat("sockets") == base && stat("held_now") == held),
        &alloc::format!(
            "what the killed processes held is released (sockets {} of {base}, held {})",
            stat("sockets"),
            stat("held_now")
        ),
    );
    c.check(sys::alive(echo), "the echo server lives on");
    match connect_retry(PORT) {
        Ok(s) => {
            let mut b = [0u8; 5];
            c.check(
                s.send_all(b"again").is_ok() && recv_exact(&s, &mut b).is_ok() && &b == b"again",
                "a new connection after the abandoned ones",
            );
        }
        Err(e) => c.check(false, &alloc::format!("connect after abandon: {e:?}")),
    }
}
