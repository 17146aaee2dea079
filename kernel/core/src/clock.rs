//! Time: the TSC, calibrated once at boot against a fixed reference, gives
//! cycles and nanoseconds to every part of the kernel and to benchmarks.
//!
//! The reference is, in order of preference: the hypervisor's TSC frequency
//! leaf (0x40000010, present under KVM with invariant TSC), CPUID leaf 0x15
//! (crystal ratio, on recent Intel parts), or the 8254 PIT, sampled three
//! times (the median is kept, since a busy host can stretch one window).
//! Under QEMU's icount mode the TSC advances one tick per instruction, so
//! all three agree on 1 GHz and "nanoseconds" are instruction counts.

use crate::arch::x86_64::{apic, cpuid, pit, rdtsc};
use core::sync::atomic::{AtomicU64, Ordering};

static TSC_HZ: AtomicU64 = AtomicU64::new(1_000_000_000);
/// ns = cycles * MULT >> 32
static MULT: AtomicU64 = AtomicU64::new(1 << 32);
static BOOT_TSC: AtomicU64 = AtomicU64::new(0);

pub fn set_boot_tsc(tsc: u64) {
    BOOT_TSC.store(tsc, Ordering::Relaxed);
}

pub fn boot_tsc() -> u64 {
    BOOT_TSC.load(Ordering::Relaxed)
}

/// Where the TSC frequency came from, for the boot log.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    HypervisorLeaf,
    CpuidCrystal,
    Pit,
}

/// Calibrates the TSC and the APIC timer. Must run on the boot CPU after the
/// APIC is enabled and before interrupts are.
pub fn calibrate() -> Source {
    // The APIC timer is always measured against the PIT, whatever gives the TSC.
    const WINDOW_TICKS: u16 = (pit::HZ / 200) as u16; // 5 ms
    // Three windows and their median, as long as they agree; a busy host
    // (TCG shares its cores) can stretch a window, so while the three
    // middle samples differ by more than 2 %, more are taken (9 at most).
    let mut samples = [(0u64, 0u32); 9];
    let mut n = 0;
    while n < samples.len() {
        let (mut t0, mut a0) = (0, 0);
        pit::window(WINDOW_TICKS, || {
            a0 = apic::calibration_start();
            t0 = rdtsc();
        });
        let t1 = rdtsc();
        let a1 = apic::calibration_read();
        samples[n] = (t1 - t0, a0 - a1);
        n += 1;
        if n >= 3 {
            samples[..n].sort_unstable_by_key(|s| s.0);
            let mid = &samples[n / 2 - 1..n / 2 + 2];
            if mid[2].0 - mid[0].0 <= mid[1].0 / 50 {
                break;
            }
        }
    }
    let (tsc_ticks, apic_ticks) = samples[n.min(samples.len()) / 2];
    let window_ns = WINDOW_TICKS as u64 * 1_000_000_000 / pit::HZ;
    apic::set_ticks_per_ms((apic_ticks as u64 * 1_000_000 / window_ns) as u32);

    let (hz, source) = if let Some(hz) = hypervisor_tsc_hz() {
        (hz, Source::HypervisorLeaf)
    } else if let Some(hz) = crystal_tsc_hz() {
        (hz, Source::CpuidCrystal)
    } else {
        (tsc_ticks * 1_000_000_000 / window_ns, Source::Pit)
    };
    set_tsc_hz(hz);
    source
}

fn set_tsc_hz(hz: u64) {
    let hz = hz.max(1_000_000);
    TSC_HZ.store(hz, Ordering::Relaxed);
    MULT.store(((1_000_000_000u128 << 32) / hz as u128) as u64, Ordering::Relaxed);
}

fn hypervisor_tsc_hz() -> Option<u64> {
    if cpuid(1, 0).ecx & (1 << 31) == 0 {
        return None;
    }
    if cpuid(0x4000_0000, 0).eax < 0x4000_0010 {
        return None;
    }
    let khz = cpuid(0x4000_0010, 0).eax as u64;
    (khz != 0).then_some(khz * 1000)
}

fn crystal_tsc_hz() -> Option<u64> {
    if cpuid(0, 0).eax < 0x15 {
        return None;
    }
    let r = cpuid(0x15, 0);
    (r.eax != 0 && r.ebx != 0 && r.ecx != 0).then(|| r.ecx as u64 * r.ebx as u64 / r.eax as u64)
}

pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Raw cycle counter.
#[inline(always)]
pub fn cycles() -> u64 {
    rdtsc()
}

/// Converts a cycle count to nanoseconds.
pub fn cycles_to_ns(cycles: u64) -> u64 {
    ((cycles as u128 * MULT.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// Nanoseconds since the kernel was entered.
pub fn nanos() -> u64 {
    cycles_to_ns(rdtsc().wrapping_sub(boot_tsc()))
}

/// Busy-waits for `us` microseconds.
pub fn delay_us(us: u64) {
    let end = rdtsc() + us * tsc_hz() / 1_000_000;
    while rdtsc() < end {
        core::hint::spin_loop();
    }
}
