//! Kernel micro-benchmarks, run with `bench=<experiment>` (or `bench=all`) on
//! the command line. Each figure is one line
//! `BENCH,<experiment>,<metric>,<param>,<value>,<unit>` (the format the
//! benchmark harness parses, shared with the Linux reference programs),
//! followed by `BENCH-DONE`. Under QEMU's icount mode a nanosecond is one
//! instruction, which makes these figures path lengths.

use kcore::arch::x86_64::{qemu_exit, smp};
use kcore::mm::layout::SCRATCH_BASE;
use kcore::mm::paging::{self, flags};
use kcore::mm::{frames, tlb};
use kcore::{clock, cpu, println};

fn report(experiment: &str, metric: &str, param: &str, total_cycles: u64, iterations: u64) {
    let ns = clock::cycles_to_ns(total_cycles) as f64 / iterations as f64;
    println!("BENCH,{experiment},{metric},{param},{ns:.1},ns");
}

fn measure(iterations: u64, mut f: impl FnMut()) -> u64 {
    f(); // warm up
    let t0 = clock::cycles();
    for _ in 0..iterations {
        f();
    }
    clock::cycles() - t0
}

fn kernel(short: bool) {
    let n = if short { 10 } else { 10_000 };
    let c = measure(n, || {
        core::hint::black_box(clock::cycles());
    });
    report("kernel", "clock_read", "", c, n);

    for pages in [1usize, 16, 512] {
        // A free block of this size whose buddy is in use, as memory that
        // has been used has: each alloc takes it and each free gives it
        // back, with nothing to split or merge. (On an allocator with no
        // such block both would run through every larger order, and which
        // of the two cases a boot measured would depend on what happened
        // to be allocated before.)
        let (Ok(free), Ok(held)) = (frames::alloc(pages), frames::alloc(pages)) else {
            println!("BENCH-ERROR no frames for frame_alloc_free");
            continue;
        };
        frames::free(free, pages);
        let c = measure(n / 10 + 1, || {
            if let Ok(pa) = frames::alloc(pages) {
                frames::free(pa, pages);
            }
        });
        frames::free(held, pages);
        report("kernel", "frame_alloc_free", &alloc::format!("{pages}"), c, n / 10 + 1);
    }

    let pa = frames::alloc(1).expect("benchmark needs one frame");
    let va = SCRATCH_BASE + 0x20_0000;
    let c = measure(n, || {
        paging::with_kernel_root(|root| {
            let _ = paging::map(root, va, pa, flags::WRITABLE | flags::NO_EXECUTE);
            paging::unmap(root, va);
        });
        paging::flush_local(va);
    });
    report("kernel", "page_map_unmap", "", c, n);
    frames::free(pa, 1);

    if cpu::online_count() > 1 {
        let c = measure(n / 10 + 1, || {
            let _ = smp::call_on(1, || {});
        });
        report("kernel", "ipi_call_roundtrip", "", c, n / 10 + 1);
        let c = measure(n / 10 + 1, || tlb::shootdown_kernel(va, 1));
        report(
            "kernel",
            "tlb_shootdown",
            &alloc::format!("{}cpus", cpu::online_count()),
            c,
            n / 10 + 1,
        );
    }
}

/// Experiments measured by the user program `sysbench` (see user/programs).
const USER_EXPERIMENTS: [(&str, &str); 10] = [
    ("syscall", "sysbench"),
    ("spawn", "sysbench"),
    ("pageaccess", "sysbench"),
    ("pagefault", "sysbench"),
    ("pool", "sysbench"),
    ("poolmem", "sysbench"),
    ("container", "ctbench"),
    ("ipc", "rvbench"),
    ("batch", "batchbench"),
    ("transfer", "cttransfer"),
];

/// Experiments that need the machine's disk (virtio-blk with an ext2
/// image): run only when named (`bench=fs,off2f`), in a boot that has
/// one, never by `all`.
const DISK_EXPERIMENTS: [(&str, &str); 2] = [("fs", "fsbench"), ("off2f", "offbench")];

/// Has init run `<program> <experiment>` on CPU 0, with the pool settings
/// of the boot file as a user finds them and no servers, and waits for it;
/// its BENCH lines go straight to the console.
fn user(program: &str, experiment: &str, short: bool) -> bool {
    // No servers from the boot file: nothing runs beside the experiment
    // (each one starts the servers it measures).
    let mut args = alloc::vec::Vec::new();
    args.extend_from_slice(b"-s\0off\0");
    args.extend_from_slice(program.as_bytes());
    args.push(0);
    if program == "sysbench" {
        args.extend_from_slice(experiment.as_bytes());
        args.push(0);
    }
    if short {
        args.extend_from_slice(b"short\0");
    }
    // `bench_verbose`: the storage benchmark prints the servers' counters
    // of each phase (BENCH-INFO lines), to see where its time went.
    if program == "fsbench" && kcore::boot::cmdline_value("bench_verbose").is_some() {
        args.extend_from_slice(b"verbose\0");
    }
    // `bench_only=fig12`: `batch`'s file transfer alone, for a run that
    // measures only it.
    if program == "batchbench"
        && let Some(only) = kcore::boot::cmdline_value("bench_only")
    {
        args.extend_from_slice(only.as_bytes());
        args.push(0);
    }
    // `bench_disk=MODEL`: the machine's disk is as slow as a disk model by
    // QEMU's throttling (plain TCG); the disk experiments are told so.
    if let Some(model) = kcore::boot::cmdline_value("bench_disk") {
        args.extend_from_slice(b"qemu:");
        args.extend_from_slice(model.as_bytes());
        args.push(0);
    }
    crate::run_init(&args, 0) == 0
}

pub fn run(which: &str, short: bool) -> ! {
    let mut known = false;
    let mut ok = true;
    if which == "kernel" || which == "all" {
        kernel(short);
        known = true;
    }
    for (exp, program) in USER_EXPERIMENTS {
        if which == exp || which == "all" {
            ok &= user(program, exp, short);
            known = true;
        }
    }
    for (exp, program) in DISK_EXPERIMENTS {
        if which.split(',').any(|w| w == exp) {
            ok &= user(program, exp, short);
            known = true;
        }
    }
    if !known {
        println!("BENCH-ERROR unknown experiment '{which}'");
        qemu_exit(false);
    }
    println!("BENCH-DONE");
    qemu_exit(ok)
}
