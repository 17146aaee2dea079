//! Commits one fault, chosen by its argument, so that tests can check the
//! kernel kills the process alone with a clear message.
#![no_std]
#![no_main]
use tessera_rt::println;

#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let pad = core::hint::black_box([depth; 64]);
    recurse(depth + 1) + pad[3]
}

fn main(args: &[&str]) -> i32 {
    let what = args.get(1).copied().unwrap_or("");
    // SAFETY (all cases): deliberately wrong; the point is the fault.
    unsafe {
        match what {
            "null" => println!("{}", core::ptr::read_volatile(core::ptr::null::<u64>())),
            "writetext" => core::ptr::write_volatile(main as *const () as *mut u8, 0),
            "execdata" => {
                static CODE: [u8; 4] = [0xc3; 4];
                let f: extern "C" fn() = core::mem::transmute(CODE.as_ptr());
                f();
            }
            "div0" => {
                let zero = core::hint::black_box(0u64);
                core::arch::asm!("xor edx, edx", "div {0}", in(reg) zero, inout("rax") 1u64 => _, out("rdx") _);
            }
            "ud2" => core::arch::asm!("ud2"),
            "stack" => println!("{}", recurse(0)),
            "kernel" => println!("{}", core::ptr::read_volatile(0xffff_ffff_8010_0000u64 as *const u64)),
            "privileged" => core::arch::asm!("hlt"),
            _ => {
                println!("usage: faults null|writetext|execdata|div0|ud2|stack|kernel|privileged");
                return 2;
            }
        }
    }
    println!("faults: {what} did not fault");
    1
}
tessera_rt::entry!(main);
