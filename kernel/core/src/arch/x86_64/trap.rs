//! The IDT and the one Rust entry point for every interrupt and exception.

use super::apic;
use super::gdt::{IST_DOUBLE_FAULT, IST_NMI, KERNEL_CS};
use core::sync::atomic::{AtomicU64, Ordering};

/// Interrupt vectors owned by the kernel.
pub mod vector {
    pub const TIMER: u8 = 0x20;
    pub const SERIAL: u8 = 0x24;
    /// The 8259 PICs are remapped here and masked; only spurious IRQs arrive.
    pub const PIC_BASE: u8 = 0x70;
    pub const TLB_SHOOTDOWN: u8 = 0xf0;
    pub const CALL_FUNCTION: u8 = 0xf1;
    pub const RESCHEDULE: u8 = 0xf2;
    pub const SPURIOUS: u8 = 0xff;
}

/// Registers as saved by `trap_common` (vectors.S), lowest address first:
/// the general ones (reached as the frame's own fields: `frame.rax`), then
/// what the CPU pushed. A system call's frame (`syscall_entry`, entry.S)
/// has the same layout but, for a native process, leaves `r15 .. rbx` (and
/// `r11`) unwritten and does not load them back: those registers pass
/// through the dispatcher, which keeps the callee-saved ones as the C ABI
/// says.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TrapFrame {
    pub regs: abi::linux::GeneralRegs,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

impl TrapFrame {
    pub fn is_from_user(&self) -> bool {
        self.cs & 3 == 3
    }

    /// The six system-call arguments (rdi, rsi, rdx, r10, r8, r9), in place.
    pub fn syscall_args(&self) -> &[u64; 6] {
        use abi::linux::GeneralRegs as G;
        const {
            assert!(core::mem::offset_of!(G, r9) - core::mem::offset_of!(G, rdi) == 5 * 8);
        }
        // SAFETY: repr(C) lays the six u64 fields from rdi to r9 out
        // contiguously (checked above), which is exactly a [u64; 6].
        unsafe { &*(&self.regs.rdi as *const u64 as *const [u64; 6]) }
    }
}

impl core::ops::Deref for TrapFrame {
    type Target = abi::linux::GeneralRegs;
    fn deref(&self) -> &abi::linux::GeneralRegs {
        &self.regs
    }
}

impl core::ops::DerefMut for TrapFrame {
    fn deref_mut(&mut self) -> &mut abi::linux::GeneralRegs {
        &mut self.regs
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    attributes: u8,
    offset_mid: u16,
    offset_high: u32,
    reserved: u32,
}

#[repr(C, align(16))]
struct Idt([Gate; 256]);

static mut IDT: Idt = Idt([Gate {
    offset_low: 0,
    selector: 0,
    ist: 0,
    attributes: 0,
    offset_mid: 0,
    offset_high: 0,
    reserved: 0,
}; 256]);

/// Counts of interrupts that arrived on a vector nobody owns.
pub static UNEXPECTED: AtomicU64 = AtomicU64::new(0);

/// Fills the IDT once, on the boot CPU, before any other CPU starts.
pub fn init_idt() {
    unsafe extern "C" {
        static trap_stubs: [u8; 256 * 16];
    }
    // SAFETY: only the address of the stub table is taken.
    let stubs = unsafe { trap_stubs.as_ptr() as u64 };
    // SAFETY: runs once on the boot CPU before interrupts are enabled or other
    // CPUs exist, so nothing reads the IDT while it is written.
    let idt = unsafe { &mut *core::ptr::addr_of_mut!(IDT) };
    for (v, gate) in idt.0.iter_mut().enumerate() {
        let addr = stubs + 16 * v as u64;
        *gate = Gate {
            offset_low: addr as u16,
            selector: KERNEL_CS,
            ist: match v {
                8 => IST_DOUBLE_FAULT,
                2 | 18 => IST_NMI,
                _ => 0,
            },
            // Present, interrupt gate (IF cleared on entry); DPL 3 for int3
            // so that a user breakpoint traps instead of faulting.
            attributes: if v == 3 { 0xee } else { 0x8e },
            offset_mid: (addr >> 16) as u16,
            offset_high: (addr >> 32) as u32,
            reserved: 0,
        };
    }
}

/// Loads the shared IDT on the calling CPU.
pub fn load_idt() {
    let ptr = x86_64::structures::DescriptorTablePointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: x86_64::VirtAddr::new(core::ptr::addr_of!(IDT) as u64),
    };
    // SAFETY: the IDT is static and fully initialised by init_idt.
    unsafe { x86_64::instructions::tables::lidt(&ptr) };
}

const EXCEPTION_NAMES: [&str; 32] = [
    "divide error (#DE)",
    "debug (#DB)",
    "non-maskable interrupt",
    "breakpoint (#BP)",
    "overflow (#OF)",
    "bound range exceeded (#BR)",
    "invalid opcode (#UD)",
    "device not available (#NM)",
    "double fault (#DF)",
    "coprocessor segment overrun",
    "invalid TSS (#TS)",
    "segment not present (#NP)",
    "stack-segment fault (#SS)",
    "general protection fault (#GP)",
    "page fault (#PF)",
    "reserved",
    "x87 floating-point error (#MF)",
    "alignment check (#AC)",
    "machine check (#MC)",
    "SIMD floating-point exception (#XM)",
    "virtualization exception (#VE)",
    "control protection exception (#CP)",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "hypervisor injection exception",
    "VMM communication exception",
    "security exception (#SX)",
    "reserved",
];

pub fn exception_name(vector: u64) -> &'static str {
    EXCEPTION_NAMES.get(vector as usize).copied().unwrap_or("interrupt")
}

/// Where a faulting instruction of a fallible access resumes (vectors.S).
fn fixup_for(rip: u64) -> Option<u64> {
    unsafe extern "C" {
        static __extable_start: [u64; 0];
        static __extable_end: [u64; 0];
    }
    // SAFETY: the linker script brackets the .extable section with these
    // symbols; it holds (faulting rip, fixup rip) pairs of u64.
    let table = unsafe {
        let start = __extable_start.as_ptr();
        let len = (__extable_end.as_ptr() as usize - start as usize) / 8;
        core::slice::from_raw_parts(start, len)
    };
    table.chunks_exact(2).find(|pair| pair[0] == rip).map(|pair| pair[1])
}

#[unsafe(no_mangle)]
extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    if frame.is_from_user() {
        crate::cpuacct::entered_kernel();
    }
    let hooks = crate::hooks::get();
    let v = frame.vector as u8;
    match v {
        0..=31 => exception(frame),
        vector::TIMER => {
            crate::cpu::this_cpu().ticks.fetch_add(1, Ordering::Relaxed);
            apic::eoi();
            (hooks.tick)();
        }
        vector::RESCHEDULE => {
            (hooks.reschedule)();
            apic::eoi();
        }
        vector::SERIAL => {
            crate::console::on_input_interrupt();
            apic::eoi();
        }
        vector::TLB_SHOOTDOWN => {
            crate::mm::tlb::on_shootdown_ipi();
            apic::eoi();
        }
        vector::CALL_FUNCTION => {
            super::smp::on_call_ipi();
            apic::eoi();
        }
        v if super::irq::is_device_vector(v) => super::irq::on_device_vector(v),
        // Spurious interrupts (APIC or PIC) must not be acknowledged.
        vector::SPURIOUS | 0x77 | 0x7f => {}
        _ => {
            UNEXPECTED.fetch_add(1, Ordering::Relaxed);
            apic::eoi();
        }
    }
    if frame.is_from_user() {
        (hooks.return_to_user)(frame);
    }
}

fn exception(frame: &mut TrapFrame) {
    let cr2 = x86_64::registers::control::Cr2::read_raw();
    if frame.is_from_user() {
        return user_exception(frame, cr2);
    }
    // The kernel touching user memory (system-call arguments) may meet a page
    // of a demand-paged region that is not present yet.
    if frame.vector == 14
        && cr2 < crate::vm::USER_END
        && (crate::hooks::get().user_page_fault)(cr2, frame.error_code, frame.rflags & 0x200 != 0).is_ok()
    {
        return;
    }
    // A fallible access may also meet a non-canonical address (#GP).
    if (frame.vector == 14 || frame.vector == 13)
        && !frame.is_from_user()
        && let Some(fixup) = fixup_for(frame.rip)
    {
        frame.rip = fixup;
        return;
    }
    if frame.vector == 3 {
        crate::cpu::this_cpu().breakpoints.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // User-mode faults will end only the faulting process (processes issue);
    // a fault in the kernel is a kernel bug.
    let mut detail = heapless_fmt::Buf::new();
    if frame.vector == 14 {
        use core::fmt::Write;
        let _ = write!(
            detail,
            " CR2={:#x} ({} {} in {} mode)",
            cr2,
            if frame.error_code & 1 != 0 {
                "protection violation"
            } else {
                "page not present"
            },
            if frame.error_code & 16 != 0 {
                "on instruction fetch"
            } else if frame.error_code & 2 != 0 {
                "on write"
            } else {
                "on read"
            },
            if frame.error_code & 4 != 0 { "user" } else { "kernel" },
        );
    }
    panic!(
        "EXCEPTION {} (vector {}) at RIP={:#x} error={:#x}{} RSP={:#x} RBP={:#x}",
        exception_name(frame.vector),
        frame.vector,
        frame.rip,
        frame.error_code,
        detail.as_str(),
        frame.rsp,
        frame.rbp,
    );
}

/// An exception in user mode: a page fault may be demand paging; anything
/// else unresolved ends the process, and only the process.
fn user_exception(frame: &mut TrapFrame, cr2: u64) {
    let hooks = crate::hooks::get();
    if frame.vector == 14 {
        match (hooks.user_page_fault)(cr2, frame.error_code, true) {
            Ok(()) => return,
            Err(e) => {
                let why = e.describe(cr2, frame.error_code);
                // A page its region forbids the access to is a protection
                // violation even while not present (a PROT_NONE page): the
                // error code says so, as the handler of the fault reads it
                // (a Linux process's SEGV_ACCERR).
                if matches!(e, crate::vm::space::FaultError::Protection) {
                    frame.error_code |= 1;
                }
                // Past a mapped file's end: a bus error, not a
                // segmentation fault, for a Linux process's handler.
                if matches!(e, crate::vm::space::FaultError::PastEnd) {
                    frame.error_code |= abi::linux::FAULT_PAST_END;
                }
                return (hooks.user_fault)(frame, cr2, why);
            }
        }
    }
    (hooks.user_fault)(frame, cr2, exception_name(frame.vector))
}

/// A tiny fixed-capacity string for formatting inside the fault path, where
/// the heap may be the thing that broke.
mod heapless_fmt {
    pub struct Buf {
        bytes: [u8; 160],
        len: usize,
    }
    impl Buf {
        pub fn new() -> Self {
            Buf {
                bytes: [0; 160],
                len: 0,
            }
        }
        pub fn as_str(&self) -> &str {
            core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
        }
    }
    impl core::fmt::Write for Buf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let n = s.len().min(self.bytes.len() - self.len);
            self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }
}
