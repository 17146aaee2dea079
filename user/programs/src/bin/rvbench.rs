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
use tessera_rt::abi::{ANY_CPU, Control};
use tessera_rt::ring::Ring;
use tessera_rt::{println, sys};

/// One-page ICAs moved in the remap benchmark (other sizes: 50).
const MAX_ICAS: usize = 200;

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

    let same = sys::spawn_on("echo", &[], 0).expect("spawn");
    let server = sys::wait_for_name(echo::NAME);
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
    // The same through the rings (AnT's control blocks): callsync, and a
    // request sent without waiting whose result is taken from the ring.
    if let Ok(mut ring) = Ring::open() {
        let request = Control {
            server,
            entry: echo::ECHO,
            msg: msg.as_ptr() as u64,
            msg_len: 64,
            reply: reply.as_mut_ptr() as u64,
            reply_cap: 64,
            ..Control::default()
        };
        let _ = ring.call(&request);
        let t0 = sys::rdtsc();
        for _ in 0..n {
            let _ = ring.call(&request);
        }
        println!(
            "BENCH,ipc,ring_callsync,64,{},ns",
            sys::tsc_to_ns(sys::rdtsc() - t0) / n
        );
        let t0 = sys::rdtsc();
        for _ in 0..n {
            let _ = ring.push(&request);
            let _ = ring.submit(1);
            let _ = ring.next_result();
        }
        println!(
            "BENCH,ipc,ring_request_then_take,64,{},ns",
            sys::tsc_to_ns(sys::rdtsc() - t0) / n
        );
    }
    sys::stop(same);

    if cpus > 1 {
        let other = sys::spawn_on("echo", &[], 1).expect("spawn");
        let server = sys::wait_for_name(echo::NAME);
        let _ = other;
        for bytes in [0usize, 64] {
            println!(
                "BENCH,ipc,round_trip_cross_cpu,{bytes},{},ns",
                round_trips(server, bytes, n)
            );
        }
        sys::stop(other);
    }

    // ICA re-attachment (AnT): move fresh ICAs of each size to a child, one
    // after the other, each move timed on its own. The first move to the
    // child also finds it and builds the page tables of the place the ICAs
    // go to: reported apart. The mean of the others includes the child's
    // list of attachments growing now and then; the median is a move that
    // needs nothing new.
    let child = sys::spawn_on("sleeper", &["600000"], 0).expect("spawn");
    for pages in [1u64, 16, 256] {
        let count = match (short, pages) {
            (true, _) => 2,
            (false, 1) => MAX_ICAS,
            (false, _) => 50,
        };
        let mut icas = [0u64; MAX_ICAS + 1];
        for i in icas.iter_mut().take(count + 1) {
            *i = sys::ica_create(pages).expect("ica");
        }
        let mut ns = [0u64; MAX_ICAS + 1];
        for (i, t) in icas.iter().zip(ns.iter_mut()).take(count + 1) {
            let t0 = sys::rdtsc();
            let _ = sys::ica_move(*i, child);
            *t = sys::tsc_to_ns(sys::rdtsc() - t0);
        }
        println!("BENCH,ipc,ica_remap_first,{pages},{},ns", ns[0]);
        let moves = &mut ns[1..count + 1];
        println!(
            "BENCH,ipc,ica_remap,{pages},{},ns",
            moves.iter().sum::<u64>() / count as u64
        );
        moves.sort_unstable();
        println!("BENCH,ipc,ica_remap_median,{pages},{},ns", moves[count / 2]);
    }
    sys::stop(child);

    // Multi-stage: AP -> relay(s) -> echo, all on CPU 0.
    let echo_pid = sys::spawn_on("echo", &[], 0).expect("spawn");
    sys::wait_for_name(echo::NAME);
    for (mode, label) in [("forward", "direct_return"), ("nested", "no_direct_return")] {
        for stages in [2usize, 3] {
            // stages = servers in the chain, echo included.
            let names = [["s1", "echo", ""], ["s1", "s2", "echo"]];
            let chain = &names[stages - 2];
            let mut relays = [0u64; 2];
            for i in 0..stages - 1 {
                relays[i] = sys::spawn_on("relay", &[chain[i], chain[i + 1], mode], 0).expect("spawn");
            }
            let first = sys::wait_for_name(chain[0]);
            for name in chain.iter().take(stages - 1) {
                sys::wait_for_name(name);
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
                sys::stop(*r);
            }
        }
    }
    sys::stop(echo_pid);
    let _ = ANY_CPU;
    0
}
tessera_rt::entry!(main);
