//! Checks AnT's batch requests: `ncallsync` to two echo servers on
//! different CPUs, batches of 1 to 64, every reply matching its request in
//! order and content; a member aimed at a missing server fails alone while
//! the others get their results; the same through the distribution server.
//! Exits 0 if all held.
#![no_std]
#![no_main]
use tessera_api::{distributor, echo};
use tessera_rt::abi::{BatchEntry, Error};
use tessera_rt::{println, sys};

const N: usize = 64;

fn main(_args: &[&str]) -> i32 {
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let pids = [
        sys::spawn_on("echo", &["e1"], 1 % cpus).expect("spawn"),
        sys::spawn_on("echo", &["e2"], 2 % cpus).expect("spawn"),
        sys::spawn_on("distributor", &[], 0).expect("spawn"),
    ];
    let servers = [sys::wait_for_name("e1"), sys::wait_for_name("e2")];
    let dist = sys::wait_for_name(distributor::NAME);
    let mut failures = 0;
    let mut msgs = [[0u8; 16]; N];
    let mut dmsgs = [[0u8; 32]; N];
    let mut replies = [[0u8; 16]; N];
    for (i, m) in msgs.iter_mut().enumerate() {
        m[..8].copy_from_slice(&(i as u64 * 0x0101_0101 + 7).to_le_bytes());
    }
    for via_distributor in [false, true] {
        for n in [1usize, 2, 7, 16, 64] {
            let mut list = [BatchEntry::default(); N];
            for (i, e) in list.iter_mut().enumerate().take(n) {
                let server = servers[i % 2];
                let (target, msg, len) = if via_distributor {
                    let len = distributor::message(&mut dmsgs[i], server, echo::ECHO, &msgs[i]);
                    (dist, dmsgs[i].as_ptr(), len)
                } else {
                    (server, msgs[i].as_ptr(), 16)
                };
                *e = BatchEntry {
                    server: target,
                    entry: if via_distributor {
                        distributor::DISTRIBUTE
                    } else {
                        echo::ECHO
                    },
                    msg: msg as u64,
                    msg_len: len as u64,
                    reply: replies[i].as_mut_ptr() as u64,
                    reply_cap: 16,
                    status: 0,
                };
            }
            replies = [[0u8; 16]; N];
            let r = sys::ncallsync(&mut list[..n]);
            let ok = r == Ok(0) && (0..n).all(|i| list[i].status == 16 && replies[i] == msgs[i]);
            if !ok {
                println!("batchtest: batch of {n} (distributor: {via_distributor}) gave {r:?}");
                failures += 1;
            }
        }
    }
    // One member to a missing server: it alone fails.
    let mut list = [BatchEntry::default(); 3];
    for (i, e) in list.iter_mut().enumerate() {
        *e = BatchEntry {
            server: if i == 1 { 999_999 } else { servers[0] },
            entry: echo::ECHO,
            msg: msgs[i].as_ptr() as u64,
            msg_len: 16,
            reply: replies[i].as_mut_ptr() as u64,
            reply_cap: 16,
            status: 0,
        };
    }
    let r = sys::ncallsync(&mut list);
    if r != Err(Error::NotFound)
        || Error::decode(list[1].status) != Err(Error::NotFound)
        || list[0].status != 16
        || list[2].status != 16
    {
        println!("batchtest: a failing member: {r:?} {:?}", list.map(|e| e.status as i64));
        failures += 1;
    }
    // Bad batches are refused whole.
    if sys::ncallsync(&mut []) != Err(Error::Invalid) {
        failures += 1;
    }
    for p in pids {
        let _ = sys::kill(p);
        let _ = sys::wait(p);
    }
    println!("batchtest: {failures} failure(s)");
    i32::from(failures != 0)
}
tessera_rt::entry!(main);
