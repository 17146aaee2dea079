//! Native figures of the TCP/IP server over the loopback (`netbench
//! [rounds]`): a 1-byte TCP round trip through an echo server, a 64-byte
//! UDP round trip, and 4 MiB streamed one way, in TSC cycles (under
//! icount, guest instructions), with the copies the server counted.
//! Starts its own server and children; prints `NETBENCH name value unit`.
#![no_std]
#![no_main]
extern crate alloc;

use tessera_api::net::client::{self, Socket};
use tessera_api::net::*;
use tessera_rt::{println, sys};

const LOCAL: [u8; 4] = [127, 0, 0, 1];

fn child(args: &[&str]) -> u64 {
    let mut all = alloc::vec!["child"];
    all.extend_from_slice(args);
    sys::spawn_on("nettest", &all, tessera_rt::abi::ANY_CPU).unwrap_or(0)
}

fn connect(port: u16) -> Option<Socket> {
    for _ in 0..300 {
        let s = Socket::tcp().ok()?;
        if s.connect(SockAddr::new(LOCAL, port)).is_ok() {
            return Some(s);
        }
        sys::sleep_ns(10_000_000);
    }
    None
}

fn stat(name: &str) -> u64 {
    let r = client::stats().unwrap_or_default();
    r.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

fn main(args: &[&str]) -> i32 {
    let rounds: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let Ok(net) = sys::spawn_on("net", &[NAME], tessera_rt::abi::ANY_CPU) else {
        return 1;
    };
    if sys::wait_for_name(NAME) != net || client::connect_to(NAME).is_err() {
        return 1;
    }
    let echo = child(&["tcp-echo", "7601"]);
    let udp = child(&["udp-echo", "7602"]);
    let sink = child(&["sink", "7603"]);
    let Some(s) = connect(7601) else { return 1 };
    let _ = s.set_option_int(IPPROTO_TCP, TCP_NODELAY, 1);
    let mut b = [0u8; 64];
    let warm = |n| {
        for _ in 0..n {
            let _ = s.send(&b[..1]);
            let _ = s.recv(&mut [0u8; 1]);
        }
    };
    warm(20);
    let t = sys::rdtsc();
    warm(rounds);
    println!("NETBENCH tcp_round_trip_1B {} cycles", (sys::rdtsc() - t) / rounds);

    let Ok(u) = Socket::udp() else { return 1 };
    let to = SockAddr::new(LOCAL, 7602);
    let _ = u.connect(to);
    for _ in 0..20 {
        let _ = u.send(&b);
        let _ = u.recv(&mut b);
    }
    let t = sys::rdtsc();
    for _ in 0..rounds {
        let _ = u.send(&b);
        let _ = u.recv(&mut b);
    }
    println!("NETBENCH udp_round_trip_64B {} cycles", (sys::rdtsc() - t) / rounds);

    let Some(k) = connect(7603) else { return 1 };
    let data = alloc::vec![0x5au8; 64 << 10];
    let (copies_in, copies_out, lo) = (stat("copied_in"), stat("copied_out"), stat("loopback_bytes"));
    let t = sys::rdtsc();
    for _ in 0..64 {
        let _ = k.send_all(&data);
    }
    let _ = k.shutdown(SHUT_WR);
    let _ = k.recv(&mut b);
    let cycles = sys::rdtsc() - t;
    println!("NETBENCH tcp_stream_4MiB {} cycles_per_KiB", cycles / 4096);
    println!(
        "NETBENCH tcp_stream_4MiB copies_in_per_byte {:.2} copies_out_per_byte {:.2} loopback_bytes_per_byte {:.2}",
        (stat("copied_in") - copies_in) as f64 / (4u64 << 20) as f64,
        (stat("copied_out") - copies_out) as f64 / (4u64 << 20) as f64,
        (stat("loopback_bytes") - lo) as f64 / (4u64 << 20) as f64
    );
    for pid in [echo, udp, sink, net] {
        sys::stop(pid);
    }
    0
}
tessera_rt::entry!(main);
