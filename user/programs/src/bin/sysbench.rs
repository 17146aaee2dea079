//! Tessera's side of the process benchmarks (issue: processes), printing
//! `BENCH,<experiment>,<metric>,<param>,<value>,<unit>` lines like the Linux
//! reference programs. Under QEMU's icount mode a nanosecond is one
//! instruction. Usage: sysbench [syscall|spawn|pageaccess|pagefault|pool|poolmem|all] [short]
#![no_std]
#![no_main]
extern crate alloc;
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
        let t = serial("tiny", policy, n);
        println!("BENCH,spawn,spawn_exit_wait_{},tiny,{t:.0},ns", policy_name(policy));
    }
}

fn pageaccess(n: u64) {
    for policy in [LoadPolicy::Eager, LoadPolicy::Demand] {
        for (prog, pages) in [("pa0", 0), ("pa200", 200), ("pa400", 400), ("pa800", 800)] {
            spawn_wait(prog, &[], policy);
            let t = serial(prog, policy, n);
            println!(
                "BENCH,pageaccess,spawn_exit_wait_{},{pages},{t:.0},ns",
                policy_name(policy)
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

/// The paper's four configurations of the resource pool (seed 000 §3.1).
const SETTINGS: [&str; 4] = ["basic", "reuse", "add", "reduce"];
const POOL_PROGRAMS: [&str; 5] = ["tiny", "pa0", "pa200", "pa400", "pa800"];

fn pool_setting(setting: &str, program: &str, count: usize) {
    let _ = user_programs::pool::setting(&alloc::format!("mode {setting}"));
    let _ = user_programs::pool::setting("add clear");
    let _ = user_programs::pool::setting("flush");
    if setting == "add" || setting == "reduce" {
        // The add function pre-creates fully attached spaces (kind 6).
        let _ = user_programs::pool::setting(&alloc::format!("add full {program} {count}"));
    }
}

/// Processes started together in the pool benchmarks (seed 000's 10
/// concurrent requests).
const CONCURRENT: usize = 10;

/// Time per process of `n` spawns of `prog`, each waited for before the next.
fn serial(prog: &str, policy: LoadPolicy, n: u64) -> f64 {
    let t0 = sys::now_ns();
    for _ in 0..n {
        spawn_wait(prog, &[], policy);
    }
    per_op(sys::now_ns() - t0, n)
}

/// `CONCURRENT` processes of `prog` started, then all waited for.
fn burst(prog: &str) {
    let eager = SpawnOptions {
        policy: LoadPolicy::Eager as u64,
        ..SpawnOptions::DEFAULT
    };
    let mut pids = [0u64; CONCURRENT];
    for p in pids.iter_mut() {
        *p = sys::spawn(prog, &[], &eager).expect("spawn");
    }
    for p in pids {
        sys::wait(p).expect("wait");
    }
}

/// Spawn + exit + wait under each pool setting, one at a time and with
/// `CONCURRENT` processes at once (seed 000 figs 5, 6, 8, 9), as time per process.
fn pool(rounds: u64) {
    let n = rounds * CONCURRENT as u64;
    for prog in POOL_PROGRAMS {
        for setting in SETTINGS {
            pool_setting(setting, prog, 1);
            let t = serial(prog, LoadPolicy::Eager, n);
            println!("BENCH,pool,{setting}_serial,{prog},{t:.0},ns");
            pool_setting(setting, prog, CONCURRENT);
            let t0 = sys::now_ns();
            for _ in 0..rounds {
                burst(prog);
            }
            let t = per_op(sys::now_ns() - t0, n);
            println!("BENCH,pool,{setting}_concurrent10,{prog},{t:.0},ns");
        }
        // Demand paging without the pool, for comparison with eager + pool.
        pool_setting("basic", prog, 1);
        let t = serial(prog, LoadPolicy::Demand, n);
        println!("BENCH,pool,demand_serial,{prog},{t:.0},ns");
    }
    pool_setting("reduce", "tiny", 0);
    let _ = user_programs::pool::setting("add clear");
}

/// Pool memory over time during and after a burst of 10 concurrent
/// page-access processes (seed 000 figs 7 and 10), with and without reduce.
fn poolmem(bursts: u64) {
    for setting in ["reuse", "reduce"] {
        pool_setting(setting, "pa800", CONCURRENT);
        let _ = user_programs::pool::setting("unused 50");
        let _ = user_programs::pool::setting("interval 50");
        let t0 = sys::now_ns();
        let sample = |t0: u64| {
            let bytes = sys::sys_info().map_or(0, |i| i.pool_bytes);
            println!(
                "BENCH,poolmem,{setting},{},{},bytes",
                (sys::now_ns() - t0) / 1_000_000,
                bytes
            );
        };
        sample(t0);
        for _ in 0..bursts {
            burst("pa800");
            sample(t0);
        }
        // After the burst: let the adjustment run.
        for _ in 0..15 {
            sys::sleep_ns(20_000_000);
            sample(t0);
        }
    }
    pool_setting("reduce", "tiny", 0);
    let _ = user_programs::pool::setting("add clear");
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
    if all || which == "pool" {
        pool(if short { 1 } else { 3 });
    }
    if all || which == "poolmem" {
        poolmem(if short { 1 } else { 5 });
    }
    0
}
tessera_rt::entry!(main);
