//! The local APIC of each CPU: identity, end-of-interrupt, the timer, and
//! inter-processor interrupts. x2APIC mode (MSR access) is used when the CPU
//! offers it; otherwise xAPIC through its MMIO page (QEMU's TCG has no x2APIC).

use crate::mm::layout::phys_to_virt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use x86_64::registers::model_specific::Msr;

const IA32_APIC_BASE: u32 = 0x1b;
const X2APIC_MSR_BASE: u32 = 0x800;

const REG_ID: u32 = 0x20;
const REG_TPR: u32 = 0x80;
const REG_EOI: u32 = 0xb0;
const REG_SVR: u32 = 0xf0;
const REG_ESR: u32 = 0x280;
const REG_ICR_LOW: u32 = 0x300;
const REG_ICR_HIGH: u32 = 0x310;
const REG_LVT_TIMER: u32 = 0x320;
const REG_LVT_LINT0: u32 = 0x350;
const REG_LVT_LINT1: u32 = 0x360;
const REG_LVT_ERROR: u32 = 0x370;
const REG_TIMER_INIT: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3e0;

const LVT_MASKED: u32 = 1 << 16;
const TIMER_PERIODIC: u32 = 1 << 17;
const ICR_PENDING: u32 = 1 << 12;

static X2APIC: AtomicBool = AtomicBool::new(false);
static MMIO_BASE: AtomicU64 = AtomicU64::new(0);
/// Timer ticks (divide by 16) per millisecond, measured at boot.
static TICKS_PER_MS: AtomicU32 = AtomicU32::new(0);
/// Timer interrupts per second on every CPU.
pub const TIMER_HZ: u32 = 100;

pub fn is_x2apic() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

fn read(reg: u32) -> u32 {
    if is_x2apic() {
        // SAFETY: x2APIC registers are MSRs 0x800 + reg/16; reading them has no side effects.
        unsafe { Msr::new(X2APIC_MSR_BASE + (reg >> 4)).read() as u32 }
    } else {
        let addr = MMIO_BASE.load(Ordering::Relaxed) + reg as u64;
        // SAFETY: the APIC page is mapped uncached in the direct map.
        unsafe { core::ptr::read_volatile(addr as *const u32) }
    }
}

fn write(reg: u32, value: u32) {
    if is_x2apic() {
        // SAFETY: writing APIC registers is this module's job.
        unsafe { Msr::new(X2APIC_MSR_BASE + (reg >> 4)).write(value as u64) }
    } else {
        let addr = MMIO_BASE.load(Ordering::Relaxed) + reg as u64;
        // SAFETY: the APIC page is mapped uncached in the direct map.
        unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
    }
}

/// Chooses the access mode once, on the boot CPU. `phys_base` comes from the MADT.
pub fn init_global(phys_base: u64) {
    let x2 = super::cpuid(1, 0).ecx & (1 << 21) != 0;
    X2APIC.store(x2, Ordering::Relaxed);
    MMIO_BASE.store(phys_to_virt(phys_base), Ordering::Relaxed);
}

/// Enables this CPU's APIC: x2APIC mode if chosen, spurious vector, no task
/// priority, LINT pins masked, error interrupt off.
pub fn init_cpu() {
    let mut base = Msr::new(IA32_APIC_BASE);
    // SAFETY: setting the enable bit (11), and x2APIC mode (10) when the CPU
    // reported it, is the documented way to switch the APIC on.
    unsafe {
        let value = base.read() | (1 << 11);
        base.write(value);
        if is_x2apic() {
            base.write(value | (1 << 10));
        }
    }
    write(REG_TPR, 0);
    write(REG_LVT_LINT0, LVT_MASKED);
    write(REG_LVT_LINT1, LVT_MASKED);
    write(REG_LVT_ERROR, LVT_MASKED);
    write(REG_SVR, 0x100 | super::trap::vector::SPURIOUS as u32);
    write(REG_ESR, 0);
    write(REG_ESR, 0);
}

pub fn id() -> u32 {
    let raw = read(REG_ID);
    if is_x2apic() { raw } else { raw >> 24 }
}

pub fn eoi() {
    write(REG_EOI, 0);
}

/// Starts a free-running one-shot count for calibration; returns the start value.
pub fn calibration_start() -> u32 {
    write(REG_TIMER_DIVIDE, 0x3); // divide by 16
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INIT, u32::MAX);
    read(REG_TIMER_CURRENT)
}

pub fn calibration_read() -> u32 {
    read(REG_TIMER_CURRENT)
}

pub fn set_ticks_per_ms(ticks: u32) {
    TICKS_PER_MS.store(ticks.max(1), Ordering::Relaxed);
}

/// Starts this CPU's periodic timer interrupt at TIMER_HZ.
pub fn start_timer() {
    let per_ms = TICKS_PER_MS.load(Ordering::Relaxed);
    write(REG_TIMER_DIVIDE, 0x3);
    write(REG_LVT_TIMER, TIMER_PERIODIC | super::trap::vector::TIMER as u32);
    write(REG_TIMER_INIT, per_ms.saturating_mul(1000 / TIMER_HZ));
}

fn send_icr(dest: u32, low: u32) {
    if is_x2apic() {
        // SAFETY: one 64-bit write to the x2APIC ICR sends the IPI.
        unsafe { Msr::new(X2APIC_MSR_BASE + 0x30).write(((dest as u64) << 32) | low as u64) };
    } else {
        // Two writes make one xAPIC IPI, and the write to the low half
        // sends it to whatever the high half holds then. An interrupt
        // between them whose handler sends an IPI too (the timer waking a
        // sleeper on an idle CPU) rewrote the high half, so this IPI went
        // to the handler's CPU instead: a lost TLB shootdown left its
        // sender spinning for an answer for good, holding the request
        // lock every other CPU then spun on, and the whole guest stopped.
        x86_64::instructions::interrupts::without_interrupts(|| {
            while read(REG_ICR_LOW) & ICR_PENDING != 0 {
                core::hint::spin_loop();
            }
            write(REG_ICR_HIGH, dest << 24);
            write(REG_ICR_LOW, low);
            while read(REG_ICR_LOW) & ICR_PENDING != 0 {
                core::hint::spin_loop();
            }
        });
    }
}

/// A fixed-delivery IPI to one CPU.
/// IPIs sent (`send_ipi`), for the counts that explain cross-CPU figures.
pub static IPIS_SENT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

pub fn send_ipi(apic_id: u32, vector: u8) {
    IPIS_SENT.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    send_icr(apic_id, vector as u32);
}

/// INIT then two STARTUP IPIs to every other CPU, so that all of them begin
/// at physical address `vector << 12`.
pub fn send_init_sipi_all(vector: u8, init_wait_us: u64) {
    const ALL_BUT_SELF: u32 = 0b11 << 18;
    const ASSERT: u32 = 1 << 14;
    send_icr(0, ALL_BUT_SELF | ASSERT | 0x500); // INIT
    crate::clock::delay_us(init_wait_us);
    for _ in 0..2 {
        send_icr(0, ALL_BUT_SELF | ASSERT | 0x600 | vector as u32); // STARTUP
        crate::clock::delay_us(200);
    }
}
