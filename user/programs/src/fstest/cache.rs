//! The block cache's own behaviour: the periodic flush writes back without
//! a sync; a sequential reader reads ahead; and the servers' resources
//! go back to their level when they end.

use super::*;
use tessera_api::fs::client;

pub fn flush_and_read_ahead() -> u32 {
    let mut c = Checks::new("fstest");
    let stack = match Stack::start("root", 256, 1, false) {
        Ok(s) => s,
        Err(e) => {
            println!("fstest: {e}");
            return 1;
        }
    };
    let data = pattern(3, 512 * 1024);
    c.check(write_file("/seq", &data, 65536).is_ok(), "write /seq");
    let writes = value(&stack.disk_stats(), "blocks_written");
    // The periodic flush (every second) writes it back, no sync asked.
    let mut flushed = false;
    for _ in 0..40 {
        sys::sleep_ns(100_000_000);
        let r = stack.cache_stats();
        if value(&r, "dirty") == 0 && value(&r, "ticks") > 0 {
            flushed = true;
            break;
        }
    }
    c.check(flushed, "the periodic flush left nothing dirty");
    c.check(
        value(&stack.disk_stats(), "blocks_written") >= writes + 128,
        "the file's blocks reached the disk",
    );
    // Cold sequential read: few disk requests of many pages (the window
    // doubles from 4 to 256: 1 + 4 + 8 + 16 + 32 + 64 pages cover the
    // 128 with room), most pages read ahead.
    c.check(stack.drop_cache(), "drop the cache");
    let before = stack.cache_stats();
    let disk_before = stack.disk_stats();
    c.check(read_file("/seq").as_deref() == Ok(&data[..]), "read /seq back");
    let after = stack.cache_stats();
    let disk_after = stack.disk_stats();
    let reads = value(&after, "disk_reads") - value(&before, "disk_reads");
    let ahead = value(&after, "read_ahead_used") - value(&before, "read_ahead_used");
    let blocks = value(&disk_after, "blocks_read") - value(&disk_before, "blocks_read");
    c.check(reads <= 8, &format!("128 pages read in {reads} disk requests"));
    c.check(
        blocks >= 128 && blocks / reads.max(1) >= 16,
        &format!("{blocks} blocks in {reads} requests to the disk server"),
    );
    c.check(ahead >= 100, &format!("{ahead} pages read ahead were used"));
    c.check(client::unlink("/seq").is_ok(), "unlink");
    stack.stop();
    println!("fstest cache: {} checks passed, {} failed", c.passed, c.failed);
    c.failed
}

/// Memory and processes, with the pool emptied, once they have settled:
/// ended processes are taken apart by whichever CPU reaps next, and the
/// cache's flush child ends on its own soon after the cache, so the
/// figures are read until the test is alone and two readings agree.
fn footprint() -> (u64, u64, u64) {
    footprint_with(1)
}

/// `footprint` once `alone` processes are left (the test's and those
/// that were there before it).
pub(super) fn footprint_with(alone: u64) -> (u64, u64, u64) {
    let mut last = (0, 0, 0);
    for _ in 0..100 {
        let _ = sys::pool_flush();
        sys::sleep_ns(20_000_000);
        let i = sys::sys_info().unwrap_or_default();
        let now = (i.frames_free, i.heap_used, i.processes);
        if now == last && i.processes <= alone {
            break;
        }
        last = now;
    }
    last
}

/// The same workload twice (the first fills the kernel's free lists):
/// the second leaves frames and processes as they were, and the kernel
/// heap within a page.
pub fn no_leak() -> u32 {
    let mut c = Checks::new("fstest");
    let workload = |c: &mut Checks| {
        let failed = c.failed;
        match Stack::start("small", 64, 1, false) {
            Ok(stack) => {
                c.check(write_file("/leak", &pattern(1, 200_000), 8192).is_ok(), "write");
                c.check(read_file("/leak").map(|d| d.len()) == Ok(200_000), "read");
                c.check(client::unlink("/leak").is_ok(), "unlink");
                stack.stop();
            }
            Err(e) => c.check(false, &e),
        }
        c.failed == failed
    };
    workload(&mut c);
    let before = footprint();
    workload(&mut c);
    let after = footprint();
    c.check(
        after.0 == before.0 && after.2 == before.2 && after.1.abs_diff(before.1) <= 1024,
        &format!("frames/heap/processes {before:?} before, {after:?} after"),
    );
    if c.failed > 0 {
        let mut pids = [0u64; 64];
        let n = sys::proc_list(&mut pids).unwrap_or(0).min(64);
        for &pid in &pids[..n] {
            if let Ok(p) = sys::proc_info(pid) {
                let name = core::str::from_utf8(&p.name).unwrap_or("?").trim_end_matches('\0');
                println!(
                    "fstest leak: process {pid} {name} state {} parent {}",
                    p.state, p.parent as i64
                );
            }
        }
    }
    println!(
        "fstest leak: {before:?} {after:?} {} checks passed, {} failed",
        c.passed, c.failed
    );
    c.failed
}
