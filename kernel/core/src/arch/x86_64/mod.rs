//! x86_64: everything that depends on the processor and the PC platform.

pub mod apic;
pub mod gdt;
pub mod ioapic;
pub mod irq;
pub mod pci;
pub mod pic;
pub mod pit;
pub mod serial;
pub mod smp;
pub mod syscall;
pub mod trap;

use core::arch::{asm, global_asm};

// Each with the macros it uses (`long_mode.S`, `frame.S`), which define
// them only once.
global_asm!(include_str!("long_mode.S"), include_str!("boot.S"), options(att_syntax));
global_asm!(
    include_str!("long_mode.S"),
    include_str!("trampoline.S"),
    options(att_syntax)
);
global_asm!(include_str!("frame.S"), include_str!("vectors.S"), options(att_syntax));

/// Time-stamp counter. Under QEMU's icount mode it counts instructions.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no side effects; the TSD flag is never set.
    unsafe { core::arch::x86_64::_rdtsc() }
}

pub fn cpuid(leaf: u32, sub: u32) -> core::arch::x86_64::CpuidResult {
    core::arch::x86_64::__cpuid_count(leaf, sub)
}

/// Waits for an interrupt with interrupts enabled, then returns with them
/// disabled again. `sti` delays interrupts by one instruction, so an
/// interrupt that arrives between the caller's check and `hlt` still wakes it.
pub fn wait_for_interrupt() {
    // SAFETY: enabling interrupts around hlt is the idle protocol; the
    // interrupt handlers are installed before any caller gets here.
    unsafe { asm!("sti; hlt; cli", options(nomem, nostack)) };
}

/// Lets user mode use x87/SSE: the kernel itself stays soft-float and only
/// saves and restores user state with fxsave/fxrstor on a switch.
pub fn enable_user_fpu() {
    use x86_64::registers::control::{Cr0, Cr0Flags, Cr4, Cr4Flags};
    // SAFETY: these bits only control how FPU/SSE instructions behave.
    unsafe {
        Cr0::update(|f| {
            f.remove(Cr0Flags::EMULATE_COPROCESSOR | Cr0Flags::TASK_SWITCHED);
            f.insert(Cr0Flags::MONITOR_COPROCESSOR);
        });
        Cr4::update(|f| f.insert(Cr4Flags::OSFXSR | Cr4Flags::OSXMMEXCPT_ENABLE));
    }
}

/// Per-CPU set-up shared by the boot CPU and the others, after their
/// descriptor tables and APIC: system calls, FPU.
pub fn init_cpu_late() {
    enable_user_fpu();
    syscall::init_cpu();
}

pub fn halt_forever() -> ! {
    loop {
        // SAFETY: stops this CPU for good; nothing is left to run on it.
        unsafe { asm!("cli; hlt", options(nomem, nostack)) };
    }
}

/// Ends the QEMU session through the isa-debug-exit device (port 0xf4).
/// QEMU exits with status `(code << 1) | 1`: 0x10 gives 33 (success), 0x11
/// gives 35 (failure). On a machine without the device this does nothing and
/// the CPU halts.
pub fn qemu_exit(success: bool) -> ! {
    let code: u32 = if success { 0x10 } else { 0x11 };
    // SAFETY: port 0xf4 is the debug-exit device or nothing at all.
    unsafe { x86_64::instructions::port::Port::<u32>::new(0xf4).write(code) };
    halt_forever()
}

/// A fault-catching access met a page fault (or a non-canonical address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faulted;

/// Copies `len` bytes and reports a page fault on either side as an error
/// instead of a kernel crash: the primitive under every access to memory
/// the kernel does not trust (user pointers, frame pointers while printing
/// a backtrace). Whole words first, then the last bytes; each string move
/// has an exception-table entry that lets the page-fault handler resume at
/// the fixup instead of treating the fault as a kernel bug. Inlined (no
/// call): the rendezvous path copies a few short buffers per call.
///
/// # Safety
/// `dst..dst+len` must not overlap live kernel data the caller does not own;
/// faults are caught, but a successful write is a real write.
#[inline(always)]
pub unsafe fn fallible_copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), Faulted> {
    let failed: u32;
    // SAFETY: two string moves between the caller's ranges (the direction
    // flag is clear in the kernel: entry paths clear it); a fault in either
    // resumes at the fixup through the exception table.
    unsafe {
        core::arch::asm!(
            "2: rep movsq",
            "mov rcx, {rest}",
            "3: rep movsb",
            "xor {r:e}, {r:e}",
            "jmp 8f",
            "9: mov {r:e}, 1",
            "8:",
            ".pushsection .extable, \"a\"",
            ".balign 8",
            ".quad 2b, 9b",
            ".quad 3b, 9b",
            ".popsection",
            rest = in(reg) len & 7,
            r = out(reg) failed,
            inout("rcx") len >> 3 => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack),
        );
    }
    if failed == 0 { Ok(()) } else { Err(Faulted) }
}

/// Plain stores of words at `$dst + offset`, any of which may fault: each
/// store's exception-table entry sends a fault to the one fixup, which
/// reports it. Evaluates to 0, or 1 after a fault. Inside `unsafe`.
macro_rules! fallible_stores {
    ($dst:expr; $($w:ident at $off:literal),+ $(,)?) => {{
        let failed: u32;
        core::arch::asm!(
            $(
                concat!("2: mov qword ptr [{d} + ", $off, "], {", stringify!($w), "}"),
                ".pushsection .extable, \"a\"",
                ".balign 8",
                ".quad 2b, 9f",
                ".popsection",
            )+
            "xor {r:e}, {r:e}",
            "jmp 8f",
            "9: mov {r:e}, 1",
            "8:",
            d = in(reg) $dst,
            $($w = in(reg) $w,)+
            r = out(reg) failed,
            options(nostack),
        );
        failed
    }};
}

/// Stores six words at `dst` and reports a page fault as an error instead
/// of a kernel crash, like `fallible_copy` but with the words in registers:
/// a copy would first lay them out in memory (the rendezvous describes
/// every accepted call to its server with six words).
///
/// # Safety
/// As for `fallible_copy`: `dst..dst+48` must not be kernel data the caller
/// does not own.
#[inline(always)]
pub unsafe fn fallible_store6(dst: u64, w: [u64; 6]) -> Result<(), Faulted> {
    let [w0, w1, w2, w3, w4, w5] = w;
    // SAFETY: six plain stores; a fault on any of them resumes at the
    // fixup through the exception table, which reports the failure.
    let failed = unsafe { fallible_stores!(dst; w0 at 0, w1 at 8, w2 at 16, w3 at 24, w4 at 32, w5 at 40) };
    if failed == 0 { Ok(()) } else { Err(Faulted) }
}

/// Stores one word at `dst` and reports a page fault as an error, like
/// `fallible_store6` (a status written back into a caller's list).
///
/// # Safety
/// As for `fallible_copy`: `dst..dst+8` must not be kernel data the caller
/// does not own.
#[inline(always)]
pub unsafe fn fallible_store(dst: u64, w: u64) -> Result<(), Faulted> {
    // SAFETY: one plain store; a fault resumes at the fixup through the
    // exception table, which reports the failure.
    let failed = unsafe { fallible_stores!(dst; w at 0) };
    if failed == 0 { Ok(()) } else { Err(Faulted) }
}

/// Reads a u64 from an address that may be unmapped.
pub fn probe_read_u64(addr: u64) -> Option<u64> {
    let mut value = 0u64;
    // SAFETY: the destination is a local; the source may fault, which is caught.
    unsafe { fallible_copy(&mut value as *mut u64 as *mut u8, addr as *const u8, 8) }
        .ok()
        .map(|_| value)
}
