//! The core's own in-kernel tests (memory, processors and interrupts, and
//! the test harness itself), in test images only.

mod cpu;
mod harness;
mod memory;

use crate::ktest::{KTest, must_fail, must_hang, pass, smp};

pub static TESTS: &[KTest] = &[
    // Memory
    pass("frames_contiguous_runs", memory::frames_contiguous_runs),
    pass("frames_exhaustion_is_an_error", memory::frames_exhaustion_is_an_error),
    pass("heap_grows_and_shrinks_back", memory::heap_grows_and_shrinks_back),
    pass("paging_map_translate_unmap", memory::paging_map_translate_unmap),
    pass("kernel_image_is_w_xor_x", memory::kernel_image_is_w_xor_x),
    pass(
        "fault_fixup_catches_bad_addresses",
        memory::fault_fixup_catches_bad_addresses,
    ),
    pass(
        "user_ranges_are_checked_at_their_bounds",
        memory::user_ranges_are_checked_at_their_bounds,
    ),
    smp(
        "tlb_shootdown_reaches_every_cpu",
        memory::tlb_shootdown_reaches_every_cpu,
    ),
    // Processors and interrupts
    pass("breakpoint_returns", cpu::breakpoint_returns),
    pass("clock_agrees_with_pit", cpu::clock_agrees_with_pit),
    pass("timer_ticks_on_every_cpu", cpu::timer_ticks_on_every_cpu),
    pass("all_cpus_online", cpu::all_cpus_online),
    smp("ipi_runs_on_each_cpu", cpu::ipi_runs_on_each_cpu),
    smp("lock_counts_exactly_across_cpus", cpu::lock_counts_exactly_across_cpus),
    pass("serial_input_interrupt", cpu::serial_input_interrupt),
    pass("pci_finds_the_machines_devices", cpu::pci_finds_the_machines_devices),
    // The harness itself: failures, panics, faults and hangs must be caught.
    must_fail(
        "selftest_failure_is_detected",
        harness::failure_is_detected,
        "KTEST-FAIL selftest_failure_is_detected: deliberate",
    ),
    must_fail(
        "selftest_panic_prints_backtrace",
        harness::panic_prints_backtrace,
        "backtrace:",
    ),
    must_fail(
        "selftest_kernel_page_fault_is_reported",
        harness::kernel_page_fault_is_reported,
        "CR2=0xffffc20000000ff8",
    ),
    must_fail(
        "selftest_stack_overflow_is_reported",
        harness::stack_overflow_is_reported,
        "double fault (#DF)",
    ),
    must_fail(
        "selftest_divide_error_is_reported",
        harness::divide_error_is_reported,
        "divide error (#DE)",
    ),
    must_hang("selftest_hang_is_caught", harness::hang_is_caught),
];
