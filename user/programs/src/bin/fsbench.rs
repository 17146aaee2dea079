//! File benchmarks (Tessera's side of issue 17's list until the Linux
//! personality runs the same binary): against a RAM disk, block cache and
//! file server of its own, on the root image.
//!
//! `BENCH,fs,<metric>,<param>,<value>,<unit>`; times from the TSC (under
//! icount: instructions). Metrics: `pread_4k_cached` (random aligned
//! offsets in a cached file), `pread_4k_cached_unaligned`, and for the
//! breakdown `pread_1b_cached` and `pread_at_eof` (the file server alone),
//! `seq_write` / `seq_read_cached` / `seq_read_cold` (param: bytes, value:
//! the whole transfer), `create_write4k_close` (per file), `readdir`
//! (param: entries, value: the whole listing), `fsync_4k`, and the copies
//! of file data per byte on the read and write paths (counted by the
//! servers). Usage: fsbench [short] [verbose] (verbose: the servers'
//! counters that changed in each phase, as BENCH-INFO lines)
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;

use alloc::format;
use fsstack::{Rng, Stack, pattern, value};
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_CREAT, O_DIRECTORY, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
use tessera_rt::{println, sys};

fn ns_since(t0: u64) -> u64 {
    sys::tsc_to_ns(sys::rdtsc() - t0)
}

fn line(metric: &str, param: &str, value: u64, unit: &str) {
    println!("BENCH,fs,{metric},{param},{value},{unit}");
}

/// With `verbose`: what the servers counted during a phase (the counters
/// that changed), to see where its instructions went.
struct Counters {
    verbose: bool,
    last: [alloc::string::String; 3],
}

impl Counters {
    fn phase(&mut self, stack: &Stack, name: &str) {
        if !self.verbose {
            return;
        }
        let now = [stack.disk_stats(), stack.cache_stats(), stack.fs_stats()];
        for (who, (a, b)) in ["disk", "cache", "fs"].iter().zip(self.last.iter().zip(now.iter())) {
            for l in b.lines() {
                let Some((k, v)) = l.split_once(' ') else { continue };
                let (Ok(v), old) = (v.parse::<u64>(), value(a, k)) else {
                    continue;
                };
                if old != u64::MAX && v > old {
                    println!("BENCH-INFO,fs_{name},{who}.{k},{}", v - old);
                }
            }
        }
        self.last = now;
    }
}

fn main(args: &[&str]) -> i32 {
    let short = args.contains(&"short");
    let mut counters = Counters {
        verbose: args.contains(&"verbose"),
        last: Default::default(),
    };
    let (files, seq, reads) = if short {
        (20, 1 << 20, 20)
    } else {
        (1000, 16 << 20, 1000)
    };
    let _ = sys::set_affinity(0, 0);
    // A cache big enough for the sequential file: the cached figures are
    // cached.
    let stack = match Stack::start("root", 8192, 0, false) {
        Ok(s) => s,
        Err(e) => {
            println!("BENCH-ERROR fsbench: {e}");
            return 1;
        }
    };
    counters.phase(&stack, "start");
    let fail = |what: &str| {
        println!("BENCH-ERROR fsbench: {what}");
        1
    };

    // Create, write 4 KiB, close.
    let page = pattern(1, 4096);
    if client::mkdir("/b", 0o755).is_err() {
        return fail("mkdir /b");
    }
    let t0 = sys::rdtsc();
    let (mut open_ns, mut write_ns) = (0, 0);
    for i in 0..files {
        let t = sys::rdtsc();
        let Ok(mut f) = File::open(&format!("/b/f{i}"), O_WRONLY | O_CREAT | O_TRUNC, 0o644) else {
            return fail("create");
        };
        let t1 = sys::rdtsc();
        if f.write(&page) != Ok(4096) {
            return fail("write 4 KiB");
        }
        open_ns += t1 - t;
        write_ns += sys::rdtsc() - t1;
    }
    line("create_write4k_close", &format!("{files}"), ns_since(t0) / files, "ns");
    line(
        "create_write4k_close_create",
        &format!("{files}"),
        sys::tsc_to_ns(open_ns) / files,
        "ns",
    );
    line(
        "create_write4k_close_write",
        &format!("{files}"),
        sys::tsc_to_ns(write_ns) / files,
        "ns",
    );
    counters.phase(&stack, "create");

    // The directory's listing.
    let mut buf = alloc::vec![0u8; 32 * 1024];
    let t0 = sys::rdtsc();
    let mut entries = 0;
    if let Ok(mut d) = File::open("/b", O_RDONLY | O_DIRECTORY, 0) {
        while let Ok(n) = d.read_dir(&mut buf) {
            if n == 0 {
                break;
            }
            entries += tessera_api::fs::dirents(&buf[..n]).count();
        }
    }
    line("readdir", &format!("{}", entries), ns_since(t0), "ns");

    // fsync of a 4 KiB write.
    let n = if short { 5 } else { 100 };
    if let Ok(f) = File::open("/b/f0", O_RDWR, 0) {
        let t0 = sys::rdtsc();
        for i in 0..n {
            let _ = f.write_at(i * 4096 % 65536, &page);
            let _ = f.sync();
        }
        line("fsync_4k", "", ns_since(t0) / n, "ns");
    }

    // Sequential write, then reads of the same file cached and cold.
    let data = pattern(2, 65536);
    let copied = |s: &Stack, what: &str| value(&s.cache_stats(), what);
    let written_before = copied(&stack, "file_write_bytes_copied");
    let t0 = sys::rdtsc();
    let Ok(mut f) = File::open("/seq", O_RDWR | O_CREAT | O_TRUNC, 0o644) else {
        return fail("create /seq");
    };
    for _ in 0..seq / data.len() {
        if f.write(&data) != Ok(data.len()) {
            return fail("sequential write");
        }
    }
    line("seq_write", &format!("{seq}"), ns_since(t0), "ns");
    counters.phase(&stack, "seq_write");
    let t0 = sys::rdtsc();
    let _ = f.sync();
    line("seq_write_fsync", &format!("{seq}"), ns_since(t0), "ns");
    let write_copies = copied(&stack, "file_write_bytes_copied") - written_before;
    let mut chunk = alloc::vec![0u8; 65536];
    let read_all = |f: &File, chunk: &mut [u8]| {
        let mut at = 0;
        while at < seq as u64 {
            match f.read_at(at, chunk) {
                Ok(n) if n > 0 => at += n as u64,
                _ => break,
            }
        }
        at
    };
    let t0 = sys::rdtsc();
    let got = read_all(&f, &mut chunk);
    line("seq_read_cached", &format!("{seq}"), ns_since(t0), "ns");
    if got != seq as u64 {
        return fail("sequential read");
    }
    if !stack.drop_cache() {
        return fail("drop the cache");
    }
    let read_before = copied(&stack, "file_read_bytes_copied");
    let disk_before = value(&stack.disk_stats(), "device_bytes");
    let t0 = sys::rdtsc();
    read_all(&f, &mut chunk);
    line("seq_read_cold", &format!("{seq}"), ns_since(t0), "ns");
    let read_copies = copied(&stack, "file_read_bytes_copied") - read_before;
    let device = value(&stack.disk_stats(), "device_bytes") - disk_before;

    // Cached 4 KiB preads at random offsets (the file is all in the cache
    // now, after the cold read).
    let mut rng = Rng(12345);
    let mut four = [0u8; 4096];
    let pages = seq as u64 / 4096;
    let _ = f.read_at(0, &mut four);
    let t0 = sys::rdtsc();
    for _ in 0..reads {
        let _ = f.read_at(rng.below(pages) * 4096, &mut four);
    }
    line("pread_4k_cached", "", ns_since(t0) / reads, "ns");
    counters.phase(&stack, "pread");
    let t0 = sys::rdtsc();
    for _ in 0..reads {
        let _ = f.read_at(rng.below(pages - 1) * 4096 + 100, &mut four);
    }
    line("pread_4k_cached_unaligned", "", ns_since(t0) / reads, "ns");
    // Where a cached read's instructions go: a 1-byte read takes the same
    // path with a negligible copy; a read at the end of the file stops at
    // the file server (no plan, no forward, no cache).
    let t0 = sys::rdtsc();
    for _ in 0..reads {
        let _ = f.read_at(rng.below(pages) * 4096, &mut four[..1]);
    }
    line("pread_1b_cached", "", ns_since(t0) / reads, "ns");
    let t0 = sys::rdtsc();
    for _ in 0..reads {
        let _ = f.read_at(seq as u64, &mut four);
    }
    line("pread_at_eof", "", ns_since(t0) / reads, "ns");

    // Copies of file data per byte, by path (software copies; the device's
    // transfers are DMA on a real disk).
    line("copies_per_byte_read", "", read_copies / seq as u64, "count");
    line("copies_per_byte_write", "", write_copies / seq as u64, "count");
    line("device_bytes_per_byte_read_cold", "", device / seq as u64, "count");
    drop(f);
    stack.stop();
    0
}
tessera_rt::entry!(main);
