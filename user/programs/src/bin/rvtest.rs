//! Checks the rendezvous and requests from user mode, against the echo and
//! relay servers it starts: contents, references, errors, a dead server,
//! a server that misbehaves, non-blocking requests, multi-stage requests.
//! `rvtest stress <calls>` instead runs four clients on different CPUs.
//! Exits 0 if everything held.
#![no_std]
#![no_main]
use tessera_api::echo;
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::{println, sys};

fn check(ok: bool, what: &str, failures: &mut u32) {
    if !ok {
        println!("rvtest: FAILED {what}");
        *failures += 1;
    }
}

fn stress(calls: u64) -> i32 {
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let server = sys::spawn_on("echo", &[], 0).expect("spawn");
    if sys::wait_for_name(echo::NAME) == 0 {
        return 1;
    }
    let mut buf = [0u8; 24];
    let n = sys::fmt_u64(calls, &mut buf);
    let mut pids = [0u64; 4];
    for (i, p) in pids.iter_mut().enumerate() {
        *p = sys::spawn_on("rvtest", &["client", n], i as u64 % cpus).expect("spawn");
    }
    let bad = pids.iter().filter(|&&p| sys::wait(p) != Ok(0)).count();
    let _ = sys::kill(server);
    let _ = sys::wait(server);
    i32::from(bad != 0)
}

fn client(calls: u64, name: &str) -> i32 {
    let server = sys::wait_for_name(name);
    if server == 0 {
        println!("rvtest: no server '{name}'");
        return 1;
    }
    let mut msg = [0u8; 64];
    let mut reply = [0u8; 64];
    for i in 0..calls {
        msg[..8].copy_from_slice(&(i ^ sys::getpid()).to_le_bytes());
        match echo::echo(server, &msg, &mut reply) {
            Ok(64) if reply == msg => {}
            other => {
                println!("rvtest: client call {i}: {other:?}");
                return 1;
            }
        }
    }
    0
}

/// A server that tries to reach past what its callers gave it; replies
/// with the number of those attempts that the kernel let through.
fn evil() -> i32 {
    if sys::name_register("evil", 1).is_err() {
        return 1;
    }
    let mut info = AccInfo::default();
    let mut buf = [0u8; 128];
    loop {
        let Ok(rid) = sys::acc(1, &mut info) else { return 1 };
        let mut through = 0u64;
        through += u64::from(sys::rv_read(rid, info.len, &mut buf[..1]).is_ok());
        through += u64::from(sys::rv_read(rid, u64::MAX - 3, &mut buf[..8]).is_ok());
        through += u64::from(sys::rv_write(rid, info.reply_cap, &buf[..1]).is_ok());
        // SAFETY: a kernel address as the reply source: the kernel must refuse it.
        let bad = unsafe { core::slice::from_raw_parts(0xffff_ffff_8010_0000 as *const u8, 8) };
        through += u64::from(sys::rv_write(rid, 0, bad).is_ok());
        let _ = sys::endr(rid, &through.to_le_bytes());
    }
}

fn main(args: &[&str]) -> i32 {
    match args {
        [_, "stress", n] => return stress(n.parse().unwrap_or(1000)),
        [_, "client", n] => return client(n.parse().unwrap_or(1000), echo::NAME),
        [_, "client", n, name] => return client(n.parse().unwrap_or(1000), name),
        [_, "evil"] => return evil(),
        _ => {}
    }
    let mut failures = 0;
    let server_pid = sys::spawn_on("echo", &[], tessera_rt::abi::ANY_CPU).expect("spawn");
    let server = sys::wait_for_name(echo::NAME);
    check(server == server_pid, "name service", &mut failures);

    let msg: [u8; 64] = core::array::from_fn(|i| i as u8 * 3);
    let mut reply = [0u8; 64];
    check(
        echo::echo(server, &msg, &mut reply) == Ok(64) && reply == msg,
        "echo 64 bytes",
        &mut failures,
    );
    check(
        echo::echo(server, &[], &mut reply) == Ok(0),
        "echo 0 bytes",
        &mut failures,
    );

    let big: [u8; 10000] = core::array::from_fn(|i| (i * 7) as u8);
    let want: u64 = big.iter().map(|&b| b as u64).sum();
    check(
        echo::sum(server, &big) == Ok(want),
        "10000 bytes read by reference",
        &mut failures,
    );

    // A reply written in pieces and ended with its total, copied from the
    // server's memory straight into this one's (no buffer between).
    let mut pieces = [0u8; 5000];
    check(
        sys::call(server, echo::PIECES, &4500u64.to_le_bytes(), &mut pieces) == Ok(4500)
            && pieces[..4500].iter().enumerate().all(|(i, &b)| b == (i * 3) as u8)
            && pieces[4500..].iter().all(|&b| b == 0),
        "a reply of 4500 bytes in pieces, ended with its total",
        &mut failures,
    );
    check(
        sys::call(server, echo::PIECES, &6000u64.to_le_bytes(), &mut pieces).is_err(),
        "a reply in pieces longer than the buffer fails",
        &mut failures,
    );
    check(
        sys::call(server, echo::PIECES, &0u64.to_le_bytes(), &mut pieces) == Ok(0),
        "an empty reply ended with its total",
        &mut failures,
    );

    check(
        sys::call(999_999, 0, &msg, &mut reply) == Err(Error::NotFound),
        "call to a missing server",
        &mut failures,
    );
    check(
        sys::call(server, 5, &msg, &mut reply) == Err(Error::NoSys),
        "call to an entry the server does not serve",
        &mut failures,
    );
    // SAFETY: a kernel address as the message: the kernel must refuse it.
    let kmsg = unsafe { core::slice::from_raw_parts(0xffff_ffff_8010_0000 as *const u8, 16) };
    check(
        sys::call(server, echo::ECHO, kmsg, &mut reply) == Err(Error::Fault),
        "kernel memory as a message",
        &mut failures,
    );

    // Non-blocking requests, fetched later.
    let mut replies = [[0u8; 8]; 3];
    let mut ids = [0u64; 3];
    for (i, r) in replies.iter_mut().enumerate() {
        // SAFETY: `replies` outlives the fetches below.
        ids[i] = unsafe { sys::request(server, echo::ECHO, &[i as u8 + 1; 8], r.as_mut_ptr(), 8) }.unwrap_or(0);
    }
    let mut fetched = 0;
    for _ in 0..3 {
        if let Ok((id, status)) = sys::fetch(1_000_000_000) {
            fetched += u32::from(ids.contains(&id) && status == 8);
        }
    }
    check(
        fetched == 3 && replies.iter().enumerate().all(|(i, r)| r == &[i as u8 + 1; 8]),
        "requests and fetch",
        &mut failures,
    );

    // Multi-stage: 2 relays in front of echo, forwarding (direct return) and nested.
    let relays = [
        sys::spawn_on("relay", &["f1", "f2", "forward"], tessera_rt::abi::ANY_CPU).expect("spawn"),
        sys::spawn_on("relay", &["f2", "echo", "forward"], tessera_rt::abi::ANY_CPU).expect("spawn"),
        sys::spawn_on("relay", &["n1", "n2", "nested"], tessera_rt::abi::ANY_CPU).expect("spawn"),
        sys::spawn_on("relay", &["n2", "echo", "nested"], tessera_rt::abi::ANY_CPU).expect("spawn"),
    ];
    for name in ["f2", "n2"] {
        sys::wait_for_name(name);
    }
    for (name, label) in [("f1", "multi-stage with direct return"), ("n1", "multi-stage, nested")] {
        let first = sys::wait_for_name(name);
        let mut r = [0u8; 64];
        check(
            sys::call(first, 0, &msg, &mut r) == Ok(64) && r == msg,
            label,
            &mut failures,
        );
    }

    // A misbehaving server gets errors for every overreach.
    let evil = sys::spawn_on("rvtest", &["evil"], tessera_rt::abi::ANY_CPU).expect("spawn");
    let e = sys::wait_for_name("evil");
    let mut out = [0u8; 8];
    check(
        sys::call(e, 0, &msg[..16], &mut out) == Ok(8) && u64::from_le_bytes(out) == 0,
        "a server cannot reach past the call",
        &mut failures,
    );

    // A server that dies holding the call releases the caller with an error.
    check(
        sys::call(server, echo::CRASH, &msg, &mut reply).is_err(),
        "a dead server releases its caller",
        &mut failures,
    );
    let _ = sys::wait(server_pid);
    for p in relays.into_iter().chain([evil]) {
        let _ = sys::kill(p);
        let _ = sys::wait(p);
    }
    println!("rvtest: {failures} failure(s)");
    i32::from(failures != 0)
}

tessera_rt::entry!(main);
