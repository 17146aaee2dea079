//! The in-kernel test list. Each test is a function returning `Ok(())` or
//! a reason; see `ktest.rs` for how they are run.

mod cpu;
mod harness;
mod memory;

use crate::ktest::{Expect, KTest};

pub static TESTS: &[KTest] = &[
    KTest {
        name: "frames_contiguous_runs",
        run: memory::frames_contiguous_runs,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "frames_exhaustion_is_an_error",
        run: memory::frames_exhaustion_is_an_error,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "heap_grows_and_shrinks_back",
        run: memory::heap_grows_and_shrinks_back,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "paging_map_translate_unmap",
        run: memory::paging_map_translate_unmap,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "kernel_image_is_w_xor_x",
        run: memory::kernel_image_is_w_xor_x,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "fault_fixup_catches_bad_addresses",
        run: memory::fault_fixup_catches_bad_addresses,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "breakpoint_returns",
        run: cpu::breakpoint_returns,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "clock_agrees_with_pit",
        run: cpu::clock_agrees_with_pit,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "timer_ticks_on_every_cpu",
        run: cpu::timer_ticks_on_every_cpu,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "all_cpus_online",
        run: cpu::all_cpus_online,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "ipi_runs_on_each_cpu",
        run: cpu::ipi_runs_on_each_cpu,
        expect: Expect::Pass,
        smp_only: true,
    },
    KTest {
        name: "lock_counts_exactly_across_cpus",
        run: cpu::lock_counts_exactly_across_cpus,
        expect: Expect::Pass,
        smp_only: true,
    },
    KTest {
        name: "tlb_shootdown_reaches_every_cpu",
        run: memory::tlb_shootdown_reaches_every_cpu,
        expect: Expect::Pass,
        smp_only: true,
    },
    KTest {
        name: "serial_input_interrupt",
        run: cpu::serial_input_interrupt,
        expect: Expect::Pass,
        smp_only: false,
    },
    KTest {
        name: "selftest_failure_is_detected",
        run: harness::failure_is_detected,
        expect: Expect::Fail("KTEST-FAIL selftest_failure_is_detected: deliberate"),
        smp_only: false,
    },
    KTest {
        name: "selftest_panic_prints_backtrace",
        run: harness::panic_prints_backtrace,
        expect: Expect::Fail("backtrace:"),
        smp_only: false,
    },
    KTest {
        name: "selftest_kernel_page_fault_is_reported",
        run: harness::kernel_page_fault_is_reported,
        expect: Expect::Fail("CR2=0xffffc20000000ff8"),
        smp_only: false,
    },
    KTest {
        name: "selftest_stack_overflow_is_reported",
        run: harness::stack_overflow_is_reported,
        expect: Expect::Fail("double fault (#DF)"),
        smp_only: false,
    },
    KTest {
        name: "selftest_divide_error_is_reported",
        run: harness::divide_error_is_reported,
        expect: Expect::Fail("divide error (#DE)"),
        smp_only: false,
    },
    KTest {
        name: "selftest_hang_is_caught",
        run: harness::hang_is_caught,
        expect: Expect::Hang,
        smp_only: false,
    },
];
