//! The storage servers' tests, each run in a boot of its own (xtask's
//! program tests): `fstest rw <image>`, `full`, `cache`, `leak`,
//! `bad <images> [seed]`. Each starts its own RAM disk, block cache and
//! file server, and exits 0 if every check held.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;
#[path = "../fstest/mod.rs"]
mod fstest;

use tessera_rt::println;

fn main(args: &[&str]) -> i32 {
    let failed = match args {
        [_, "rw", image] => fstest::rw::run(image),
        [_, "full"] => fstest::full::run(),
        [_, "cache"] => fstest::cache::flush_and_read_ahead(),
        [_, "leak"] => fstest::cache::no_leak(),
        [_, "bad", n] => fstest::bad::run(n.parse().unwrap_or(100), 1),
        [_, "bad", n, seed] => fstest::bad::run(n.parse().unwrap_or(100), seed.parse().unwrap_or(1)),
        _ => {
            println!("usage: fstest rw <image> | full | cache | leak | bad <images> [seed]");
            return 2;
        }
    };
    i32::from(failed != 0)
}
tessera_rt::entry!(main);
