//! The network servers' tests, each run in a boot of its own (xtask's
//! program tests): `nettest loop` (TCP and UDP over the loopback, many and
//! abandoned connections, hostile calls, exhaustion, a killed and
//! restarted TCP/IP server) and `nettest nic` (with QEMU's user network:
//! ping the gateway, a TCP connection through it), and `nettest http <n>`
//! (the web server on the root image for `n` requests from the host).
//! Each starts its own servers and exits 0 if every check held. The other
//! forms are the roles of the child processes the tests start.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;
#[path = "../nettest/mod.rs"]
mod nettest;

use tessera_rt::println;

fn main(args: &[&str]) -> i32 {
    let failed = match args {
        [_, "loop"] => nettest::run_loopback(None),
        [_, "loop", part] => nettest::run_loopback(Some(part)),
        [_, "nic"] => nettest::nic::run(),
        [_, "http", count] => nettest::nic::http(count),
        [_, "child", role, rest @ ..] => return nettest::child::run(role, rest),
        _ => {
            println!("usage: nettest loop [part] | nic | http <requests>");
            return 2;
        }
    };
    i32::from(failed != 0)
}
tessera_rt::entry!(main);
