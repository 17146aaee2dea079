//! What the storage tests share beyond the server stack (`fsstack.rs`):
//! checks that count failures.

pub mod bad;
pub mod cache;
pub mod crash;
pub mod full;
pub mod rw;
pub mod tree;

pub use crate::fsstack::*;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use tessera_api::fs;
use tessera_api::fs::Errno;
use tessera_rt::{println, sys};

/// Counts failed checks and says what failed.
#[derive(Default)]
pub struct Checks {
    pub failed: u32,
    pub passed: u32,
}

impl Checks {
    pub fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
            println!("fstest: FAILED {what}");
        }
    }

    /// Checks that `r` is the error `want`.
    pub fn errno<T>(&mut self, r: Result<T, Errno>, want: Errno, what: &str) {
        match r {
            Err(e) if e == want => self.passed += 1,
            Err(e) => self.check(false, &format!("{what}: {e:?}, not {want:?}")),
            Ok(_) => self.check(false, &format!("{what}: succeeded, not {want:?}")),
        }
    }
}
