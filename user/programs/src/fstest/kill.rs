//! Servers killed under the kernel's file caches (issue 17's hostile
//! input): the file server while a client reads its granted cache in a
//! loop, the block cache while it publishes a sequential read's pages into
//! the file server's cache (`file_cache(PUBLISH_FOR)`), and the file server
//! while the block cache publishes for it. Each time the kernel lives, the
//! reader (a process of its own, `fstest reader`) ends with a clear error
//! within a bounded time, and once the rest has ended the file caches,
//! free frames, kernel heap and processes are back to their level.
//!
//! The reader runs apart so that a hang is seen: the test waits for it a
//! bounded time and fails if it has not ended.

use super::*;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_RDONLY, O_WRONLY};
use tessera_rt::abi::{Error, KindCount, ResKind, SpawnOptions};
use tessera_rt::sys::calls;

/// The small file the cached reader reads again and again.
const SMALL: &str = "/kill-small";
const SMALL_SIZE: usize = 16 * 4096 + 100;
/// The file streamed while the block cache publishes: 2,048 pages, so
/// that a pass's publishing lasts long enough to be caught half done.
const BIG: &str = "/kill-big";
const BIG_SIZE: usize = 8 << 20;
/// Cache pages for the big file's stack: it stays cached whole, so that
/// every pass publishes (only pages the block cache held before a READ
/// are published).
const BIG_CACHE_PAGES: u32 = 2560;
/// How long a reader may take to start, or to end after the kill.
const READER_START_NS: u64 = 30_000_000_000;
const READER_END_NS: u64 = 10_000_000_000;
/// Bytes a stream reader asks for per read (a READ's most).
const CHUNK: usize = 64 * 4096;

/// What a reader's exit status says.
mod status {
    /// It ended with the clear error the test wants.
    pub const ERRED: u64 = 0;
    pub const BAD_ARGS: u64 = 2;
    pub const WRONG_BYTES: u64 = 3;
    pub const NO_ERROR: u64 = 4;
    pub const NEVER_FROM_KERNEL: u64 = 5;
    pub const SERVED_AFTER_KILL: u64 = 6;
    pub const NO_CACHE: u64 = 7;
}

fn now_ns() -> u64 {
    sys::clock().nanos
}

/// Live file caches (the resource kind's count).
fn file_caches() -> u64 {
    sys::inspect_all::<KindCount>(0)
        .ok()
        .and_then(|v| v.into_iter().find(|k| k.kind == ResKind::FileCache as u64))
        .map_or(u64::MAX, |k| k.live)
}

/// Waits until live file caches are `want` (ending processes are taken
/// apart by whichever CPU reaps next); whether they were within 5 s.
fn file_caches_become(want: u64) -> bool {
    let deadline = now_ns() + 5_000_000_000;
    while now_ns() < deadline {
        if file_caches() == want {
            return true;
        }
        sys::sleep_ns(5_000_000);
    }
    false
}

/// Starts `fstest reader <mode> <path> <size> <seed> <ready>` and waits
/// until it registers `ready` (it reads as it should); its pid.
fn start_reader(mode: &str, path: &str, size: usize, seed: u64, ready: &str) -> Result<u64, String> {
    let (mut a, mut b) = ([0u8; 24], [0u8; 24]);
    let size = sys::fmt_u64(size as u64, &mut a);
    let seed = sys::fmt_u64(seed, &mut b);
    let options = SpawnOptions {
        rights: 0,
        ..SpawnOptions::DEFAULT
    };
    let pid = sys::spawn("fstest", &["reader", mode, path, size, seed, ready], &options)
        .map_err(|e| format!("spawn the reader: {e:?}"))?;
    let deadline = now_ns() + READER_START_NS;
    while now_ns() < deadline {
        if sys::name_lookup(ready) == Ok(pid) {
            return Ok(pid);
        }
        if !sys::alive(pid) {
            let status = sys::wait(pid).unwrap_or(u64::MAX);
            return Err(format!("the reader ended with {status} before it was ready"));
        }
        sys::sleep_ns(2_000_000);
    }
    sys::stop(pid);
    Err("the reader was not ready in 30 s".into())
}

/// Waits a bounded time for reader `pid` to end; its status (None: it
/// hung, and was killed).
fn reader_ends(pid: u64) -> Option<u64> {
    let deadline = now_ns() + READER_END_NS;
    while now_ns() < deadline {
        if !sys::alive(pid) {
            return sys::wait(pid).ok();
        }
        sys::sleep_ns(2_000_000);
    }
    sys::stop(pid);
    None
}

fn check_reader(c: &mut Checks, pid: u64, what: &str) {
    match reader_ends(pid) {
        Some(status::ERRED) => c.check(true, what),
        Some(s) => c.check(false, &format!("{what}: the reader ended with status {s}")),
        None => c.check(false, &format!("{what}: the reader hung (no end in 10 s)")),
    }
}

/// Whether byte `offset` of cache `id` is in the kernel (a 1-byte read
/// that needs its page).
fn present(id: u64, offset: u64) -> bool {
    let mut b = [0u8; 1];
    calls::file_cache_read(id, offset, &mut b) == Ok(1)
}

/// Waits (up to 20 s) for a pass of the stream reader to be half
/// published: a page a quarter in present, one three quarters in not yet
/// (a pass starts with none: the reader drops them between passes).
fn half_published(id: u64, size: usize) -> bool {
    let (q1, q3) = ((size / 4) as u64, (size / 4 * 3) as u64);
    let deadline = now_ns() + 20_000_000_000;
    while now_ns() < deadline {
        if present(id, q1) && !present(id, q3) {
            return true;
        }
        sys::yield_now();
    }
    false
}

/// The file server killed while a client reads its granted cache in a
/// loop with no call to it: the reader's next read misses (the cache
/// went with its owner) and the server's absence is its error.
fn fs_killed_under_cached_reader(c: &mut Checks, round: u32, bufs: &mut Bufs) {
    let caches = file_caches();
    let mut stack = match Stack::start("root", 256, 0, false) {
        Ok(s) => s,
        Err(e) => return c.check(false, &e),
    };
    c.check(
        write_file(SMALL, &bufs.small, 8192).is_ok(),
        "write the cached reader's file",
    );
    let ready = format!("t.reader.a{round}");
    match start_reader("cached", SMALL, SMALL_SIZE, 41, &ready) {
        Ok(reader) => {
            // It reads from the kernel meanwhile.
            sys::sleep_ns(50_000_000);
            c.check(sys::alive(reader), "the cached reader reads on");
            sys::stop(stack.fs);
            stack.fs = 0;
            check_reader(
                c,
                reader,
                "the cached reader gets an error once the file server is killed",
            );
            c.check(
                file_caches_become(caches),
                "the killed file server's file caches are gone",
            );
        }
        Err(e) => c.check(false, &e),
    }
    stack.stop();
}

/// The big file written, and a stream reader started on it (its first
/// pass done); the stack, the reader's pid and a granted cache id, with
/// the file open here to probe it.
fn start_streaming(c: &mut Checks, ready: &str, big: &[u8]) -> Option<(Stack, u64, File)> {
    let stack = match Stack::start("root", BIG_CACHE_PAGES, 0, false) {
        Ok(s) => s,
        Err(e) => {
            c.check(false, &e);
            return None;
        }
    };
    c.check(write_file(BIG, big, CHUNK).is_ok(), "write the streamed file");
    let probe = match File::open(BIG, O_RDONLY, 0) {
        Ok(f) if f.cache_id() != 0 => f,
        _ => {
            c.check(false, "the streamed file opened for reading has a kernel cache");
            stack.stop();
            return None;
        }
    };
    match start_reader("stream", BIG, BIG_SIZE, 43, ready) {
        Ok(reader) => Some((stack, reader, probe)),
        Err(e) => {
            c.check(false, &e);
            drop(probe);
            stack.stop();
            None
        }
    }
}

/// The block cache killed while it publishes a sequential read's pages
/// for the file server: the pages published stay the file server's, the
/// reader's next miss fails clearly, and the file server answers on
/// (with errors) until it is stopped.
fn cache_killed_mid_publish(c: &mut Checks, round: u32, bufs: &mut Bufs) {
    let caches = file_caches();
    let Some((mut stack, reader, probe)) = start_streaming(c, &format!("t.reader.b{round}"), &bufs.big) else {
        return;
    };
    let id = probe.cache_id();
    let caught = half_published(id, BIG_SIZE);
    sys::stop(stack.cache);
    stack.cache = 0;
    c.check(caught, "a pass of the streamed file was caught half published");
    check_reader(
        c,
        reader,
        "the stream reader gets an error once the block cache is killed",
    );
    c.check(sys::alive(stack.fs), "the file server lives on without its block cache");
    // A page not published is a miss, and the server, its cache gone,
    // says so with an error (no hang).
    let last = (BIG_SIZE - 4096) as u64;
    c.check(
        present(id, last) || probe.read_at(last, &mut bufs.back[..4096]).is_err(),
        "a read past what was published fails",
    );
    c.check(
        File::open(BIG, O_WRONLY, 0).and_then(|f| f.write_at(0, b"x")).is_err(),
        "a write with no block cache fails",
    );
    drop(probe);
    sys::stop(stack.fs);
    stack.fs = 0;
    c.check(file_caches_become(caches), "the file server's file caches are gone");
    stack.stop();
}

/// The file server killed while the block cache publishes for it: the
/// block cache's publishing is refused (the caches went with their
/// owner), it serves on, and a new file server on it reads the file
/// back whole and has it publish again.
fn fs_killed_while_cache_publishes(c: &mut Checks, round: u32, bufs: &mut Bufs) {
    let caches = file_caches();
    let Some((mut stack, reader, probe)) = start_streaming(c, &format!("t.reader.c{round}"), &bufs.big) else {
        return;
    };
    let id = probe.cache_id();
    let caught = half_published(id, BIG_SIZE);
    sys::stop(stack.fs);
    stack.fs = 0;
    c.check(caught, "a pass of the streamed file was caught half published");
    // The file's handle was the dead server's: its close fails at once.
    drop(probe);
    check_reader(
        c,
        reader,
        "the stream reader gets an error once the file server is killed",
    );
    c.check(
        file_caches_become(caches),
        "the killed file server's file caches are gone",
    );
    c.check(!present(id, 0), "the killed file server's cache serves nothing");
    let report = stack.cache_stats();
    c.check(
        value(&report, "published_pages") != u64::MAX,
        "the block cache serves on after its file server was killed",
    );
    match Stack::start_fs(false) {
        Ok(fs) => {
            stack.fs = fs;
            let told = read_back(&mut bufs.back);
            c.check(
                told.is_ok() && bufs.back == bufs.big,
                &format!("a new file server reads the file back whole: {told:?}"),
            );
            // Its reads are published by the block cache again.
            match File::open(BIG, O_RDONLY, 0) {
                Ok(f) => {
                    let mut b = [0u8; 64];
                    let served = calls::file_cache_read(f.cache_id(), 4096, &mut b) == Ok(64);
                    c.check(
                        served && b[..] == bufs.big[4096..4096 + 64],
                        "the new file server's cache is published into",
                    );
                }
                Err(e) => c.check(false, &format!("open on the new file server: {e:?}")),
            }
        }
        Err(e) => c.check(false, &format!("a new file server on the same block cache: {e}")),
    }
    stack.stop();
    c.check(file_caches_become(caches), "the new file server's file caches are gone");
}

/// The files' contents and a buffer to read the big one back, made once:
/// memory this process took afresh in each case would leave page tables
/// in its space (a range once used keeps them), counted as frames gone.
pub struct Bufs {
    small: Vec<u8>,
    big: Vec<u8>,
    back: Vec<u8>,
}

/// The big file into `to`, a READ at a time; how much was read.
fn read_back(to: &mut [u8]) -> Result<usize, tessera_api::fs::Errno> {
    to.fill(0);
    let f = File::open(BIG, O_RDONLY, 0)?;
    let mut at = 0;
    while at < to.len() {
        let end = to.len().min(at + CHUNK);
        match f.read_at(at as u64, &mut to[at..end])? {
            0 => break,
            n => at += n,
        }
    }
    Ok(at)
}

/// A case: its checks, its round (names differ per round) and the buffers.
type Case = fn(&mut Checks, u32, &mut Bufs);

/// Each case twice (the first fills the kernel's free lists): the second
/// leaves frames and processes as they were, and the kernel heap within
/// a page.
pub fn run(only: Option<usize>) -> u32 {
    let mut c = Checks::new("fstest");
    // This process and those before it (init, which waits for it).
    let alone = sys::sys_info().map_or(1, |i| i.processes);
    let mut bufs = Bufs {
        small: pattern(41, SMALL_SIZE),
        big: pattern(43, BIG_SIZE),
        back: alloc::vec![0u8; BIG_SIZE],
    };
    let cases: [(&str, Case); 3] = [
        (
            "file server killed under a cached reader",
            fs_killed_under_cached_reader,
        ),
        ("block cache killed mid-publish", cache_killed_mid_publish),
        (
            "file server killed while the block cache publishes",
            fs_killed_while_cache_publishes,
        ),
    ];
    for (i, (what, case)) in cases.into_iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        for round in 0..2 {
            let before = cache::footprint_with(alone);
            let failed = c.failed;
            case(&mut c, round, &mut bufs);
            let after = cache::footprint_with(alone);
            if round == 1 {
                c.check(
                    after.0 == before.0 && after.2 == before.2 && after.1.abs_diff(before.1) <= 1024,
                    &format!("{what}: frames/heap/processes {before:?} before, {after:?} after"),
                );
            }
            println!(
                "fstest kill: {what} (round {round}): {} failed, {before:?} {after:?} heap size {}",
                c.failed - failed,
                sys::sys_info().map_or(0, |i| i.heap_size)
            );
        }
    }
    println!("fstest kill: {} checks passed, {} failed", c.passed, c.failed);
    c.failed
}

/// `fstest reader <mode> <path> <size> <seed> <ready>`, the reader the
/// cases start: `cached` reads the file from the kernel's cache in a loop
/// (`file_cache_read`), `stream` reads it whole in READ-sized pieces
/// again and again, the kernel's pages dropped between passes so that
/// the block cache publishes every pass. Registers `ready` once it reads
/// as it should, checks every byte, and ends when a read fails (status
/// `ERRED`), or after 20 s with `NO_ERROR`.
pub fn reader(args: &[&str]) -> u64 {
    let [mode, path, size, seed, ready] = args else {
        return status::BAD_ARGS;
    };
    let (Ok(size), Ok(seed)) = (size.parse::<usize>(), seed.parse::<u64>()) else {
        return status::BAD_ARGS;
    };
    let want = pattern(seed, size);
    let Ok(f) = File::open(path, O_RDONLY, 0) else {
        return status::NO_CACHE;
    };
    if f.cache_id() == 0 {
        return status::NO_CACHE;
    }
    let deadline = now_ns() + 20_000_000_000;
    match *mode {
        "cached" => cached_reader(&f, &want, ready, deadline),
        "stream" => stream_reader(&f, &want, ready, deadline),
        _ => status::BAD_ARGS,
    }
}

fn cached_reader(f: &File, want: &[u8], ready: &str, deadline: u64) -> u64 {
    let mut buf = alloc::vec![0u8; want.len()];
    // The first reads come from the server, which has the pages published.
    let mut from_kernel = false;
    for _ in 0..4 {
        if f.read_at(0, &mut buf) != Ok(want.len()) || buf != want {
            return status::WRONG_BYTES;
        }
        if calls::file_cache_read(f.cache_id(), 0, &mut buf) == Ok(want.len() as u64) {
            from_kernel = true;
            break;
        }
    }
    if !from_kernel {
        return status::NEVER_FROM_KERNEL;
    }
    let _ = sys::name_register(ready, 1);
    let mut reads = 0u64;
    while now_ns() < deadline {
        buf.fill(0);
        match calls::file_cache_read(f.cache_id(), 0, &mut buf) {
            Ok(n) if n as usize == want.len() && buf == want => reads += 1,
            Ok(_) => return status::WRONG_BYTES,
            Err(e) => {
                // The cache went with its owner: a miss, and the server
                // it sends the reader to is gone.
                let after = f.read_at(0, &mut buf);
                println!("fstest reader: {reads} reads from the kernel, then {e:?}; from the server {after:?}");
                return match (e, after) {
                    (Error::NotFound, Err(_)) => status::ERRED,
                    _ => status::SERVED_AFTER_KILL,
                };
            }
        }
    }
    status::NO_ERROR
}

fn stream_reader(f: &File, want: &[u8], ready: &str, deadline: u64) -> u64 {
    let mut buf = alloc::vec![0u8; CHUNK];
    let mut passes = 0u64;
    while now_ns() < deadline {
        let mut at = 0;
        while at < want.len() {
            let n = CHUNK.min(want.len() - at);
            match f.read_at(at as u64, &mut buf[..n]) {
                Ok(got) if got == n && buf[..n] == want[at..at + n] => at += n,
                Ok(_) => return status::WRONG_BYTES,
                Err(e) => {
                    println!("fstest reader: {passes} passes, then {e:?} at {at}");
                    return status::ERRED;
                }
            }
        }
        passes += 1;
        if passes == 1 {
            let _ = sys::name_register(ready, 1);
        }
        // The next pass has the block cache publish every page again.
        if let Err(e) = client::drop_pages() {
            println!("fstest reader: {passes} passes, then {e:?} dropping the pages");
            return status::ERRED;
        }
    }
    status::NO_ERROR
}
