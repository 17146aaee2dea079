//! The in-kernel test list. Each test is a function returning `Ok(())` or
//! a reason; see `ktest.rs` for how they are run.

mod container;
mod ipc;
mod process;
mod resource;

use kcore::ktest::{KTest, pass, smp};

/// Heap use after a workload against before it. With several CPUs, which
/// CPU last ran what, and how many processes were alive at once, moves a
/// few hundred bytes of kernel bookkeeping (map nodes, list capacity)
/// between runs in either direction; a leak of even a few bytes per
/// process of a workload shows far beyond this margin.
pub fn heap_back(before: usize, after: usize) -> bool {
    after.abs_diff(before) <= 1024
}

/// Arguments as `spawn` takes them: each one NUL-terminated.
pub fn args(words: &[&str]) -> alloc::vec::Vec<u8> {
    words.iter().flat_map(|w| w.bytes().chain([0])).collect()
}

pub static TESTS: &[KTest] = &[
    // User processes
    pass(
        "user_program_runs_with_arguments",
        process::user_program_runs_with_arguments,
    ),
    pass(
        "eager_loading_takes_no_page_faults",
        process::eager_loading_takes_no_page_faults,
    ),
    pass(
        "demand_paging_counts_faults_by_kind",
        process::demand_paging_counts_faults_by_kind,
    ),
    pass("faulting_processes_die_alone", process::faulting_processes_die_alone),
    pass(
        "bad_system_call_arguments_are_errors",
        process::bad_system_call_arguments_are_errors,
    ),
    pass(
        "sleep_blocks_for_the_requested_time",
        process::sleep_blocks_for_the_requested_time,
    ),
    pass(
        "cpu_bound_processes_are_preempted",
        process::cpu_bound_processes_are_preempted,
    ),
    pass("affinity_pins_a_process", process::affinity_pins_a_process),
    pass(
        "processes_run_on_all_cpus_at_once",
        process::processes_run_on_all_cpus_at_once,
    ),
    pass(
        "ctrl_c_kills_the_foreground_program",
        process::ctrl_c_kills_the_foreground_program,
    ),
    pass("shell_runs_commands", process::shell_runs_commands),
    pass(
        "system_right_guards_global_settings",
        process::system_right_guards_global_settings,
    ),
    pass(
        "fuzzing_neither_crashes_nor_leaks",
        process::fuzzing_neither_crashes_nor_leaks,
    ),
    // Tender resources and the pool
    pass("resources_exist_independently", resource::resources_exist_independently),
    pass(
        "stale_forged_and_wrong_kind_ids_are_rejected",
        resource::stale_forged_and_wrong_kind_ids_are_rejected,
    ),
    pass(
        "mediator_checks_before_any_change",
        resource::mediator_checks_before_any_change,
    ),
    pass("every_kind_refuses_bad_ids", resource::every_kind_refuses_bad_ids),
    pass(
        "operations_are_counted_under_their_own_codes",
        resource::operations_are_counted_under_their_own_codes,
    ),
    pass("trace_slot_has_one_writer", resource::trace_slot_has_one_writer),
    pass(
        "process_built_step_by_step_from_user_mode",
        resource::process_built_step_by_step_from_user_mode,
    ),
    pass(
        "pool_reuse_gives_fresh_processes",
        resource::pool_reuse_gives_fresh_processes,
    ),
    pass("pool_settings_are_checked", resource::pool_settings_are_checked),
    pass("pool_add_fills_to_the_setting", resource::pool_add_fills_to_the_setting),
    pass(
        "pool_reduce_follows_the_papers_rules",
        resource::pool_reduce_follows_the_papers_rules,
    ),
    pass(
        "pooled_text_is_the_program_text",
        resource::pooled_text_is_the_program_text,
    ),
    pass(
        "nothing_leaks_after_a_workload_and_a_flush",
        resource::nothing_leaks_after_a_workload_and_a_flush,
    ),
    // Container IPC (seed 004)
    pass(
        "every_mode_carries_data_through_a_box",
        container::every_mode_carries_data_through_a_box,
    ),
    pass("move_takes_the_mapping_away", container::move_takes_the_mapping_away),
    pass("push_steal_and_exchange", container::push_steal_and_exchange),
    pass("box_rights_are_checked", container::box_rights_are_checked),
    pass(
        "empty_containers_follow_the_bounds",
        container::empty_containers_follow_the_bounds,
    ),
    pass(
        "concurrent_swap_traffic_on_several_cpus",
        container::concurrent_swap_traffic_on_several_cpus,
    ),
    pass("ica_moves_without_copying", container::ica_moves_without_copying),
    pass(
        "ica_move_by_the_system_call_path",
        container::ica_move_by_the_system_call_path,
    ),
    pass("container_records_are_held", container::container_records_are_held),
    pass("ica_moves_race_with_exits", container::ica_moves_race_with_exits),
    pass("container_ipc_leaks_nothing", container::container_ipc_leaks_nothing),
    pass(
        "containers_of_ended_processes_are_released",
        container::containers_of_ended_processes_are_released,
    ),
    pass("container_fifo_keeps_order", container::container_fifo_keeps_order),
    // Servers and rendezvous (seed 003, seed 002)
    pass("rendezvous_servers_and_requests", ipc::rendezvous_servers_and_requests),
    pass("request_and_result_rings", ipc::request_and_result_rings),
    pass(
        "stress_of_100000_calls_leaks_nothing",
        ipc::stress_of_100000_calls_leaks_nothing,
    ),
    pass(
        "batch_requests_and_distribution_server",
        ipc::batch_requests_and_distribution_server,
    ),
    smp(
        "servers_placed_by_boot_file_and_command",
        ipc::servers_placed_by_boot_file_and_command,
    ),
];
