//! Container IPC benchmarks (seed 004 figs 5, 6, 7): send and receive time
//! per mode and size through a box, SWAP with container creation or
//! deletion, push per mode against exchange, and the breakdown of the
//! kernel's work (container create/delete, page exchange, copy, attach,
//! detach, queue) from the kernel's cycle counters. One line per figure:
//! `BENCH,container,<metric>,<bytes>,<value>,ns`. Usage: ctbench [short]
#![no_std]
#![no_main]
use tessera_rt::abi::{BOX_SCRUB, ContainerMode as M, ContainerStats};
use tessera_rt::{println, sys};

/// The clock for timing one operation: the TSC, read without a system call
/// (a clock system call would add its own cost to every sample).
fn now() -> u64 {
    sys::rdtsc()
}

fn cycles_to_ns(c: u64) -> u64 {
    sys::tsc_to_ns(c)
}

fn name(m: M) -> &'static str {
    match m {
        M::Copy => "copy",
        M::Share => "share",
        M::Move => "move",
        M::Swap => "swap",
    }
}

/// Prints the per-operation kernel breakdown between two counter snapshots.
fn breakdown(metric: &str, bytes: u64, a: &ContainerStats, b: &ContainerStats, n: u64) {
    let parts = [
        ("create", b.create_cycles - a.create_cycles),
        ("delete", b.delete_cycles - a.delete_cycles),
        ("exchange", b.exchange_cycles - a.exchange_cycles),
        ("copy", b.copy_cycles - a.copy_cycles),
        ("attach", b.attach_cycles - a.attach_cycles),
        ("detach", b.detach_cycles - a.detach_cycles),
        ("queue", b.queue_cycles - a.queue_cycles),
    ];
    for (part, c) in parts {
        println!("BENCH,container,{metric}:{part},{bytes},{},ns", cycles_to_ns(c) / n);
    }
}

fn report(metric: &str, bytes: u64, total_cycles: u64, n: u64) {
    println!("BENCH,container,{metric},{bytes},{},ns", cycles_to_ns(total_cycles) / n);
}

/// How a box is set up for a run of `through_box`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BoxSetup {
    /// Two empty containers to start with, at least one, at most eight.
    Plain,
    /// No empty container kept: a SWAP send creates one, a receive deletes one.
    Churn,
    /// A `BOX_SCRUB` box: the pages a SWAP receive leaves are zeroed before
    /// a sender gets them, here by the send itself (no idle time).
    Scrub,
    /// The same with 2 ms asleep after each round (not timed): the kernel
    /// zeroes them in CPU 0's idle time.
    ScrubIdle,
}

/// Send and receive through a box in `mode`, set up as `setup` says.
fn through_box(mode: M, pages: u64, n: u64, setup: BoxSetup) {
    let bytes = pages * 4096;
    let (initial, lower, upper) = if setup == BoxSetup::Churn { (0, 0, 0) } else { (2, 1, 8) };
    let scrub = matches!(setup, BoxSetup::Scrub | BoxSetup::ScrubIdle);
    let flags = if scrub { BOX_SCRUB } else { 0 };
    let bx = sys::box_create(pages, initial, lower, upper, flags).expect("box");
    let c = sys::container_create(pages).expect("container");
    let r = sys::container_create(pages).expect("container");
    let label = match setup {
        BoxSetup::Churn => "swap_create",
        BoxSetup::Scrub => "swap_scrub",
        BoxSetup::ScrubIdle => "swap_scrub_idle",
        BoxSetup::Plain => name(mode),
    };
    let (mut send_ns, mut recv_ns) = (0, 0);
    let (s0, mut s1, mut s2) = (
        sys::container_stats(),
        ContainerStats::default(),
        ContainerStats::default(),
    );
    let mut send_stats = ContainerStats::default();
    let mut recv_stats = ContainerStats::default();
    let _ = (s1, s2);
    for i in 0..n {
        let mine = if mode == M::Move && i > 0 {
            sys::container_create(pages).expect("container")
        } else {
            c
        };
        let a = sys::container_stats();
        let t0 = now();
        sys::container_send(mine, bx, 0, mode).expect("send");
        let t1 = now();
        s1 = sys::container_stats();
        // The receive is timed from here: reading the counters is not part of it.
        let t1r = now();
        let got = sys::container_receive(if mode == M::Swap { r } else { 0 }, bx, 0, mode, 1_000_000)
            .expect("receive")
            .0;
        let t2 = now();
        s2 = sys::container_stats();
        send_ns += t1 - t0;
        recv_ns += t2 - t1r;
        add(&mut send_stats, &a, &s1);
        add(&mut recv_stats, &s1, &s2);
        if mode != M::Swap {
            let _ = sys::res_delete(got);
        }
        if setup == BoxSetup::ScrubIdle {
            sys::sleep_ns(2_000_000);
        }
    }
    let _ = s0;
    report(&alloc_name("send_", label), bytes, send_ns, n);
    let rlabel = match setup {
        BoxSetup::Churn => "swap_delete",
        _ => label,
    };
    report(&alloc_name("receive_", rlabel), bytes, recv_ns, n);
    breakdown(
        &alloc_name("send_", label),
        bytes,
        &ContainerStats::default(),
        &send_stats,
        n,
    );
    breakdown(
        &alloc_name("receive_", rlabel),
        bytes,
        &ContainerStats::default(),
        &recv_stats,
        n,
    );
    let _ = sys::res_delete(bx);
    let _ = sys::res_delete(c);
    let _ = sys::res_delete(r);
}

fn add(acc: &mut ContainerStats, a: &ContainerStats, b: &ContainerStats) {
    acc.create_cycles += b.create_cycles - a.create_cycles;
    acc.delete_cycles += b.delete_cycles - a.delete_cycles;
    acc.exchange_cycles += b.exchange_cycles - a.exchange_cycles;
    acc.copy_cycles += b.copy_cycles - a.copy_cycles;
    acc.attach_cycles += b.attach_cycles - a.attach_cycles;
    acc.detach_cycles += b.detach_cycles - a.detach_cycles;
    acc.queue_cycles += b.queue_cycles - a.queue_cycles;
}

/// A small fixed string builder (no heap needed for metric names).
fn alloc_name(prefix: &str, rest: &str) -> heapless::Name {
    heapless::Name::of(prefix, rest)
}

mod heapless {
    pub struct Name {
        buf: [u8; 48],
        len: usize,
    }
    impl Name {
        pub fn of(a: &str, b: &str) -> Name {
            let mut n = Name { buf: [0; 48], len: 0 };
            for s in [a, b] {
                let k = s.len().min(48 - n.len);
                n.buf[n.len..n.len + k].copy_from_slice(&s.as_bytes()[..k]);
                n.len += k;
            }
            n
        }
    }
    impl core::ops::Deref for Name {
        type Target = str;
        fn deref(&self) -> &str {
            core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
        }
    }
}

/// Push in each mode into a child, against exchange with the child.
fn direct(pages: u64, n: u64) {
    let bytes = pages * 4096;
    let child = sys::spawn("sleeper", &["600000"], &tessera_rt::abi::SpawnOptions::DEFAULT).expect("child");
    for mode in [M::Copy, M::Share, M::Move] {
        let mut total = 0;
        for _ in 0..n {
            let c = sys::container_create(pages).expect("container");
            let t0 = now();
            sys::container_push(c, child, mode).expect("push");
            total += now() - t0;
            if mode != M::Move {
                let _ = sys::res_delete(c);
            }
        }
        report(&alloc_name("push_", name(mode)), bytes, total, n);
    }
    let mine = sys::container_create(pages).expect("container");
    let theirs = sys::container_push(sys::container_create(pages).expect("container"), child, M::Move).expect("push");
    let t0 = now();
    for _ in 0..n {
        sys::container_exchange(mine, child, theirs).expect("exchange");
    }
    report("exchange", bytes, now() - t0, n);
    let _ = sys::kill(child);
    let _ = sys::wait(child);
    let _ = sys::res_delete(mine);
}

fn main(args: &[&str]) -> i32 {
    let short = args.get(1) == Some(&"short");
    let sizes: &[u64] = if short {
        &[1, 16]
    } else {
        &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    };
    let n = if short { 2 } else { 20 };
    for &pages in sizes {
        for mode in [M::Copy, M::Share, M::Move, M::Swap] {
            through_box(mode, pages, n, BoxSetup::Plain);
        }
        for setup in [BoxSetup::Churn, BoxSetup::Scrub, BoxSetup::ScrubIdle] {
            through_box(M::Swap, pages, n, setup);
        }
        direct(pages, n);
    }
    0
}
tessera_rt::entry!(main);
