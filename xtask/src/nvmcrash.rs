//! The NVM store against a killed QEMU (seed 001's store, issue 20):
//! `offtest crash` stores text file `crash` again and again, each version
//! of its own size and byte; the host kills QEMU (SIGKILL) at a moment of
//! its choosing in the middle of one, then mounts the image with
//! `nvmstore` and must find `crash` whole and of one version, the last
//! stored or the one being stored, never a mix. Several rounds on one
//! image: each boot's kernel mounts what the last one left, and stores on.

use std::fs;
use std::path::Path;
use std::time::Duration;

use nvmstore::Store;
use nvmstore::file::FileRegion;

use crate::machine::Machine;
use crate::proc::Output;

pub const NAME: &str = "nvm_store_killed_mid_store_keeps_old_or_new_file";
pub const CMDLINE: &str = "servers=off run=offtest args=crash";
const ROUNDS: u64 = 4;
/// What `offtest crash` prints before it stores version N.
const STORING: &str = "offtest: storing ";

/// Version `v`'s length and byte, as `offtest crash` makes them.
pub fn version(v: u64) -> (usize, u8) {
    ((1 + (v % 3) as usize) << 20, (v % 251) as u8 + 1)
}

/// Boots a machine on the image it names (kept), with a watcher that may
/// ask for a kill.
pub type Boot<'a> =
    dyn FnMut(&Machine, &str, &Path, &mut dyn FnMut(&str) -> Option<Duration>) -> std::io::Result<Output> + 'a;

/// Runs the test: Ok(note) if it passed. The image stays beside the log
/// if it failed.
pub fn run(machine: &Machine, log: &Path, boot: &mut Boot) -> Result<String, String> {
    let image = log.with_extension("nvm.img");
    let _ = fs::remove_file(&image);
    let machine = machine.with_nvm_image(&image);
    machine.prepare_quietly()?;
    let mut found = Vec::new();
    for round in 0..ROUNDS {
        let mut last = 0;
        // A few stores in, then after 0, 3, 6 or 9 ms.
        let mut watch = |line: &str| {
            let n = line.split(STORING).nth(1)?.trim().parse::<u64>().ok()?;
            last = n;
            (n == 3 + round).then(|| Duration::from_millis(3 * round))
        };
        let out = boot(&machine, CMDLINE, log, &mut watch).map_err(|e| format!("cannot boot: {e}"))?;
        if let Some(l) = out.texts().iter().find(|l| l.contains("FAILED")) {
            return Err(format!("round {round}: {l}"));
        }
        if last < 3 + round {
            return Err(format!(
                "round {round}: the guest stored up to {last} only ({})",
                out.ending
            ));
        }
        let v = check(&image)?;
        // Stored: every version before the last announced; the last one
        // may have committed before the kill or not.
        if v != last && v + 1 != last {
            return Err(format!(
                "round {round}: version {v} found, the guest was storing {last}"
            ));
        }
        found.push(v);
    }
    let _ = fs::remove_file(&image);
    Ok(format!("killed while storing, found versions {found:?}, each whole"))
}

/// Mounts the image and returns the version `crash` holds, if it holds
/// exactly one whole version.
fn check(image: &Path) -> Result<u64, String> {
    let shown = image.display();
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(image)
        .map_err(|e| format!("{shown}: {e}"))?;
    let region = FileRegion::new(file).map_err(|e| format!("{shown}: {e}"))?;
    let store = Store::mount(region).map_err(|e| format!("{shown}: the store does not mount: {e}"))?;
    let info = store.lookup("crash").ok_or(format!("{shown}: no file `crash`"))?;
    let len = info.len as usize;
    if !store.verify("crash").map_err(|e| format!("{shown}: {e}"))? {
        return Err(format!("{shown}: `crash` fails its checksum"));
    }
    let mut data = vec![0u8; len];
    store.read("crash", 0, &mut data).map_err(|e| format!("{shown}: {e}"))?;
    let byte = data.first().copied().unwrap_or(0);
    if byte == 0 || data.iter().any(|&b| b != byte) {
        return Err(format!("{shown}: `crash` mixes versions"));
    }
    let v = u64::from(byte - 1);
    if version(v).0 != len {
        return Err(format!("{shown}: `crash` has version {v}'s bytes but {len} bytes"));
    }
    Ok(v)
}
