//! The kernel's temporary prompt on the serial console. The processes layer
//! replaces it with a user-mode shell.

use core::sync::atomic::Ordering;
use kcore::mm::{frames, heap, layout::PAGE_SIZE};
use kcore::{clock, cpu, print, println};

const HELP: &str = "\
commands:
  help     this list
  mem      physical frames free/used, kernel heap
  cpus     processors: index, APIC id, timer ticks, IPIs served
  uptime   time since the kernel started
  halt     power off (ends QEMU)";

pub fn run() -> ! {
    println!("{HELP}");
    let mut buf = [0u8; 128];
    loop {
        print!("tessera> ");
        let n = kcore::console::read_line(&mut buf);
        let line = core::str::from_utf8(&buf[..n]).unwrap_or("").trim();
        match line.split_ascii_whitespace().next().unwrap_or("") {
            "" => {}
            "help" => println!("{HELP}"),
            "mem" => mem(),
            "cpus" => cpus(),
            "uptime" => uptime(),
            "halt" => {
                println!("halting");
                kcore::arch::x86_64::qemu_exit(true);
            }
            other => println!("unknown command '{other}' (try 'help')"),
        }
    }
}

fn mem() {
    let f = frames::stats();
    let kib = |frames: usize| frames as u64 * PAGE_SIZE / 1024;
    println!(
        "frames: {} total ({} KiB), {} free ({} KiB), {} used ({} KiB), largest free run {} frames",
        f.managed,
        kib(f.managed),
        f.free,
        kib(f.free),
        f.managed - f.free,
        kib(f.managed - f.free),
        f.largest_run
    );
    let h = heap::stats();
    println!("heap: {} KiB mapped, {} KiB used", h.size / 1024, h.used / 1024);
}

fn cpus() {
    println!(
        "{} CPUs online, APIC mode {}, TSC {} MHz",
        cpu::online_count(),
        if kcore::arch::x86_64::apic::is_x2apic() {
            "x2APIC"
        } else {
            "xAPIC"
        },
        clock::tsc_hz() / 1_000_000
    );
    for c in cpu::online_cpus() {
        println!(
            "  cpu {:2}  apic {:2}  ticks {:8}  calls served {}",
            c.index,
            c.apic_id,
            c.ticks.load(Ordering::Relaxed),
            c.calls_served.load(Ordering::Relaxed)
        );
    }
}

fn uptime() {
    let ns = clock::nanos();
    println!("up {}.{:03} s", ns / 1_000_000_000, (ns / 1_000_000) % 1000);
}
