//! The ways up. The core takes traps, system calls and the first entry of
//! every computation, but what they mean belongs to the layers above it,
//! which the core never names: the kernel binary registers these functions
//! once at boot, before the first interrupt and the first user process.

use crate::arch::x86_64::trap::TrapFrame;
use crate::vm::space::FaultError;
use spin::Once;

pub struct Hooks {
    /// A system call: number and arguments in the frame, the result goes
    /// back in its `rax`. Called straight from the entry with interrupts
    /// off; returns on the way back to user mode.
    pub syscall: extern "C" fn(&mut TrapFrame),
    /// The same for a computation whose frame keeps every register (a
    /// Linux process: `Computation::full_frame`).
    pub linux_syscall: extern "C" fn(&mut TrapFrame),
    /// Every trap taken in user mode, just before it returns there
    /// (preemption, and the end of a killed process).
    pub return_to_user: fn(&mut TrapFrame),
    /// The timer's tick on this CPU.
    pub tick: fn(),
    /// Another CPU asked this one to look at its run queue.
    pub reschedule: fn(),
    /// A page fault at a user address, in user mode or in the kernel
    /// touching user memory (error code as the CPU gave it): demand paging,
    /// or why it cannot be resolved. The last argument says whether the
    /// interrupted code may wait (user mode, or the kernel with interrupts
    /// on: no lock held), as a page its pager must supply needs.
    pub user_page_fault: fn(u64, u64, bool) -> Result<(), FaultError>,
    /// A fault in user mode that cannot be resolved: the current process
    /// ends, alone (the frame, CR2, what happened).
    /// A user-mode fault the process cannot go on from: it ends, or (a
    /// Linux process) its supervisor changes its registers and it goes on.
    pub user_fault: fn(&mut TrapFrame, u64, &str),
    /// Ctrl-C on the console; true if it was consumed (a program was
    /// interrupted), false to pass it to the reader.
    pub interrupt_key: fn() -> bool,
    /// Console input arrived.
    pub input_ready: fn(),
    /// A device's interrupt (its vector) arrived: tell its driver. A
    /// level-triggered line stays masked until the driver says it is done.
    pub device_irq: fn(u8),
    /// A CPU other than the boot CPU, its core set up: what it runs from
    /// then on (its scheduler's set-up, its timer, its idle loop).
    pub ap_main: fn() -> !,
    /// First entry of a new computation, on its own stack, before it
    /// leaves for user mode through its first frame.
    pub first_entry: fn(),
}

static HOOKS: Once<Hooks> = Once::new();

/// Registers the hooks; the first registration is the one that counts.
pub fn register(hooks: Hooks) {
    let h = HOOKS.call_once(|| hooks);
    crate::arch::x86_64::syscall::set_hooks(h.syscall, h.linux_syscall);
}

#[inline(always)]
pub fn get() -> &'static Hooks {
    match HOOKS.get() {
        Some(h) => h,
        None => unregistered(),
    }
}

#[cold]
fn unregistered() -> ! {
    panic!("a trap or system call came before the kernel registered its hooks")
}
