//! Tests that must fail, panic, fault or hang: they prove the runner and the
//! kernel's fault reporting catch each case.

use crate::ktest::TestResult;
use alloc::string::String;

pub fn selftest_failure_is_detected() -> TestResult {
    Err(String::from("deliberate"))
}

pub fn selftest_panic_prints_backtrace() -> TestResult {
    panic!("deliberate panic");
}

pub fn selftest_kernel_page_fault_is_reported() -> TestResult {
    // Slot 388 of the kernel half is never mapped.
    let p = 0xffff_c200_0000_0ff8u64 as *const u64;
    // SAFETY: not safe at all; the point is the page fault report.
    let v = unsafe { core::ptr::read_volatile(p) };
    Err(alloc::format!("read {v:#x} from an unmapped page"))
}

// Endless on purpose: it must run into the stack's guard page.
#[allow(unconditional_recursion)]
#[inline(never)]
fn recurse(depth: u64, pad: &mut [u8; 512]) -> u64 {
    pad[0] = depth as u8;
    let mut next = [0u8; 512];
    let r = recurse(depth + 1, &mut next);
    core::hint::black_box(&next);
    r + pad[0] as u64
}

pub fn selftest_stack_overflow_is_reported() -> TestResult {
    let mut pad = [0u8; 512];
    let r = recurse(0, &mut pad);
    Err(alloc::format!("recursion returned {r}"))
}

pub fn selftest_divide_error_is_reported() -> TestResult {
    let zero = core::hint::black_box(0u64);
    let q: u64;
    // SAFETY: deliberately divides by zero to raise #DE.
    unsafe { core::arch::asm!("xor edx, edx", "div {0}", in(reg) zero, inout("rax") 1u64 => q, out("rdx") _) };
    Err(alloc::format!("division gave {q}"))
}

pub fn selftest_hang_is_caught() -> TestResult {
    loop {
        crate::arch::x86_64::wait_for_interrupt();
    }
}
