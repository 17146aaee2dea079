//! What the storage tests share beyond the server stack (`fsstack.rs`):
//! checks that count failures.

pub mod bad;
pub mod cache;
pub mod coherent;
pub mod crash;
pub mod full;
pub mod kill;
pub mod rw;
pub mod tree;

pub use crate::fsstack::*;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use tessera_api::fs;
use tessera_rt::{println, sys};
pub use testdata::{Rng, pattern};

pub use user_programs::checks::Checks;
