//! Computation (Tender's 演算): the unit of processor allocation. A process
//! runs by holding one. It owns a kernel stack, the saved kernel context used
//! by `switch_context`, and the user's FPU/SSE state.

use crate::arch::x86_64::trap::TrapFrame;
use crate::mm::stack::KernelStack;
use crate::proc::Process;
use crate::sync::IrqMutex;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// On a CPU right now.
    Running,
    /// In a run queue.
    Runnable,
    /// Waiting for an event; a wake-up makes it Runnable.
    Blocked,
    /// Finished; never runs again.
    Dead,
}

/// The 512-byte `fxsave` area (x87, MMX, SSE state).
#[repr(C, align(16))]
pub struct FpuState(pub [u8; 512]);

/// A computation's saved FPU state. Only the CPU switching the computation
/// off or onto itself touches it (`sched::switch_address_space`), and the
/// `on_cpu` hand-over orders those touches, so it needs no lock of its own.
pub struct FpuArea(core::cell::UnsafeCell<FpuState>);

// SAFETY: see the type's comment: one CPU at a time, ordered by `on_cpu`.
unsafe impl Sync for FpuArea {}

impl FpuArea {
    pub fn new(state: FpuState) -> FpuArea {
        FpuArea(core::cell::UnsafeCell::new(state))
    }

    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.0.get() as *mut u8
    }
}

pub struct Computation {
    pub process: Option<Arc<Process>>,
    pub state: IrqMutex<State>,
    /// Saved kernel stack pointer while not running.
    pub saved_rsp: AtomicU64,
    /// Set while some CPU still runs on this computation's stack; a CPU that
    /// picks it waits until it is clear (the previous CPU is done with it).
    pub on_cpu: AtomicBool,
    /// Set while it is a CPU's current computation and has not yet decided
    /// (in `schedule`) to leave it. A wake-up in the window between blocking
    /// and switching away lets it continue where it is, instead of queueing
    /// it elsewhere while it still runs here. Changed only with `state` held.
    pub holds_cpu: AtomicBool,
    /// Set with the state Dead: read where the state's lock would cost too
    /// much (every switch checks whether the one it leaves has finished).
    pub finished: AtomicBool,
    /// Set when the computation was first made runnable (a process starts once).
    pub started: AtomicBool,
    /// CPU index it is pinned to, or usize::MAX.
    pub affinity: AtomicUsize,
    /// CPU it last ran on.
    pub last_cpu: AtomicUsize,
    pub fpu: FpuArea,
    /// CPU time consumed, in TSC cycles (`clock::cycles_to_ns` converts).
    pub cpu_cycles: AtomicU64,
    /// Held only to be freed with the computation; a switch uses `stack_top`.
    _stack: Option<KernelStack>,
    /// `stack`'s top (0 without one), kept so that a switch need not work it out.
    stack_top: u64,
}

pub const ANY_CPU: usize = usize::MAX;

impl Computation {
    /// A computation for `process` that starts in user mode at `rip` with
    /// stack `rsp` and registers `rdi`, `rsi`.
    pub fn new_user(
        process: Arc<Process>,
        rip: u64,
        rsp: u64,
        rdi: u64,
        rsi: u64,
        affinity: usize,
    ) -> Result<Arc<Computation>, crate::mm::paging::MapError> {
        let stack = KernelStack::new(crate::mm::stack::DEFAULT_PAGES)?;
        let top = stack.top();
        let frame_size = core::mem::size_of::<TrapFrame>() as u64;
        let frame_at = top - frame_size;
        let frame = TrapFrame {
            rip,
            rsp,
            rdi,
            rsi,
            cs: crate::arch::x86_64::gdt::USER_CS as u64,
            ss: crate::arch::x86_64::gdt::USER_DS as u64,
            rflags: 0x202, // IF
            ..TrapFrame::default()
        };
        unsafe extern "C" {
            fn computation_start();
        }
        // Below the trap frame: the return address for switch_context's `ret`
        // and six zeroed callee-saved registers.
        let ret_at = frame_at - 8;
        let rsp0 = ret_at - 6 * 8;
        // SAFETY: the stack was just mapped for this computation alone.
        unsafe {
            (frame_at as *mut TrapFrame).write(frame);
            (ret_at as *mut u64).write(computation_start as *const () as u64);
            core::ptr::write_bytes(rsp0 as *mut u64, 0, 6);
        }
        let mut fpu = FpuState([0; 512]);
        // Default FPU state: x87 control word 0x37f, MXCSR 0x1f80 (all masked).
        fpu.0[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        fpu.0[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        Ok(Arc::new(Computation {
            process: Some(process),
            state: IrqMutex::new(State::Runnable),
            saved_rsp: AtomicU64::new(rsp0),
            on_cpu: AtomicBool::new(false),
            holds_cpu: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            started: AtomicBool::new(false),
            affinity: AtomicUsize::new(affinity),
            last_cpu: AtomicUsize::new(0),
            fpu: FpuArea::new(fpu),
            cpu_cycles: AtomicU64::new(0),
            _stack: Some(stack),
            stack_top: top,
        }))
    }

    /// The computation a CPU's boot context becomes: its idle loop.
    pub fn new_idle(cpu: usize) -> Arc<Computation> {
        Arc::new(Computation {
            process: None,
            state: IrqMutex::new(State::Running),
            saved_rsp: AtomicU64::new(0),
            on_cpu: AtomicBool::new(true),
            holds_cpu: AtomicBool::new(true),
            finished: AtomicBool::new(false),
            started: AtomicBool::new(true),
            affinity: AtomicUsize::new(cpu),
            last_cpu: AtomicUsize::new(cpu),
            fpu: FpuArea::new(FpuState([0; 512])),
            cpu_cycles: AtomicU64::new(0),
            _stack: None,
            stack_top: 0,
        })
    }

    pub fn kernel_stack_top(&self) -> u64 {
        self.stack_top
    }

    pub fn is_idle(&self) -> bool {
        self.process.is_none()
    }
}
