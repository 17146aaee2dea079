//! What the file commands (ls, cat, cp, mkdir, rm, mv, write) share: paths
//! and error messages. Paths are absolute or from the root (the shell has
//! no working directory yet). Each command uses part of it.
#![allow(dead_code)]

use alloc::format;
use alloc::string::String;
use tessera_api::fs::Errno;
use tessera_rt::println;

/// `path` from the root.
pub fn absolute(path: &str) -> String {
    if path.starts_with('/') {
        String::from(path)
    } else {
        format!("/{path}")
    }
}

/// The last component of a path.
pub fn base_name(path: &str) -> &str {
    path.trim_end_matches('/').rsplit('/').next().unwrap_or(path)
}

/// `dir/name`, without a doubled slash.
pub fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// Prints `cmd: what: error` and gives the exit status of a failure.
pub fn fail(cmd: &str, what: &str, e: Errno) -> i32 {
    println!("{cmd}: {what}: {e}");
    1
}
