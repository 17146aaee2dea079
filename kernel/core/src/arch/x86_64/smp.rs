//! Bringing up the other processors, and running a function on another CPU.

use super::apic;
use crate::cpu::{self, PerCpu};
use crate::mm::layout::{phys_to_virt, virt_to_phys};
use crate::mm::paging;
use crate::mm::stack::{DEFAULT_PAGES, KernelStack};
use crate::println;
use crate::sync::IrqMutex;
use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, Ordering};
use platform::acpi::Madt;

/// Physical page the AP start-up code is copied to (SIPI vector 0x08).
const TRAMPOLINE_PHYS: u64 = 0x8000;

unsafe extern "C" {
    static ap_trampoline_start: u8;
    static ap_trampoline_end: u8;
    static AP_PARAM_CR3_OFFSET: u64;
    static AP_PARAM_CR3_FINAL_OFFSET: u64;
    static AP_PARAM_ENTRY_OFFSET: u64;
    static AP_PARAM_NEXT_OFFSET: u64;
    static AP_PARAM_STACKS_OFFSET: u64;
    static boot_pml4: u8;
    static boot_pdpt_low: u8;
}

/// Starts every enabled processor of the MADT other than this one and waits
/// until each is online (or a second has passed; the missing ones are reported).
pub fn start_aps(madt: &Madt) {
    let me = apic::id();
    let aps = madt
        .cpus()
        .iter()
        .filter(|&&id| id != me)
        .count()
        .min(cpu::MAX_CPUS - 1);
    if aps == 0 {
        return;
    }
    // SAFETY: linker symbols; only their addresses and the constant offsets are read.
    let (start, end, off_cr3, off_final, off_entry, off_next, off_stacks, pml4, pdpt_low) = unsafe {
        (
            &ap_trampoline_start as *const u8,
            &ap_trampoline_end as *const u8,
            AP_PARAM_CR3_OFFSET,
            AP_PARAM_CR3_FINAL_OFFSET,
            AP_PARAM_ENTRY_OFFSET,
            AP_PARAM_NEXT_OFFSET,
            AP_PARAM_STACKS_OFFSET,
            virt_to_phys(&boot_pml4 as *const u8 as u64),
            virt_to_phys(&boot_pdpt_low as *const u8 as u64),
        )
    };
    let len = end as usize - start as usize;
    let dst = phys_to_virt(TRAMPOLINE_PHYS) as *mut u8;
    let kernel_root = paging::kernel_root();
    let root_table = phys_to_virt(kernel_root) as *mut u64;
    // SAFETY: physical 0x8000 is in the low megabyte, which the frame
    // allocator never hands out; the parameter offsets come from the same
    // assembly as the blob. The kernel tree's slot 0 (user space) is empty
    // during boot; it identity-maps low memory only while APs start, so the
    // trampoline keeps running after it loads the kernel's CR3.
    unsafe {
        core::ptr::copy_nonoverlapping(start, dst, len);
        dst.add(off_cr3 as usize).cast::<u64>().write_volatile(pml4);
        dst.add(off_final as usize).cast::<u64>().write_volatile(kernel_root);
        dst.add(off_entry as usize)
            .cast::<u64>()
            .write_volatile(ap_entry as *const () as u64);
        dst.add(off_next as usize).cast::<u64>().write_volatile(0);
        for i in 0..aps {
            let top = KernelStack::new(DEFAULT_PAGES).expect("no memory for AP stacks").leak();
            dst.add(off_stacks as usize + 8 * i).cast::<u64>().write_volatile(top);
        }
        root_table.write_volatile(pdpt_low | paging::flags::PRESENT | paging::flags::WRITABLE);
    }

    // Linux waits 10 ms after INIT only on processors older than family 6;
    // newer ones (and every QEMU model) need no wait.
    let family = (super::cpuid(1, 0).eax >> 8) & 0xf;
    let init_wait_us = if family < 6 { 10_000 } else { 10 };
    apic::send_init_sipi_all(0x08, init_wait_us);

    let deadline = crate::clock::nanos() + 1_000_000_000;
    while cpu::online_count() < 1 + aps && crate::clock::nanos() < deadline {
        core::hint::spin_loop();
    }
    // SAFETY: every AP that started has switched to its final stack and no
    // longer runs from low memory; drop the identity map again.
    unsafe { root_table.write_volatile(0) };
    paging::flush_local_all();
    if cpu::online_count() < 1 + aps {
        println!("smp: only {} of {} CPUs came online", cpu::online_count(), 1 + aps);
    }
}

/// First Rust code on an AP: on its own stack, in the kernel's page tables.
extern "C" fn ap_entry(slot: u64) -> ! {
    super::trap::load_idt();
    let id = apic::id();
    cpu::init_this_cpu(slot as usize + 1, id);
    apic::init_cpu();
    super::init_cpu_late();
    (crate::hooks::get().ap_main)()
}

/// A function waiting to run on a CPU, posted by another one.
pub struct CallSlot {
    job: IrqMutex<Option<Box<dyn FnOnce() + Send>>>,
    done: AtomicBool,
    /// Held by the one sender whose call is in flight on this CPU.
    sender: spin::Mutex<()>,
}

impl Default for CallSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl CallSlot {
    pub fn new() -> Self {
        CallSlot {
            job: IrqMutex::new(None),
            done: AtomicBool::new(true),
            sender: spin::Mutex::new(()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoSuchCpu;

/// A call in flight; `wait` blocks until the target has run it.
pub struct PendingCall {
    target: &'static PerCpu,
    _sender: spin::MutexGuard<'static, ()>,
}

impl PendingCall {
    pub fn wait(self) {
        while !self.target.call.done.load(Ordering::Acquire) {
            crate::mm::tlb::serve_pending();
            core::hint::spin_loop();
        }
    }
}

/// Posts `f` to CPU `index` and interrupts it; returns at once.
/// Must not be aimed at the calling CPU (use `call_on` for that).
pub fn call_async(index: usize, f: impl FnOnce() + Send + 'static) -> Result<PendingCall, NoSuchCpu> {
    let target = cpu::get(index).ok_or(NoSuchCpu)?;
    let sender = target.call.sender.lock();
    target.call.done.store(false, Ordering::Release);
    *target.call.job.lock() = Some(Box::new(f));
    apic::send_ipi(target.apic_id, super::trap::vector::CALL_FUNCTION);
    Ok(PendingCall {
        target,
        _sender: sender,
    })
}

/// Runs `f` on CPU `index` (in its interrupt context) and waits for it.
pub fn call_on(index: usize, f: impl FnOnce() + Send + 'static) -> Result<(), NoSuchCpu> {
    if cpu::try_this_cpu().is_some_and(|c| c.index == index) {
        f();
        return Ok(());
    }
    call_async(index, f)?.wait();
    Ok(())
}

pub fn on_call_ipi() {
    let me = cpu::this_cpu();
    let job = me.call.job.lock().take();
    if let Some(job) = job {
        job();
        me.calls_served.fetch_add(1, Ordering::Relaxed);
        me.call.done.store(true, Ordering::Release);
    }
}
