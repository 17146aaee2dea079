//! keep, the restarter of an OS server: starts the server, waits for its
//! end, reports it on the console and starts it again, so that a TCP/IP
//! server or a driver that died comes back without a reboot (AnT: a server
//! is a process like any other; its death is one process's end).
//!
//! Usage: `keep [-n LIMIT] SERVER-LINE`, the line as a servers file has it
//! (`keep virtio-net cpu any rights device net` there: init starts the
//! keeper with the line's CPU and rights, and the keeper the server).
//! A server that ends with status 0 ended by itself and is not restarted.
//! Restarts come after a pause that doubles from 100 ms to 5 s while the
//! server keeps dying within a second of its start, and stop after LIMIT
//! restarts in a row of such quick deaths (default 10): a server that
//! cannot start is reported, not restarted forever. The clients of a
//! server that died learn it from their next call to it (the kernel
//! answers `NotFound`; the socket library and the Linux personality make
//! that `ENETDOWN`) and reach the new server by its name.
#![no_std]
#![no_main]
extern crate alloc;

use tessera_conf::servers;
use tessera_rt::abi::{self, SpawnOptions};
use tessera_rt::{println, sys};

const FIRST_PAUSE_NS: u64 = 100_000_000;
const LONGEST_PAUSE_NS: u64 = 5_000_000_000;
/// A server that lived this long was up: its next death starts afresh.
const QUICK_DEATH_NS: u64 = 1_000_000_000;
const DEFAULT_LIMIT: u32 = 10;

fn main(args: &[&str]) -> i32 {
    let (limit, rest) = match args.get(1..).unwrap_or(&[]) {
        ["-n", n, rest @ ..] => match n.parse::<u32>() {
            Ok(n) => (n, rest),
            Err(_) => return usage(),
        },
        rest => (DEFAULT_LIMIT, rest),
    };
    let line = rest.join(" ");
    let placement = match servers::parse(&line) {
        Ok(Some(p)) => p,
        _ => return usage(),
    };
    let (server, server_args) = (placement.server, &placement.args[..]);
    let options = SpawnOptions {
        cpu: placement.cpu,
        rights: placement.rights,
        ..SpawnOptions::DEFAULT
    };
    let (mut pause, mut quick) = (FIRST_PAUSE_NS, 0u32);
    let mut starts = 0u64;
    loop {
        let t0 = sys::now_ns();
        let pid = match sys::spawn(server, server_args, &options) {
            Ok(pid) => pid,
            Err(e) => {
                println!("keep: cannot start {server}: {e:?}");
                return 1;
            }
        };
        starts += 1;
        if starts > 1 {
            println!("keep: {server} started again as pid {pid} (start {starts})");
        }
        let status = sys::wait(pid).unwrap_or(abi::KILLED_STATUS);
        // A server that ended by itself with status 0 is done (a driver
        // with no device), not dead.
        if status == 0 {
            return 0;
        }
        let lived = sys::now_ns() - t0;
        if status == abi::KILLED_STATUS {
            println!("keep: {server} (pid {pid}) was killed");
        } else {
            println!("keep: {server} (pid {pid}) ended with status {status}");
        }
        if lived >= QUICK_DEATH_NS {
            (pause, quick) = (FIRST_PAUSE_NS, 0);
        } else {
            quick += 1;
            if quick > limit {
                println!("keep: {server} died {quick} times within a second of its start: not restarted");
                return 1;
            }
        }
        sys::sleep_ns(pause);
        pause = (pause * 2).min(LONGEST_PAUSE_NS);
    }
}

fn usage() -> i32 {
    println!("usage: keep [-n LIMIT] SERVER [cpu N|any] [rights R,...] [ARGS...]");
    2
}

tessera_rt::entry!(main);
