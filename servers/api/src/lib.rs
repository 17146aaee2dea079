//! The interfaces of Tessera's servers, each declared once: the name a
//! server registers, its entries, and the client calls, so that neither
//! side marshals by hand.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod block;
pub mod cache;
pub mod errno;
pub mod fs;
pub mod linux;
pub mod net;
pub mod nic;
pub mod peer;
pub mod wire;

pub mod echo {
    //! The echo server: the smallest server, for IPC tests and benchmarks.
    use tessera_rt::abi::Error;
    use tessera_rt::sys;

    pub const NAME: &str = "echo";
    /// Reply with the message itself.
    pub const ECHO: u64 = 0;
    /// Reply with the sum of the message's bytes (8 bytes), read by
    /// reference whatever its length.
    pub const SUM: u64 = 1;
    /// Accept, then die without replying (tests that a dead server
    /// releases its caller).
    pub const CRASH: u64 = 2;
    /// Burn the CPU for the number of microseconds in the message's first
    /// 8 bytes (seed 002 fig. 9's 3 ms server), then reply with the TSC at
    /// the start and at the end of the work (16 bytes).
    pub const WORK: u64 = 3;
    /// Reply with the number of bytes in the message's first 8 bytes, byte
    /// i being `i * 3`, written into the caller's buffer in pieces
    /// (`rv_write`) and ended with their total (`endr_len`).
    pub const PIECES: u64 = 4;
    pub const ENTRIES: u64 = (1 << ECHO) | (1 << SUM) | (1 << CRASH) | (1 << WORK) | (1 << PIECES);

    pub fn find() -> Result<u64, Error> {
        sys::name_lookup(NAME)
    }

    pub fn echo(server: u64, msg: &[u8], reply: &mut [u8]) -> Result<usize, Error> {
        sys::call(server, ECHO, msg, reply)
    }

    pub fn sum(server: u64, msg: &[u8]) -> Result<u64, Error> {
        let mut out = [0u8; 8];
        sys::call(server, SUM, msg, &mut out)?;
        Ok(u64::from_le_bytes(out))
    }
}

pub mod distributor {
    //! The distribution server: a message is the target's message followed
    //! by the target (pid, entry), its routing information; the reply is
    //! the target's reply, which comes straight from the target. The
    //! routing information goes last so that the distributor can pop it as
    //! it passes the call on: the target sees only its own message.
    pub const NAME: &str = "distributor";
    pub const DISTRIBUTE: u64 = 0;
    pub const ENTRIES: u64 = 1 << DISTRIBUTE;
    /// Bytes of routing information at the end of a message.
    pub const ROUTE: usize = 16;

    /// Builds a distributor message in `buf`; returns its length.
    pub fn message(buf: &mut [u8], target: u64, entry: u64, payload: &[u8]) -> usize {
        let n = payload.len();
        buf[..n].copy_from_slice(payload);
        buf[n..n + 8].copy_from_slice(&target.to_le_bytes());
        buf[n + 8..n + ROUTE].copy_from_slice(&entry.to_le_bytes());
        n + ROUTE
    }

    /// The (target pid, target entry) in a message's last `ROUTE` bytes.
    pub fn route(route: &[u8; ROUTE]) -> (u64, u64) {
        let mut pid = [0u8; 8];
        let mut entry = [0u8; 8];
        pid.copy_from_slice(&route[..8]);
        entry.copy_from_slice(&route[8..]);
        (u64::from_le_bytes(pid), u64::from_le_bytes(entry))
    }
}

pub mod relay {
    //! A stage of a multi-stage request: passes each call on to the next
    //! server, either by forwarding it (the next one replies directly to
    //! the original caller) or by calling it and replying itself.
    pub const ECHO: u64 = 0;
    pub const ENTRIES: u64 = 1 << ECHO;
}
