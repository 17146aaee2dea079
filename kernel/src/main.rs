//! The Tessera kernel: the crates composed at boot.
//!
//! The core (`kcore`) boots the machine and calls `tessera_main`, which
//! registers the hooks through which the core and the lower layers reach
//! up (system calls, traps, the idle hook, what each process keeps for
//! the layers above), brings the layers up, starts the other CPUs, and
//! runs whatever the command line asks for: a test, a benchmark, or the
//! first process, init (`user/programs/src/bin/init.rs`), which applies the
//! boot files' settings and runs the shell or the program `run=` names.
#![no_std]
#![no_main]
// One exception, at `tessera_main`: the entry the core's boot code calls
// by name must be `#[unsafe(no_mangle)]`.
#![deny(unsafe_code)]

extern crate alloc;

mod bench;
mod fuzzrun;
#[cfg(feature = "ktest")]
mod tests;

use ipc::process as proc;
use kcore::boot::cmdline_value;
use kcore::println;

/// The hooks of every layer, registered before the first interrupt.
fn register_hooks() {
    kcore::hooks::register(kcore::hooks::Hooks {
        syscall: syscall::dispatch,
        linux_syscall: syscall::linux_dispatch,
        return_to_user: proc::on_return_to_user,
        tick: on_tick,
        reschedule: sched::on_reschedule_ipi,
        user_page_fault,
        user_fault: proc::kill_for_fault,
        interrupt_key: syscall::interrupt_key,
        input_ready: syscall::input_ready,
        device_irq: resource::device::on_interrupt,
        ap_main,
        first_entry: proc::on_first_entry,
    });
    ipc::process::register_hooks(resource::proc::hooks());
    sched::set_idle_hook(on_idle);
}

/// CPU 0's spare time: the pool's adjustment, then zeroing the pages
/// scrubbing boxes hold dirty.
fn on_idle() {
    kcore::mm::large::on_idle();
    resource::pool::on_idle();
    resource::container_box::scrub_on_idle();
}

/// A page fault on user memory. One in user mode that finds no free frame
/// has the pool give its memory back first, as a system call's allocation
/// does (`pool::or_reclaim`), so that a demand-paged process is not killed
/// while the pool holds memory. A system call's own access (error code
/// without the user bit) cannot: its caller may hold a lock the pool's
/// release takes. It takes from half the frames' reserve instead, which
/// the next ordinary allocation's failure has the pool refill.
fn user_page_fault(addr: u64, error_code: u64, may_block: bool) -> Result<(), kcore::vm::space::FaultError> {
    use kcore::vm::space::FaultError;
    match proc::resolve_user_fault(addr, error_code, may_block) {
        Err(FaultError::OutOfMemory) => fault_short_of_frames(addr, error_code, may_block),
        done => done,
    }
}

/// `user_page_fault` once the fault found no free frame: kept out of the
/// common path, which then has the resolution inlined, with no frame of
/// its own.
#[cold]
#[inline(never)]
fn fault_short_of_frames(addr: u64, error_code: u64, may_block: bool) -> Result<(), kcore::vm::space::FaultError> {
    use kcore::mm::frames::{Reserve, with_reserve};
    use kcore::vm::space::FaultError;
    const FROM_USER_MODE: u64 = 4;
    if error_code & FROM_USER_MODE == 0 {
        with_reserve(Reserve::Half, || proc::resolve_user_fault(addr, error_code, may_block))
    } else if resource::pool::reclaim() > 0 {
        proc::resolve_user_fault(addr, error_code, may_block)
    } else {
        Err(FaultError::OutOfMemory)
    }
}

/// The timer's tick: the scheduler's work, then the alarms due.
fn on_tick() {
    sched::on_tick();
    syscall::alarms_on_tick();
}

/// An application processor, its core set up.
fn ap_main() -> ! {
    sched::init_cpu();
    kcore::boot::ap_online();
    sched::idle_loop()
}

#[allow(unsafe_code)]
#[unsafe(no_mangle)]
fn tessera_main() -> ! {
    register_hooks();
    // Each computation's kernel part of its CPU time (`/proc/tessera/cpu`,
    // tools/bench/websplit.py): asked for, as it costs every system call.
    if cmdline_value("cputime").is_some() {
        kcore::cpuacct::enable_kernel_time();
    }
    resource::init();
    sched::init_cpu();
    kcore::boot::start_other_cpus();

    #[cfg(feature = "ktest")]
    if let Some(name) = cmdline_value("test") {
        let layers = [kcore::tests::TESTS, tests::TESTS];
        if name == "list" {
            kcore::ktest::list(&layers);
        }
        kcore::ktest::run(&layers, name);
    }
    if let Some(calls) = cmdline_value("fuzz") {
        fuzzrun::run(calls, cmdline_value("fuzz_seed"));
    }
    if let Some(which) = cmdline_value("bench") {
        bench::run(which, cmdline_value("bench_short").is_some());
    }
    let tsc = kcore::clock::cycles();
    println!(
        "BOOT-DONE tsc_cycles={} ns={} tsc_since_reset={}",
        tsc - kcore::clock::boot_tsc(),
        kcore::clock::nanos(),
        tsc
    );
    if cmdline_value("boottime").is_some() {
        kcore::arch::x86_64::qemu_exit(true);
    }
    // Seed 003's experiment (figs. 7 and 10): every communication, and
    // every KiB passed by reference, slower on purpose by this many ns.
    let ns = |key| cmdline_value(key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    ipc::procnet::set_delays(ns("ipc_delay"), ns("ipc_kib_delay"));
    // `run=<program> args=a,b`: init runs that program instead of the
    // shell. `,` separates arguments and `+` stands for a space (the
    // command line itself is split at spaces).
    let mut args = alloc::vec::Vec::new();
    // `servers=<file>` (in etc/, or `off`): the servers init starts.
    if let Some(file) = cmdline_value("servers") {
        args.extend_from_slice(b"-s\0");
        if file != "off" {
            args.extend_from_slice(b"etc/");
        }
        args.extend_from_slice(file.as_bytes());
        args.push(0);
    }
    // `pool=<file>` (in etc/): the pool settings init applies.
    if let Some(file) = cmdline_value("pool") {
        args.extend_from_slice(b"-p\0etc/");
        args.extend_from_slice(file.as_bytes());
        args.push(0);
    }
    // `report`: init says what the run cost (`RUN-REPORT`).
    if cmdline_value("report").is_some() {
        args.extend_from_slice(b"-r\0");
    }
    if let Some(program) = cmdline_value("run") {
        args.extend_from_slice(program.as_bytes());
        args.push(0);
        if let Some(rest) = cmdline_value("args") {
            args.extend(rest.bytes().map(|b| match b {
                b',' => 0,
                b'+' => b' ',
                b => b,
            }));
        }
    }
    let status = run_init(&args, abi::ANY_CPU);
    kcore::arch::x86_64::qemu_exit(status == 0)
}

/// Starts init, the first process, holding every right, with `args`
/// (NUL-separated) on `cpu`, and waits for it: its exit status is that of
/// the shell or program it ran. Without init nothing can run: the reason
/// is printed and the status is a failure.
pub fn run_init(args: &[u8], cpu: u64) -> u64 {
    if kcore::initrd::archive().is_none_or(|a| platform::cpio::find(a, "bin/init").is_none()) {
        println!("no bin/init in the initial archive: nothing to run");
        return abi::KILLED_STATUS;
    }
    let options = abi::SpawnOptions {
        cpu,
        rights: abi::rights::ALL,
        ..abi::SpawnOptions::DEFAULT
    };
    match resource::proc::spawn::spawn("init", args, &options, proc::KERNEL_PID) {
        Ok(pid) => proc::wait(proc::KERNEL_PID, pid).unwrap_or(abi::KILLED_STATUS),
        Err(e) => {
            println!("cannot start init: {e:?}");
            abi::KILLED_STATUS
        }
    }
}
