//! With a NIC on QEMU's user network (a test boot with one): the driver
//! plugs into a TCP/IP server, the gateway 10.0.2.2 answers pings, a TCP
//! connection through the user network reaches the echo service the
//! harness set up at 10.0.2.100:7 (QEMU runs `cat` for it), no frame was
//! copied on its way, and the driver and the TCP/IP server each survive
//! the other's death.

use super::*;
use tessera_api::net::client::poll;
use tessera_api::net::*;
use tessera_api::nic;

const GATEWAY: [u8; 4] = [10, 0, 2, 2];
const ECHO: SockAddr = SockAddr::new([10, 0, 2, 100], 7);

pub fn run() -> u32 {
    let mut c = Checks::new("nettest");
    let net = match start_net() {
        Ok(p) => p,
        Err(e) => {
            c.check(false, &e);
            return c.failed;
        }
    };
    // The driver runs under a keeper (bin/keep.rs), as `keep virtio-net`
    // in a servers file: its restart below is the keeper's, not the test's.
    let options = tessera_rt::abi::SpawnOptions {
        rights: tessera_rt::abi::rights::DEVICE,
        ..tessera_rt::abi::SpawnOptions::DEFAULT
    };
    let keeper = match sys::spawn("keep", &["virtio-net", "rights", "device", net::NAME], &options) {
        Ok(k) => k,
        Err(e) => {
            c.check(false, &alloc::format!("spawn keep: {e:?}"));
            sys::stop(net);
            return c.failed;
        }
    };
    let driver = sys::wait_for_name(nic::DRIVER_NAME);
    c.check(wait_until(3000, || stat("nic_attached") == 1), "the driver attached");
    let ok = ping(3);
    c.check(ok, "the gateway answers pings");
    echo(&mut c, b"over the user network");
    let report = driver_stats();
    c.check(value(&report, "bounced_bytes") == 0, "no frame bounced through a copy");
    c.check(value(&report, "pages_moved") > 0, "frames moved as pages");
    println!(
        "nettest: driver: {}",
        report.lines().collect::<alloc::vec::Vec<_>>().join(", ")
    );

    // The driver dies: the link goes down; the keeper starts a new driver,
    // which brings it back.
    let _ = sys::kill(driver);
    c.check(
        wait_until(3000, || stat("nic_attached") == 0 || ping_once(0) == Some(false)),
        "the link went down",
    );
    c.check(
        wait_until(3000, || {
            sys::name_lookup(nic::DRIVER_NAME).is_ok_and(|p| p != driver && sys::alive(p))
        }),
        "the keeper starts a new driver",
    );
    c.check(wait_until(3000, || stat("nic_attached") == 1), "and it attaches");
    let ok = ping(3);
    c.check(ok, "pings after the driver's restart");

    // The TCP/IP server dies: a new one finds the driver.
    sys::stop(net);
    let net = match start_net() {
        Ok(p) => p,
        Err(e) => {
            c.check(false, &e);
            return c.failed;
        }
    };
    c.check(
        wait_until(3000, || stat("nic_attached") == 1),
        "the driver attached to the new server",
    );
    let ok = ping(3);
    c.check(ok, "pings after the server's restart");
    echo(&mut c, b"after both restarts");
    // The keeper first, so that it does not start the driver again.
    sys::stop(keeper);
    if let Ok(d) = sys::name_lookup(nic::DRIVER_NAME) {
        let _ = sys::kill(d);
    }
    sys::stop(net);
    println!("nettest: {} checks passed, {} failed", c.passed, c.failed);
    c.failed
}

fn driver_stats() -> alloc::string::String {
    let Ok(pid) = sys::name_lookup(nic::DRIVER_NAME) else {
        return Default::default();
    };
    let mut buf = alloc::vec![0u8; 2048];
    let n = sys::call(pid, nic::STATS, &[], &mut buf).unwrap_or(0);
    alloc::string::String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn value(report: &str, name: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

/// One echo request to the gateway: Some(true) if answered within half a
/// second (None: no socket).
fn ping_once(seq: u16) -> Option<bool> {
    let p = Socket::ping().ok()?;
    let mut req = alloc::vec![8u8, 0, 0, 0, 0, 0];
    req.extend_from_slice(&seq.to_be_bytes());
    req.extend_from_slice(b"tessera");
    if p.send_to(&req, SockAddr::new(GATEWAY, 0)).is_err() {
        return Some(false);
    }
    let mut fds = [PollFd {
        socket: p.id(),
        events: POLLIN,
        revents: 0,
    }];
    if poll(&mut fds, Some(500_000_000)) != Ok(1) {
        return Some(false);
    }
    let mut reply = [0u8; 64];
    Some(matches!(p.recv_from(&mut reply), Ok((n, from)) if n == req.len() && reply[0] == 0 && from.addr == GATEWAY))
}

/// `want` answers out of a few tries (the first may wait for ARP).
fn ping(want: u32) -> bool {
    let mut got = 0;
    for seq in 0..want + 5 {
        if ping_once(seq as u16) == Some(true) {
            got += 1;
            if got == want {
                return true;
            }
        }
    }
    println!("nettest: {got} of {want} pings answered");
    false
}

fn echo(c: &mut Checks, msg: &[u8]) {
    let r = (|| -> Result<bool, Errno> {
        let s = Socket::tcp()?;
        s.connect(ECHO)?;
        s.send_all(msg)?;
        let mut back = alloc::vec![0u8; msg.len()];
        recv_exact(&s, &mut back)?;
        Ok(back == msg)
    })();
    c.check(
        r == Ok(true),
        &alloc::format!("TCP echo through the user network: {r:?}"),
    );
}

/// The web server on the root image's files for `count` requests (the
/// harness makes them from the host, through the forwarded port, once it
/// reads `httpd: serving`); its exit status is the test's.
pub fn http(count: &str) -> u32 {
    let stack = match crate::fsstack::Stack::start("root", 256, 0, true) {
        Ok(s) => s,
        Err(e) => {
            println!("nettest: FAILED file servers: {e}");
            return 1;
        }
    };
    let failed = (|| {
        let net = start_net().ok()?;
        let driver = start_with(
            "virtio-net",
            &[net::NAME],
            nic::DRIVER_NAME,
            tessera_rt::abi::rights::DEVICE,
        )
        .ok()?;
        if !wait_until(3000, || stat("nic_attached") == 1) {
            return None;
        }
        let httpd = sys::spawn_on("httpd", &["80", "/", count], tessera_rt::abi::ANY_CPU).ok()?;
        let status = sys::wait(httpd).ok()?;
        // The last answer may still be on its way out when the server's
        // program ends (its socket an orphan the stack drains): stopping
        // the stack now would cut it off from the host.
        wait_until(3000, || stat("orphans") == 0);
        println!(
            "nettest: {}",
            client::stats()
                .unwrap_or_default()
                .lines()
                .collect::<alloc::vec::Vec<_>>()
                .join(", ")
        );
        sys::stop(driver);
        sys::stop(net);
        Some(status)
    })();
    stack.stop();
    match failed {
        Some(0) => 0,
        other => {
            println!("nettest: FAILED the web server ended with {other:?}");
            1
        }
    }
}
