//! What Tessera reads from a tree the host put on the disk, told line by
//! line for the host to compare with what it put there: the guest judges
//! nothing, it only reports (`xtask/src/disktest.rs` holds the expected
//! tree).
//!
//! One line per object under the directory, in the order of a depth-first
//! walk: `fstest: tree d <path>`, `fstest: tree f <path> <size> <fnv>`
//! (FNV-1a, 64 bits, of the whole content, in hex), `fstest: tree l <path>
//! <target>`, or `fstest: tree error <path> <errno>`.

use super::*;
use tessera_api::fs::client;
pub use testdata::fnv64;

/// Reports every object under `dir`; the number of objects that could
/// not be read.
pub fn report(dir: &str) -> u32 {
    println!("fstest: tree d {dir}");
    walk(dir, 0)
}

fn walk(dir: &str, depth: u32) -> u32 {
    if depth > 16 {
        println!("fstest: tree error {dir} too-deep");
        return 1;
    }
    let mut entries = match client::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            println!("fstest: tree error {dir} {e:?}");
            return 1;
        }
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut errors = 0;
    for e in entries {
        if e.name == b"." || e.name == b".." {
            continue;
        }
        let path = format!("{dir}/{}", String::from_utf8_lossy(&e.name));
        match client::lstat(&path) {
            Ok(st) if st.is_dir() => {
                println!("fstest: tree d {path}");
                errors += walk(&path, depth + 1);
            }
            Ok(st) if st.is_symlink() => match client::readlink(&path) {
                Ok(t) => println!("fstest: tree l {path} {}", String::from_utf8_lossy(&t)),
                Err(e) => {
                    println!("fstest: tree error {path} {e:?}");
                    errors += 1;
                }
            },
            Ok(_) => match read_file(&path) {
                Ok(data) => println!("fstest: tree f {path} {} {:016x}", data.len(), fnv64(&data)),
                Err(e) => {
                    println!("fstest: tree error {path} {e:?}");
                    errors += 1;
                }
            },
            Err(e) => {
                println!("fstest: tree error {path} {e:?}");
                errors += 1;
            }
        }
    }
    errors
}
