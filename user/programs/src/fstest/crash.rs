//! The write workload the host kills QEMU in the middle of: rounds of
//! writes that never end on their own. The host (`xtask/src/disktest.rs`)
//! knows the same rounds, reads from the serial console which fsyncs
//! returned, kills the machine, and checks the disk: this program judges
//! nothing after the kill, it can only say what it finished.
//!
//! Round i, in this order:
//! 1. `/c/u<i mod 3>` rewritten (truncated) with 150 KiB of `pattern(2000 + i)`;
//! 2. `/c/t<i>` created with 5,000 bytes of `pattern(3000 + i)`;
//! 3. `/c/t<i-1>` renamed to `/c/r<i-1>` (from round 1 on);
//! 4. `/c/s<i>` created with `synced_size(i)` bytes of `pattern(1000 + i)`,
//!    fsynced, and `fstest: fsynced /c/s<i>` printed once `fsync` returned.
//!
//! The cache flushes every second and holds 1 MiB, so blocks reach the disk
//! all the time, in between the syncs too.

use super::*;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_CREAT, O_EXCL, O_WRONLY};

/// Rounds before the program gives up waiting to be killed.
const ROUNDS: u64 = 300;

/// The sizes of the fsynced files, in turn: a byte, a block, into the
/// indirect blocks, several pages, an odd size.
pub fn synced_size(i: u64) -> usize {
    [1, 4096, 12 * 1024 + 1, 70_000, 5000][(i % 5) as usize]
}

fn round(i: u64) -> Result<(), String> {
    let u = format!("/c/u{}", i % 3);
    write_file(&u, &pattern(2000 + i, 150 * 1024), 4096).map_err(|e| format!("{u}: {e:?}"))?;
    let t = format!("/c/t{i}");
    write_file(&t, &pattern(3000 + i, 5000), 5000).map_err(|e| format!("{t}: {e:?}"))?;
    if i > 0 {
        let (from, to) = (format!("/c/t{}", i - 1), format!("/c/r{}", i - 1));
        client::rename(&from, &to).map_err(|e| format!("rename {from}: {e:?}"))?;
    }
    let s = format!("/c/s{i}");
    let mut f = File::open(&s, O_WRONLY | O_CREAT | O_EXCL, 0o644).map_err(|e| format!("{s}: {e:?}"))?;
    let data = pattern(1000 + i, synced_size(i));
    for part in data.chunks(8192) {
        f.write(part).map_err(|e| format!("{s}: {e:?}"))?;
    }
    f.sync().map_err(|e| format!("fsync {s}: {e:?}"))?;
    println!("fstest: fsynced {s}");
    Ok(())
}

pub fn run() -> u32 {
    let stack = match Stack::start(VIRTIO, 256, 1, false) {
        Ok(s) => s,
        Err(e) => {
            println!("fstest: FAILED {e}");
            return 1;
        }
    };
    if let Err(e) = client::mkdir("/c", 0o755).and_then(|()| client::sync()) {
        println!("fstest: FAILED mkdir /c: {e:?}");
        return 1;
    }
    println!("fstest: crash workload started");
    for i in 0..ROUNDS {
        if let Err(e) = round(i) {
            println!("fstest: FAILED round {i}: {e}");
            stack.stop();
            return 1;
        }
    }
    println!("fstest: FAILED not killed after {ROUNDS} rounds");
    stack.stop();
    1
}
