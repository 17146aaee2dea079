//! Tessera's side of the process benchmarks (issue: processes), printing
//! `BENCH,<experiment>,<metric>,<param>,<value>,<unit>` lines like the Linux
//! reference programs. Under QEMU's icount mode a nanosecond is one
//! instruction. Usage: sysbench [syscall|spawn|pageaccess|pagefault|all] [short]
#![no_std]
#![no_main]
use tessera_rt::abi::{LoadPolicy, SpawnOptions};
use tessera_rt::{println, sys};

fn per_op(total_ns: u64, n: u64) -> f64 {
    total_ns as f64 / n as f64
}

fn syscall(n: u64) {
    let t0 = sys::now_ns();
    for _ in 0..n {
        core::hint::black_box(sys::getpid());
    }
    let t1 = sys::now_ns();
    // now_ns is itself one system call; subtract nothing, report both.
    println!("BENCH,syscall,getpid,,{:.1},ns", per_op(t1 - t0, n));
    let t0 = sys::now_ns();
    for _ in 0..n {
        core::hint::black_box(sys::clock());
    }
    println!("BENCH,syscall,clock,,{:.1},ns", per_op(sys::now_ns() - t0, n));
}

fn spawn_wait(path: &str, args: &[&str], policy: LoadPolicy) -> u64 {
    let options = SpawnOptions {
        policy: policy as u64,
        ..SpawnOptions::DEFAULT
    };
    let pid = sys::spawn(path, args, &options).expect("spawn");
    sys::wait(pid).expect("wait")
}

fn policy_name(p: LoadPolicy) -> &'static str {
    if p == LoadPolicy::Eager { "eager" } else { "demand" }
}

fn spawn(n: u64) {
    for policy in [LoadPolicy::Eager, LoadPolicy::Demand] {
        spawn_wait("tiny", &[], policy);
        let t0 = sys::now_ns();
        for _ in 0..n {
            spawn_wait("tiny", &[], policy);
        }
        println!(
            "BENCH,spawn,spawn_exit_wait_{},tiny,{:.0},ns",
            policy_name(policy),
            per_op(sys::now_ns() - t0, n)
        );
    }
}

fn pageaccess(n: u64) {
    for policy in [LoadPolicy::Eager, LoadPolicy::Demand] {
        for (prog, pages) in [("pa0", 0), ("pa200", 200), ("pa400", 400), ("pa800", 800)] {
            spawn_wait(prog, &[], policy);
            let t0 = sys::now_ns();
            for _ in 0..n {
                spawn_wait(prog, &[], policy);
            }
            println!(
                "BENCH,pageaccess,spawn_exit_wait_{},{pages},{:.0},ns",
                policy_name(policy),
                per_op(sys::now_ns() - t0, n)
            );
            spawn_wait(prog, &["report"], policy);
        }
    }
}

fn fault(pages: u64) {
    let len = pages * 4096;
    let base = sys::map(len, 3).expect("map");
    let t0 = sys::now_ns();
    for i in 0..pages {
        // SAFETY: the region was just mapped, writable, `pages` pages long.
        unsafe { core::ptr::write_volatile((base + i * 4096) as *mut u8, 1) };
    }
    let t = sys::now_ns() - t0;
    println!("BENCH,pagefault,first_touch_anon,4096,{:.0},ns", per_op(t, pages));
    let info = sys::proc_info(0).expect("proc_info");
    println!("BENCH,pagefault,heap_faults,{pages},{},count", info.faults.heap);
    let _ = sys::unmap(base, len);
}

fn main(args: &[&str]) -> i32 {
    let which = args.get(1).copied().unwrap_or("all");
    let short = args.get(2) == Some(&"short");
    let (calls, spawns, pages) = if short { (100, 2, 16) } else { (100_000, 200, 1024) };
    let all = which == "all";
    if all || which == "syscall" {
        syscall(calls);
    }
    if all || which == "spawn" {
        spawn(spawns);
    }
    if all || which == "pageaccess" {
        pageaccess(spawns / 4 + 1);
    }
    if all || which == "pagefault" {
        fault(pages);
    }
    0
}
tessera_rt::entry!(main);
