//! The TCP/IP server: `net [name] [address/prefix] [gateway]` serves the
//! socket protocol (`tessera_api::net`) under `name` (default `net`) on
//! smoltcp, with a loopback interface inside the guest and, once a NIC
//! driver plugs in (`tessera_api::nic`), an Ethernet interface at
//! `address` (default QEMU's user network: 10.0.2.15/24 via 10.0.2.2).
//!
//! One process, one thread: every call is served in turn; a call that
//! cannot be answered yet is held (its caller stays stopped, seed 003) and
//! answered after a later turn. The stack's timers (retransmission,
//! delayed ACKs, TIME-WAIT) and the POLL timeouts need a turn at a given
//! time, which a server waiting in `acc` cannot give itself: a child
//! process (`net tick <name>`) keeps an ALARM request at the server and
//! waits for its answer or for the deadline, whichever comes first, then
//! calls TICK. The server answers the ALARM when a sooner deadline comes.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod calls;
mod dgram;
mod driver;
mod icasend;
mod link;
mod pending;
mod server;
mod socket;
mod stack;
mod tcp;
mod watch;

use server::Server;
use smoltcp::wire::{Ipv4Address, Ipv4Cidr};
use tessera_api::net::{self, ENTRIES};
use tessera_api::nic;
use tessera_rt::abi::{self, AccInfo, Error};
use tessera_rt::{println, sys};

/// Entries of the server's own timer child.
const ALARM: u64 = 42;
const TICK: u64 = 43;
const ALL_ENTRIES: u64 = ENTRIES | nic::SERVER_ENTRIES | 1 << ALARM | 1 << TICK;

fn parse_addr(text: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = text.split('.');
    for o in out.iter_mut() {
        *o = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// The timer child: waits for the server's ALARM answer or its deadline.
fn ticker(name: &str) -> i32 {
    let Ok(server) = sys::name_lookup(name) else {
        return 0;
    };
    let mut delay = u64::MAX;
    let mut armed = false;
    let mut reply = [0u8; 8];
    loop {
        if !armed {
            // The answer lands in `reply` when the result is fetched.
            if request_alarm(server, &mut reply).is_err() {
                return 0;
            }
            armed = true;
        }
        match sys::fetch(delay) {
            Ok((_, status)) => {
                armed = false;
                if Error::decode(status).is_err() {
                    return 0;
                }
                delay = u64::from_le_bytes(reply);
            }
            Err(Error::Busy) => match sys::call(server, TICK, &[], &mut reply) {
                Ok(8) => delay = u64::from_le_bytes(reply),
                _ => return 0,
            },
            Err(_) => return 0,
        }
    }
}

/// Sends the ALARM request whose answer lands in `reply`.
fn request_alarm(server: u64, reply: &mut [u8; 8]) -> Result<u64, Error> {
    sys::calls::request(server, ALARM, &[], &mut reply[..] as *mut [u8])
}

fn main(args: &[&str]) -> i32 {
    if let [_, "tick", name] = args {
        return ticker(name);
    }
    let name = args.get(1).copied().unwrap_or(net::NAME);
    let (addr, prefix) = match args.get(2).map(|a| a.split_once('/').unwrap_or((a, "24"))) {
        None => ([10, 0, 2, 15], 24),
        Some((a, p)) => match (parse_addr(a), p.parse::<u8>()) {
            (Some(a), Ok(p)) if p <= 32 => (a, p),
            _ => {
                println!("net: usage: net [name] [address/prefix] [gateway]");
                return 2;
            }
        },
    };
    let gateway = match args.get(3).map(|g| parse_addr(g)) {
        None => [10, 0, 2, 2],
        Some(Some(g)) => g,
        Some(None) => {
            println!("net: bad gateway");
            return 2;
        }
    };
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), prefix);
    let mut server = Server::new(stack::Stack::new(cidr, Ipv4Address::from(gateway)));
    if let Err(e) = sys::name_register(name, ALL_ENTRIES) {
        println!("net: cannot register '{name}': {e:?}");
        return 1;
    }
    let options = abi::SpawnOptions {
        cpu: sys::proc_info(0).map_or(abi::ANY_CPU, |p| p.affinity),
        ..abi::SpawnOptions::DEFAULT
    };
    server.ticker = match sys::spawn("net", &["tick", name], &options) {
        Ok(pid) => pid,
        Err(e) => {
            println!("net: cannot start the timer: {e:?}");
            return 1;
        }
    };
    server.announce();
    let mut info = AccInfo::default();
    loop {
        let rid = match sys::acc(ALL_ENTRIES, &mut info) {
            Ok(r) => r,
            Err(_) => return 1,
        };
        let turn = match info.entry {
            ALARM | TICK if info.caller != server.ticker => {
                let _ = sys::rv_fail(rid, Error::Denied);
                false
            }
            ALARM => {
                server.alarm = Some(rid);
                server.arm_alarm();
                false
            }
            TICK => {
                let delay = server.tick();
                let _ = sys::endr(rid, &delay.to_le_bytes());
                false
            }
            nic::ATTACH => {
                match server.attach(&info) {
                    Ok(()) => {
                        let _ = sys::endr(rid, &[]);
                    }
                    Err(e) => {
                        let _ = sys::rv_fail(rid, e);
                    }
                }
                true
            }
            nic::FRAMES => {
                if let Err(e) = server.frames(rid, &info) {
                    let _ = sys::rv_fail(rid, e);
                }
                false
            }
            _ => server.serve(rid, &info),
        };
        if turn {
            server.turn();
        }
    }
}

tessera_rt::entry!(main);
