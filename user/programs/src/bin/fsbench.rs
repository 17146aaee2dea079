//! File benchmarks (Tessera's side of issue 17's list until the Linux
//! personality runs the same binary): the operations of
//! `bench/linux/fsbench.c`, in the same order with the same sizes and
//! offsets, in a folder of the ext2 disk on virtio-blk, through a virtio-blk
//! driver, block cache and file server of its own.
//!
//! `BENCH,fs,<metric>,<param>,<value>,<unit>`; times from the TSC (under
//! icount: instructions). As on Linux: `seq_write` (64 MiB in 1 MiB calls,
//! into the cache) and `seq_write_fsync`, `seq_read_cold` (after the cache
//! wrote everything back and forgot it) and `seq_read_cached` (param:
//! bytes, value: the whole transfer), `pread_4k_cached` (random aligned
//! offsets, mean of 1,000), `create_write_close` (1,000 files, total),
//! `list_dir` (1,000 entries, mean of 10), `fsync_4k` (mean of 20).
//! Tessera's own, for the breakdown: `pread_4k_cached_unaligned`,
//! `pread_1b_cached` and `pread_at_eof` (the file server alone), and the
//! copies of file data per byte on the read and write paths and the
//! device's bytes per byte read cold (counted by the servers).
//! Usage: fsbench [short] [verbose] [ram] (verbose: the servers' counters
//! that changed in each phase, as BENCH-INFO lines; ram: on the RAM disk's
//! root image instead, with the short sizes and a small cache, for `make
//! profile`, under which every system call stops in gdb)
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../fsstack.rs"]
mod fsstack;

use alloc::format;
use alloc::string::String;
use fsstack::{Stack, VIRTIO, value};
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_TRUNC, O_WRONLY};
use tessera_rt::{println, sys};
use testdata::Rng;

const MIB: usize = 1 << 20;

/// Bytes of file data copied so far on the read paths: into readers'
/// buffers, and into the kernel's file caches, by the block cache, or by
/// the file server after reading them from the block cache (its metadata
/// reads, a few blocks of a file's read, count too).
fn all_read_copies(stack: &Stack) -> u64 {
    let (cache, fs) = (stack.cache_stats(), stack.fs_stats());
    // A counter missing (u64::MAX) counts nothing.
    let v = |report: &str, name: &str| value(report, name).min(1 << 48);
    v(&cache, "file_read_bytes_copied")
        + v(&cache, "published_bytes_copied")
        + v(&cache, "meta_read_bytes")
        + v(&fs, "bytes_published")
}

fn ns(cycles: u64) -> u64 {
    sys::tsc_to_ns(cycles)
}

fn line(metric: &str, param: &str, value: u64, unit: &str) {
    println!("BENCH,fs,{metric},{param},{value},{unit}");
}

/// With `verbose`: what the servers counted during a phase (the counters
/// that changed), to see where its instructions went.
struct Counters {
    verbose: bool,
    last: [String; 3],
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

/// Reads the whole file in 1 MiB calls; the time, or None if it did not
/// read `size` bytes.
fn read_all(path: &str, size: usize, chunk: &mut [u8]) -> Option<u64> {
    let mut f = File::open(path, O_RDONLY, 0).ok()?;
    let t0 = sys::rdtsc();
    let mut done = 0;
    loop {
        match f.read(chunk) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(_) => return None,
        }
    }
    let t = sys::rdtsc() - t0;
    (done == size).then_some(t)
}

/// Open, read the entries to the end, close; the time and the entries.
fn list_once(path: &str, buf: &mut [u8]) -> Option<(u64, usize)> {
    let t0 = sys::rdtsc();
    let mut d = File::open(path, O_RDONLY | O_DIRECTORY, 0).ok()?;
    let mut entries = 0;
    loop {
        match d.read_dir(buf) {
            Ok(0) => break,
            Ok(n) => entries += tessera_api::fs::dirents(&buf[..n]).count(),
            Err(_) => return None,
        }
    }
    drop(d);
    Some((sys::rdtsc() - t0, entries))
}

/// fsbench.c's offsets: a 64-bit LCG, the page from its high bits.
struct Lcg(u64);

impl Lcg {
    fn page(&mut self, pages: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % pages
    }
}

fn main(args: &[&str]) -> i32 {
    let ram = args.contains(&"ram");
    let short = ram || args.contains(&"short");
    let mut counters = Counters {
        verbose: args.contains(&"verbose"),
        last: Default::default(),
    };
    let (size, files, preads, listings, fsyncs) = if short {
        (4 * MIB, 50, 50, 2, 3)
    } else {
        (64 * MIB, 1000, 1000, 10, 20)
    };
    let _ = sys::set_affinity(0, 0);
    // A cache that holds the 64 MiB file and the 1,000 small ones, as
    // Linux's page cache does in the same 512 MiB machine. No periodic
    // flush: Linux writes back data once it is 30 s old, which none is in
    // the phases measured, while a flush here would land in whichever
    // phase the guest's clock (jumping while it waits for the disk, under
    // icount) had reached, and the figures would stop being path lengths.
    // Under `make profile` every system call stops in gdb: the RAM disk's
    // run keeps the cache to what its short sizes need.
    let (disk, pages) = if ram { ("root", 2048) } else { (VIRTIO, 20 * 1024) };
    let stack = match Stack::start(disk, pages, 0, false) {
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
    if client::mkdir("/fsbench", 0o755).is_err() {
        return fail("mkdir /fsbench");
    }
    let copied = |s: &Stack, what: &str| value(&s.cache_stats(), what);
    let mut chunk = alloc::vec![b'd'; MIB];
    let param = format!("{size}");

    // Sequential write, then its fsync.
    let big = "/fsbench/big";
    let written_before = copied(&stack, "file_write_bytes_copied");
    let Ok(mut f) = File::open(big, O_WRONLY | O_CREAT | O_TRUNC, 0o644) else {
        return fail("create big");
    };
    let t0 = sys::rdtsc();
    for _ in 0..size / MIB {
        if f.write(&chunk) != Ok(MIB) {
            return fail("write");
        }
    }
    let t1 = sys::rdtsc();
    if f.sync().is_err() {
        return fail("fsync");
    }
    let t2 = sys::rdtsc();
    drop(f);
    line("seq_write", &param, ns(t1 - t0), "ns");
    line("seq_write_fsync", &param, ns(t2 - t1), "ns");
    let write_copies = copied(&stack, "file_write_bytes_copied") - written_before;
    counters.phase(&stack, "seq_write");

    // Sequential read, cold (the cache written back and emptied, as
    // Linux's sync and drop_caches) and cached.
    if !stack.drop_cache() {
        return fail("drop the cache");
    }
    let read_before = copied(&stack, "file_read_bytes_copied");
    let all_before = all_read_copies(&stack);
    let disk_before = value(&stack.disk_stats(), "device_bytes");
    let Some(cold) = read_all(big, size, &mut chunk) else {
        return fail("read cold");
    };
    line("seq_read_cold", &param, ns(cold), "ns");
    let read_copies = copied(&stack, "file_read_bytes_copied") - read_before;
    let cold_copies = all_read_copies(&stack) - all_before;
    let device = value(&stack.disk_stats(), "device_bytes") - disk_before;
    counters.phase(&stack, "seq_read_cold");
    if read_all(big, size, &mut chunk).is_none() {
        return fail("read");
    }
    let Some(cached) = read_all(big, size, &mut chunk) else {
        return fail("read cached");
    };
    line("seq_read_cached", &param, ns(cached), "ns");

    // Cached 4 KiB preads at fsbench.c's random aligned offsets.
    let Ok(f) = File::open(big, O_RDONLY, 0) else {
        return fail("open big");
    };
    let pages = (size / 4096) as u64;
    let mut lcg = Lcg(12345);
    let mut total = 0;
    for _ in 0..preads {
        let off = lcg.page(pages) * 4096;
        let t0 = sys::rdtsc();
        if f.read_at(off, &mut chunk[..4096]) != Ok(4096) {
            return fail("pread");
        }
        total += sys::rdtsc() - t0;
    }
    line("pread_4k_cached", "", ns(total) / preads, "ns");
    counters.phase(&stack, "pread");
    // Where a cached read's instructions go: a read off a page boundary
    // touches two cache pages; a 1-byte read takes the same path with a
    // negligible copy; a read at the end of the file stops at the file
    // server (no plan, no forward, no cache).
    let mut rng = Rng(12345);
    let mut timed = |len: usize, at: &mut dyn FnMut() -> u64| {
        let t0 = sys::rdtsc();
        for _ in 0..preads {
            let _ = f.read_at(at(), &mut chunk[..len]);
        }
        ns(sys::rdtsc() - t0) / preads
    };
    let unaligned = timed(4096, &mut || rng.below(pages - 1) * 4096 + 100);
    line("pread_4k_cached_unaligned", "", unaligned, "ns");
    let mut rng = Rng(54321);
    let one = timed(1, &mut || rng.below(pages) * 4096);
    line("pread_1b_cached", "", one, "ns");
    let eof = timed(4096, &mut || size as u64);
    line("pread_at_eof", "", eof, "ns");
    drop(f);
    if client::unlink(big).is_err() {
        return fail("unlink big");
    }

    // 1,000 files: create + write 4 KiB + close, then list the folder.
    let fparam = format!("{files}");
    if client::mkdir("/fsbench/many", 0o755).is_err() {
        return fail("mkdir many");
    }
    let t0 = sys::rdtsc();
    for i in 0..files {
        let Ok(mut f) = File::open(&format!("/fsbench/many/f{i:04}"), O_WRONLY | O_CREAT | O_EXCL, 0o644) else {
            return fail("create");
        };
        if f.write(&chunk[..4096]) != Ok(4096) {
            return fail("write 4 KiB");
        }
    }
    line("create_write_close", &fparam, ns(sys::rdtsc() - t0), "ns");
    counters.phase(&stack, "create");
    let mut buf = alloc::vec![0u8; 32 * 1024];
    let mut total = 0;
    let mut entries = 0;
    for i in 0..=listings {
        let Some((t, n)) = list_once("/fsbench/many", &mut buf) else {
            return fail("list");
        };
        // The first listing only warms up, as on Linux.
        if i > 0 {
            total += t;
        }
        entries = n;
    }
    if entries != files as usize + 2 {
        return fail(&format!("listing: {entries} entries"));
    }
    line("list_dir", &fparam, ns(total) / listings, "ns");
    for i in 0..files {
        let _ = client::unlink(&format!("/fsbench/many/f{i:04}"));
    }
    let _ = client::rmdir("/fsbench/many");

    // A 4 KiB write made durable.
    let Ok(f) = File::open("/fsbench/synced", O_WRONLY | O_CREAT | O_TRUNC, 0o644) else {
        return fail("create synced");
    };
    let _ = f.write_at(0, &chunk[..4096]);
    let _ = f.sync();
    let mut total = 0;
    for i in 0..fsyncs {
        chunk[0] = i as u8;
        let t0 = sys::rdtsc();
        if f.write_at(0, &chunk[..4096]) != Ok(4096) || f.sync().is_err() {
            return fail("pwrite + fsync");
        }
        total += sys::rdtsc() - t0;
    }
    drop(f);
    let _ = client::unlink("/fsbench/synced");
    line("fsync_4k", "", ns(total) / fsyncs, "ns");

    // Copies of file data per byte, by path (software copies; the device's
    // transfers are DMA).
    line("copies_per_byte_read", "", read_copies / size as u64, "count");
    // The cold read's every copy, the pages going into the kernel's file
    // cache included (rounded).
    line(
        "copies_per_byte_read_cold",
        "",
        (cold_copies + size as u64 / 2) / size as u64,
        "count",
    );
    line("copies_per_byte_write", "", write_copies / size as u64, "count");
    line("device_bytes_per_byte_read_cold", "", device / size as u64, "count");
    let _ = client::sync();
    stack.stop();
    0
}
tessera_rt::entry!(main);
