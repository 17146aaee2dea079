//! TLB shootdown: after a page-table change that other CPUs may have cached,
//! every such CPU must drop the stale translation before the change counts
//! as done. One request is in flight at a time; the sender interrupts the
//! targets (IPI), flushes its own TLB and waits until each target has
//! acknowledged. While a sender waits for the request lock it keeps serving
//! requests aimed at itself, so two CPUs shooting down at once cannot
//! deadlock even with interrupts disabled.

use super::paging;
use crate::arch::x86_64::{apic, trap::vector};
use crate::cpu;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

static REQUEST_LOCK: spin::Mutex<()> = spin::Mutex::new(());
static START: AtomicU64 = AtomicU64::new(0);
static PAGES: AtomicU64 = AtomicU64::new(0);
/// The size of the request's pages: 12 (4 KiB) or 21 (blocks of 2 MiB,
/// each one translation however many pages it holds).
static SHIFT: AtomicU64 = AtomicU64::new(12);
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Shootdowns started, and IPIs they sent (for the inspector and benchmarks).
pub static SHOOTDOWNS: AtomicU64 = AtomicU64::new(0);
pub static SHOOTDOWN_IPIS: AtomicU64 = AtomicU64::new(0);

/// Above this many pages a full flush is cheaper than page-by-page invlpg.
const FULL_FLUSH_PAGES: u64 = 32;

#[inline(always)]
fn flush_range(start: u64, pages: u64, shift: u64) {
    // One page (an ICA, a small container, a block) is the common case:
    // no loop.
    if pages == 1 {
        paging::flush_local(start);
    } else if pages > FULL_FLUSH_PAGES {
        // Kernel mappings are global and survive a CR3 reload; toggling
        // CR4.PGE drops those too.
        flush_everything();
    } else {
        for i in 0..pages {
            paging::flush_local(start + (i << shift));
        }
    }
}

fn flush_everything() {
    use x86_64::registers::control::{Cr4, Cr4Flags};
    let cr4 = Cr4::read();
    // SAFETY: clearing and restoring PGE flushes all TLB entries, nothing else.
    unsafe {
        Cr4::write(cr4 - Cr4Flags::PAGE_GLOBAL);
        Cr4::write(cr4);
    }
}

/// Serves a request aimed at this CPU, if there is one.
pub fn serve_pending() {
    let Some(me) = cpu::try_this_cpu() else {
        return;
    };
    if me.tlb_pending.swap(false, Ordering::AcqRel) {
        flush_range(
            START.load(Ordering::Acquire),
            PAGES.load(Ordering::Acquire),
            SHIFT.load(Ordering::Acquire),
        );
        PENDING.fetch_sub(1, Ordering::AcqRel);
    }
}

pub fn on_shootdown_ipi() {
    serve_pending();
}

/// Invalidates kernel addresses `start .. start + pages*4096` on every online CPU.
pub fn shootdown_kernel(start: u64, pages: u64) {
    shootdown(start, pages, |_| true);
}

/// Invalidates every translation, global ones included, on every online
/// CPU: one round of IPIs for a batch of scattered kernel ranges.
pub fn shootdown_kernel_all() {
    shootdown(0, u64::MAX, |_| true);
}

/// Invalidates the range on this CPU and on the other CPUs of `mask` (bit
/// per CPU index, e.g. the CPUs a space is active on). A space active only
/// here, the usual case, costs the local flush and nothing more: inlined,
/// with the sending out of line.
#[inline]
pub fn shootdown_cpus(start: u64, pages: u64, mask: u64) {
    shootdown_sized(start, pages, 12, mask);
}

/// `shootdown_cpus` for `blocks` blocks of 2 MiB from `start`, each mapped
/// by one entry: one invalidation per block, however many pages it holds.
#[inline]
pub fn shootdown_blocks(start: u64, blocks: u64, mask: u64) {
    shootdown_sized(start, blocks, 21, mask);
}

#[inline(always)]
fn shootdown_sized(start: u64, pages: u64, shift: u64, mask: u64) {
    flush_range(start, pages, shift);
    if mask == 0 {
        return;
    }
    // A mask is non-empty only once the scheduler runs, and a CPU sets up
    // its per-CPU data before it does anything else: read it directly, not
    // through the GS base MSR (a third of this function's cost).
    let me = cpu::this_cpu().index;
    // A CPU index is below MAX_CPUS, which fits a mask's 64 bits.
    const { assert!(cpu::MAX_CPUS <= 64) };
    let others = mask & !(1u64 << (me % 64));
    if others != 0 {
        shootdown_mask(start, pages, shift, others);
    }
}

#[cold]
#[inline(never)]
fn shootdown_mask(start: u64, pages: u64, shift: u64, others: u64) {
    shootdown_remote(start, pages, shift, |c| {
        others & 1u64.checked_shl(c as u32).unwrap_or(0) != 0
    });
}

/// Invalidates the range on this CPU and on every other online CPU for which
/// `targets(index)` is true (e.g. the CPUs running a given virtual space).
pub fn shootdown(start: u64, pages: u64, targets: impl Fn(usize) -> bool) {
    flush_range(start, pages, 12);
    shootdown_remote(start, pages, 12, targets);
}

/// The other CPUs' part of `shootdown` (this CPU has flushed already).
fn shootdown_remote(start: u64, pages: u64, shift: u64, targets: impl Fn(usize) -> bool) {
    let Some(me) = cpu::try_this_cpu() else {
        return;
    };
    // Most changes concern a space that runs only here: nothing to send.
    if !cpu::online_cpus().any(|c| c.index != me.index && targets(c.index)) {
        return;
    }
    // The request lock is held with interrupts off, as every kernel lock
    // an interrupt handler may take (`sync.rs`): a handler that drops the
    // last reference to a computation (the timer's wake-ups hold some)
    // frees its kernel stack, which shoots down, and would otherwise spin
    // for good on the lock its own CPU holds.
    x86_64::instructions::interrupts::without_interrupts(|| send_and_wait(start, pages, shift, me, targets));
}

/// `shootdown_remote` under the request lock, interrupts off.
fn send_and_wait(start: u64, pages: u64, shift: u64, me: &cpu::PerCpu, targets: impl Fn(usize) -> bool) {
    let guard = loop {
        if let Some(g) = REQUEST_LOCK.try_lock() {
            break g;
        }
        serve_pending();
        core::hint::spin_loop();
    };
    START.store(start, Ordering::Release);
    PAGES.store(pages, Ordering::Release);
    SHIFT.store(shift, Ordering::Release);
    let mut sent = 0;
    for c in cpu::online_cpus().filter(|c| c.index != me.index && targets(c.index)) {
        PENDING.fetch_add(1, Ordering::AcqRel);
        c.tlb_pending.store(true, Ordering::Release);
        apic::send_ipi(c.apic_id, vector::TLB_SHOOTDOWN);
        sent += 1;
    }
    while PENDING.load(Ordering::Acquire) != 0 {
        serve_pending();
        core::hint::spin_loop();
    }
    drop(guard);
    SHOOTDOWNS.fetch_add(1, Ordering::Relaxed);
    SHOOTDOWN_IPIS.fetch_add(sent, Ordering::Relaxed);
}
