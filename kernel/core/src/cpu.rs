//! Per-CPU data. Each CPU's GS base points at its own `PerCpu`, whose first
//! word points back at itself, so `this_cpu()` is one `mov %gs:0`. The fixed
//! offsets at the start are for assembly (the system-call entry of the
//! processes layer will use `kernel_rsp` and `user_rsp`).

use crate::arch::x86_64::gdt::CpuTables;
use crate::arch::x86_64::smp::CallSlot;
use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use x86_64::VirtAddr;
use x86_64::registers::model_specific::{GsBase, KernelGsBase};

pub const MAX_CPUS: usize = platform::acpi::MAX_CPUS;

#[repr(C)]
pub struct PerCpu {
    self_ptr: *const PerCpu,
    /// Top of the kernel stack for entries from user mode (offset 8).
    pub kernel_rsp: AtomicU64,
    /// Scratch slot for the user stack pointer at system-call entry (offset 16).
    pub user_rsp: AtomicU64,
    /// Non-zero while the computation running here keeps every register in
    /// its system-call frame (offset 24; see `entry.S`): a Linux process,
    /// whose supervisor reads and sets them. It is then the address of
    /// `abi::linux::SHORT_FRAME_CALLS`, the calls that need not.
    pub full_frame: AtomicU64,
    /// Dense CPU number: 0 is the boot CPU.
    pub index: usize,
    pub apic_id: u32,
    /// Timer interrupts taken on this CPU.
    pub ticks: AtomicU64,
    /// Function calls run for other CPUs (call IPIs served).
    pub calls_served: AtomicU64,
    pub breakpoints: AtomicU64,
    pub tlb_pending: AtomicBool,
    /// The FS base last loaded for user mode on this CPU.
    pub user_fs_base: AtomicU64,
    /// The GS base last loaded for user mode on this CPU (kept in the
    /// kernel GS base MSR while the kernel runs, `swapgs` puts it back).
    pub user_gs_base: AtomicU64,
    /// Page tables made for user spaces on this CPU so far (a space's
    /// operation counts those it made: see `VirtualSpace`).
    pub user_tables: AtomicU64,
    /// Since when (TSC cycles) the computation running here has been in
    /// the kernel without its time counted as kernel time; 0 while it
    /// runs in user mode (`cpuacct`).
    pub kernel_since: AtomicU64,
    /// The computation running here (owned by the scheduler's run queue,
    /// which keeps it alive while it runs); read without a lock on hot paths.
    pub current: AtomicPtr<crate::computation::Computation>,
    pub call: CallSlot,
    /// Written only by the CPU that owns it (TSS stack pointer on each switch).
    tables: core::cell::UnsafeCell<CpuTables>,
}

// The system-call entry (`entry.S`) reaches these by offset.
const _: () = {
    assert!(core::mem::offset_of!(PerCpu, kernel_rsp) == 8);
    assert!(core::mem::offset_of!(PerCpu, user_rsp) == 16);
    assert!(core::mem::offset_of!(PerCpu, full_frame) == 24);
};

impl PerCpu {
    /// `index`, with its bound known to the compiler: the scheduler's
    /// per-CPU arrays are indexed with it on every switch and system-call
    /// return, and need no bounds check there.
    #[inline(always)]
    pub fn slot(&self) -> usize {
        // SAFETY: init_this_cpu refuses an index out of range before it
        // creates a PerCpu, and `index` never changes afterwards.
        unsafe { core::hint::assert_unchecked(self.index < MAX_CPUS) };
        self.index
    }

    /// The kernel stack for the next entry from user mode (interrupts use
    /// the TSS, system calls `kernel_rsp`), and what `full_frame` holds
    /// meanwhile. Called by the owning CPU only, on every switch.
    #[inline(always)]
    pub fn set_kernel_stack(&self, top: u64, full_frame: u64) {
        self.kernel_rsp.store(top, Ordering::Relaxed);
        self.full_frame.store(full_frame, Ordering::Relaxed);
        // SAFETY: only this CPU touches its own TSS, with interrupts disabled
        // (during a switch); the CPU reads rsp0 only on a privilege change.
        // A kernel stack top is a canonical address (a kernel mapping), so
        // it needs neither `new`'s check nor `new_truncate`'s sign extension.
        unsafe { (*self.tables.get()).tss.privilege_stack_table[0] = VirtAddr::new_unsafe(top) };
    }
}

// SAFETY: the only non-Sync field is the self pointer, which is never written
// after creation; everything shared is atomic or behind a lock.
unsafe impl Sync for PerCpu {}

static CPUS: [AtomicPtr<PerCpu>; MAX_CPUS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];
static ONLINE: AtomicUsize = AtomicUsize::new(0);

/// Creates and installs this CPU's data: descriptor tables, IST stacks for
/// double faults and NMIs, GS base. Runs once per CPU, on that CPU.
pub fn init_this_cpu(index: usize, apic_id: u32) -> &'static PerCpu {
    use crate::mm::stack::{DEFAULT_PAGES, KernelStack};
    // `slot` relies on this.
    assert!(index < MAX_CPUS, "CPU index {index} out of range");
    let ist = [
        KernelStack::new(DEFAULT_PAGES)
            .expect("no memory for a double-fault stack")
            .leak(),
        KernelStack::new(DEFAULT_PAGES)
            .expect("no memory for an NMI stack")
            .leak(),
    ];
    let cpu: &'static mut PerCpu = Box::leak(Box::new(PerCpu {
        self_ptr: core::ptr::null(),
        kernel_rsp: AtomicU64::new(0),
        user_rsp: AtomicU64::new(0),
        full_frame: AtomicU64::new(0),
        index,
        apic_id,
        ticks: AtomicU64::new(0),
        calls_served: AtomicU64::new(0),
        breakpoints: AtomicU64::new(0),
        tlb_pending: AtomicBool::new(false),
        user_fs_base: AtomicU64::new(0),
        user_gs_base: AtomicU64::new(0),
        user_tables: AtomicU64::new(0),
        kernel_since: AtomicU64::new(0),
        current: AtomicPtr::new(core::ptr::null_mut()),
        call: CallSlot::new(),
        tables: core::cell::UnsafeCell::new(CpuTables::new()),
    }));
    cpu.self_ptr = cpu as *const PerCpu;
    let ptr = cpu as *mut PerCpu;
    // SAFETY: `cpu` is leaked, so the descriptor tables inside it live for ever;
    // from here on it is only reached through shared references.
    let tables: &'static mut CpuTables = unsafe { &mut *(*ptr).tables.get() };
    tables.load(ist);
    GsBase::write(VirtAddr::new(ptr as u64));
    KernelGsBase::write(VirtAddr::new(0));
    CPUS[index].store(ptr, Ordering::Release);
    READY.store(true, Ordering::Release);
    // SAFETY: as above; no &mut to the PerCpu exists any more.
    unsafe { &*ptr }
}

/// Counts this CPU as online (after its interrupts work).
pub fn mark_online() {
    ONLINE.fetch_add(1, Ordering::AcqRel);
}

pub fn online_count() -> usize {
    ONLINE.load(Ordering::Acquire)
}

/// Set once the boot CPU's data is installed; before that `this_cpu` must
/// not read through GS.
static READY: AtomicBool = AtomicBool::new(false);

/// Whether the boot CPU's data is installed (`this_cpu` may be used).
#[inline(always)]
pub fn ready() -> bool {
    READY.load(Ordering::Relaxed)
}

/// This CPU's data: one load through GS (the hot path of every trap and
/// system call). Only for code that runs after this CPU's `init_this_cpu`
/// (checked in debug builds); earlier code uses `try_this_cpu`.
#[inline]
pub fn this_cpu() -> &'static PerCpu {
    debug_assert!(READY.load(Ordering::Relaxed), "per-CPU data used before it was set up");
    let ptr: *const PerCpu;
    // SAFETY: GS base points at this CPU's PerCpu, whose first word is its address.
    unsafe { core::arch::asm!("mov {}, gs:[0]", out(reg) ptr, options(nostack, readonly, preserves_flags)) };
    // SAFETY: PerCpu objects are leaked and never freed.
    unsafe { &*ptr }
}

/// This CPU's data, or None this early in boot (reads the GS base MSR, so
/// it is safe anywhere, even in a fault handler during bring-up).
pub fn try_this_cpu() -> Option<&'static PerCpu> {
    if GsBase::read().as_u64() == 0 {
        return None;
    }
    let ptr: *const PerCpu;
    // SAFETY: GS base points at this CPU's PerCpu, whose first word is its address.
    unsafe { core::arch::asm!("mov {}, gs:[0]", out(reg) ptr, options(nostack, readonly)) };
    // SAFETY: PerCpu objects are leaked and never freed.
    Some(unsafe { &*ptr })
}

pub fn get(index: usize) -> Option<&'static PerCpu> {
    let ptr = CPUS.get(index)?.load(Ordering::Acquire);
    // SAFETY: non-null entries point at leaked PerCpu objects.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// Every CPU that has installed its data, in index order.
pub fn online_cpus() -> impl Iterator<Item = &'static PerCpu> {
    (0..MAX_CPUS).map_while(get)
}
