//! The runtime of native Tessera programs: process entry (`_start`), typed
//! system-call wrappers over the `abi` crate, a heap on anonymous memory,
//! console output macros and a panic handler. A program is a `no_std`,
//! `no_main` binary that names its main function with `tessera_rt::entry!`.
#![no_std]

extern crate alloc;

// Only where there is no std: a host build (a crate's unit tests) takes
// std's allocator and panic handler, and two of either would not link.
#[cfg(target_os = "none")]
pub mod heap;
pub mod ica;
pub mod io;
pub mod ring;
pub mod sys;

pub use abi;

/// Declares the program's main function: `fn main(args: &[&str]) -> i32`.
/// `args[0]` is the program's name.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(no_mangle)]
        pub fn tessera_main(args: &[&str]) -> i32 {
            $main(args)
        }
    };
}

unsafe extern "Rust" {
    fn tessera_main(args: &[&str]) -> i32;
}

/// Most arguments a program sees (the rest are dropped).
const MAX_ARGS: usize = 64;

/// Process entry: the kernel starts us with `rdi` = argc, `rsi` = argv.
///
/// # Safety
/// Only the kernel calls this, once, as the first instruction of the process.
#[unsafe(no_mangle)]
#[unsafe(naked)]
pub unsafe extern "C" fn _start() -> ! {
    core::arch::naked_asm!("and rsp, -16", "call {start}", "ud2", start = sym start);
}

extern "C" fn start(argc: u64, argv: *const *const u8) -> ! {
    let mut args: [&str; MAX_ARGS] = [""; MAX_ARGS];
    let n = (argc as usize).min(MAX_ARGS);
    for (i, slot) in args.iter_mut().enumerate().take(n) {
        // SAFETY: the kernel put argc valid pointers to NUL-terminated
        // strings on our stack, which lives as long as the process.
        unsafe {
            let p = *argv.add(i);
            let mut len = 0;
            while *p.add(len) != 0 {
                len += 1;
            }
            *slot = core::str::from_utf8(core::slice::from_raw_parts(p, len)).unwrap_or("");
        }
    }
    // SAFETY: the program defines tessera_main through `entry!`.
    let status = unsafe { tessera_main(&args[..n]) };
    sys::exit(status as u64)
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("panic: {}", info);
    sys::exit(101)
}
