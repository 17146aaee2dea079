//! Processes and the communication between them: the process network of
//! seed 003. A process (`process.rs`) is a node of the network while it
//! lives; what it is composed of (program, space, regions, work area) are
//! Tender's resources, which the resource layer above composes and
//! decomposes. Between processes: a name service (`names.rs`), the
//! process network's rendezvous
//! `call`/`acc`/`endr` with references to the caller's data (seed 003),
//! and AnT-style requests on top of it: non-blocking requests whose results
//! are fetched later, `callsync`, and forwarding with direct return for
//! multi-stage requests (seed 002). Container IPC (seed 004) lives in
//! `resource::container` and `resource::container_box`.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod names;
pub mod process;
pub mod rendezvous;
pub mod rings;
