//! init, the first process: the kernel starts it holding every right. It
//! applies the resource pool's boot settings (`etc/pool.conf`), starts the
//! OS servers on their CPUs (`etc/servers.conf`), then runs the shell (or,
//! when the kernel was asked to run one program, that program) and waits
//! for it. It ends with the status of what it ran, and the kernel powers
//! off with that status.
//!
//! Usage: `init [-r] [-p POOL-FILE] [-s SERVERS-FILE|off] [PROGRAM ARGS...]`
//! (files of the initial archive; `-r`: a `RUN-REPORT` line of counters
//! after PROGRAM's end). The shell runs interactively; PROGRAM runs in
//! the foreground (Ctrl-C interrupts it), on init's own CPU if init is
//! pinned to one. The shell gets the system and device rights, to pass on
//! as it sees fit (the administrator restarts a driver that ended);
//! PROGRAM, named by whoever booted the machine (a test, a benchmark), gets
//! every right, so that it can start the drivers it measures.
#![no_std]
#![no_main]
extern crate alloc;

use tessera_conf::servers;
use tessera_rt::abi::{self, SpawnOptions};
use tessera_rt::{println, sys};

/// Largest servers file read.
const FILE_LIMIT: usize = 64 * 1024;

/// Starts every server the file lists, each on its CPU. A bad line is
/// reported and skipped; the others still start. Returns whether the Linux
/// personality's server was among them.
fn start_servers(file: &str) -> bool {
    let mut linux = false;
    if file == "off" {
        return linux;
    }
    let Ok(text) = sys::read_plate(file, FILE_LIMIT) else {
        println!("init: no servers file {file}");
        return linux;
    };
    let name = file.rsplit('/').next().unwrap_or(file);
    for line in core::str::from_utf8(&text).unwrap_or("").lines() {
        // `keep <line>`: the keeper (bin/keep.rs) starts the server the
        // rest of the line places, and starts it again when it ends.
        let kept = line.trim_start().strip_prefix("keep ");
        let started = servers::parse(kept.unwrap_or(line)).and_then(|p| match p {
            Some(p) => {
                let options = SpawnOptions {
                    cpu: p.cpu,
                    rights: p.rights,
                    ..SpawnOptions::DEFAULT
                };
                match kept {
                    Some(rest) => {
                        let words: alloc::vec::Vec<&str> =
                            rest.split('#').next().unwrap_or("").split_ascii_whitespace().collect();
                        sys::spawn("keep", &words, &options).map(Some)
                    }
                    None => sys::spawn(p.server, &p.args, &options).map(Some),
                }
            }
            None => Ok(None),
        });
        match started {
            Ok(Some(pid)) => {
                linux |= line.split_ascii_whitespace().next() == Some("linux");
                println!("{name}: started '{}' as pid {pid}", line.trim())
            }
            Ok(None) => {}
            Err(e) => println!("{name}: '{}': {:?}", line.trim(), e),
        }
    }
    linux
}

fn main(args: &[&str]) -> i32 {
    let (mut pool_file, mut servers_file) = ("etc/pool.conf", "etc/servers.conf");
    let mut report = false;
    let mut rest = args.get(1..).unwrap_or(&[]);
    loop {
        match rest {
            ["-r", more @ ..] => {
                report = true;
                rest = more;
            }
            ["-p", file, more @ ..] => {
                pool_file = file;
                rest = more;
            }
            ["-s", file, more @ ..] => {
                servers_file = file;
                rest = more;
            }
            _ => break,
        }
    }
    user_programs::pool::apply_file(pool_file);
    let linux = start_servers(servers_file);

    let (program, program_args, foreground, rights) = match rest {
        [] => (
            "shell",
            &[][..],
            0,
            abi::rights::SYSTEM | abi::rights::DEVICE | abi::rights::NVM,
        ),
        [program, program_args @ ..] => (*program, program_args, 1, abi::rights::ALL),
    };
    // With the Linux personality up and no program asked for, the console
    // starts in busybox's shell on the root disk; the native shell follows
    // when it ends.
    if rest.is_empty() && linux && sys::wait_for_name("linux") != 0 {
        let options = SpawnOptions {
            rights: abi::rights::SYSTEM,
            ..SpawnOptions::DEFAULT
        };
        if let Ok(pid) = sys::spawn("linux", &["/bin/sh", "-l"], &options) {
            let _ = sys::wait(pid);
        }
    }
    let options = SpawnOptions {
        cpu: sys::proc_info(0).map_or(abi::ANY_CPU, |me| me.affinity),
        foreground,
        rights,
        ..SpawnOptions::DEFAULT
    };
    let start = sys::sys_info().unwrap_or_default();
    let t0 = sys::now_ns();
    let status = match sys::spawn(program, program_args, &options) {
        Ok(pid) => sys::wait(pid).unwrap_or(abi::KILLED_STATUS),
        Err(e) => {
            println!("cannot start {program}: {e:?}");
            abi::KILLED_STATUS
        }
    };
    let elapsed = sys::now_ns() - t0;
    let idle = sys::sys_info().map_or(0, |i| i.idle_ns).saturating_sub(start.idle_ns);
    // The machine powers off when init ends: what the file system holds
    // in memory goes to the disk first (ext2 has no journal to replay).
    if sys::name_lookup("fs").is_ok()
        && let Err(e) = tessera_api::fs::client::sync()
    {
        println!("init: the file system did not sync: {e:?}");
    }
    println!("RUN-EXIT {program} {status}");
    if report {
        // What the run cost in the counters the tests judge by (after the
        // program's transcript, which ends at RUN-EXIT).
        let end = sys::sys_info().unwrap_or_default();
        println!(
            "RUN-REPORT nvm_text_reuses={} nvm_text_pages_reused={} pages_paged_in={} page_ins_failed={}",
            end.nvm_text_reuses - start.nvm_text_reuses,
            end.nvm_text_pages_reused - start.nvm_text_pages_reused,
            end.pages_paged_in - start.pages_paged_in,
            end.page_ins_failed - start.page_ins_failed
        );
        // Seed 003's counts over the run (`procnet` in tools/bench).
        println!(
            "RUN-REPORT-PROCNET elapsed_ns={elapsed} idle_ns={} linux_calls={} communications={} syscalls={} \
             context_switches={} bytes_copied={} bytes_by_reference={}",
            idle,
            end.linux_calls - start.linux_calls,
            end.communications - start.communications,
            end.syscalls - start.syscalls,
            end.context_switches - start.context_switches,
            end.bytes_copied - start.bytes_copied,
            end.bytes_by_reference - start.bytes_by_reference
        );
    }
    sys::exit(status)
}
tessera_rt::entry!(main);
