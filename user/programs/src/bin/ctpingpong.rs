//! Concurrent container traffic: makes a box, starts two senders and two
//! receivers (itself again, in other roles) on different CPUs, and checks
//! that every container arrives whole. Each sender fills every word of its
//! container with one value (sender, sequence) and sends by SWAP; each
//! receiver exchanges its own container with a waiting one and checks that
//! all words agree. Usage: ctpingpong <rounds> | ctpingpong send|recv <box> <rounds>
#![no_std]
#![no_main]
use tessera_rt::abi::{ANY_PID, BOX_RECEIVE, BOX_SEND, ContainerMode, SpawnOptions};
use tessera_rt::{println, sys};

const PAGES: u64 = 4;
const WORDS: usize = (PAGES * 512) as usize;

fn words(addr: u64) -> &'static mut [u64] {
    // SAFETY: a container of PAGES pages is attached at `addr` for the whole run.
    unsafe { core::slice::from_raw_parts_mut(addr as *mut u64, WORDS) }
}

fn sender(bx: u64, rounds: u64, me: u64) -> i32 {
    let c = sys::container_create(PAGES).expect("container");
    let addr = sys::container_addr(c).expect("addr");
    for i in 0..rounds {
        words(addr).fill((me << 32) | (i + 1));
        if let Err(e) = sys::container_send(c, bx, 0, ContainerMode::Swap) {
            println!("ctpingpong: send: {e:?}");
            return 1;
        }
    }
    0
}

fn receiver(bx: u64, rounds: u64) -> i32 {
    let c = sys::container_create(PAGES).expect("container");
    let addr = sys::container_addr(c).expect("addr");
    for _ in 0..rounds {
        match sys::container_receive(c, bx, 0, ContainerMode::Swap, 5_000_000_000) {
            Ok(_) => {
                let w = words(addr);
                if w[0] == 0 || w.iter().any(|&x| x != w[0]) {
                    println!("ctpingpong: a container arrived torn");
                    return 1;
                }
            }
            Err(e) => {
                println!("ctpingpong: receive: {e:?}");
                return 1;
            }
        }
    }
    0
}

fn main(args: &[&str]) -> i32 {
    match args {
        [_, "send", bx, rounds] => sender(bx.parse().unwrap_or(0), rounds.parse().unwrap_or(0), sys::getpid()),
        [_, "recv", bx, rounds] => receiver(bx.parse().unwrap_or(0), rounds.parse().unwrap_or(0)),
        [_, rounds] => {
            let bx = sys::box_create(PAGES, 2, 1, 4, 0).expect("box");
            sys::box_grant(bx, ANY_PID, BOX_SEND | BOX_RECEIVE).expect("grant");
            let mut bxs = [0u8; 24];
            let bx_str = sys::fmt_u64(bx, &mut bxs);
            let cpus = sys::sys_info().map_or(1, |i| i.cpus);
            let mut pids = [0u64; 4];
            for (i, role) in ["send", "recv", "send", "recv"].iter().enumerate() {
                let o = SpawnOptions {
                    cpu: i as u64 % cpus,
                    ..SpawnOptions::DEFAULT
                };
                pids[i] = sys::spawn("ctpingpong", &[role, bx_str, rounds], &o).expect("spawn");
            }
            let mut bad = 0;
            for p in pids {
                if sys::wait(p) != Ok(0) {
                    bad += 1;
                }
            }
            i32::from(bad != 0)
        }
        _ => 2,
    }
}

tessera_rt::entry!(main);
