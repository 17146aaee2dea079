//! The in-kernel test list. Each test is a function returning `Ok(())` or
//! a reason; see `ktest.rs` for how they are run.

mod blocks;
mod container;
mod device;
mod fork;
mod harden;
mod ipc;
mod largealloc;
mod linuxmem;
mod linuxppid;
mod linuxsigmask;
mod pipes;
mod process;
mod readmany;
mod regions;
mod resource;
mod routed;
mod text;
mod vfork;
mod vmcopy;
mod wallclock;

use kcore::ktest::KTest;
use kcore::ktests;

/// Heap use after a workload against before it. With several CPUs, which
/// CPU last ran what, and how many processes were alive at once, moves a
/// few hundred bytes of kernel bookkeeping (map nodes, list capacity)
/// between runs in either direction; a leak of even a few bytes per
/// process of a workload shows far beyond this margin.
pub fn heap_back(before: usize, after: usize) -> bool {
    after.abs_diff(before) <= 1024
}

/// Heap in use that a leak would show in. The pool is emptied first: an
/// ended process's parts may go back to it, and on a CPU's idle hook it
/// may make more, when other CPUs happen to be idle. What the resource
/// tables and the kernel-stack slots' free list take is left out: they
/// keep what they grew to, and at 4 CPUs a round may have more alive at
/// once than any before it.
pub fn heap_in_use() -> usize {
    ::resource::pool::flush();
    ::ipc::rendezvous::flush_free_calls();
    kcore::computation::reap_all();
    kcore::mm::heap::stats().used - ::resource::table_bytes() - kcore::mm::stack::free_list_bytes()
}

/// Whether the heap comes back to `before` (`heap_back`) within about 20
/// ms: another CPU's housekeeping (its idle hook, a tick) may hold a
/// moment's allocation when one reading is taken, a leak stays. Returns
/// the last reading when it does not.
pub fn heap_comes_back(before: usize) -> Result<(), usize> {
    let mut now = heap_in_use();
    for _ in 0..10 {
        if heap_back(before, now) {
            return Ok(());
        }
        let until = kcore::clock::nanos() + 2_000_000;
        while kcore::clock::nanos() < until {
            core::hint::spin_loop();
        }
        now = heap_in_use();
    }
    Err(now)
}

/// Arguments as `spawn` takes them: each one NUL-terminated.
pub fn args(words: &[&str]) -> alloc::vec::Vec<u8> {
    words.iter().flat_map(|w| w.bytes().chain([0])).collect()
}

/// A result for a test's message.
pub fn ok<T>(r: Result<T, abi::Error>) -> Result<T, alloc::string::String> {
    r.map_err(|e| alloc::format!("{e:?}"))
}

/// A process that only sleeps: a virtual space to give things to.
pub fn live() -> Result<u64, alloc::string::String> {
    live_limited(abi::SpawnOptions::DEFAULT.kernel_limit, ::ipc::process::KERNEL_PID)
}

/// `live`, child of `parent`, whose kernel memory may not pass `limit`.
pub fn live_limited(limit: u64, parent: u64) -> Result<u64, alloc::string::String> {
    let options = abi::SpawnOptions {
        kernel_limit: limit,
        ..abi::SpawnOptions::DEFAULT
    };
    ok(::resource::proc::spawn::spawn("sleeper", b"600000\0", &options, parent))
}

/// A Linux process of `supervisor`'s, Linux pid `linux_pid`, lent its
/// space by `lender` as vfork lends it: it faults at once and waits for
/// ever in the call that takes the fault to its supervisor (a sleeper
/// that never answers).
pub fn faulting_linux_child(lender: u64, supervisor: u64, linux_pid: u64) -> Result<u64, alloc::string::String> {
    let regs = abi::linux::Regs {
        rip: 0x1000,
        rsp: kcore::vm::USER_STACK_TOP - 2048,
        rflags: 0x202,
        ..abi::linux::Regs::default()
    };
    let l = ::ipc::process::get(lender).ok_or("lender gone")?;
    ok(::resource::proc::spawn::vfork(&l, regs, supervisor, linux_pid, 0))
}

/// A Linux process whose first call (a fault) waits at its supervisor,
/// and the processes around it: the shared server (the supervisor's
/// parent), a stranger, and the process that lends the child its space.
pub struct Supervised {
    pub shared: u64,
    pub sup: u64,
    pub stranger: u64,
    pub lender: u64,
    pub child: Result<u64, alloc::string::String>,
}

impl Supervised {
    pub fn new(linux_pid: u64) -> Result<Supervised, alloc::string::String> {
        let shared = live()?;
        let sup = live_limited(abi::SpawnOptions::DEFAULT.kernel_limit, shared)?;
        let (stranger, lender) = (live()?, live()?);
        let child = faulting_linux_child(lender, sup, linux_pid);
        Ok(Supervised {
            shared,
            sup,
            stranger,
            lender,
            child,
        })
    }

    /// The child, the supervisor, the shared server, the stranger,
    /// `other` and the lender, looked up.
    pub fn looked_up(
        &self,
        other: u64,
    ) -> Result<[alloc::sync::Arc<::ipc::process::Process>; 6], alloc::string::String> {
        let child = self.child.clone()?;
        let mut found = alloc::vec::Vec::new();
        for pid in [child, self.sup, self.shared, self.stranger, other, self.lender] {
            found.push(::ipc::process::get(pid).ok_or("a test process is gone")?);
        }
        found
            .try_into()
            .map_err(|_| alloc::string::String::from("six processes"))
    }

    /// Ends the child (if it was made), then the others.
    pub fn end(self) {
        if let Ok(child) = self.child {
            let _ = ::ipc::process::kill(child);
            let _ = ::ipc::process::wait(self.sup, child);
        }
        for pid in [self.lender, self.stranger, self.sup, self.shared] {
            end(pid);
        }
    }
}

/// Ends a process started by `live`.
pub fn end(pid: u64) {
    let _ = ::ipc::process::kill(pid);
    let _ = ::ipc::process::wait(::ipc::process::KERNEL_PID, pid);
}

pub static TESTS: &[KTest] = ktests![
    // User processes
    pass process::user_program_runs_with_arguments,
    pass process::eager_loading_takes_no_page_faults,
    pass process::demand_paging_counts_faults_by_kind,
    pass process::faulting_processes_die_alone,
    pass process::a_parents_end_reaps_and_orphans_its_children,
    pass process::bad_system_call_arguments_are_errors,
    pass process::sleep_blocks_for_the_requested_time,
    pass process::cpu_bound_processes_are_preempted,
    pass process::affinity_pins_a_process,
    pass process::processes_run_on_all_cpus_at_once,
    pass process::ctrl_c_kills_the_foreground_program,
    pass process::shell_runs_commands,
    pass process::system_right_guards_global_settings,
    pass process::fuzzing_neither_crashes_nor_leaks,
    // Devices (drivers are servers)
    pass device::devices_resist_a_hostile_driver,
    // Tender resources and the pool
    pass resource::resources_exist_independently,
    pass resource::stale_forged_and_wrong_kind_ids_are_rejected,
    pass resource::mediator_checks_before_any_change,
    pass resource::every_kind_refuses_bad_ids,
    pass resource::operations_are_counted_under_their_own_codes,
    pass resource::trace_slot_has_one_writer,
    pass resource::process_built_step_by_step_from_user_mode,
    pass resource::pool_reuse_gives_fresh_processes,
    pass resource::pool_reuse_serves_demand_loading,
    pass resource::pool_given_back_is_bounded,
    pass resource::pool_settings_are_checked,
    pass resource::pool_add_fills_to_the_setting,
    pass resource::pool_reduce_follows_the_papers_rules,
    pass resource::pooled_text_is_the_program_text,
    pass resource::nothing_leaks_after_a_workload_and_a_flush,
    pass text::pool_text_frames_are_shared_by_every_process_of_a_program,
    pass text::pool_text_of_a_new_plate_version_is_new,
    pass text::pool_shared_text_is_never_written,
    pass text::pool_text_is_paid_by_its_plates_maker,
    pass text::pool_text_set_fills_each_page_once,
    // Container IPC (seed 004)
    pass container::every_mode_carries_data_through_a_box,
    pass container::move_takes_the_mapping_away,
    pass container::push_steal_and_exchange,
    pass container::box_rights_are_checked,
    pass container::empty_containers_follow_the_bounds,
    pass container::concurrent_swap_traffic_on_several_cpus,
    pass container::ica_moves_without_copying,
    pass container::ica_move_by_the_system_call_path,
    pass container::container_records_are_held,
    pass container::ica_moves_race_with_exits,
    pass container::container_ipc_leaks_nothing,
    pass container::containers_of_ended_processes_are_released,
    pass container::container_fifo_keeps_order,
    pass blocks::big_containers_are_exchanged_by_blocks,
    // Servers and rendezvous (seed 003, seed 002)
    pass ipc::rendezvous_servers_and_requests,
    pass ipc::request_and_result_rings,
    pass ipc::stress_of_100000_calls_leaks_nothing,
    pass ipc::every_communication_waits_the_set_delay,
    pass ipc::batch_requests_and_distribution_server,
    pass ipc::a_return_names_a_call_its_supervisor_holds,
    smp ipc::servers_placed_by_boot_file_and_command,
    // Hardening (issue 16)
    pass harden::the_highest_user_page_is_unusable,
    pass harden::resources_are_described_to_their_owners,
    pass harden::the_personality_serves_its_supervisors_only,
    pass harden::user_built_processes_are_never_pooled,
    pass harden::a_process_cannot_plant_a_stale_program,
    pass harden::nothing_is_given_to_an_ending_process,
    pass harden::a_copy_never_reaches_a_reused_space,
    pass harden::a_failed_receive_loses_nothing,
    pass harden::a_granted_box_scrubs,
    pass harden::a_scrubbing_box_zeroes_in_idle_time,
    pass harden::kernel_memory_is_charged,
    pass harden::requests_are_bounded,
    pass harden::requests_are_charged_to_their_sender,
    pass harden::request_charges_go_back_per_call,
    pass harden::exhausted_memory_gives_errors_not_panics,
    pass harden::a_process_holds_few_names,
    pass harden::plates_are_charged_to_their_maker,
    pass harden::a_replaced_plate_is_freed,
    pass harden::regions_made_for_a_process_are_charged_to_it,
    pass harden::plate_lookup_follows_new_versions,
    pass harden::the_pool_gives_memory_back_first,
    pass harden::the_pool_gives_memory_back_to_faults,
    pass harden::the_pool_gives_memory_back_to_containers,
    pass harden::spawning_until_failure_then_killing_all,
    pass harden::a_new_pool_key_needs_room_in_the_heap,
    pass harden::an_nvm_hold_without_heap_is_refused,
    pass harden::the_heap_grows_into_a_reserve_the_pool_refills,
    pass harden::cached_file_pages_are_charged_and_reclaimed,
    pass harden::fuzzers_killed_mid_call_leave_nothing,
    // Kernel pipes (issue 18)
    pass pipes::kernel_pipes_go_with_their_last_holder,
    pass pipes::file_caches_bind_only_when_granted,
    pass pipes::file_cache_attributes_owner_only,
    pass pipes::file_cache_publisher_named_by_owner_only,
    pass pipes::kernel_pipe_descriptors_are_checked,
    pass pipes::kernel_socket_pairs_are_checked,
    pass pipes::only_a_supervisor_binds_pipes,
    pass pipes::kernel_pipe_buffers_are_limited,
    // The wall clock Linux programs see (issue 18)
    pass wallclock::only_a_supervisor_sets_the_wall_clock,
    // A supervisor's memory calls (issue 18)
    pass linuxmem::caller_protect_is_checked,
    pass linuxmem::shared_parts_are_checked,
    pass linuxmem::file_map_limits_are_checked,
    pass linuxmem::file_pages_take_writes_until_written,
    pass linuxmem::caller_file_written_is_checked,
    pass vmcopy::vm_copy_is_checked,
    pass linuxppid::set_ppid_is_checked,
    pass linuxsigmask::sigmask_is_checked,
    pass routed::supervisor_calls_are_marked_routed,
    pass readmany::read_many_is_checked,
    // fork's copy-on-write (issue 18)
    pass fork::fork_shares_frames_until_written,
    pass fork::fork_refuses_what_it_cannot_share,
    pass fork::fork_fault_without_memory_is_an_error,
    pass largealloc::large_alloc_lists_give_their_frames_back,
    pass largealloc::large_alloc_failures_are_clean,
    pass largealloc::large_alloc_forks_of_1gib_regions_leave_no_trace,
    pass fork::fork_survives_a_refresh,
    pass fork::refresh_refills_every_written_page,
    pass fork::regions_hand_pages_over,
    pass fork::fork_of_a_grown_stack_and_its_limits,
    pass fork::fork_copies_are_kept_for_the_next_fork,
    // vfork's space lent to the child (issue 18)
    pass vfork::vfork_lends_a_space_only_as_asked,
    pass vfork::vfork_space_goes_with_its_last_holder,
    pass regions::region_lookup_survives_detach_and_reuse,
    pass regions::space_end_frees_every_table,
    pass regions::paged_regions_are_counted_in_and_out,
];
