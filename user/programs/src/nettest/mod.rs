//! What the network tests share: starting the servers, counting checks,
//! and the numbers in the TCP/IP server's report.

pub mod child;
pub mod dgram;
pub mod hostile;
pub mod nic;
pub mod stream;

use alloc::format;
use alloc::string::String;
use tessera_api::errno::Errno;
use tessera_api::net::client::{self, Socket};
use tessera_api::net::{self, SockAddr};
use tessera_rt::{println, sys};

pub use testdata::pattern;
pub use user_programs::checks::Checks;

pub const LOCAL: [u8; 4] = [127, 0, 0, 1];

/// Starts a program as a server and waits for it to register `name`.
pub fn start(prog: &str, args: &[&str], name: &str) -> Result<u64, String> {
    start_with(prog, args, name, 0)
}

/// `start`, the server holding `rights` (a driver: `rights::DEVICE`).
pub fn start_with(prog: &str, args: &[&str], name: &str, rights: u64) -> Result<u64, String> {
    let options = tessera_rt::abi::SpawnOptions {
        rights,
        ..tessera_rt::abi::SpawnOptions::DEFAULT
    };
    let pid = sys::spawn(prog, args, &options).map_err(|e| format!("spawn {prog}: {e:?}"))?;
    if sys::wait_for_name(name) != pid {
        sys::stop(pid);
        return Err(format!("{prog} did not register '{name}'"));
    }
    Ok(pid)
}

/// A TCP/IP server of the test's own, which the socket API then uses.
pub fn start_net() -> Result<u64, String> {
    let pid = start("net", &[net::NAME], net::NAME)?;
    client::connect_to(net::NAME).map_err(|e| format!("connect: {e:?}"))?;
    Ok(pid)
}

/// Starts `nettest child <role> <args>`.
pub fn spawn_child(args: &[&str]) -> u64 {
    let mut all = alloc::vec!["child"];
    all.extend_from_slice(args);
    sys::spawn_on("nettest", &all, tessera_rt::abi::ANY_CPU).unwrap_or(0)
}

/// The value of `name` in the server's report.
pub fn stat(name: &str) -> u64 {
    let report = client::stats().unwrap_or_default();
    report
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

/// Waits (up to about `ms` milliseconds) until `cond` holds.
pub fn wait_until(ms: u64, mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..ms / 10 {
        if cond() {
            return true;
        }
        sys::sleep_ns(10_000_000);
    }
    cond()
}

/// A TCP connection to `port` on the loopback, retried while nothing
/// listens there yet (a child starting).
pub fn connect_retry(port: u16) -> Result<Socket, Errno> {
    let mut last = Errno::ECONNREFUSED;
    for _ in 0..300 {
        let s = Socket::tcp()?;
        match s.connect(SockAddr::new(LOCAL, port)) {
            Ok(()) => return Ok(s),
            Err(Errno::ECONNREFUSED) => last = Errno::ECONNREFUSED,
            Err(e) => return Err(e),
        }
        sys::sleep_ns(10_000_000);
    }
    Err(last)
}

/// Receives exactly `buf.len()` bytes.
pub fn recv_exact(s: &Socket, buf: &mut [u8]) -> Result<(), Errno> {
    let mut at = 0;
    while at < buf.len() {
        match s.recv(&mut buf[at..])? {
            0 => return Err(Errno::ECONNRESET),
            n => at += n,
        }
    }
    Ok(())
}

/// A part of the loopback tests: its name and its checks.
type Part = (&'static str, fn(&mut Checks));

/// Every loopback test (or the one named), each on a server of its own.
pub fn run_loopback(only: Option<&str>) -> u32 {
    let mut c = Checks::new("nettest");
    let parts: [Part; 5] = [
        ("stream", stream::run),
        ("datagram", dgram::run),
        ("hostile", hostile::run),
        ("restart", hostile::restart),
        ("keep", hostile::keep),
    ];
    for (name, part) in parts {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let pid = match start_net() {
            Ok(p) => p,
            Err(e) => {
                c.check(false, &e);
                return c.failed;
            }
        };
        let before = c.failed;
        part(&mut c);
        println!(
            "nettest: {name}: {} ({})",
            if c.failed == before { "ok" } else { "FAILED" },
            client::stats()
                .unwrap_or_default()
                .lines()
                .filter(|l| l.starts_with("copied") || l.starts_with("loopback"))
                .collect::<alloc::vec::Vec<_>>()
                .join(", ")
        );
        sys::stop(pid);
    }
    println!("nettest: {} checks passed, {} failed", c.passed, c.failed);
    c.failed
}
