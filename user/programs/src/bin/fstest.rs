//! The storage servers' tests, each run in a boot of its own (xtask's
//! program and disk tests). Each starts its own disk server, block cache
//! and file server, and exits 0 if every check held:
//!
//! - `rw <image> [keep]`, `full [image] [keep]`, `cache`, `leak`,
//!   `bad <images> [seed]`: on a RAM disk image (`root`, `small`), or on
//!   the machine's virtio disk (image `virtio`); with `keep`, what was
//!   written stays for the host to read back;
//! - `exchange <dir>` (virtio): reports the tree the host put at `<dir>`,
//!   then runs `rw virtio keep`;
//! - `crash` (virtio): a write workload that runs until the host kills the
//!   machine;
//! - `kill [case]`: servers killed under the kernel's file caches (one
//!   case, 0 to 2, or all), with the readers `reader <mode> <path> <size>
//!   <seed> <ready>` it starts.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;
#[path = "../fstest/mod.rs"]
mod fstest;

use tessera_rt::println;

fn exchange(dir: &str) -> u32 {
    let stack = match fsstack::Stack::start(fsstack::VIRTIO, 48, 0, true) {
        Ok(s) => s,
        Err(e) => {
            println!("fstest: FAILED {e}");
            return 1;
        }
    };
    let unreadable = fstest::tree::report(dir);
    stack.stop();
    if unreadable > 0 {
        println!("fstest: FAILED {unreadable} objects under {dir} could not be read");
    }
    unreadable + fstest::rw::run(fsstack::VIRTIO, true)
}

fn main(args: &[&str]) -> i32 {
    let failed = match args {
        [_, "rw", image] => fstest::rw::run(image, false),
        [_, "rw", image, "keep"] => fstest::rw::run(image, true),
        [_, "full"] => fstest::full::run("small", false),
        [_, "full", image] => fstest::full::run(image, false),
        [_, "full", image, "keep"] => fstest::full::run(image, true),
        [_, "cache"] => fstest::cache::flush_and_read_ahead(),
        [_, "leak"] => fstest::cache::no_leak(),
        [_, "kill"] => fstest::kill::run(None),
        [_, "kill", case] => fstest::kill::run(case.parse().ok()),
        [_, "reader", rest @ ..] => return fstest::kill::reader(rest) as i32,
        [_, "bad", n] => fstest::bad::run(n.parse().unwrap_or(100), 1),
        [_, "bad", n, seed] => fstest::bad::run(n.parse().unwrap_or(100), seed.parse().unwrap_or(1)),
        [_, "exchange", dir] => exchange(dir),
        [_, "crash"] => fstest::crash::run(),
        _ => {
            println!(
                "usage: fstest rw <image> [keep] | full [image] [keep] | cache | leak | kill [case] | bad <images> [seed] \
                 | exchange <dir> | crash"
            );
            return 2;
        }
    };
    i32::from(failed != 0)
}
tessera_rt::entry!(main);
