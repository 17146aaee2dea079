//! Physical memory, page tables, heap and TLB shootdown.

use crate::arch::x86_64::{fallible_copy, probe_read_u64, smp};
use crate::cpu;

use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::layout::{self, PAGE_SIZE, phys_to_virt};
use crate::mm::paging::{self, MapError, flags};
use crate::mm::{frames, heap, tlb};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

pub fn frames_contiguous_runs() -> TestResult {
    let before = frames::stats();
    let mut runs = Vec::new();
    for n in [1usize, 3, 16, 100, 512] {
        let pa = frames::alloc(n).map_err(|_| alloc::format!("no run of {n}"))?;
        ensure!(pa % PAGE_SIZE == 0, "run at unaligned {pa:#x}");
        // Write a distinct tag in every frame of the run through the direct map.
        for i in 0..n as u64 {
            // SAFETY: the frames are ours and mapped in the direct map.
            unsafe { ((phys_to_virt(pa + i * PAGE_SIZE)) as *mut u64).write(pa + i) };
        }
        runs.push((pa, n));
    }
    for &(pa, n) in &runs {
        for i in 0..n as u64 {
            // SAFETY: as above.
            let v = unsafe { ((phys_to_virt(pa + i * PAGE_SIZE)) as *const u64).read() };
            ensure!(
                v == pa + i,
                "frame {:#x} was overwritten by another run",
                pa + i * PAGE_SIZE
            );
        }
    }
    let used: usize = runs.iter().map(|r| r.1).sum();
    ensure!(
        frames::stats().free == before.free - used,
        "free count off while allocated"
    );
    for (pa, n) in runs {
        frames::free(pa, n);
    }
    ensure!(
        frames::stats() == before,
        "free frames {} != {} after freeing",
        frames::stats().free,
        before.free
    );
    Ok(())
}

pub fn frames_exhaustion_is_an_error() -> TestResult {
    let mut taken: Vec<u64> = Vec::new();
    taken
        .try_reserve(frames::stats().free)
        .map_err(|_| "no heap for the list")?;
    // Counted after the list's room is taken: the heap may have grown for it.
    let before = frames::stats();
    // The reserve too: this is the allocator's own exhaustion.
    frames::with_reserve(frames::Reserve::All, || {
        while let Ok(pa) = frames::alloc(1) {
            taken.push(pa);
        }
    });
    let n = taken.len();
    ensure!(
        frames::stats().free == 0,
        "allocation failed with {} frames free",
        frames::stats().free
    );
    let none = frames::with_reserve(frames::Reserve::All, || {
        frames::alloc(1).is_err() && frames::alloc(4).is_err()
    });
    ensure!(none, "allocation succeeded with nothing free");
    for pa in taken {
        frames::free(pa, 1);
    }
    ensure!(
        n + 1 >= before.free,
        "only {n} of {} frames could be allocated",
        before.free
    );
    ensure!(frames::stats() == before, "memory not back to baseline");
    Ok(())
}

pub fn heap_grows_and_shrinks_back() -> TestResult {
    let before = heap::stats();
    let big: Vec<u64> = (0..1_000_000u64).collect(); // 8 MB: the heap must grow
    ensure!(
        big.iter().sum::<u64>() == 999_999 * 1_000_000 / 2,
        "heap data corrupted"
    );
    ensure!(heap::stats().size > before.size, "heap did not grow");
    drop(big);
    let mut boxes = Vec::new();
    for i in 0..10_000u64 {
        boxes.push(alloc::boxed::Box::new(i));
    }
    ensure!(
        boxes.iter().enumerate().all(|(i, b)| **b == i as u64),
        "boxes corrupted"
    );
    drop(boxes);
    ensure!(
        heap::stats().used == before.used,
        "heap use {} != baseline {}",
        heap::stats().used,
        before.used
    );
    // An impossible request is an error, not a crash.
    let mut v: Vec<u8> = Vec::new();
    ensure!(v.try_reserve(1 << 40).is_err(), "a 1 TiB reservation succeeded");
    Ok(())
}

const SCRATCH: u64 = layout::SCRATCH_BASE + 0x10_0000;

pub fn paging_map_translate_unmap() -> TestResult {
    let before = frames::stats();
    let pa = frames::alloc_zeroed(1).map_err(|_| "oom")?;
    paging::with_kernel_root(|root| paging::map(root, SCRATCH, pa, flags::WRITABLE | flags::NO_EXECUTE))
        .map_err(|e| alloc::format!("map: {e:?}"))?;
    let again = paging::with_kernel_root(|root| paging::map(root, SCRATCH, pa, flags::WRITABLE));
    ensure!(again == Err(MapError::AlreadyMapped), "double map gave {again:?}");
    let (got, f) = paging::translate(paging::kernel_root(), SCRATCH + 8).ok_or("no translation")?;
    ensure!(got == pa + 8, "translate gave {got:#x}, want {:#x}", pa + 8);
    ensure!(f & flags::NO_EXECUTE != 0 && f & flags::WRITABLE != 0, "flags {f:#x}");
    // SAFETY: SCRATCH is mapped to our frame just above.
    unsafe { (SCRATCH as *mut u64).write_volatile(0x5eed) };
    // SAFETY: the direct map aliases the same frame.
    let seen = unsafe { (phys_to_virt(pa) as *const u64).read_volatile() };
    ensure!(seen == 0x5eed, "direct map sees {seen:#x}");
    let old = paging::with_kernel_root(|root| paging::unmap(root, SCRATCH));
    ensure!(old == Some(pa), "unmap returned {old:?}");
    paging::flush_local(SCRATCH);
    ensure!(probe_read_u64(SCRATCH).is_none(), "unmapped page still readable");
    ensure!(
        paging::translate(paging::kernel_root(), SCRATCH).is_none(),
        "translation survived unmap"
    );
    ensure!(
        paging::with_kernel_root(|root| paging::map(root, 0x0000_8000_0000_0000, pa, 0)) == Err(MapError::NotCanonical),
        "non-canonical address accepted"
    );
    frames::free(pa, 1);
    // Page-table pages allocated for SCRATCH stay; they are reused next time.
    ensure!(frames::stats().free + 3 >= before.free, "frames leaked");
    Ok(())
}

pub fn kernel_image_is_w_xor_x() -> TestResult {
    let root = paging::kernel_root();
    let text = kernel_image_is_w_xor_x as *const () as u64;
    let (_, f) = paging::translate(root, text).ok_or("text unmapped")?;
    ensure!(
        f & flags::WRITABLE == 0 && f & flags::NO_EXECUTE == 0,
        "text flags {f:#x}"
    );
    static DATA: AtomicU64 = AtomicU64::new(1);
    let (_, f) = paging::translate(root, &DATA as *const _ as u64).ok_or("data unmapped")?;
    ensure!(
        f & flags::WRITABLE != 0 && f & flags::NO_EXECUTE != 0,
        "data flags {f:#x}"
    );
    let (_, f) = paging::translate(root, phys_to_virt(0x10_0000)).ok_or("direct map missing")?;
    ensure!(f & flags::NO_EXECUTE != 0, "direct map is executable");
    // Writing to text must fault (CR0.WP), and the fault must be caught.
    let src = 0u8;
    // SAFETY: the write is expected to fault and be caught; if it did not,
    // the test fails below (and one byte of text would differ).
    let r = unsafe { fallible_copy(text as *mut u8, &src, 1) };
    ensure!(r.is_err(), "kernel text was writable");
    Ok(())
}

pub fn fault_fixup_catches_bad_addresses() -> TestResult {
    for addr in [
        0u64,
        0xffff_c200_0000_0000,
        0x0000_7fff_ffff_f000,
        0x8000_0000_0000_0000,
        u64::MAX - 7,
    ] {
        ensure!(probe_read_u64(addr).is_none(), "read of {addr:#x} succeeded");
    }
    let x = 42u64;
    ensure!(probe_read_u64(&x as *const u64 as u64) == Some(42), "valid read failed");
    Ok(())
}

/// `check_range` (and so every `UserRange`) against its definition, at
/// and around every bound: the fast test in two comparisons must agree
/// with it everywhere, and a bad range must get the right error.
pub fn user_ranges_are_checked_at_their_bounds() -> TestResult {
    use crate::uaccess::{MAX_COPY, UserRange, check_range};
    use crate::vm::USER_END;
    use abi::Error;
    let max = MAX_COPY as u64;
    let addrs = [
        0,
        1,
        4096,
        USER_END - max - 1,
        USER_END - max,
        USER_END - max + 1,
        USER_END - 4096,
        USER_END - 8,
        USER_END - 7,
        USER_END - 1,
        USER_END,
        USER_END + 1,
        u64::MAX - 7,
        u64::MAX,
    ];
    let lens = [0, 1, 7, 8, 4096, MAX_COPY - 1, MAX_COPY, MAX_COPY + 1, usize::MAX];
    for addr in addrs {
        for len in lens {
            let want = if len > MAX_COPY {
                Err(Error::Invalid)
            } else if (len > 0 && addr == 0) || addr as u128 + len as u128 > USER_END as u128 {
                Err(Error::Fault)
            } else {
                Ok(())
            };
            let got = check_range(addr, len);
            ensure!(got == want, "check_range({addr:#x}, {len:#x}) = {got:?}, not {want:?}");
            ensure!(
                UserRange::new(addr, len).map(|_| ()) == want,
                "UserRange::new({addr:#x}, {len:#x}) disagrees with check_range"
            );
        }
    }
    // A part lies within its range, or is refused.
    let r = UserRange::new(0x1000, 64).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        r.part(0, 64).is_ok() && r.part(56, 8).is_ok() && r.part(64, 0).is_ok(),
        "a part within refused"
    );
    ensure!(
        r.part(57, 8).is_err() && r.part(65, 0).is_err() && r.part(8, usize::MAX).is_err(),
        "a part beyond the range accepted"
    );
    Ok(())
}

/// A `CheckedArc` lends its object mutably only while nobody else can
/// hold it: once shared it looks again, and it finds the object its own
/// once the other references are gone, not before.
pub fn checked_arcs_are_lent_only_while_alone() -> TestResult {
    use crate::unique::{CheckedArc, UniqueArc};
    use alloc::sync::Arc;
    let mut c = CheckedArc::from(UniqueArc::new(1u64));
    ensure!(c.get_mut().is_some(), "a unique object refused");
    let other = c.share().clone();
    ensure!(c.get_mut().is_none() && !c.check(), "lent while shared");
    let weak = Arc::downgrade(&other);
    drop(other);
    ensure!(c.get_mut().is_none(), "lent while a weak reference lives");
    drop(weak);
    let Some(v) = c.get_mut() else {
        return Err("its own again, but refused".into());
    };
    *v = 2;
    ensure!(*c == 2, "the write did not reach the object");
    // An Arc that is not known alone is looked at: a clone alive, refused.
    let a = Arc::new(3u64);
    let b = a.clone();
    let mut d = CheckedArc::new(a);
    ensure!(d.get_mut().is_none(), "a shared object lent");
    drop(b);
    ensure!(d.get_mut().is_some(), "a lone object refused");
    Ok(())
}

pub fn tlb_shootdown_reaches_every_cpu() -> TestResult {
    let cpus = cpu::online_count();
    let a = frames::alloc_zeroed(1).map_err(|_| "oom")?;
    let b = frames::alloc_zeroed(1).map_err(|_| "oom")?;
    // SAFETY: both frames are ours, reached through the direct map.
    unsafe {
        (phys_to_virt(a) as *mut u64).write(1);
        (phys_to_virt(b) as *mut u64).write(2);
    }
    let va = SCRATCH + 0x1000;
    paging::with_kernel_root(|root| paging::map(root, va, a, flags::NO_EXECUTE))
        .map_err(|e| alloc::format!("{e:?}"))?;
    static SEEN: [AtomicU64; crate::cpu::MAX_CPUS] = [const { AtomicU64::new(0) }; crate::cpu::MAX_CPUS];
    let read_everywhere = || -> Result<(), &'static str> {
        for (i, seen) in SEEN.iter().enumerate().take(cpus) {
            smp::call_on(i, move || {
                // SAFETY: va is mapped (to a or b) for the whole test.
                let v = unsafe { (va as *const u64).read_volatile() };
                seen.store(v, Ordering::SeqCst);
            })
            .map_err(|_| "cpu vanished")?;
        }
        Ok(())
    };
    read_everywhere()?; // every CPU now caches va -> a
    for (i, s) in SEEN.iter().enumerate().take(cpus) {
        ensure!(
            s.load(Ordering::SeqCst) == 1,
            "cpu {i} read {} before remap",
            s.load(Ordering::SeqCst)
        );
    }
    let shots = tlb::SHOOTDOWNS.load(Ordering::Relaxed);
    paging::with_kernel_root(|root| paging::remap(root, va, b, flags::NO_EXECUTE))
        .map_err(|e| alloc::format!("{e:?}"))?;
    tlb::shootdown_kernel(va, 1);
    ensure!(
        tlb::SHOOTDOWNS.load(Ordering::Relaxed) == shots + 1,
        "shootdown not counted"
    );
    read_everywhere()?;
    for (i, s) in SEEN.iter().enumerate().take(cpus) {
        ensure!(
            s.load(Ordering::SeqCst) == 2,
            "cpu {i} still reads the old page after the shootdown"
        );
    }
    paging::with_kernel_root(|root| paging::unmap(root, va));
    tlb::shootdown_kernel(va, 1);
    frames::free(a, 1);
    frames::free(b, 1);
    Ok(())
}
