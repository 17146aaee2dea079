//! Burns CPU for the given number of milliseconds (default 100), then exits:
//! a CPU-bound process for scheduling tests.
#![no_std]
#![no_main]
use tessera_rt::sys;

fn main(args: &[&str]) -> i32 {
    let ms: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let end = sys::now_ns() + ms * 1_000_000;
    let mut x = 0u64;
    while sys::now_ns() < end {
        for _ in 0..1000 {
            x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    0
}
tessera_rt::entry!(main);
