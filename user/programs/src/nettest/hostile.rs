//! Calls a careless or hostile client makes: messages of every wrong
//! length and garbage to every entry, sockets of another process, closed
//! sockets, bad addresses and options, and exhaustion of sockets and of
//! buffer memory. The server answers each with an error and serves on.
//! Then: the server killed, its clients told, a new one started.

use super::*;
use alloc::vec::Vec;
use tessera_api::net::client::poll;
use tessera_api::net::*;
use tessera_api::wire::Writer;

pub fn run(c: &mut Checks) {
    let server = client::server().unwrap_or(0);
    garbage(c, server);
    bad_arguments(c, server);
    foreign_and_stale(c);
    exhaustion(c);
    // The server still serves: a connection to itself.
    let ok = (|| -> Result<bool, Errno> {
        let l = Socket::tcp()?;
        l.bind(SockAddr::new(LOCAL, 7200))?;
        l.listen(4)?;
        let a = Socket::tcp()?;
        a.connect(SockAddr::new(LOCAL, 7200))?;
        let (b, peer) = l.accept()?;
        a.send_all(b"still here")?;
        let mut buf = [0u8; 10];
        recv_exact(&b, &mut buf)?;
        Ok(&buf == b"still here" && Some(peer) == a.local_addr().ok())
    })();
    c.check(
        ok == Ok(true),
        &alloc::format!("served after the hostile calls: {ok:?}"),
    );
    c.check(
        wait_until(2000, || stat("sockets") == 0 && stat("buffer_bytes") == 0),
        "no socket and no buffer left over",
    );
}

/// Every entry with messages of wrong lengths and random bytes.
fn garbage(c: &mut Checks, server: u64) {
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut reply = alloc::vec![0u8; 256];
    let mut answered = 0;
    for entry in 0..=STATS {
        for len in [0usize, 1, 3, 7, 15, 17, 40, 64, 65, 300, 9000] {
            // POLL, RECV and ACCEPT with random contents could wait for
            // ever on a socket that happens to exist: non-blocking flags.
            let mut msg: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if matches!(entry, POLL) && len >= 8 {
                msg[..8].copy_from_slice(&0i64.to_le_bytes());
            }
            if matches!(entry, RECV | ACCEPT) && len >= 8 {
                msg[4..8].copy_from_slice(&MSG_DONTWAIT.to_le_bytes());
            }
            if entry == SEND {
                continue; // the message is data: tested through SEND_TO
            }
            if sys::call(server, entry, &msg, &mut reply).is_ok() || sys::alive(server) {
                answered += 1;
            }
        }
    }
    c.check(sys::alive(server), "the server survives garbage on every entry");
    c.check(answered > 0, "garbage calls answered");
    // Entries it does not serve are refused by the kernel.
    c.check(
        sys::call(server, 30, &[], &mut reply) == Err(tessera_rt::abi::Error::NoSys),
        "an unknown entry",
    );
    c.check(
        sys::call(server, tessera_api::nic::FRAMES, &[0; 8], &mut reply) == Err(tessera_rt::abi::Error::Denied),
        "FRAMES from a process that is not the driver",
    );
    c.check(
        sys::call(server, 43, &[], &mut reply) == Err(tessera_rt::abi::Error::Denied),
        "TICK from a stranger",
    );
}

fn bad_arguments(c: &mut Checks, server: u64) {
    c.errno(
        Socket::new(SOCK_STREAM, 99),
        Errno::EPROTONOSUPPORT,
        "TCP with protocol 99",
    );
    // Linux's answers: no protocol 0 for a raw socket; raw sockets of a
    // protocol are not served here.
    c.errno(Socket::new(3, 0), Errno::EPROTONOSUPPORT, "SOCK_RAW with protocol 0");
    c.errno(Socket::new(3, 1), Errno::ESOCKTNOSUPPORT, "SOCK_RAW of ICMP");
    c.errno(Socket::new(SOCK_STREAM | 0x100, 0), Errno::EINVAL, "unknown type flags");
    let mut msg = [0u8; 16];
    Writer::new(&mut msg).u32(10).u32(SOCK_STREAM).u32(0).u32(0);
    let mut reply = [0u8; 8];
    let r = sys::call(server, SOCKET, &msg, &mut reply).map(|_| i64::from_le_bytes(reply));
    c.check(r == Ok(-(Errno::EAFNOSUPPORT.0 as i64)), "AF_INET6");
    let Ok(s) = Socket::tcp() else { return };
    // A sockaddr of another family, and a short one.
    let mut bad = [0u8; 24];
    Writer::new(&mut bad).u32(s.id()).u32(16).bytes(&[10, 0]);
    let r = sys::call(server, BIND, &bad, &mut reply).map(|_| i64::from_le_bytes(reply));
    c.check(r == Ok(-(Errno::EAFNOSUPPORT.0 as i64)), "bind to an AF_INET6 address");
    Writer::new(&mut bad).u32(s.id()).u32(8);
    let r = sys::call(server, BIND, &bad[..16], &mut reply).map(|_| i64::from_le_bytes(reply));
    c.check(r == Ok(-(Errno::EINVAL.0 as i64)), "bind with a short address");
    c.errno(
        s.set_option(SOL_SOCKET, SO_REUSEADDR, &[1, 0]),
        Errno::EINVAL,
        "a 2-byte int option",
    );
    c.errno(s.set_option(99, 1, &[0; 4]), Errno::ENOPROTOOPT, "an unknown level");
    c.errno(
        s.set_option(SOL_SOCKET, SO_REUSEADDR, &[0; 40]),
        Errno::EINVAL,
        "an option too long",
    );
    c.errno(s.shutdown(SHUT_RDWR), Errno::ENOTCONN, "shutdown unconnected");
    c.errno(s.shutdown(7), Errno::EINVAL, "shutdown how 7");
    c.errno(s.peer_addr(), Errno::ENOTCONN, "getpeername unconnected");
    c.errno(s.accept(), Errno::EINVAL, "accept on a socket not listening");
    let mut fds = alloc::vec![PollFd::default(); MAX_POLL + 1];
    c.errno(poll(&mut fds, Some(0)), Errno::EINVAL, "POLL of too many");
    let mut one = [PollFd {
        socket: 0xdead_beef,
        events: POLLIN,
        revents: 0,
    }];
    c.check(
        poll(&mut one, Some(0)) == Ok(1) && one[0].revents == POLLNVAL,
        "POLLNVAL for a bad socket",
    );
    // A RECV whose reply cannot hold the address asked for.
    let mut m = [0u8; 16];
    Writer::new(&mut m).u32(s.id()).u32(ADDR_FIRST | MSG_DONTWAIT).u64(100);
    c.check(
        sys::call(server, RECV, &m, &mut [0u8; 8]) == Err(FAILED),
        "RECV with no room for the address",
    );
    // SEND before any SEND_TO.
    let fresh = start_client_without_context(server);
    c.check(fresh, "SEND with no SEND_TO is EBADF");
}

/// A child process's first SEND (it never set a context).
fn start_client_without_context(server: u64) -> bool {
    let mut reply = [0u8; 8];
    // This process has a context by now; a SEND_TO to a closed socket
    // leaves none behind.
    let s = Socket::udp().unwrap_or(Socket::from_id(0));
    let _ = s.send_to(b"x", SockAddr::new(LOCAL, 9));
    drop(s);
    sys::call(server, SEND, b"data", &mut reply).is_ok() && i64::from_le_bytes(reply) == -(Errno::EBADF.0 as i64)
}

fn foreign_and_stale(c: &mut Checks) {
    let Ok(s) = Socket::tcp() else { return };
    let mut buf = [0u8; 24];
    let id = sys::fmt_u64(s.id() as u64, &mut buf);
    let child = spawn_child(&["foreign", id]);
    c.check(
        child != 0 && sys::wait(child) == Ok(0),
        "another process's socket is EBADF to it",
    );
    c.ok(s.bind(SockAddr::new(LOCAL, 7300)), "the owner still uses it");
    let old = s.leak();
    c.ok(Socket::from_id(old).close(), "close");
    let stale = Socket::from_id(old);
    c.errno(stale.bind(SockAddr::new(LOCAL, 7301)), Errno::EBADF, "a closed socket");
    let again = Socket::tcp();
    c.check(
        again.as_ref().is_ok_and(|a| a.id() != old),
        "a new socket has a new number",
    );
    c.errno(stale.listen(1), Errno::EBADF, "the old number stays dead");
    c.errno(Socket::from_id(old).close(), Errno::EBADF, "closed twice");
    let _ = stale.leak();
}

fn exhaustion(c: &mut Checks) {
    let mut held = Vec::new();
    let err = loop {
        match Socket::tcp() {
            Ok(s) => held.push(s),
            Err(e) => break e,
        }
        if held.len() > 1000 {
            break Errno::EIO;
        }
    };
    c.check(
        err == Errno::EMFILE && held.len() == 256,
        &alloc::format!("{} sockets, then {err:?}", held.len()),
    );
    held.clear();
    // Big buffers on listeners until the budget runs out.
    let mut listeners = Vec::new();
    let err = loop {
        let r = (|| {
            let s = Socket::tcp()?;
            s.set_option_int(SOL_SOCKET, SO_RCVBUF, 1 << 20)?;
            s.set_option_int(SOL_SOCKET, SO_SNDBUF, 1 << 20)?;
            s.bind(SockAddr::new([0; 4], 7400 + listeners.len() as u16))?;
            s.listen(8)?;
            Ok(s)
        })();
        match r {
            Ok(s) => listeners.push(s),
            Err(e) => break e,
        }
        if listeners.len() > 100 {
            break Errno::EIO;
        }
    };
    c.check(
        err == Errno::ENOBUFS,
        &alloc::format!("{} big listeners, then {err:?}", listeners.len()),
    );
    listeners.clear();
    c.check(stat("buffer_bytes") == 0, "their buffers are given back");
}

/// The server killed: calls fail with ENETDOWN; a new one serves.
pub fn restart(c: &mut Checks) {
    let old = client::server().unwrap_or(0);
    let echo = spawn_child(&["tcp-echo", "7500"]);
    let s = connect_retry(7500);
    c.check(s.is_ok(), "connected before the kill");
    sys::stop(old);
    if let Ok(s) = s {
        c.errno(s.send(b"x"), Errno::ENETDOWN, "a call after the server died");
    }
    c.check(
        wait_until(2000, || !sys::alive(echo)),
        "the echo server saw it and ended",
    );
    let new = match start_net() {
        Ok(p) => p,
        Err(e) => return c.check(false, &e),
    };
    c.check(new != old, "a new server");
    let echo = spawn_child(&["tcp-echo", "7500"]);
    let ok = connect_retry(7500).and_then(|s| {
        s.send_all(b"restarted")?;
        let mut b = [0u8; 9];
        recv_exact(&s, &mut b)?;
        Ok(&b == b"restarted")
    });
    c.check(ok == Ok(true), "the new server serves");
    sys::stop(echo);
    sys::stop(new);
}

/// The server under its keeper (bin/keep.rs), killed: the keeper reports
/// it and starts a new one under the same name, with no one asking; a
/// socket of the dead server names nothing of the new one.
pub fn keep(c: &mut Checks) {
    // The part's own server goes: this one runs under the keeper.
    if let Ok(own) = client::server() {
        sys::stop(own);
    }
    let keeper = sys::spawn_on("keep", &["-n", "3", "net", "net"], tessera_rt::abi::ANY_CPU).unwrap_or(0);
    let first = sys::wait_for_name(net::NAME);
    c.check(keeper != 0 && first != 0, "the keeper started the server");
    c.check(client::connect_to(net::NAME) == Ok(first), "and the client found it");
    let old = Socket::tcp();
    c.check(old.is_ok(), "a socket on the first server");
    let _ = sys::kill(first);
    if let Ok(s) = &old {
        c.errno(s.listen(4), Errno::ENETDOWN, "a call to the dead server");
    }
    let restarted = wait_until(3000, || {
        sys::name_lookup(net::NAME).is_ok_and(|p| p != first && sys::alive(p))
    });
    c.check(restarted, "the keeper started a new server");
    let second = sys::name_lookup(net::NAME).unwrap_or(0);
    c.check(
        client::connect_to(net::NAME) == Ok(second),
        "the client found the new one",
    );
    let new = Socket::tcp();
    c.check(new.is_ok(), "a socket on the new server");
    if let (Ok(o), Ok(n)) = (&old, &new) {
        c.check(o.id() != n.id(), "the dead server's number is not the new socket's");
        c.errno(o.listen(4), Errno::EBADF, "the dead server's socket on the new one");
        c.check(n.bind(SockAddr::new(LOCAL, 7600)).is_ok(), "the new socket works");
    }
    drop(new);
    let echo = spawn_child(&["tcp-echo", "7601"]);
    let ok = connect_retry(7601).and_then(|s| {
        s.send_all(b"kept")?;
        let mut b = [0u8; 4];
        recv_exact(&s, &mut b)?;
        Ok(&b == b"kept")
    });
    c.check(ok == Ok(true), "the new server serves");
    sys::stop(echo);
    // More than three quick deaths in a row are past the keeper's limit:
    // it gives up (the first death here comes after a long life).
    let mut last = second;
    for _ in 0..5 {
        let _ = sys::kill(last);
        wait_until(3000, || {
            sys::name_lookup(net::NAME).is_ok_and(|p| p != last && sys::alive(p)) || !sys::alive(keeper)
        });
        last = sys::name_lookup(net::NAME).unwrap_or(last);
    }
    c.check(
        wait_until(8000, || !sys::alive(keeper)),
        "a server that keeps dying is given up",
    );
    let _ = sys::wait(keeper);
}
