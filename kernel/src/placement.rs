//! Server placement (AnT, seed 002 section 4): which CPU each OS server
//! runs on. The boot file `etc/servers.conf` starts servers pinned to the
//! CPUs it names before the shell starts; at run time the shell's `start`
//! and `place` commands do the same (`set_affinity` on a running server).
//!
//! A line is `<server> [cpu <n>|any] [args...]`; `#` starts a comment.
//! Servers started here are children of the kernel: they belong to the
//! system, and the console's first process may move them.

use abi::{Error, SpawnOptions};
use alloc::vec::Vec;
use ipc::process::KERNEL_PID;

/// One parsed line: the program, its CPU (`abi::ANY_CPU` if none) and its
/// arguments (NUL-separated, as `spawn` takes them).
#[derive(Debug, PartialEq)]
pub struct Placement<'a> {
    pub server: &'a str,
    pub cpu: u64,
    pub args: Vec<u8>,
}

pub fn parse(line: &str) -> Result<Option<Placement<'_>>, Error> {
    let line = line.split('#').next().unwrap_or("");
    let mut words = line.split_ascii_whitespace().peekable();
    let Some(server) = words.next() else {
        return Ok(None);
    };
    let mut cpu = abi::ANY_CPU;
    if words.peek() == Some(&"cpu") {
        words.next();
        cpu = match words.next() {
            Some("any") => abi::ANY_CPU,
            Some(n) => n.parse().map_err(|_| Error::Invalid)?,
            None => return Err(Error::Invalid),
        };
    }
    let mut args = Vec::new();
    for w in words {
        args.extend_from_slice(w.as_bytes());
        args.push(0);
    }
    Ok(Some(Placement { server, cpu, args }))
}

/// Starts the server one line names, on its CPU; returns its pid
/// (`None` for a blank or comment line).
pub fn start(line: &str) -> Result<Option<u64>, Error> {
    let Some(p) = parse(line)? else {
        return Ok(None);
    };
    if p.cpu != abi::ANY_CPU && p.cpu as usize >= kcore::cpu::online_count() {
        return Err(Error::Invalid);
    }
    let options = SpawnOptions {
        cpu: p.cpu,
        ..SpawnOptions::DEFAULT
    };
    resource::proc::spawn::spawn(p.server, &p.args, &options, KERNEL_PID).map(Some)
}

/// Starts every server `etc/servers.conf` lists. A bad line is reported
/// and skipped; the others still start.
pub fn boot() {
    let Some(conf) = kcore::initrd::archive().and_then(|a| platform::cpio::find(a, "etc/servers.conf")) else {
        return;
    };
    for line in core::str::from_utf8(conf).unwrap_or("").lines() {
        match start(line) {
            Ok(Some(pid)) => kcore::println!("servers.conf: started '{}' as pid {pid}", line.trim()),
            Ok(None) => {}
            Err(e) => kcore::println!("servers.conf: '{}': {:?}", line.trim(), e),
        }
    }
}
