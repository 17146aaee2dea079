//! The kernel's file caches (`abi::file_cache`): a page read once is read
//! again from the kernel, with no call to the file server; a write, a
//! truncate and a write past the end through another open file are seen
//! by the next read at once; identifiers that are not the caller's to use
//! are refused.

use super::*;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_RDONLY, O_WRONLY};
use tessera_rt::abi::file_cache::op;
use tessera_rt::sys::calls;

const PATH: &str = "/t/coherent";
const SIZE: usize = 3 * 4096 + 100;

/// Reads `len` bytes at `off` through `f`.
fn read(f: &File, off: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = alloc::vec![0u8; len];
    let n = f.read_at(off, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

pub fn run(c: &mut Checks, stack: &Stack) {
    let mut want = pattern(17, SIZE);
    c.check(write_file(PATH, &want, 4096).is_ok(), "write /t/coherent");
    let (Ok(r), Ok(w)) = (File::open(PATH, O_RDONLY, 0), File::open(PATH, O_WRONLY, 0)) else {
        c.check(false, "open /t/coherent twice");
        return;
    };
    c.check(r.cache_id() != 0, "a file open for reading has a kernel cache");
    c.check(w.cache_id() == 0, "a file open for writing only is granted none");
    c.check(
        read(&r, 0, SIZE).as_deref() == Some(&want[..]),
        "first read (from the server)",
    );

    let forwarded = |s: &Stack| value(&s.fs_stats(), "forwarded_reads");
    c.check(
        value(&stack.cache_stats(), "published_pages") > 0 && value(&stack.fs_stats(), "pages_delegated") > 0,
        "the first read's pages were published by the block cache",
    );
    let before = forwarded(stack);
    c.check(
        read(&r, 4096, 4096).as_deref() == Some(&want[4096..8192]),
        "a page read again",
    );
    c.check(
        read(&r, 3 * 4096 + 50, 4096).as_deref() == Some(&want[3 * 4096 + 50..]),
        "a read over the end is short",
    );
    c.check(
        read(&r, SIZE as u64, 10).as_deref() == Some(&[][..]),
        "a read at the end is empty",
    );
    c.check(
        forwarded(stack) == before,
        "pages read again came from the kernel's cache, not the file server",
    );

    // A write through the other open file.
    c.check(w.write_at(5000, b"NEW") == Ok(3), "write 3 bytes at 5000");
    want[5000..5003].copy_from_slice(b"NEW");
    c.check(
        read(&r, 4096, 4096).as_deref() == Some(&want[4096..8192]),
        "the reader sees the write",
    );
    c.check(
        read(&r, 0, SIZE).as_deref() == Some(&want[..]),
        "the whole file after the write",
    );

    // Shorter, then longer with a hole between.
    c.check(w.truncate(6000).is_ok(), "truncate to 6000");
    want.truncate(6000);
    c.check(
        read(&r, 0, SIZE).as_deref() == Some(&want[..]),
        "the reader sees the truncate",
    );
    c.check(
        read(&r, 8192, 10).as_deref() == Some(&[][..]),
        "nothing past the new end",
    );
    c.check(w.write_at(10000, b"XY") == Ok(2), "write past the end");
    want.resize(10000, 0);
    want.extend_from_slice(b"XY");
    c.check(
        read(&r, 0, SIZE).as_deref() == Some(&want[..]),
        "the reader sees the gap as zeros and the new end",
    );
    c.check(
        read(&r, 0, want.len()).as_deref() == Some(&want[..]),
        "and again, from the kernel's cache",
    );

    // A file of whole pages, its end known to the kernel, then appended to.
    let whole = "/t/coherent-whole";
    let pages = pattern(19, 2 * 4096);
    c.check(write_file(whole, &pages, 4096).is_ok(), "write 2 whole pages");
    if let (Ok(r2), Ok(w2)) = (File::open(whole, O_RDONLY, 0), File::open(whole, O_WRONLY, 0)) {
        c.check(read(&r2, 0, 3 * 4096).as_deref() == Some(&pages[..]), "2 pages read");
        let before = forwarded(stack);
        c.check(
            read(&r2, 2 * 4096, 10).as_deref() == Some(&[][..]),
            "nothing at their end",
        );
        c.check(
            forwarded(stack) == before,
            "the kernel knows where a file of whole pages ends",
        );
        c.check(w2.write_at(2 * 4096, b"MORE") == Ok(4), "append 4 bytes");
        c.check(
            read(&r2, 2 * 4096, 10).as_deref() == Some(&b"MORE"[..]),
            "the reader sees the appended bytes",
        );
    } else {
        c.check(false, "open /t/coherent-whole twice");
    }
    c.check(client::unlink(whole).is_ok(), "unlink /t/coherent-whole");

    // Identifiers not the caller's to use.
    let id = r.cache_id();
    let mut buf = [0u8; 16];
    c.check(
        calls::file_cache_read(id ^ (1 << 20), 0, &mut buf).is_err(),
        "a forged cache id is a miss",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, 0, buf.as_ptr() as u64, 16) == Err(tessera_rt::abi::Error::Denied),
        "only the file server publishes its pages",
    );
    c.check(
        calls::file_cache(op::REVOKE, id, 0, 1, 0) == Err(tessera_rt::abi::Error::Denied),
        "only the file server revokes them",
    );
    c.check(
        calls::file_cache(op::PUBLISH, 0, 0, buf.as_ptr() as u64, 16).is_err(),
        "no cache at id 0",
    );
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, 0, buf.as_ptr() as u64, 16) == Err(tessera_rt::abi::Error::Denied),
        "only the publisher the file server named publishes for it",
    );
    c.check(
        calls::file_cache(op::PUBLISHER, id, sys::getpid(), 0, 0) == Err(tessera_rt::abi::Error::Denied),
        "only the file server names its publisher",
    );
    drop(r);
    drop(w);
    c.check(client::unlink(PATH).is_ok(), "unlink /t/coherent");
    publish_runs(c);
}

/// PUBLISH of runs of pages, by the owner of a cache of its own: bad
/// lengths and addresses refused, a run past the last page cut short.
fn publish_runs(c: &mut Checks) {
    use tessera_rt::abi::Error;
    use tessera_rt::abi::file_cache::{LAST, MAX_PAGES, PAGE, PUBLISH_MAX_PAGES};
    let Ok(id) = calls::file_cache(op::CREATE, 0, 0, 0, 0) else {
        c.check(false, "a cache of the test's own");
        return;
    };
    let data = pattern(5, (PUBLISH_MAX_PAGES * PAGE) as usize + 1);
    let at = data.as_ptr() as u64;
    c.check(
        calls::file_cache(op::PUBLISH, id, 0, at, 3 * PAGE) == Ok(3),
        "a run of three pages is published whole",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, 10, at, (PAGE + 10) | LAST) == Ok(2),
        "a run ending in a short last page",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, 20, at, PUBLISH_MAX_PAGES * PAGE + 1) == Err(Error::Invalid),
        "a run longer than PUBLISH_MAX_PAGES is refused",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, 20, at, LAST) == Err(Error::Invalid),
        "an empty run is refused",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, MAX_PAGES - 2, at, 4 * PAGE) == Ok(2),
        "a run past the last page is cut short there",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, MAX_PAGES, at, PAGE) == Err(Error::Limit),
        "a run from past the last page is refused",
    );
    c.check(
        calls::file_cache(op::PUBLISH, id, 30, 8, 2 * PAGE).is_err(),
        "a run from memory not the caller's is refused",
    );
    c.check(
        calls::file_cache(op::REVOKE, id, 0, u64::MAX, 0) == Ok(7),
        "exactly the pages published are present",
    );
    publish_for(c, id, &data);
    c.check(sys::res_delete(id).is_ok(), "the test's cache deleted");
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, 0, at, PAGE) == Err(Error::NotFound),
        "a deleted cache's id publishes nothing",
    );
}

/// PUBLISH_FOR into a cache of the test's own, by the test named its
/// publisher: only with the generation of after the last revoke, only
/// while named, runs checked as PUBLISH's.
fn publish_for(c: &mut Checks, id: u64, data: &[u8]) {
    use tessera_rt::abi::Error;
    use tessera_rt::abi::file_cache::{LAST, MAX_PAGES, PAGE, PUBLISH_MAX_PAGES};
    let at = data.as_ptr() as u64;
    let from = |page: u64, generation: u64| page | generation << 32;
    let Ok(g) = calls::file_cache(op::GENERATION, id, 0, 0, 0) else {
        c.check(false, "the owner reads its cache's generation");
        return;
    };
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, from(0, g), at, PAGE) == Err(Error::Denied),
        "no publisher named: refused",
    );
    c.check(
        calls::file_cache(op::PUBLISHER, id, sys::getpid(), 0, 0) == Ok(0),
        "the owner names itself publisher",
    );
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, from(0, g), at, 2 * PAGE) == Ok(2),
        "two pages published with the generation",
    );
    c.check(
        calls::file_cache(op::REVOKE, id, 5, 1, 0) == Ok(0),
        "a revoke of a page not there",
    );
    let now = calls::file_cache(op::GENERATION, id, 0, 0, 0).unwrap_or(g);
    c.check(now != g, "a revoke advances the generation");
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, from(2, g), at, PAGE) == Err(Error::Busy),
        "a page read before a revoke is refused",
    );
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, from(2, now), at, (PAGE + 10) | LAST) == Ok(2),
        "a run ending at the file's end, with the generation now",
    );
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, from(1, now), at, 2 * PAGE) == Ok(2 | 2 << 32),
        "pages present already are left as they are, and said so",
    );
    let refused = [
        (
            from(0, now),
            PUBLISH_MAX_PAGES * PAGE + 1,
            Error::Invalid,
            "a run too long",
        ),
        (from(0, now), LAST, Error::Invalid, "an empty run"),
        (from(MAX_PAGES, now), PAGE, Error::Limit, "a run past the last page"),
    ];
    for (a, len, want, what) in refused {
        c.check(calls::file_cache(op::PUBLISH_FOR, id, a, at, len) == Err(want), what);
    }
    c.check(
        calls::file_cache(op::PUBLISH_FOR, id, from(8, now), 8, PAGE).is_err(),
        "a run from memory not the caller's is refused",
    );
    c.check(
        calls::file_cache(op::PUBLISHER, id, 0, 0, 0) == Ok(0)
            && calls::file_cache(op::PUBLISH_FOR, id, from(0, now), at, PAGE) == Err(Error::Denied),
        "a publisher named no more is refused",
    );
    let mut buf = alloc::vec![0u8; 2 * PAGE as usize + 10];
    c.check(
        calls::file_cache(op::GRANT, id, sys::getpid(), 1, 0) == Ok(0)
            && calls::file_cache_read(id, 0, &mut buf[..2 * PAGE as usize]) == Ok(2 * PAGE)
            && buf[..2 * PAGE as usize] == data[..2 * PAGE as usize]
            && calls::file_cache_read(id, 2 * PAGE, &mut buf) == Ok(PAGE + 10)
            && buf[..PAGE as usize + 10] == data[..PAGE as usize + 10],
        "the pages published for the owner read back",
    );
    c.check(
        calls::file_cache(op::REVOKE, id, 0, u64::MAX, 0) == Ok(4),
        "exactly the pages published for the owner are present",
    );
}
