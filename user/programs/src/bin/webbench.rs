//! Tessera's side of the web-server experiment (seed 000, figs. 5-10,
//! tables 4-5): busybox httpd and its CGI programs on the Linux
//! personality, loaded by `bench/linux/webload` over the loopback, the
//! whole of it `bench/linux/web.sh`, the same script the Linux reference
//! VM runs. This program only sets the resource pool to each of the
//! paper's configurations in turn and runs the script under it:
//! **basic**, **reuse**, **reuse+add** (`add`: spaces and work areas, and
//! fully loaded spaces of the CGI programs and of `sh`, 10 of each, made
//! ahead) and **reuse+add+reduce** (`reduce`, T = interval = 50 ms).
//! Boot it with the storage, TCP/IP and personality servers (eager
//! loading, Tender's policy): `servers=servers.web.conf run=webbench`.
//! With `demand` it runs the script once, the pool off, as `demand_`: for
//! a boot with the personality loading on demand, Tessera's default
//! (`servers=servers.linux.conf run=webbench args=demand`).
//! With `split` it runs the script once under reuse in its split mode
//! (`web.sh ... --split`: the CPU time of one request by process, for
//! `tools/bench/websplit.py`).
//! Usage: `webbench [demand] [short] [split]`; it ends the run with `BENCH-DONE`.
#![no_std]
#![no_main]
extern crate alloc;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use tessera_rt::abi::{ResKind, ResRecord, SpawnOptions};
use tessera_rt::{println, sys};
use user_programs::pool;

const SETTINGS: [&str; 4] = ["basic", "reuse", "add", "reduce"];
/// The script and the document root it makes (on the ext2 root).
const SCRIPT: &str = "/linux/bench/web.sh";
const DOCROOT: &str = "/tmp/www";
/// Programs a request execs, by the last part of their plates' names
/// (`linux/<inode>/<name>`): the shell of the shell CGI and the page
/// access CGI.
const EXECED: [&str; 5] = ["sh", "pa0", "pa200", "pa400", "pa800"];
/// Resources of each made ahead by add: one per concurrent client.
const ADD_COUNT: u64 = 10;

fn set(line: &str) {
    if let Err(e) = pool::setting(line) {
        println!("BENCH-ERROR,web,pool setting '{line}': {e:?}");
    }
}

/// The plates of the programs the requests exec, by name; they exist once
/// a run has exec'd them (the personality makes a plate at exec).
fn execed_plates() -> Vec<String> {
    let plates = sys::inspect_all::<ResRecord>(ResKind::Plate as u64).unwrap_or_default();
    plates
        .iter()
        .filter_map(|p| {
            let n = p.name.iter().position(|&c| c == 0).unwrap_or(p.name.len());
            let name = core::str::from_utf8(&p.name[..n]).ok()?;
            let last = name.rsplit('/').next()?;
            (name.starts_with("linux/") && EXECED.contains(&last)).then(|| String::from(name))
        })
        .collect()
}

fn configure(setting: &str) {
    set(&format!("mode {setting}"));
    set("add clear");
    set("flush");
    if setting == "add" || setting == "reduce" {
        set(&format!("add space {ADD_COUNT}"));
        set(&format!("add workarea {ADD_COUNT}"));
        let plates = execed_plates();
        if plates.is_empty() {
            println!("BENCH-ERROR,web,no plates of the CGI programs to add");
        }
        for p in plates {
            set(&format!("add full {p} {ADD_COUNT}"));
        }
    }
}

fn run_script(prefix: &str, mode: Option<&'static str>) -> bool {
    let setting = prefix.trim_end_matches('_');
    let mut args = alloc::vec!["/bin/sh", SCRIPT, DOCROOT, prefix];
    args.extend(mode);
    let options = SpawnOptions {
        rights: 0,
        ..SpawnOptions::DEFAULT
    };
    match sys::spawn("linux", &args, &options).and_then(sys::wait) {
        Ok(0) => true,
        Ok(status) => {
            println!("BENCH-ERROR,web,web.sh under {setting} ended with {status}");
            false
        }
        Err(e) => {
            println!("BENCH-ERROR,web,cannot run web.sh under {setting}: {e:?}");
            false
        }
    }
}

fn main(args: &[&str]) -> i32 {
    let demand = args.contains(&"demand");
    let mode = if args.contains(&"split") {
        Some("--split")
    } else if args.contains(&"short") {
        Some("--short")
    } else {
        None
    };
    if sys::wait_for_name("linux") == 0 || sys::wait_for_name("net") == 0 {
        println!("BENCH-ERROR,web,the personality or the TCP/IP server is not running");
        return 1;
    }
    let mut ok = true;
    if demand {
        configure("basic");
        ok &= run_script("demand_", mode);
    } else if mode == Some("--split") {
        configure("reuse");
        ok &= run_script("reuse_", mode);
    } else {
        for setting in SETTINGS {
            configure(setting);
            ok &= run_script(&format!("{setting}_"), mode);
        }
    }
    // As the boot's settings were: what a later program would find.
    pool::apply_file("etc/pool.conf");
    println!("BENCH-DONE");
    if ok { 0 } else { 1 }
}
tessera_rt::entry!(main);
