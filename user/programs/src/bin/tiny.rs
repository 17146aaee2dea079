//! Does nothing: the smallest process, for process-creation benchmarks.
#![no_std]
#![no_main]
fn main(_args: &[&str]) -> i32 {
    0
}
tessera_rt::entry!(main);
