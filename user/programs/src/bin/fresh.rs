//! Checks that it starts from a fresh image: initialised data has its
//! initial value and BSS is zero; then dirties both. Run twice from a
//! pooled (reused) virtual space, it proves the pool gives a process
//! nothing of the previous one. Exits 0 if fresh.
#![no_std]
#![no_main]
use tessera_rt::println;

static mut DATA: [u64; 512] = [0x5eed; 512];
static mut BSS: [u64; 4096] = [0; 4096];

fn main(_args: &[&str]) -> i32 {
    let data = &raw mut DATA;
    let bss = &raw mut BSS;
    // SAFETY: single-threaded program touching its own statics.
    unsafe {
        let fresh = (*data).iter().all(|&x| x == 0x5eed) && (*bss).iter().all(|&x| x == 0);
        for x in (*data).iter_mut().chain((*bss).iter_mut()) {
            core::ptr::write_volatile(x, 0xdead);
        }
        if !fresh {
            println!("fresh: found the previous process's data");
        }
        i32::from(!fresh)
    }
}
tessera_rt::entry!(main);
