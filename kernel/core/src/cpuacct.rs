//! CPU time split by where it was spent: each computation's time in the
//! kernel (`Computation::kernel_cycles`, a part of its `cpu_cycles`), and
//! the time of computations that have ended, summed by group (a program's
//! name and how its process came to be), so that a burst of short-lived
//! processes (a web server's forked children, its CGI programs) can be
//! accounted for after they are gone.
//!
//! Kernel time is counted in stretches: an entry from user mode (a system
//! call, an interrupt or exception taken in user mode) marks the CPU's
//! `kernel_since`; the way back to user mode, and a switch away, charge the
//! stretch since to the computation leaving; a switch marks the start of
//! the next one's stretch, as it resumes in the kernel. Interrupts taken in
//! the kernel belong to the stretch they interrupt. Under icount the cycles
//! are guest instructions. The kernel part is compiled only into the test
//! kernel (feature `cputime`, which `tools/bench/websplit.py` boots) and
//! counted only when its boot asks (`cputime` on the command line,
//! `enable_kernel_time`): on, it cost 1.5 % of a web request's
//! instructions; compiled in but off, its hooks still made a call round
//! trip 36 instructions longer (1,016 → 1,052), too much for the kernel
//! whose figures are of record.

use crate::computation::Computation;
use crate::sync::IrqMutex;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether kernel time is counted (`enable_kernel_time`).
static KERNEL_TIME: AtomicBool = AtomicBool::new(false);

/// Counts each computation's kernel time from now on (at boot, before
/// any process runs).
pub fn enable_kernel_time() {
    KERNEL_TIME.store(true, Ordering::Relaxed);
}

/// Groups of ended computations; a process of a group beyond these is
/// counted in none (its time shows while it lives only).
pub const GROUPS: usize = 64;
/// Bytes of a group's name kept.
pub const NAME_LEN: usize = 32;

struct Ended {
    count: AtomicU64,
    cycles: AtomicU64,
    kernel_cycles: AtomicU64,
}

static ENDED: [Ended; GROUPS] = [const {
    Ended {
        count: AtomicU64::new(0),
        cycles: AtomicU64::new(0),
        kernel_cycles: AtomicU64::new(0),
    }
}; GROUPS];

/// A group's name as words (`NAME_LEN` bytes, little-endian), compared
/// and hashed a word at a time.
type Key = [u64; NAME_LEN / 8];

/// Groups' names and flags; entry 0 stands for "none".
static NAMES: IrqMutex<[(Key, u64); GROUPS]> = IrqMutex::new([([0; NAME_LEN / 8], 0); GROUPS]);

/// The group of processes of program `name` with `flags` (the caller's
/// meaning: native or Linux, forked), made at its first use; 0 when the
/// table is full. Every process creation (a fork's too) asks: the table
/// is searched from the slot its name and flags hash to (entries are never
/// removed, so a probe ends at its own entry or at an empty one), not
/// from its start (a walk of 32-byte compares was 1.3k instructions a
/// spawn in a table of a boot's programs). The name is hashed and
/// compared as words: byte by byte, with a byte compare of each entry
/// probed, a look-up was about 300 instructions, and a fork makes two.
pub fn group(name: &str, flags: u64) -> u32 {
    let mut bytes = [0u8; NAME_LEN];
    let n = name.len().min(NAME_LEN);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    let mut key: Key = [0; NAME_LEN / 8];
    for (w, b) in key.iter_mut().zip(bytes.as_chunks::<8>().0) {
        *w = u64::from_le_bytes(*b);
    }
    // FNV-1a over the words and the flags, each folded down so that its
    // high bytes move the slot too.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &w in key.iter().chain(&[flags]) {
        h = (h ^ w ^ (w >> 29)).wrapping_mul(0x100_0000_01b3);
    }
    h ^= h >> 32;
    let slots = GROUPS as u64 - 1;
    let mut names = NAMES.lock();
    for step in 0..slots {
        // Entry 0 is "none": slots 1..GROUPS.
        let i = 1 + (h.wrapping_add(step) % slots) as usize;
        let entry = &mut names[i];
        if entry.0 == [0; NAME_LEN / 8] {
            *entry = (key, flags);
            return i as u32;
        }
        if entry.1 == flags && entry.0 == key {
            return i as u32;
        }
    }
    0
}

/// What the ended computations of one group used.
pub struct EndedGroup {
    pub name: [u8; NAME_LEN],
    pub flags: u64,
    pub count: u64,
    pub cycles: u64,
    pub kernel_cycles: u64,
}

/// Every group that has had a computation end.
pub fn ended(f: &mut dyn FnMut(&EndedGroup)) {
    let names = *NAMES.lock();
    for (i, e) in ENDED.iter().enumerate().skip(1) {
        let count = e.count.load(Ordering::Relaxed);
        if count > 0 {
            f(&EndedGroup {
                name: name_bytes(&names[i].0),
                flags: names[i].1,
                count,
                cycles: e.cycles.load(Ordering::Relaxed),
                kernel_cycles: e.kernel_cycles.load(Ordering::Relaxed),
            });
        }
    }
}

/// A name's bytes from its words (`Key`).
fn name_bytes(key: &Key) -> [u8; NAME_LEN] {
    let mut out = [0u8; NAME_LEN];
    for (b, w) in out.as_chunks_mut::<8>().0.iter_mut().zip(key) {
        *b = w.to_le_bytes();
    }
    out
}

/// Whether kernel time is counted now: never without the `cputime`
/// feature, where this folds to `false` and the hooks to nothing.
#[inline(always)]
fn counting_kernel_time() -> bool {
    cfg!(feature = "cputime") && KERNEL_TIME.load(Ordering::Relaxed)
}

/// An entry from user mode: the kernel's stretch starts.
#[inline(always)]
pub fn entered_kernel() {
    if !counting_kernel_time() {
        return;
    }
    crate::cpu::this_cpu()
        .kernel_since
        .store(crate::clock::cycles(), Ordering::Relaxed);
}

/// The way back to user mode of the computation running here: its
/// stretch in the kernel is counted. Interrupts are off.
#[inline(always)]
pub fn leaving_kernel() {
    if !counting_kernel_time() {
        return;
    }
    let cpu = crate::cpu::this_cpu();
    let since = cpu.kernel_since.swap(0, Ordering::Relaxed);
    if since != 0 {
        let ran = crate::clock::cycles().saturating_sub(since);
        crate::computation::with_current(|c| c.kernel_cycles.fetch_add(ran, Ordering::Relaxed));
    }
}

/// `cur` leaves this CPU at `now` (already charged its `cpu_cycles`): its
/// kernel stretch is counted and the next computation's starts. Interrupts
/// are off.
#[inline(always)]
pub fn switching(cur: &Computation, now: u64) {
    if counting_kernel_time() {
        let cpu = crate::cpu::this_cpu();
        let since = cpu.kernel_since.swap(now, Ordering::Relaxed);
        if since != 0 {
            cur.kernel_cycles
                .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
        }
    }
}

/// `switching`, for a switch that may be a computation's last (the
/// scheduler's general path, which an ending computation leaves by; the
/// direct switch of a call never is): an ended one's time goes to its
/// group.
#[inline(always)]
pub fn switching_maybe_last(cur: &Computation, now: u64) {
    switching(cur, now);
    if cur.finished.load(Ordering::Relaxed) {
        end(cur);
    }
}

#[cold]
fn end(c: &Computation) {
    let g = c.group.swap(0, Ordering::Relaxed) as usize;
    if let Some(e) = ENDED.get(g).filter(|_| g != 0) {
        e.count.fetch_add(1, Ordering::Relaxed);
        e.cycles
            .fetch_add(c.cpu_cycles.load(Ordering::Relaxed), Ordering::Relaxed);
        e.kernel_cycles
            .fetch_add(c.kernel_cycles.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}
