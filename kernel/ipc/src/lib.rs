//! Processes and the communication between them: the process network of
//! seed 003. A process (`process.rs`) is a node of the network while it
//! lives; what it is composed of (program, space, regions, work area) are
//! Tender's resources, which the resource layer above composes and
//! decomposes. Between processes: a name service (`names.rs`); the
//! process network's rendezvous `call`/`acc`/`endr` with references to the
//! caller's data (seed 003), made of call objects (`call.rs`) that travel
//! between ports (`port.rs`), by the general path (`rendezvous.rs`) or the
//! fast path of the common round trip (`fastpath.rs`); and AnT's requests
//! on top of it (seed 002): non-blocking requests whose results are
//! fetched later and `callsync` (`request.rs`), batch requests and the
//! distribution server's primitives (`batch.rs`), the request and result
//! rings (`rings.rs`), and forwarding with direct return for multi-stage
//! requests. What seed 003 measured of its network, and its knobs, is
//! `procnet.rs`. Container IPC (seed 004) lives in `resource::container` and
//! `resource::container_box`.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod batch;
pub mod call;
pub mod fastpath;
pub mod futex;
pub mod names;
pub mod pager;
pub mod port;
pub mod process;
pub mod procnet;
pub mod rendezvous;
pub mod request;
pub mod rings;
pub mod supervise;
pub mod vmcopy;
