//! The boot sequence of the core, top to bottom.
//!
//! QEMU enters `pvh_start32` (arch/x86_64/boot.S), which reaches 64-bit mode
//! and calls `kmain` with the physical address of the PVH start info. From
//! there: console, traps, memory, this CPU, interrupt controllers, clock.
//! Then the kernel binary's `tessera_main` takes over: it registers the
//! hooks, brings up the layers above the core, starts the other CPUs
//! (`start_other_cpus`) and runs whatever the command line asks for.

use crate::arch::x86_64::{self, apic, ioapic, pic, serial, smp, trap};
use crate::mm::layout::{KERNEL_VMA, image, phys_to_virt};
use crate::{clock, cpu, initrd, mm, println};
use platform::PhysMemory;
use spin::Once;

/// What boot learned about the machine, for the rest of the kernel.
pub struct BootInfo {
    pub cmdline: &'static str,
    /// Processors listed (enabled) in the MADT.
    pub cpus: usize,
    pub usable_bytes: u64,
}

static BOOT_INFO: Once<BootInfo> = Once::new();
static MADT: Once<platform::acpi::Madt> = Once::new();

/// Where the MADT places ISA IRQ `irq`, if it overrides it: (global
/// system interrupt, flags).
pub fn isa_override(irq: u8) -> Option<(u32, u16)> {
    let madt = MADT.get()?;
    madt.overrides[..madt.override_count]
        .iter()
        .find(|o| o.irq == irq)
        .map(|o| (o.gsi, o.flags))
}

pub fn info() -> &'static BootInfo {
    BOOT_INFO.get().expect("boot info read before boot finished")
}

/// Value of `key=value` (or presence of `key`) on the kernel command line.
pub fn cmdline_value(key: &str) -> Option<&'static str> {
    platform::cmdline::get(info().cmdline, key)
}

unsafe extern "Rust" {
    /// The kernel binary's main function: everything above the core.
    fn tessera_main() -> !;
}

/// Physical memory as seen through the direct map. Until the kernel's own
/// tables are loaded only the first 4 GiB are mapped, which is where the
/// firmware's tables live.
struct DirectMap;

impl PhysMemory for DirectMap {
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        let Some(end) = addr.checked_add(buf.len() as u64) else {
            return false;
        };
        if end > 4 << 30 {
            return false;
        }
        // SAFETY: the destination is the caller's buffer; a fault on the
        // source is caught and reported as unreadable.
        unsafe { x86_64::fallible_copy(buf.as_mut_ptr(), phys_to_virt(addr) as *const u8, buf.len()) }.is_ok()
    }
}

static mut CMDLINE: [u8; 1024] = [0; 1024];

/// Copies the command line out of boot memory (which the frame allocator may
/// hand out later).
fn save_cmdline(paddr: u64) -> &'static str {
    // SAFETY: runs once, on the boot CPU, before anything else reads CMDLINE.
    let buf = unsafe { &mut *core::ptr::addr_of_mut!(CMDLINE) };
    let mut len = 0;
    if paddr != 0 {
        while len < buf.len() - 1 {
            match DirectMap.read_u8(paddr + len as u64) {
                Some(0) | None => break,
                Some(b) => buf[len] = b,
            }
            len += 1;
        }
    }
    core::str::from_utf8(&buf[..len]).unwrap_or("")
}

#[unsafe(no_mangle)]
extern "C" fn kmain(start_info: u64) -> ! {
    clock::set_boot_tsc(clock::cycles());
    serial::init();
    trap::init_idt();
    trap::load_idt();
    println!("Tessera kernel {}", env!("CARGO_PKG_VERSION"));

    let si = platform::pvh::parse(&DirectMap, start_info).unwrap_or_else(|e| panic!("bad PVH start info: {e:?}"));
    let cmdline = save_cmdline(si.cmdline_paddr);

    let kernel = (image::start() - KERNEL_VMA, image::end() - KERNEL_VMA);
    let mut reserved = [(0, 1 << 20), kernel, (0, 0)];
    if let Some((base, size)) = si.module {
        reserved[2] = (base, base + size);
    }
    mm::init(&si.memmap, &reserved);
    initrd::init(si.module);

    // Leave the boot stack (no guard page) for a guarded one.
    let stack = mm::stack::KernelStack::new(mm::stack::DEFAULT_PAGES * 2)
        .expect("no memory for the boot CPU's stack")
        .leak();
    let info = BootInfo {
        cmdline,
        cpus: 0,
        usable_bytes: si.memmap.usable_bytes(),
    };
    let rsdp = si.rsdp_paddr;
    // SAFETY: switches to a fresh, mapped stack and never returns to this one.
    unsafe {
        core::arch::asm!(
            "mov rsp, {stack}",
            "xor ebp, ebp",
            "call {next}",
            stack = in(reg) stack,
            next = sym kmain_on_stack,
            in("rdi") rsdp,
            in("rsi") &info as *const BootInfo,
            options(noreturn)
        )
    }
}

extern "C" fn kmain_on_stack(rsdp: u64, info: *const BootInfo) -> ! {
    // SAFETY: `info` lives in kmain's frame, which is never popped.
    let info = unsafe { &*info };
    let madt = crate::acpi::madt(rsdp).unwrap_or_else(|e| panic!("no usable ACPI MADT: {e:?}"));
    BOOT_INFO.call_once(|| BootInfo {
        cmdline: info.cmdline,
        cpus: madt.cpus().len(),
        usable_bytes: info.usable_bytes,
    });

    apic::init_global(madt.lapic_address);
    cpu::init_this_cpu(0, apic::id());
    if madt.pcat_compat {
        pic::disable(trap::vector::PIC_BASE);
    }
    apic::init_cpu();
    x86_64::init_cpu_late();
    let source = clock::calibrate();
    ioapic::init(&madt);
    let (gsi, flags) = madt.isa_irq(4);
    ioapic::route(gsi, flags, trap::vector::SERIAL, apic::id());
    CLOCK_SOURCE.call_once(|| source);
    MADT.call_once(|| madt);
    x86_64::pci::init();
    mm::nvm::init();
    // SAFETY: the kernel binary defines `tessera_main` (a Rust function
    // that never returns); this is its one call.
    unsafe { tessera_main() }
}

static CLOCK_SOURCE: Once<clock::Source> = Once::new();

/// After the layers above the core are up on this CPU: starts its timer,
/// enables interrupts, brings the other CPUs up and prints what the
/// machine is.
pub fn start_other_cpus() {
    apic::start_timer();
    cpu::mark_online();
    ::x86_64::instructions::interrupts::enable();
    smp::start_aps(MADT.get().expect("MADT read at boot"));
    let f = mm::frames::stats();
    println!(
        "{} CPUs ({}), {} MiB usable, {} MiB free, TSC {} MHz ({:?})",
        cpu::online_count(),
        if apic::is_x2apic() { "x2APIC" } else { "xAPIC" },
        info().usable_bytes >> 20,
        (f.free as u64 * 4096) >> 20,
        clock::tsc_hz() / 1_000_000,
        CLOCK_SOURCE.get().expect("calibrated at boot")
    );
}

/// What an AP does once the layers above the core are up on it (called at
/// the end of its `ap_main` hook, before its idle loop).
pub fn ap_online() {
    apic::start_timer();
    cpu::mark_online();
}
