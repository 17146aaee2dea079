//! Checks AnT's request and result rings from user mode, against echo and
//! relay servers it starts: callsync and ncallsync in the control-block
//! format (contents, order, tags, the batch identifier, the path a request
//! took), requests sent without waiting and their results taken from the
//! ring, multi-stage requests whose flag decides direct return, members
//! that fail alone, a full ring, and that the rings cannot be taken away.
//! Exits 0 if everything held.
#![no_std]
#![no_main]
use tessera_api::echo;
use tessera_rt::abi::{CONTROL_DIRECT_RETURN, Control, Error, RING_SLOTS};
use tessera_rt::ring::Ring;
use tessera_rt::{println, sys};

fn check(ok: bool, what: &str, failures: &mut u32) {
    if !ok {
        println!("ringtest: FAILED {what}");
        *failures += 1;
    }
}

fn request(server: u64, msg: &[u8], reply: &mut [u8], tag: u64) -> Control {
    Control {
        server,
        entry: echo::ECHO,
        msg: msg.as_ptr() as u64,
        msg_len: msg.len() as u64,
        reply: reply.as_mut_ptr() as u64,
        reply_cap: reply.len() as u64,
        tag,
        ..Control::default()
    }
}

fn main(_args: &[&str]) -> i32 {
    let mut failures = 0;
    let f = &mut failures;
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let a = sys::spawn_on("echo", &["ra"], 0).expect("spawn");
    let b = sys::spawn_on("echo", &["rb"], (cpus - 1).min(1)).expect("spawn");
    let (ea, eb) = (sys::wait_for_name("ra"), sys::wait_for_name("rb"));

    let Ok(mut ring) = Ring::open() else {
        println!("ringtest: FAILED ring_setup");
        return 1;
    };
    let again = Ring::open();
    check(again.is_ok(), "a second ring_setup answers too", f);
    // The rings are the kernel's: the process cannot unmap them.
    let at = again.as_ref().map_or(0, Ring::address);
    check(
        at != 0 && sys::unmap(at, 4096).is_err(),
        "the rings cannot be unmapped",
        f,
    );

    // callsync: one request, its result in the same format.
    let msg = [0x5au8; 64];
    let mut reply = [0u8; 64];
    match ring.call(&request(ea, &msg, &mut reply, 77)) {
        Ok(r) => {
            check(r.result() == Ok(64), "callsync status is the reply length", f);
            check(reply == msg, "callsync reply content", f);
            check(r.tag == 77 && r.batch == 1 && r.id != 0, "callsync tag, batch 1, id", f);
            check(
                r.server == ea && r.hops == 1 && r.path[0] == ea,
                "callsync path: one server",
                f,
            );
        }
        Err(e) => fail("callsync", e, f),
    }

    // ncallsync: ten members over two servers, results in order.
    let mut msgs = [[0u8; 16]; 10];
    let mut replies = [[0u8; 16]; 10];
    let mut reqs = [Control::default(); 10];
    for (i, m) in msgs.iter_mut().enumerate() {
        m[..8].copy_from_slice(&(i as u64 * 1000 + 7).to_le_bytes());
    }
    for (i, (r, reply)) in reqs.iter_mut().zip(replies.iter_mut()).enumerate() {
        let server = if i % 2 == 0 { ea } else { eb };
        *r = request(server, &msgs[i], reply, 100 + i as u64);
    }
    let mut out = [Control::default(); 10];
    check(ring.ncallsync(&reqs, &mut out).is_ok(), "ncallsync of 10", f);
    for i in 0..10 {
        let server = if i % 2 == 0 { ea } else { eb };
        check(
            out[i].tag == 100 + i as u64 && out[i].batch == 10 && out[i].server == server,
            "ncallsync results in order, batch identifier 10",
            f,
        );
        check(
            out[i].result() == Ok(16) && replies[i] == msgs[i],
            "ncallsync member content",
            f,
        );
    }

    // A batch with failing members: an unknown server and a buffer in the
    // kernel's half fail alone; the others are answered.
    let mut r3 = [[0u8; 16]; 3];
    let [r3a, r3b, r3c] = &mut r3;
    let bad = [
        request(ea, &msgs[0], r3a, 1),
        request(999_999, &msgs[1], r3b, 2),
        request(eb, &msgs[2], r3c, 3),
    ];
    let mut kernel_half = request(ea, &msgs[3], &mut replies[3], 4);
    kernel_half.reply = 0xffff_8000_0000_0000;
    let mut out4 = [Control::default(); 4];
    let mut batch4 = [Control::default(); 4];
    batch4[..3].copy_from_slice(&bad);
    batch4[3] = kernel_half;
    check(
        ring.ncallsync(&batch4, &mut out4).is_ok(),
        "a batch with failing members is sent",
        f,
    );
    check(
        out4[0].result() == Ok(16) && out4[2].result() == Ok(16),
        "good members answered",
        f,
    );
    check(
        out4[1].result() == Err(Error::NotFound),
        "unknown server fails alone",
        f,
    );
    check(
        out4[3].result() == Err(Error::Fault),
        "kernel-half buffer fails alone",
        f,
    );
    check(r3[0] == msgs[0] && r3[2] == msgs[2], "good members' replies", f);

    // Without waiting: twenty requests, results taken from the ring.
    let mut nb = [[0u8; 16]; 20];
    for (i, r) in nb.iter_mut().enumerate() {
        let c = request(if i % 3 == 0 { eb } else { ea }, &msgs[i % 10], r, 500 + i as u64);
        check(ring.push(&c).is_ok(), "push", f);
    }
    check(ring.submit(20) == Ok(20), "submit 20", f);
    let mut seen = 0u32;
    for _ in 0..20 {
        match ring.next_result() {
            Ok(r) if (500..520).contains(&r.tag) && r.result() == Ok(16) && r.batch == 1 => {
                seen |= 1 << (r.tag - 500);
            }
            Ok(r) => fail("non-blocking result", r.result().err().unwrap_or(Error::Invalid), f),
            Err(e) => fail("non-blocking result", e, f),
        }
    }
    check(seen == (1 << 20) - 1, "every non-blocking result came back once", f);
    check(
        nb.iter().enumerate().all(|(i, r)| *r == msgs[i % 10]),
        "non-blocking replies",
        f,
    );
    check(ring.take().is_none(), "nothing more in the result ring", f);
    check(
        ring.wait(1_000_000) == Err(Error::Busy),
        "ring_wait times out on an empty ring",
        f,
    );

    // Submitting more than was pushed, and a full ring.
    check(ring.submit(1) == Err(Error::Invalid), "submit with nothing pushed", f);
    let mut full = [[0u8; 8]; RING_SLOTS as usize + 1];
    let mut pushed = 0;
    for r in full.iter_mut() {
        if ring.push(&request(ea, &msgs[0][..8], r, 9)).is_ok() {
            pushed += 1;
        }
    }
    check(pushed == RING_SLOTS, "the request ring holds RING_SLOTS blocks", f);
    check(ring.submit(RING_SLOTS) == Ok(RING_SLOTS), "submit a full ring", f);
    // No room for results until some are taken.
    check(
        ring.push(&request(ea, &msgs[0][..8], &mut reply, 10)).is_ok(),
        "push after submit",
        f,
    );
    check(ring.submit(1) == Err(Error::Busy), "no room for its result: Busy", f);
    let mut back = 0;
    while back < RING_SLOTS {
        if ring.next_result().is_ok() {
            back += 1;
        }
    }
    check(ring.submit(1) == Ok(1), "submit once results were taken", f);
    check(ring.next_result().map(|r| r.tag) == Ok(10), "its result", f);

    // Multi-stage: a relay in `auto` mode forwards when the request says
    // the result may go straight back, and calls on otherwise.
    let relay = sys::spawn_on("relay", &["rr", "ra", "auto"], 0).expect("spawn");
    let rr = sys::wait_for_name("rr");
    let mut req = request(rr, &msg, &mut reply, 42);
    req.entry = tessera_api::relay::ECHO;
    req.flags = CONTROL_DIRECT_RETURN;
    reply.fill(0);
    match ring.call(&req) {
        Ok(r) => {
            check(r.result() == Ok(64) && reply == msg, "direct return: reply", f);
            check(
                r.hops == 2 && r.path[0] == rr && r.path[1] == ea,
                "direct return: one control block through both",
                f,
            );
        }
        Err(e) => fail("direct return", e, f),
    }
    req.flags = 0;
    reply.fill(0);
    match ring.call(&req) {
        Ok(r) => {
            check(r.result() == Ok(64) && reply == msg, "no direct return: reply", f);
            check(
                r.hops == 1 && r.path[0] == rr,
                "no direct return: back through the relay",
                f,
            );
        }
        Err(e) => fail("no direct return", e, f),
    }

    sys::stop(relay);
    sys::stop(a);
    sys::stop(b);
    if failures == 0 {
        println!("ringtest: all checks passed");
    }
    i32::from(failures != 0)
}

fn fail(what: &str, e: Error, failures: &mut u32) {
    println!("ringtest: FAILED {what}: {e:?}");
    *failures += 1;
}

tessera_rt::entry!(main);
