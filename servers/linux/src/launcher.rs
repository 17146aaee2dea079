//! The launcher: `linux [--noctty] [PROGRAM [ARGS...]]` runs a Linux
//! program (by default `/bin/sh`) as a session of its own on the terminal
//! (`--noctty`: without a controlling terminal, as Linux's init runs its
//! children: the console is then no session's), and ends with its status
//! (Linux's: the exit code, or 128 + the signal).
//!
//! The shared server gives the new process a pid and a supervisor; the
//! launcher hands the supervisor the program, its arguments and its
//! environment, then waits with the shared server for the end.

use crate::proto::{self, ctl, sup};
use alloc::vec::Vec;
use tessera_rt::{println, sys};

/// The environment a launched program starts with.
const ENV: &[&str] = &[
    "PATH=/bin:/usr/bin:/sbin:/usr/sbin",
    "HOME=/",
    "TERM=vt100",
    "SHELL=/bin/sh",
];

/// The launch message (`sup::INIT`, mode 1): words [1, pid], then the
/// path, the arguments and the environment, each string NUL-terminated,
/// with an empty string between the arguments and the environment.
pub fn message(pid: u64, path: &str, argv: &[&str], env: &[&str]) -> Vec<u8> {
    let mut m = proto::bytes(&[1, pid]);
    for s in core::iter::once(path).chain(argv.iter().copied()) {
        m.extend_from_slice(s.as_bytes());
        m.push(0);
    }
    m.push(0);
    for e in env {
        m.extend_from_slice(e.as_bytes());
        m.push(0);
    }
    m
}

pub fn main(args: &[&str]) -> i32 {
    let no_ctty = args.get(1) == Some(&"--noctty");
    let args = if no_ctty { &args[1..] } else { args };
    let (path, argv): (&str, Vec<&str>) = match args.get(1..) {
        Some([p, rest @ ..]) => (p, core::iter::once(*p).chain(rest.iter().copied()).collect()),
        _ => ("/bin/sh", alloc::vec!["sh"]),
    };
    let server = sys::wait_for_name(proto::NAME);
    if server == 0 {
        println!(
            "linux: the Linux personality is not running (no server '{}')",
            proto::NAME
        );
        return 127;
    }
    let mut reply = [0u8; 16];
    let started = sys::call(
        server,
        proto::shared::CTL,
        &proto::bytes(&[ctl::START, no_ctty as u64]),
        &mut reply,
    );
    let w = proto::words(&reply);
    if started != Ok(16) {
        println!("linux: cannot start {path}: {started:?} ({})", w[0] as i64);
        return 127;
    }
    let (pid, supervisor) = (w[0], w[1]);
    let msg = message(pid, path, &argv, ENV);
    let mut r = [0u8; 8];
    let ran = sys::call(supervisor, sup::INIT, &msg, &mut r);
    let code = i64::from_le_bytes(r);
    if ran.is_err() || code < 0 {
        println!("linux: {path}: {} ({ran:?}, {code})", crate::sup::describe_errno(-code));
        // The process never ran: collect its status all the same.
    }
    let mut st = [0u8; 8];
    let _ = sys::call(server, proto::shared::CTL, &proto::bytes(&[ctl::WAIT, pid]), &mut st);
    let status = u64::from_le_bytes(st) as u32;
    if status & 0x7f == 0 {
        ((status >> 8) & 0xff) as i32
    } else {
        128 + (status & 0x7f) as i32
    }
}
