//! Kernel panic: say what happened and where, with a backtrace, then end the
//! machine with a failure status (so a test runner sees it) instead of
//! hanging. Other CPUs keep running until QEMU exits; nothing else is needed
//! from them.

use crate::arch::x86_64::{probe_read_u64, qemu_exit};
use crate::{console, cpu, println};
use core::panic::PanicInfo;
use core::sync::atomic::{AtomicBool, Ordering};

static PANICKED: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    x86_64::instructions::interrupts::disable();
    if PANICKED.swap(true, Ordering::SeqCst) {
        // A second panic (on this or another CPU) while the first is being
        // reported: let the first one finish.
        crate::arch::x86_64::halt_forever();
    }
    console::enter_panic_mode();
    let cpu = cpu::try_this_cpu().map_or(-1, |c| c.index as i64);
    println!();
    println!("KERNEL PANIC on cpu {cpu}: {}", info.message());
    if let Some(loc) = info.location() {
        println!("  at {}:{}:{}", loc.file(), loc.line(), loc.column());
    }
    backtrace();
    qemu_exit(false)
}

/// Walks the frame-pointer chain (the kernel is built with frame pointers).
/// Each read goes through the fault-catching copy, so a corrupt chain ends
/// the backtrace instead of faulting inside the panic handler.
fn backtrace() {
    let mut rbp: u64;
    // SAFETY: reads the frame pointer register only.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) rbp, options(nomem, nostack)) };
    println!("backtrace:");
    for i in 0..32 {
        if rbp == 0 || !rbp.is_multiple_of(8) || rbp < crate::mm::layout::PHYS_OFFSET {
            break;
        }
        let (Some(next), Some(ret)) = (probe_read_u64(rbp), probe_read_u64(rbp + 8)) else {
            break;
        };
        if ret == 0 {
            break;
        }
        println!("  #{i} {ret:#x}");
        rbp = next;
    }
}
