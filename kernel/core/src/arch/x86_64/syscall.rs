//! The `syscall` instruction's way in (entry.S) and out. What a system
//! call does is the syscall layer's, reached through its hook.

use super::gdt;
use super::trap::TrapFrame;
use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::registers::model_specific::{Efer, EferFlags, LStar, SFMask, Star};
use x86_64::registers::rflags::RFlags;
use x86_64::structures::gdt::SegmentSelector;
use x86_64::{PrivilegeLevel, VirtAddr};

core::arch::global_asm!(include_str!("entry.S"), options(att_syntax));

pub static SYSCALLS: AtomicU64 = AtomicU64::new(0);

/// Enables `syscall` on this CPU.
pub fn init_cpu() {
    unsafe extern "C" {
        fn syscall_entry();
    }
    let sel = |s: u16, pl| SegmentSelector::new(s >> 3, pl);
    Star::write(
        sel(gdt::USER_CS, PrivilegeLevel::Ring3),
        sel(gdt::USER_DS, PrivilegeLevel::Ring3),
        sel(gdt::KERNEL_CS, PrivilegeLevel::Ring0),
        sel(gdt::KERNEL_DS, PrivilegeLevel::Ring0),
    )
    .expect("GDT layout does not fit syscall/sysret");
    LStar::write(VirtAddr::new(syscall_entry as *const () as u64));
    SFMask::write(RFlags::INTERRUPT_FLAG | RFlags::DIRECTION_FLAG | RFlags::TRAP_FLAG | RFlags::ALIGNMENT_CHECK);
    // SAFETY: turning on SCE only enables the syscall instruction.
    unsafe { Efer::update(|f| f.insert(EferFlags::SYSTEM_CALL_EXTENSIONS)) };
}

#[unsafe(no_mangle)]
extern "C" fn syscall_dispatch(frame: &mut TrapFrame) {
    // SAFETY: the frame is saved and we are on this computation's kernel
    // stack: interrupts may come in (long calls must stay preemptible by IRQs).
    unsafe { core::arch::asm!("sti", options(nomem, nostack)) };
    SYSCALLS.fetch_add(1, Ordering::Relaxed);
    (crate::hooks::get().syscall)(frame);
}
