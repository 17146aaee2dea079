//! ICA moves racing with exits: starts workers on different CPUs that
//! make one-page ICAs and move them, as fast as they can, to the parent
//! and to the workers started before them; meanwhile the parent kills the
//! workers one by one, the earliest first, so that moves keep arriving at
//! processes that are ending. Every move must either land or be refused
//! with an error; nothing may crash, hang or stay behind (the kernel test
//! around it counts the containers). Exits 0 if the workers all ended.
//! Usage: icastorm <workers> <rounds> | icastorm worker <rounds> <pid>...
#![no_std]
#![no_main]
use tessera_rt::abi::ANY_PID;
use tessera_rt::{println, sys};

const MAX_WORKERS: usize = 8;

fn worker(rounds: u64, targets: &[u64]) -> i32 {
    if sys::peer_grant(ANY_PID).is_err() {
        return 1;
    }
    for i in 0..rounds {
        let Ok(ica) = sys::ica_create(1) else {
            continue;
        };
        // Try the targets in turn until one takes the ICA; a target that
        // has ended refuses it, and then it stays here.
        for k in 0..targets.len() {
            let t = targets[(i as usize + k) % targets.len()];
            if sys::ica_move(ica, t).is_ok() {
                break;
            }
        }
    }
    0
}

fn main(args: &[&str]) -> i32 {
    match args {
        [_, "worker", rounds, targets @ ..] => {
            let mut pids = [0u64; MAX_WORKERS + 1];
            let n = targets.len().min(pids.len());
            for (p, t) in pids.iter_mut().zip(targets) {
                *p = t.parse().unwrap_or(0);
            }
            worker(rounds.parse().unwrap_or(0), &pids[..n])
        }
        [_, workers, rounds] => {
            let workers = workers.parse::<usize>().unwrap_or(4).clamp(1, MAX_WORKERS);
            if sys::peer_grant(ANY_PID).is_err() {
                return 1;
            }
            let cpus = sys::sys_info().map_or(1, |i| i.cpus);
            // Each worker's targets: the parent and the workers before it.
            let mut bufs = [[0u8; 24]; MAX_WORKERS + 1];
            let mut pids = [0u64; MAX_WORKERS + 1];
            pids[0] = sys::getpid();
            for w in 0..workers {
                let mut strs: [&str; MAX_WORKERS + 3] = [""; MAX_WORKERS + 3];
                strs[0] = "worker";
                strs[1] = rounds;
                for (k, buf) in bufs.iter_mut().take(w + 1).enumerate() {
                    strs[2 + k] = sys::fmt_u64(pids[k], buf);
                }
                match sys::spawn_on("icastorm", &strs[..w + 3], w as u64 % cpus) {
                    Ok(pid) => pids[w + 1] = pid,
                    Err(e) => {
                        println!("icastorm: spawn: {e:?}");
                        return 1;
                    }
                }
            }
            // The earliest first: the later ones keep moving ICAs to it
            // while it ends.
            sys::sleep_ns(2_000_000);
            let mut live = 0;
            for &pid in &pids[1..workers + 1] {
                // A worker that is still moving ICAs ends killed; one that
                // finished ends with 0.
                let _ = sys::kill(pid);
                if sys::wait(pid).is_ok_and(|s| s != 0) {
                    live += 1;
                }
                sys::sleep_ns(500_000);
            }
            println!("icastorm: {live} of {workers} workers were killed while moving ICAs");
            0
        }
        _ => {
            println!("usage: icastorm <workers> <rounds>");
            1
        }
    }
}
tessera_rt::entry!(main);
