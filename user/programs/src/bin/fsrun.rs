//! `fsrun [--demand|--eager] [--fresh] PATH [ARGS...]`: runs a program kept
//! on the file system, ELF or OFF2F (seed 001), and says what its exec
//! read and what it cost: time from before the file is read to after the
//! program ended (the paper's fork to wait), bytes read, page faults by
//! category. `--fresh` reads the file even if an unchanged copy is held.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_rt::abi::LoadPolicy;
use tessera_rt::{println, sys};
use user_programs::fsexec::{self, Cache};

fn main(args: &[&str]) -> i32 {
    let mut policy = LoadPolicy::Default;
    let mut cache = Cache::Use;
    let mut rest = args.get(1..).unwrap_or(&[]);
    while let Some(flag) = rest.first().filter(|a| a.starts_with("--")) {
        match *flag {
            "--demand" => policy = LoadPolicy::Demand,
            "--eager" => policy = LoadPolicy::Eager,
            "--fresh" => cache = Cache::Fresh,
            _ => {
                println!("usage: fsrun [--demand|--eager] [--fresh] PATH [ARGS...]");
                return 2;
            }
        }
        rest = &rest[1..];
    }
    let Some((path, args)) = rest.split_first() else {
        println!("usage: fsrun [--demand|--eager] [--fresh] PATH [ARGS...]");
        return 2;
    };
    let path = filecmd::absolute(path);
    let t0 = sys::now_ns();
    match fsexec::run(&path, args, &fsexec::options(policy), cache) {
        Ok((status, exec, info)) => {
            let ns = sys::now_ns() - t0;
            let (text, nvm, other) = fsexec::faults(&info);
            println!(
                "{path} ({}): status {status}; exec read {} bytes ({} first) in {} reads; \
                 faults: text {text}, NVM text {nvm}, other {other}; {ns} ns",
                exec.format.name(),
                exec.bytes_read,
                exec.first_read,
                exec.reads
            );
            status as i32
        }
        Err(e) => {
            println!("fsrun: {path}: {e}");
            1
        }
    }
}
tessera_rt::entry!(main);
