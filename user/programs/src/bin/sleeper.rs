//! Sleeps the given number of milliseconds; exits 0 if at least that much
//! time passed.
#![no_std]
#![no_main]
use tessera_rt::sys;

fn main(args: &[&str]) -> i32 {
    let ms: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let t0 = sys::now_ns();
    sys::sleep_ns(ms * 1_000_000);
    i32::from(sys::now_ns() - t0 < ms * 1_000_000)
}
tessera_rt::entry!(main);
