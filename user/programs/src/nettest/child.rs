//! The processes the tests start (`nettest child <role> ...`):
//! - `tcp-echo <port>`: a TCP echo server on POLL, any number of clients;
//! - `sink <port>`: takes one connection and reads it to its end;
//! - `udp-echo <port>`: sends every datagram back to its sender;
//! - `hog <port> <n>`: opens n connections, sends half a message on each,
//!   and waits to be killed;
//! - `block <port>`: connects and waits in RECV until killed;
//! - `foreign <socket>`: uses another process's socket, which must fail.

use super::LOCAL;
use alloc::vec::Vec;
use tessera_api::errno::Errno;
use tessera_api::net::client::{Socket, poll};
use tessera_api::net::*;
use tessera_rt::{println, sys};

pub fn run(role: &str, args: &[&str]) -> i32 {
    let num = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
    match role {
        "tcp-echo" => tcp_echo(num(0) as u16),
        "udp-echo" => udp_echo(num(0) as u16),
        "sink" => sink(num(0) as u16),
        "hog" => hog(num(0) as u16, num(1) as usize),
        "block" => block(num(0) as u16),
        "foreign" => foreign(num(0) as u32),
        _ => 2,
    }
}

fn listener(port: u16) -> Result<Socket, Errno> {
    let l = Socket::tcp()?;
    l.set_option_int(SOL_SOCKET, SO_REUSEADDR, 1)?;
    l.bind(SockAddr::new([0; 4], port))?;
    l.listen(128)?;
    l.set_nonblocking(true)?;
    Ok(l)
}

fn tcp_echo(port: u16) -> i32 {
    let l = match listener(port) {
        Ok(l) => l,
        Err(e) => {
            println!("nettest: FAILED echo server on {port}: {e:?}");
            return 1;
        }
    };
    let mut conns: Vec<Socket> = Vec::new();
    let mut buf = alloc::vec![0u8; 64 << 10];
    loop {
        let mut fds: Vec<PollFd> = core::iter::once(l.id())
            .chain(conns.iter().map(|c| c.id()))
            .map(|socket| PollFd {
                socket,
                events: POLLIN,
                revents: 0,
            })
            .collect();
        if poll(&mut fds, None).is_err() {
            return 0; // the server ended
        }
        if fds[0].revents & POLLIN != 0 {
            while let Ok((c, _)) = l.accept() {
                conns.push(c);
            }
        }
        let mut closed = Vec::new();
        for (i, f) in fds[1..].iter().enumerate() {
            if f.revents == 0 {
                continue;
            }
            match conns[i].recv(&mut buf) {
                Ok(0) | Err(_) => closed.push(i),
                Ok(n) => {
                    if conns[i].send_all(&buf[..n]).is_err() {
                        closed.push(i);
                    }
                }
            }
        }
        for i in closed.into_iter().rev() {
            conns.swap_remove(i);
        }
    }
}

fn sink(port: u16) -> i32 {
    let Ok(l) = listener(port) else { return 1 };
    let _ = l.set_nonblocking(false);
    let Ok((c, _)) = l.accept() else { return 1 };
    let mut buf = alloc::vec![0u8; 64 << 10];
    while let Ok(n) = c.recv(&mut buf) {
        if n == 0 {
            break;
        }
    }
    // The last byte read is answered, so the sender knows all arrived.
    let _ = c.send(b"!");
    0
}

fn udp_echo(port: u16) -> i32 {
    let Ok(s) = Socket::udp() else { return 1 };
    if s.bind(SockAddr::new([0; 4], port)).is_err() {
        println!("nettest: FAILED udp echo bind {port}");
        return 1;
    }
    let mut buf = alloc::vec![0u8; 65536];
    loop {
        match s.recv_from(&mut buf) {
            Ok((n, from)) => {
                let _ = s.send_to(&buf[..n], from);
            }
            Err(Errno::ENETDOWN) => return 0,
            Err(_) => {}
        }
    }
}

fn hog(port: u16, n: usize) -> i32 {
    let mut held = Vec::new();
    for _ in 0..n {
        if let Ok(s) = super::connect_retry(port) {
            let _ = s.send(b"half a mess");
            held.push(s);
        }
    }
    println!("nettest: hog holds {} connections", held.len());
    loop {
        sys::sleep_ns(1_000_000_000);
    }
}

fn block(port: u16) -> i32 {
    let Ok(s) = super::connect_retry(port) else { return 1 };
    let mut buf = [0u8; 16];
    println!("nettest: blocking in recv");
    let _ = s.recv(&mut buf);
    0
}

fn foreign(id: u32) -> i32 {
    let s = Socket::from_id(id);
    let mut bad = 0;
    let mut expect = |r: Result<(), Errno>| {
        if r != Err(Errno::EBADF) {
            println!("nettest: FAILED a foreign socket was usable: {r:?}");
            bad += 1;
        }
    };
    expect(s.bind(SockAddr::new(LOCAL, 7999)));
    expect(s.listen(1));
    expect(s.send(b"x").map(drop));
    expect(s.recv(&mut [0u8; 4]).map(drop));
    expect(s.share(sys::getpid()));
    expect(s.set_nonblocking(true));
    expect(s.option(SOL_SOCKET, SO_TYPE).map(drop));
    let id = s.leak();
    expect(Socket::from_id(id).close());
    i32::from(bad != 0)
}
