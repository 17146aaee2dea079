//! `fsstat`: the storage servers' counters (disk, block cache, file
//! server), then the copies of file data each path made so far.
#![no_std]
#![no_main]
extern crate alloc;

use tessera_api::fs::client::stats_of;
use tessera_api::{block, cache, fs};
use tessera_rt::println;

/// The value of `name` in a `name value` report.
fn value(report: &str, name: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

fn main(args: &[&str]) -> i32 {
    let names = [
        args.get(1).copied().unwrap_or(block::NAME),
        args.get(2).copied().unwrap_or(cache::NAME),
        args.get(3).copied().unwrap_or(fs::NAME),
    ];
    let entries = [block::STATS, cache::STATS, fs::STATS];
    let mut reports = [
        alloc::string::String::new(),
        alloc::string::String::new(),
        alloc::string::String::new(),
    ];
    for i in 0..3 {
        match stats_of(names[i], entries[i]) {
            Ok(r) => {
                println!("== {}", names[i]);
                for line in r.lines() {
                    println!("  {line}");
                }
                reports[i] = r;
            }
            Err(e) => println!("== {}: {e}", names[i]),
        }
    }
    let [disk, cache, fs] = &reports;
    println!("== copies of file data (bytes copied by software, per path)");
    println!(
        "  read:  cache page -> reader's buffer {}; holes (zeros) {}; in the file server 0",
        value(cache, "file_read_bytes_copied"),
        value(fs, "hole_bytes_copied")
    );
    println!(
        "  write: writer's message -> cache page {}; in the file server 0",
        value(cache, "file_write_bytes_copied")
    );
    println!(
        "  disk transfers (DMA on a real device, not copies between servers): {} bytes",
        value(disk, "device_bytes")
    );
    println!(
        "  library bytes copied (ext2fs read/write, unused by the server): {}",
        value(fs, "library_bytes_copied")
    );
    0
}
tessera_rt::entry!(main);
