//! A full disk: writing stops with ENOSPC, what was written stays, and
//! removing it gives every block back.

use super::*;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{Errno, O_APPEND, O_CREAT, O_WRONLY};

/// On `image` (the RAM disk's `small`, or `VIRTIO` with the same image on
/// the machine's disk). With `keep`, `/big` stays, synced, for the host to
/// read back.
pub fn run(image: &str, keep: bool) -> u32 {
    let mut c = Checks::new("fstest");
    // The 1 MiB image, a cache of a quarter of it: write-back under
    // pressure while the disk fills.
    let stack = match Stack::start(image, 64, 0, false) {
        Ok(s) => s,
        Err(e) => {
            println!("fstest: {e}");
            return 1;
        }
    };
    let free0 = client::statfs().map(|s| s.bfree).unwrap_or(0);
    let data = pattern(7, 2 << 20);
    let mut written = 0;
    let mut last = Ok(0);
    if let Ok(mut f) = File::open("/big", O_WRONLY | O_CREAT, 0o644) {
        while written < data.len() {
            last = f.write(&data[written..written + 4096]);
            match last {
                Ok(n) if n > 0 => written += n,
                _ => break,
            }
        }
    }
    c.errno(last, Errno::ENOSPC, "writing stops with ENOSPC");
    c.check(written > 512 * 1024, &format!("{written} bytes fitted"));
    c.check(
        read_file("/big").as_deref() == Ok(&data[..written]),
        "what was written reads back",
    );
    let more = File::open("/big", O_WRONLY | O_APPEND, 0).and_then(|mut f| f.write(b"x"));
    c.errno(more, Errno::ENOSPC, "appending to a full disk");
    c.check(
        client::stat("/big").map(|s| s.size) == Ok(written as i64),
        "a failed append leaves the size",
    );
    c.check(client::statfs().map(|s| s.bfree) == Ok(0), "no free block");
    c.check(client::sync().is_ok(), "sync on a full disk");
    c.check(stack.drop_cache(), "drop the cache");
    c.check(
        read_file("/big").as_deref() == Ok(&data[..written]),
        "what was written reads back from the disk",
    );
    c.check(
        read_file("/hello.txt").as_deref() == Ok(&b"Hello from the Tessera disk.\n"[..]),
        "the image's files are intact",
    );
    if keep {
        stack.stop();
        println!(
            "fstest full {image} keep: {written} bytes, {} checks passed, {} failed",
            c.passed, c.failed
        );
        return c.failed;
    }
    c.check(client::unlink("/big").is_ok(), "unlink");
    c.check(client::sync().is_ok(), "sync");
    let free1 = client::statfs().map(|s| s.bfree).unwrap_or(0);
    c.check(free1 == free0, &format!("free blocks {free0} before, {free1} after"));
    c.check(value(&stack.cache_stats(), "pages_lost") == 0, "no page lost");
    stack.stop();
    println!("fstest full: {} checks passed, {} failed", c.passed, c.failed);
    c.failed
}
