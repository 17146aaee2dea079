//! The core's own in-kernel tests (memory, processors and interrupts, and
//! the test harness itself), in test images only.

mod cpu;
mod harness;
mod memory;

use crate::ktest::KTest;
use crate::ktests;

pub static TESTS: &[KTest] = ktests![
    // Memory
    pass memory::frames_contiguous_runs,
    pass memory::frames_exhaustion_is_an_error,
    pass memory::heap_grows_and_shrinks_back,
    pass memory::paging_map_translate_unmap,
    pass memory::kernel_image_is_w_xor_x,
    pass memory::fault_fixup_catches_bad_addresses,
    pass memory::user_ranges_are_checked_at_their_bounds,
    pass memory::checked_arcs_are_lent_only_while_alone,
    smp memory::tlb_shootdown_reaches_every_cpu,
    // Processors and interrupts
    pass cpu::breakpoint_returns,
    pass cpu::clock_agrees_with_pit,
    pass cpu::timer_ticks_on_every_cpu,
    pass cpu::all_cpus_online,
    smp cpu::ipi_runs_on_each_cpu,
    smp cpu::lock_counts_exactly_across_cpus,
    pass cpu::serial_input_interrupt,
    pass cpu::pci_finds_the_machines_devices,
    // The harness itself: failures, panics, faults and hangs must be caught.
    must_fail harness::selftest_failure_is_detected ("KTEST-FAIL selftest_failure_is_detected: deliberate"),
    must_fail harness::selftest_panic_prints_backtrace ("backtrace:"),
    must_fail harness::selftest_kernel_page_fault_is_reported ("CR2=0xffffc20000000ff8"),
    must_fail harness::selftest_stack_overflow_is_reported ("double fault (#DF)"),
    must_fail harness::selftest_divide_error_is_reported ("divide error (#DE)"),
    must_hang harness::selftest_hang_is_caught,
];
