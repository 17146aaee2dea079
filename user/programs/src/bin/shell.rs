//! The Tessera shell: runs programs from the initial archive with arguments
//! and shows how they ended. Built-ins: help, ps, policy, mem, cpus, uptime,
//! exit, and the inspector's reports (formatted here from the kernel's
//! records). A command may be prefixed by `eager` or `demand` (loading
//! policy for that run) and `cpu N` (pin it). Ctrl-C interrupts the running
//! program. `shell -c "cmd; cmd"` runs commands without reading the console.
//! The system's settings (`pool <setting>`, `policy`, `place`) need the
//! system right, which init gives the shell it starts.
#![no_std]
#![no_main]
extern crate alloc;

use alloc::vec::Vec;
use tessera_rt::abi::{self, LoadPolicy, SpawnOptions};
use tessera_rt::io::{Line, read_line};
use tessera_rt::{print, println, sys};
use user_programs::inspect;

const HELP: &str = "\
built-ins:
  help                 this text
  ps                   processes: pid, parent, state, cpu, policy, page faults
  policy [eager|demand]  show or set the default loading policy
  mem                  physical memory and kernel heap
  cpus                 processors: index, APIC id, timer ticks, calls served
  devices              PCI functions: ids, class, interrupt, BARs, driver
  uptime               time since the kernel started
  exit [status]        leave the shell (powers off when init started it)
inspector (Tender resources):
  res [kind]           live resources per kind, or the list of one kind
                       (plates programs spaces regions attachments processes physical)
  pool                 the resource pool: settings, contents, memory, hits/misses
  pool <setting>       change a setting, e.g. pool mode reduce | pool add full pa800 2
                       | pool unused 50 | pool flush (see etc/pool.conf)
  trace [n]            the mediator's last operations
  counters             operations per resource kind
  servers              registered servers: pid, CPU placed on (pin) and last run on,
                       calls accepted/answered/forwarded, calls queued and held
  start [cpu N] [rights device] prog [args]
                       start a server (or any program) in the background
  place NAME N|any     move the server registered as NAME to CPU N
                       (init starts servers at boot: etc/servers.conf)
anything else runs a program from /bin, e.g.  hello a b
  prefixes: eager|demand (loading policy for this run), cpu N (pin to CPU N)
programs: hello tiny argcheck spin sleeper faults badptr fuzz rights sysbench pa0 pa200 pa400 pa800
          builder fresh cttouch ctpingpong ctbench cttransfer icastorm rvtest rvbench ringtest batchtest batchbench
servers: echo relay distributor ramdisk blockcache fs
files (paths from /): ls [-l] cat cp mkdir [-p] rm [-r] mv write [-a] fsstat";

fn policy_name(p: u64) -> &'static str {
    match LoadPolicy::from_u64(p) {
        Some(LoadPolicy::Eager) => "eager",
        Some(LoadPolicy::Demand) => "demand",
        _ => "default",
    }
}

fn ps() {
    let mut pids = [0u64; 128];
    let n = sys::proc_list(&mut pids).unwrap_or(0).min(pids.len());
    println!("  PID PARENT STATE    CPU POLICY   TEXT  DATA   BSS STACK  HEAP  RSS(KiB) NAME");
    for &pid in &pids[..n] {
        let Ok(p) = sys::proc_info(pid) else { continue };
        let state = match p.state {
            abi::state::RUNNING => "running",
            abi::state::RUNNABLE => "ready",
            abi::state::BLOCKED => "blocked",
            abi::state::WAITING => "waiting",
            _ => "exited",
        };
        let name = core::str::from_utf8(&p.name).unwrap_or("?").trim_end_matches('\0');
        let parent = if p.parent == u64::MAX { -1 } else { p.parent as i64 };
        let f = p.faults;
        println!(
            "{:5} {:6} {:8} {:3} {:7} {:5} {:5} {:5} {:5} {:5} {:9} {}",
            p.pid,
            parent,
            state,
            p.cpu,
            policy_name(p.policy),
            f.text,
            f.data,
            f.bss,
            f.stack,
            f.heap,
            p.resident_pages * 4,
            name
        );
    }
}

/// Prints a report, or why the kernel would not give its records.
fn report(what: &str, r: Result<(), abi::Error>) {
    if let Err(e) = r {
        println!("{what}: {e:?}");
    }
}

/// Starts a program without waiting for it: servers run until they die.
fn start(prog: &str, args: &[&str], cpu: u64) {
    // `rights <list>` first (as in etc/servers.conf): a driver's `device`.
    let (rights, prog, args) = match (prog, args) {
        ("rights", [list, prog, rest @ ..]) => match tessera_conf::servers::parse(&alloc::format!("x rights {list}")) {
            Ok(Some(p)) => (p.rights, *prog, rest),
            _ => return println!("start: bad rights '{list}' (device, system)"),
        },
        _ => (0, prog, args),
    };
    let options = abi::SpawnOptions {
        cpu,
        rights,
        ..abi::SpawnOptions::DEFAULT
    };
    match sys::spawn(prog, args, &options) {
        Ok(pid) => println!("{prog}: started as pid {pid}"),
        Err(abi::Error::NotFound) => println!("{prog}: no such program"),
        Err(e) => println!("{prog}: cannot start: {e:?}"),
    }
}

fn place(name: &str, cpu: &str) {
    let cpu = match cpu {
        "any" => abi::ANY_CPU,
        n => match n.parse() {
            Ok(n) => n,
            Err(_) => return println!("place: '{n}' is not a CPU number"),
        },
    };
    match sys::name_lookup(name).and_then(|pid| sys::set_affinity(pid, cpu)) {
        Ok(_) => {}
        Err(e) => println!("place: {name}: {e:?}"),
    }
}

fn mem() {
    if let Ok(i) = sys::sys_info() {
        println!(
            "frames: {} KiB free of {} KiB; kernel heap {} KiB used of {} KiB; resource pool {} KiB; \
             {} processes; {} system calls, {} resource operations so far",
            i.frames_free * 4,
            i.frames_total * 4,
            i.heap_used / 1024,
            i.heap_size / 1024,
            i.pool_bytes / 1024,
            i.processes,
            i.syscalls,
            i.resource_ops
        );
    }
}

/// Runs one command line; returns false when the shell should exit, with
/// the status to exit with.
fn execute(line: &str, last: &mut u64) -> Option<u64> {
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    let mut w = &words[..];
    let mut options = SpawnOptions {
        foreground: 1,
        ..SpawnOptions::DEFAULT
    };
    loop {
        match w {
            ["eager", rest @ ..] => {
                options.policy = LoadPolicy::Eager as u64;
                w = rest;
            }
            ["demand", rest @ ..] => {
                options.policy = LoadPolicy::Demand as u64;
                w = rest;
            }
            ["cpu", n, rest @ ..] => {
                options.cpu = n.parse().unwrap_or(u64::MAX - 1);
                w = rest;
            }
            _ => break,
        }
    }
    match w {
        [] => {}
        ["help"] => println!("{HELP}"),
        ["ps"] => ps(),
        ["mem"] => mem(),
        ["cpus"] => report("cpus", inspect::cpus()),
        ["devices"] => report("devices", inspect::devices()),
        ["uptime"] => {
            let ns = sys::now_ns();
            println!("up {}.{:03} s", ns / 1_000_000_000, (ns / 1_000_000) % 1000);
        }
        ["res"] => report("res", inspect::resources()),
        ["res", kind] => match inspect::kind_named(kind) {
            Some(k) => report("res", inspect::resources_of(k)),
            None => {
                println!("res: no list of '{kind}' (plates programs spaces regions attachments processes physical)")
            }
        },
        ["pool"] => report("pool", inspect::pool()),
        ["pool", setting @ ..] => {
            let line = setting.join(" ");
            match user_programs::pool::setting(&line) {
                Ok(n) if n > 0 => println!("pool: {n} resource(s) added"),
                Ok(_) => {}
                Err(e) => println!("pool: '{line}': {e:?}"),
            }
        }
        ["trace"] => report("trace", inspect::trace(20)),
        ["trace", n] => match n.parse() {
            Ok(n) => report("trace", inspect::trace(n)),
            Err(_) => println!("trace: '{n}' is not a number"),
        },
        ["counters"] => report("counters", inspect::counters()),
        ["servers"] => report("servers", inspect::servers()),
        ["start", "cpu", n, prog, args @ ..] => match n.parse() {
            Ok(cpu) => start(prog, args, cpu),
            Err(_) => println!("start: '{n}' is not a CPU number"),
        },
        ["start", prog, args @ ..] => start(prog, args, abi::ANY_CPU),
        ["place", name, cpu] => place(name, cpu),
        ["policy"] => println!(
            "default loading policy: {}",
            policy_name(sys::sys_info().map_or(0, |i| i.default_policy))
        ),
        ["policy", p] => {
            let policy = match *p {
                "eager" => LoadPolicy::Eager,
                "demand" => LoadPolicy::Demand,
                _ => {
                    println!("policy: eager or demand");
                    return None;
                }
            };
            match sys::set_policy(policy) {
                Ok(_) => println!("default loading policy: {p}"),
                Err(e) => println!("policy: {e:?}"),
            }
        }
        ["exit"] => return Some(*last),
        ["exit", s] => return Some(s.parse().unwrap_or(1)),
        [prog, args @ ..] => match sys::spawn(prog, args, &options) {
            Ok(pid) => match sys::wait(pid) {
                Ok(abi::KILLED_STATUS) => {
                    println!("[{prog}: killed]");
                    *last = abi::KILLED_STATUS;
                }
                Ok(status) => {
                    if status != 0 {
                        println!("[{prog}: exit {status}]");
                    }
                    *last = status;
                }
                Err(e) => println!("[{prog}: wait failed: {e:?}]"),
            },
            Err(abi::Error::NotFound) => println!("{prog}: no such program (try 'help')"),
            Err(e) => println!("{prog}: cannot start: {e:?}"),
        },
    }
    None
}

fn main(args: &[&str]) -> i32 {
    let mut last = 0;
    if args.get(1) == Some(&"-c") {
        let script = args.get(2).copied().unwrap_or("");
        for cmd in script.split(';') {
            if let Some(status) = execute(cmd.trim(), &mut last) {
                return status as i32;
            }
        }
        return last as i32;
    }
    println!("Tessera shell. Type 'help'.");
    let mut buf = [0u8; 256];
    loop {
        print!("tessera$ ");
        let n = match read_line(&mut buf) {
            Line::Text(n) => n,
            Line::Interrupted => continue,
            Line::End => return 0,
        };
        let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
        if let Some(status) = execute(line, &mut last) {
            return status as i32;
        }
    }
}
tessera_rt::entry!(main);
