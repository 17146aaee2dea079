//! The Tessera kernel: the crates composed at boot.
//!
//! The core (`kcore`) boots the machine and calls `tessera_main`, which
//! registers the hooks through which the core and the lower layers reach
//! up (system calls, traps, the idle hook, what each process keeps for
//! the layers above), brings the layers up, starts the other CPUs, and
//! runs whatever the command line asks for: a test, a benchmark, one
//! program, or the shell.
#![no_std]
#![no_main]
// One exception, at `tessera_main`: the entry the core's boot code calls
// by name must be `#[unsafe(no_mangle)]`.
#![deny(unsafe_code)]

extern crate alloc;

mod bench;
mod placement;
mod shell;
#[cfg(feature = "ktest")]
mod tests;

use ipc::process as proc;
use kcore::boot::cmdline_value;
use kcore::println;

/// The hooks of every layer, registered before the first interrupt.
fn register_hooks() {
    kcore::hooks::register(kcore::hooks::Hooks {
        syscall: syscall::dispatch,
        return_to_user: proc::on_return_to_user,
        tick: sched::on_tick,
        reschedule: sched::on_reschedule_ipi,
        user_page_fault: proc::resolve_user_fault,
        user_fault: proc::kill_for_fault,
        interrupt_key: proc::interrupt_foreground,
        input_ready: syscall::input_ready,
        // No driver holds a device vector yet: an interrupt on one is
        // counted (irq::COUNTS) and dropped.
        device_irq: |_| {},
        ap_main,
        first_entry: proc::on_first_entry,
    });
    ipc::process::register_hooks(resource::proc::hooks());
    sched::set_idle_hook(resource::pool::on_idle);
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
    if let Some(program) = cmdline_value("run") {
        run_program(program, cmdline_value("args").unwrap_or(""), false);
    }
    if kcore::initrd::archive().is_some_and(|a| platform::cpio::find(a, "bin/shell").is_some()) {
        placement::boot();
        run_program("shell", "", true);
    }
    shell::run()
}

/// Runs one program as the first process (`run=<program> args=a,b` on the
/// command line, or the shell), waits for it, and powers off with its status.
fn run_program(program: &str, args: &str, interactive: bool) -> ! {
    // `,` separates arguments and `+` stands for a space (the command line
    // itself is split at spaces).
    let args: alloc::vec::Vec<u8> = args
        .bytes()
        .map(|b| match b {
            b',' => 0,
            b'+' => b' ',
            b => b,
        })
        .collect();
    let options = abi::SpawnOptions {
        foreground: u64::from(!interactive),
        ..abi::SpawnOptions::DEFAULT
    };
    let status = match resource::proc::spawn::spawn(program, &args, &options, proc::KERNEL_PID) {
        Ok(pid) => proc::wait(proc::KERNEL_PID, pid).unwrap_or(abi::KILLED_STATUS),
        Err(e) => {
            println!("cannot start {program}: {e:?}");
            abi::KILLED_STATUS
        }
    };
    println!("RUN-EXIT {program} {status}");
    kcore::arch::x86_64::qemu_exit(status == 0)
}
