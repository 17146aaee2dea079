//! Rendezvous benchmarks (issue: servers and synchronous IPC; seed 003 and
//! the basis of seed 002 fig. 7): round trip call + reply with 0 and 64
//! bytes to a server on the same CPU and on another one; callsync against
//! non-blocking request + fetch; multi-stage requests through 2 and 3
//! servers, with direct return (forward) and without (nested calls).
//! Times from the TSC (no clock system call inside the measurement).
//! `BENCH,ipc,<metric>,<param>,<value>,ns`. Usage: rvbench [short]
#![no_std]
#![no_main]
use tessera_api::echo;
use tessera_rt::abi::{ANY_CPU, SpawnOptions};
use tessera_rt::{println, sys};

fn start(prog: &str, args: &[&str], cpu: u64) -> u64 {
    let o = SpawnOptions {
        cpu,
        ..SpawnOptions::DEFAULT
    };
    sys::spawn(prog, args, &o).expect("spawn")
}

fn find(name: &str) -> u64 {
    for _ in 0..2000 {
        if let Ok(pid) = sys::name_lookup(name) {
            return pid;
        }
        sys::sleep_ns(1_000_000);
    }
    0
}

fn stop(pid: u64) {
    let _ = sys::kill(pid);
    let _ = sys::wait(pid);
}

fn round_trips(server: u64, bytes: usize, n: u64) -> u64 {
    let msg = [7u8; 64];
    let mut reply = [0u8; 64];
    let _ = echo::echo(server, &msg[..bytes], &mut reply);
    let t0 = sys::rdtsc();
    for _ in 0..n {
        let _ = echo::echo(server, &msg[..bytes], &mut reply);
    }
    sys::tsc_to_ns(sys::rdtsc() - t0) / n
}

fn main(args: &[&str]) -> i32 {
    let short = args.get(1) == Some(&"short");
    let n = if short { 20 } else { 2000 };
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    // The client runs on CPU 0 throughout.
    let _ = sys::set_affinity(0, 0);

    let same = start("echo", &[], 0);
    let server = find(echo::NAME);
    for bytes in [0usize, 64] {
        println!(
            "BENCH,ipc,round_trip_same_cpu,{bytes},{},ns",
            round_trips(server, bytes, n)
        );
    }
    // callsync (a blocking call) against a request and a later fetch.
    let msg = [1u8; 64];
    let mut reply = [0u8; 64];
    let t0 = sys::rdtsc();
    for _ in 0..n {
        // SAFETY: `reply` outlives the fetch right after.
        let _ = unsafe { sys::request(server, echo::ECHO, &msg, reply.as_mut_ptr(), 64) };
        let _ = sys::fetch(1_000_000_000);
    }
    println!(
        "BENCH,ipc,request_then_fetch,64,{},ns",
        sys::tsc_to_ns(sys::rdtsc() - t0) / n
    );
    println!("BENCH,ipc,callsync,64,{},ns", round_trips(server, 64, n));
    stop(same);

    if cpus > 1 {
        let other = start("echo", &[], 1);
        let server = find(echo::NAME);
        let _ = other;
        for bytes in [0usize, 64] {
            println!(
                "BENCH,ipc,round_trip_cross_cpu,{bytes},{},ns",
                round_trips(server, bytes, n)
            );
        }
        stop(other);
    }

    // ICA re-attachment (AnT): move n fresh ICAs of each size to a child.
    let child = start("sleeper", &["600000"], 0);
    for pages in [1u64, 16, 256] {
        let count = if short { 2 } else { 50 };
        let mut icas = [0u64; 50];
        for i in icas.iter_mut().take(count) {
            *i = sys::ica_create(pages).expect("ica");
        }
        let t0 = sys::rdtsc();
        for i in icas.iter().take(count) {
            let _ = sys::ica_move(*i, child);
        }
        println!(
            "BENCH,ipc,ica_remap,{pages},{},ns",
            sys::tsc_to_ns(sys::rdtsc() - t0) / count as u64
        );
    }
    stop(child);

    // Multi-stage: AP -> relay(s) -> echo, all on CPU 0.
    let echo_pid = start("echo", &[], 0);
    find(echo::NAME);
    for (mode, label) in [("forward", "direct_return"), ("nested", "no_direct_return")] {
        for stages in [2usize, 3] {
            // stages = servers in the chain, echo included.
            let names = [["s1", "echo", ""], ["s1", "s2", "echo"]];
            let chain = &names[stages - 2];
            let mut relays = [0u64; 2];
            for i in 0..stages - 1 {
                relays[i] = start("relay", &[chain[i], chain[i + 1], mode], 0);
            }
            let first = find(chain[0]);
            for name in chain.iter().take(stages - 1) {
                find(name);
            }
            let _ = sys::call(first, 0, &msg, &mut reply);
            let t0 = sys::rdtsc();
            for _ in 0..n {
                let _ = sys::call(first, 0, &msg, &mut reply);
            }
            println!(
                "BENCH,ipc,multistage_{label},{stages},{},ns",
                sys::tsc_to_ns(sys::rdtsc() - t0) / n
            );
            for r in relays.iter().take(stages - 1) {
                stop(*r);
            }
        }
    }
    stop(echo_pid);
    let _ = ANY_CPU;
    0
}
tessera_rt::entry!(main);
