//! The Linux personality (seed 003's process network serving UNIX calls):
//! one program in three roles.
//!
//! - `linux --server`: the shared server (`shared/`), started at boot by
//!   init (`etc/servers.conf`): processes, pipes, the terminal.
//! - `linux --supervisor`: a supervisor (`sup/`, seed 003's 監督プロセス),
//!   one per Linux process, started and pooled by the shared server.
//! - `linux [PROGRAM [ARGS...]]`: the launcher (`launcher.rs`): runs a Linux
//!   program (default `/bin/sh`) on the terminal and waits for it, from
//!   the native shell or init.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod launcher;
mod shared;
mod sup;

/// The personality's own protocol, declared with the other servers'
/// interfaces (a native client, such as a test, speaks it too).
use tessera_api::linux as proto;

/// Whether the personality's programs are loaded whole at exec (Tender's
/// policy) instead of page by page at faults (Linux's, the default):
/// `linux --server eager`, which its supervisors inherit.
pub static EAGER: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

fn main(args: &[&str]) -> i32 {
    if args.get(2) == Some(&"eager") {
        EAGER.store(true, core::sync::atomic::Ordering::Relaxed);
    }
    match args.get(1).copied() {
        Some("--server") => shared::main(),
        Some("--supervisor") => sup::main(),
        _ => launcher::main(args),
    }
}

tessera_rt::entry!(main);
