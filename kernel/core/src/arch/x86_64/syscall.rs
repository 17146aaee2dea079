//! The `syscall` instruction's way in (entry.S) and out. What a system
//! call does is the syscall layer's, reached through its hook.

use super::gdt;
use super::trap::TrapFrame;
use core::sync::atomic::{AtomicPtr, Ordering};
use x86_64::registers::model_specific::{Efer, EferFlags, LStar, SFMask, Star};
use x86_64::registers::rflags::RFlags;
use x86_64::structures::gdt::SegmentSelector;
use x86_64::{PrivilegeLevel, VirtAddr};

core::arch::global_asm!(include_str!("frame.S"), include_str!("entry.S"), options(att_syntax));

/// The system-call hook (`Hooks::syscall`), called by entry.S straight
/// from the entry, with no frame of the core's in between: every system
/// call goes through it.
#[unsafe(no_mangle)]
static syscall_hook: AtomicPtr<()> = AtomicPtr::new(unregistered as *mut ());
/// The same for computations whose frame keeps every register
/// (`Hooks::linux_syscall`).
#[unsafe(no_mangle)]
static full_frame_syscall_hook: AtomicPtr<()> = AtomicPtr::new(unregistered as *mut ());

extern "C" fn unregistered(_: &mut TrapFrame) {
    panic!("a system call came before the kernel registered its hooks");
}

pub(crate) fn set_hooks(native: extern "C" fn(&mut TrapFrame), full_frame: extern "C" fn(&mut TrapFrame)) {
    syscall_hook.store(native as *mut (), Ordering::Release);
    full_frame_syscall_hook.store(full_frame as *mut (), Ordering::Release);
}

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
