//! AnT's batch requests (seed 002 figs 7/8 and 9): the cost of n requests
//! as `callsync` × n, as one `ncallsync(n)`, and as `ncallsync(n)` through
//! the distribution server, n = 1…10, with everything on CPU 0 and again
//! (metrics `spread_…`) with the servers spread as in the paper's 3-core
//! case (client and distribution server on CPU 0, five servers each on
//! CPUs 1 and 2, request i to server i); and ten requests that each burn 3 ms
//! of CPU, as `callsync` × 10 against `ncallsync(2)` × 5 with the two
//! servers on different CPUs (a speed-up needs plain multi-threaded TCG:
//! under icount every CPU's instructions add to one clock). Last, fig. 12's
//! file transfer through the file and TCP/IP servers (`xferbench`).
//! `BENCH,batch,<metric>,<n>,<value>,ns`. Usage: batchbench [short]
//! [fig12] (fig12: that series alone).
#![no_std]
#![no_main]
use tessera_api::{distributor, echo};
use tessera_rt::abi::BatchEntry;
use tessera_rt::{println, sys};

fn batch(
    list: &mut [BatchEntry],
    targets: &[u64],
    entry: u64,
    msgs: &[[u8; 32]],
    lens: &[usize],
    replies: &mut [[u8; 64]],
) {
    for i in 0..list.len() {
        list[i] = BatchEntry {
            server: targets[i % targets.len()],
            entry,
            msg: msgs[i].as_ptr() as u64,
            msg_len: lens[i] as u64,
            reply: replies[i].as_mut_ptr() as u64,
            reply_cap: 64,
            status: 0,
        };
    }
    let _ = sys::ncallsync(list);
}

/// System calls, context switches and IPIs so far (fig. 8's breakdown as
/// counts: they explain the times).
fn counts() -> [u64; 4] {
    sys::sys_info().map_or([0; 4], |i| [i.syscalls, i.context_switches, i.ipis, i.heap_allocations])
}

/// CPU time the processes `pids` have had so far (kernel and user).
fn cpu_ns(pids: &[u64]) -> u64 {
    pids.iter()
        .filter_map(|&p| sys::proc_info(p).ok())
        .map(|i| i.cpu_ns)
        .sum()
}

/// Prints, per batch, what happened between `before` and now, and the CPU
/// time of the servers `servers.0` since it was `servers.1` (taken before
/// `before`, so that its system calls are not counted).
fn print_counts(prefix: &str, series: &str, n: usize, before: [u64; 4], reps: u64, servers: (&[u64], u64)) {
    let after = counts();
    for (i, what) in ["syscalls", "switches", "ipis", "allocs"].iter().enumerate() {
        let per = (after[i] - before[i]) as f64 / reps as f64;
        println!("BENCH,batch,{prefix}{series}_{what},{n},{per:.1},count");
    }
    let server = (cpu_ns(servers.0) - servers.1) / reps;
    println!("BENCH,batch,{prefix}{series}_server,{n},{server},ns");
}

/// Fig. 7/8: n = 1…10 requests of 8 bytes to `echo` servers, as n
/// blocking calls, as one `ncallsync(n)`, and as one `ncallsync(n)`
/// through the distribution server `dist`; request i goes to
/// `targets[i % targets.len()]` (at most ten, by pid, as names give
/// them). Metrics are `<prefix><series>`.
fn overhead(prefix: &str, targets: &[u64], dist: u64, reps: u64) {
    // Every server, for their CPU time.
    let mut all = [0u64; 11];
    all[..targets.len()].copy_from_slice(targets);
    all[targets.len()] = dist;
    let pids = &all[..=targets.len()];
    let mut msgs = [[0u8; 32]; 10];
    let mut dmsgs = [[0u8; 32]; 10];
    let lens = [8usize; 10];
    let mut dlens = [0usize; 10];
    for i in 0..10 {
        msgs[i][..8].copy_from_slice(&(i as u64).to_le_bytes());
        let target = targets[i % targets.len()];
        dlens[i] = distributor::message(&mut dmsgs[i], target, echo::ECHO, &msgs[i][..8]);
    }
    let mut replies = [[0u8; 64]; 10];
    let mut list = [BatchEntry::default(); 10];
    for n in 1..=10usize {
        let t0 = sys::rdtsc();
        for _ in 0..reps {
            for (i, m) in msgs.iter().take(n).enumerate() {
                let _ = sys::call(targets[i % targets.len()], echo::ECHO, &m[..8], &mut replies[0]);
            }
        }
        println!(
            "BENCH,batch,{prefix}callsync_x_n,{n},{},ns",
            sys::tsc_to_ns(sys::rdtsc() - t0) / reps
        );
        let s0 = cpu_ns(pids);
        let (c0, t0) = (counts(), sys::rdtsc());
        for _ in 0..reps {
            batch(&mut list[..n], targets, echo::ECHO, &msgs, &lens, &mut replies);
        }
        println!(
            "BENCH,batch,{prefix}ncallsync,{n},{},ns",
            sys::tsc_to_ns(sys::rdtsc() - t0) / reps
        );
        print_counts(prefix, "ncallsync", n, c0, reps, (pids, s0));
        let s0 = cpu_ns(pids);
        let (c0, t0) = (counts(), sys::rdtsc());
        for _ in 0..reps {
            batch(
                &mut list[..n],
                &[dist],
                distributor::DISTRIBUTE,
                &dmsgs,
                &dlens,
                &mut replies,
            );
        }
        println!(
            "BENCH,batch,{prefix}ncallsync_distributor,{n},{},ns",
            sys::tsc_to_ns(sys::rdtsc() - t0) / reps
        );
        print_counts(prefix, "ncallsync_distributor", n, c0, reps, (pids, s0));
    }
}

fn main(args: &[&str]) -> i32 {
    let short = args.contains(&"short");
    if args.contains(&"fig12") {
        return if file_transfer(short) { 0 } else { 1 };
    }
    let reps = if short { 2 } else { 200 };
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let _ = sys::set_affinity(0, 0);
    // Overhead on one CPU: everything on CPU 0.
    let one = sys::spawn_on("echo", &["b1"], 0).expect("spawn");
    let dist = sys::spawn_on("distributor", &[], 0).expect("spawn");
    // (Servers are called by pid; their names say they are ready.)
    sys::wait_for_name("b1");
    sys::wait_for_name(distributor::NAME);
    overhead("", &[one], dist, reps);
    let _ = sys::kill(one);
    let _ = sys::wait(one);
    // The paper's 3-core case: the client and the distribution server on
    // CPU 0, ten servers taking turns between CPUs 1 and 2 (five on each),
    // so that a batch's requests go to both (modulo the number of CPUs).
    const SPREAD: [&str; 10] = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"];
    let mut spread = [0u64; 10];
    for (i, name) in SPREAD.iter().enumerate() {
        spread[i] = sys::spawn_on("echo", &[name], (1 + i as u64 % 2) % cpus).expect("spawn");
    }
    for name in SPREAD {
        sys::wait_for_name(name);
    }
    overhead("spread_", &spread, dist, reps);
    for p in spread.into_iter().chain([dist]) {
        let _ = sys::kill(p);
        let _ = sys::wait(p);
    }
    let lens = [8usize; 10];
    let mut replies = [[0u8; 64]; 10];
    let mut list = [BatchEntry::default(); 10];
    // Fig. 9: ten requests of 3 ms work on two servers (the paper's), and
    // the same with 30 ms: on a host whose idle cores take milliseconds to
    // wake (a virtual machine's), the longer work shows the speed-up the
    // mechanism gives apart from that.
    let w = [
        sys::spawn_on("echo", &["w1"], 1 % cpus).expect("spawn"),
        sys::spawn_on("echo", &["w2"], 2 % cpus).expect("spawn"),
    ];
    let targets = [sys::wait_for_name("w1"), sys::wait_for_name("w2")];
    // Each way is timed ROUNDS times, the two ways taking turns, and the
    // median is the figure: a host hiccup (a virtual CPU's thread waiting
    // for a host core) then spoils one round, not the figure. The 30 ms
    // requests, long against such hiccups, are timed once.
    const ROUNDS: usize = 11;
    for (label, work_us, rounds) in [("work", 3000u64, ROUNDS), ("work30", 30_000, 1)] {
        let work_us = if short { work_us / 30 } else { work_us };
        let rounds = if short { 1 } else { rounds };
        let mut wmsgs = [[0u8; 32]; 10];
        for m in wmsgs.iter_mut() {
            m[..8].copy_from_slice(&work_us.to_le_bytes());
        }
        let (mut one_by_one, mut batched) = ([0u64; ROUNDS], [0u64; ROUNDS]);
        // Each call and each batch on its own, and how many requests the
        // host held up: a WORK reply carries the TSC at the start and the
        // end of the work, which ends at a fixed TSC, so work that took
        // longer had its virtual CPU taken away by the host meanwhile.
        let (mut calls, mut batches) = ([0u64; ROUNDS * 10], [0u64; ROUNDS * 5]);
        let mut held = 0;
        let tsc_us = sys::clock().tsc_hz / 1_000_000;
        let mut was_held = |reply: &[u8; 64]| {
            let at = |o: usize| u64::from_le_bytes(reply[o..o + 8].try_into().unwrap_or([0; 8]));
            if at(8).saturating_sub(at(0)) > (work_us + work_us / 10 + 20) * tsc_us {
                held += 1;
            }
        };
        for r in 0..rounds {
            let t0 = sys::now_ns();
            for (i, m) in wmsgs.iter().enumerate() {
                let t = sys::now_ns();
                let _ = sys::call(targets[i % 2], echo::WORK, &m[..8], &mut replies[0]);
                calls[r * 10 + i] = sys::now_ns() - t;
                was_held(&replies[0]);
            }
            one_by_one[r] = sys::now_ns() - t0;
            let t0 = sys::now_ns();
            for b in 0..5 {
                let t = sys::now_ns();
                batch(&mut list[..2], &targets, echo::WORK, &wmsgs, &lens, &mut replies);
                batches[r * 5 + b] = sys::now_ns() - t;
                was_held(&replies[0]);
                was_held(&replies[1]);
            }
            batched[r] = sys::now_ns() - t0;
        }
        let median = |v: &mut [u64]| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        println!(
            "BENCH,batch,{label}_callsync_x10,{cpus},{},ns",
            median(&mut one_by_one[..rounds])
        );
        println!(
            "BENCH,batch,{label}_ncallsync2_x5,{cpus},{},ns",
            median(&mut batched[..rounds])
        );
        println!(
            "BENCH,batch,{label}_call_median,{cpus},{},ns",
            median(&mut calls[..rounds * 10])
        );
        println!(
            "BENCH,batch,{label}_batch_median,{cpus},{},ns",
            median(&mut batches[..rounds * 5])
        );
        println!("BENCH,batch,{label}_held,{cpus},{held},count");
        println!("BENCH,batch,{label}_requests,{cpus},{},count", rounds * 20);
    }
    for p in w {
        let _ = sys::kill(p);
        let _ = sys::wait(p);
    }
    if file_transfer(short) { 0 } else { 1 }
}

/// Fig. 12, the file transfer through the file and TCP/IP servers: its
/// own program (`xferbench`), whose BENCH lines are this experiment's.
fn file_transfer(short: bool) -> bool {
    let args: &[&str] = if short { &["short"] } else { &[] };
    let Ok(pid) = sys::spawn_on("xferbench", args, 0) else {
        println!("batchbench: FAILED cannot start xferbench");
        return false;
    };
    sys::wait(pid) == Ok(0)
}
tessera_rt::entry!(main);
