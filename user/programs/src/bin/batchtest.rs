//! Checks AnT's batch requests: `ncallsync` to two echo servers on
//! different CPUs, batches of 1 to 64, every reply matching its request in
//! order and content; a member aimed at a missing server fails alone while
//! the others get their results; the same through the distribution server,
//! whose failing members (no such target or entry, a message too short to
//! route) each get their own error; the distribution server's system calls
//! (`acc_many`, `forward_many`) driven directly, bad arguments included.
//! Exits 0 if all held.
#![no_std]
#![no_main]
use tessera_api::{distributor, echo};
use tessera_rt::abi::{ACC_NOWAIT, AccInfo, BatchEntry, Error, ForwardEntry, MAX_BATCH, ReplyEntry, Sys};
use tessera_rt::{println, sys};

const N: usize = 64;

fn main(args: &[&str]) -> i32 {
    if args.get(1) == Some(&"hold") {
        return hold();
    }
    // `batchtest [rounds]`: the batches of every size, direct and through
    // the distributor, `rounds` times (a leak per batch then shows).
    let rounds = args.get(1).and_then(|a| a.parse::<u32>().ok()).unwrap_or(1);
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let pids = [
        sys::spawn_on("echo", &["e1"], 1 % cpus).expect("spawn"),
        sys::spawn_on("echo", &["e2"], 2 % cpus).expect("spawn"),
        sys::spawn_on("distributor", &[], 0).expect("spawn"),
    ];
    let servers = [sys::wait_for_name("e1"), sys::wait_for_name("e2")];
    let dist = sys::wait_for_name(distributor::NAME);
    let mut failures = 0;
    let mut msgs = [[0u8; 16]; N];
    let mut dmsgs = [[0u8; 32]; N];
    let mut replies = [[0u8; 16]; N];
    for (i, m) in msgs.iter_mut().enumerate() {
        m[..8].copy_from_slice(&(i as u64 * 0x0101_0101 + 7).to_le_bytes());
    }
    for (_, via_distributor) in (0..rounds).flat_map(|r| [(r, false), (r, true)]) {
        for n in [1usize, 2, 7, 16, 64] {
            let mut list = [BatchEntry::default(); N];
            for (i, e) in list.iter_mut().enumerate().take(n) {
                let server = servers[i % 2];
                let (target, msg, len) = if via_distributor {
                    let len = distributor::message(&mut dmsgs[i], server, echo::ECHO, &msgs[i]);
                    (dist, dmsgs[i].as_ptr(), len)
                } else {
                    (server, msgs[i].as_ptr(), 16)
                };
                *e = BatchEntry {
                    server: target,
                    entry: if via_distributor {
                        distributor::DISTRIBUTE
                    } else {
                        echo::ECHO
                    },
                    msg: msg as u64,
                    msg_len: len as u64,
                    reply: replies[i].as_mut_ptr() as u64,
                    reply_cap: 16,
                    status: 0,
                };
            }
            replies = [[0u8; 16]; N];
            let r = sys::ncallsync(&mut list[..n]);
            let ok = r == Ok(0) && (0..n).all(|i| list[i].status == 16 && replies[i] == msgs[i]);
            if !ok {
                println!("batchtest: batch of {n} (distributor: {via_distributor}) gave {r:?}");
                failures += 1;
            }
        }
    }
    // One member to a missing server: it alone fails.
    let mut list = [BatchEntry::default(); 3];
    for (i, e) in list.iter_mut().enumerate() {
        *e = BatchEntry {
            server: if i == 1 { 999_999 } else { servers[0] },
            entry: echo::ECHO,
            msg: msgs[i].as_ptr() as u64,
            msg_len: 16,
            reply: replies[i].as_mut_ptr() as u64,
            reply_cap: 16,
            status: 0,
        };
    }
    let r = sys::ncallsync(&mut list);
    if r != Err(Error::NotFound)
        || Error::decode(list[1].status) != Err(Error::NotFound)
        || list[0].status != 16
        || list[2].status != 16
    {
        println!("batchtest: a failing member: {r:?} {:?}", list.map(|e| e.status as i64));
        failures += 1;
    }
    failures += one_server(servers[0], &msgs);
    failures += one_member(servers[0], &msgs[0]);
    failures += distributor_members(dist, servers[1], &msgs[0]);
    // Bad batches are refused whole: empty, too long, a list the caller
    // cannot read (the kernel's half; an unmapped page).
    let mut too_long = [BatchEntry::default(); MAX_BATCH as usize + 1];
    // SAFETY: the kernel must refuse these lists without touching them.
    let (kernel_list, unmapped_list) = unsafe {
        (
            sys::syscall(Sys::NCallSync as u64, [0xffff_8000_0000_0000, 2, 0, 0, 0, 0]),
            sys::syscall(Sys::NCallSync as u64, [0x10, 2, 0, 0, 0, 0]),
        )
    };
    if sys::ncallsync(&mut []) != Err(Error::Invalid)
        || sys::ncallsync(&mut too_long) != Err(Error::Invalid)
        || Error::decode(kernel_list) != Err(Error::Fault)
        || Error::decode(unmapped_list) != Err(Error::Fault)
    {
        println!("batchtest: a bad batch was not refused");
        failures += 1;
    }
    failures += server_calls(servers[0]);
    failures += server_replies();
    failures += killed_caller(servers[0]);
    failures += server_dies(servers[0], &msgs, cpus);
    for p in pids {
        let _ = sys::kill(p);
        let _ = sys::wait(p);
    }
    println!("batchtest: {failures} failure(s)");
    i32::from(failures != 0)
}
/// Batches whose members are all for one server (on one CPU the kernel
/// hands such a batch to the waiting server as it hands a call): every
/// reply matches its request in order and content, and a member for an
/// entry the server does not serve fails alone.
fn one_server(echo_pid: u64, msgs: &[[u8; 16]; N]) -> u32 {
    let mut failures = 0;
    let mut replies = [[0u8; 16]; N];
    for n in [1usize, 2, 3, 64] {
        let mut list = [BatchEntry::default(); N];
        for (i, e) in list.iter_mut().enumerate().take(n) {
            *e = BatchEntry {
                server: echo_pid,
                // Member 1 of the batch of 3 asks for an entry echo does not serve.
                entry: if n == 3 && i == 1 { 40 } else { echo::ECHO },
                msg: msgs[i].as_ptr() as u64,
                msg_len: 16,
                reply: replies[i].as_mut_ptr() as u64,
                reply_cap: 16,
                status: 0,
            };
        }
        replies = [[0u8; 16]; N];
        let r = sys::ncallsync(&mut list[..n]);
        let ok = (0..n).all(|i| {
            if n == 3 && i == 1 {
                Error::decode(list[i].status) == Err(Error::NoSys) && replies[i] == [0; 16]
            } else {
                list[i].status == 16 && replies[i] == msgs[i]
            }
        }) && r == if n == 3 { Err(Error::NoSys) } else { Ok(0) };
        if !ok {
            let status: [i64; 4] = core::array::from_fn(|i| list[i].status as i64);
            println!("batchtest: a batch of {n} for one server gave {r:?}, statuses {status:?}");
            failures += 1;
        }
    }
    failures
}

/// Batches of one member, sent as one call by the runtime and by the
/// kernel (a list of one given to the system call itself), succeed and
/// fail as a member of a larger batch does: the member's status and the
/// batch's result carry the reply length or the error, and a failed one
/// writes nothing into the reply buffer.
fn one_member(echo_pid: u64, msg: &[u8; 16]) -> u32 {
    let mut failures = 0;
    let mut reply: [u8; 16];
    // (server, entry, message address, expected status)
    let cases = [
        (echo_pid, echo::ECHO, msg.as_ptr() as u64, Ok(16)),
        (echo_pid, 40, msg.as_ptr() as u64, Err(Error::NoSys)),
        (0xdead, echo::ECHO, msg.as_ptr() as u64, Err(Error::NotFound)),
        (echo_pid, echo::ECHO, 0xffff_8000_0000_0000, Err(Error::Fault)),
    ];
    for by_kernel in [false, true] {
        for (server, entry, at, expected) in cases {
            reply = [0; 16];
            let mut list = [BatchEntry {
                server,
                entry,
                msg: at,
                msg_len: 16,
                reply: reply.as_mut_ptr() as u64,
                reply_cap: 16,
                status: 0,
            }];
            let r = if by_kernel {
                sys::calls::ncallsync(&mut list)
            } else {
                sys::ncallsync(&mut list)
            };
            let replied = match expected {
                Ok(_) => reply == *msg,
                Err(_) => reply == [0; 16],
            };
            if r != expected.map(|_| 0) || Error::decode(list[0].status) != expected || !replied {
                println!(
                    "batchtest: a batch of one to {server:#x}/{entry} (by the kernel: {by_kernel}) gave {r:?}, \
                     status {:#x}",
                    list[0].status
                );
                failures += 1;
            }
        }
    }
    failures
}

/// A batch through the distribution server whose members fail in different
/// ways: each gets its own answer, and the good ones their results. One
/// member is longer than the inline bytes (the distributor reads its
/// routing information from the caller's message) and its target must see
/// the payload only (SUM reads all of it).
fn distributor_members(dist: u64, echo_pid: u64, payload: &[u8; 16]) -> u32 {
    let mut long = [0u8; 116];
    let long_payload: [u8; 100] = core::array::from_fn(|b| (b * 7) as u8);
    let long_sum: u64 = long_payload.iter().map(|&b| b as u64).sum();
    let long_len = distributor::message(&mut long, echo_pid, echo::SUM, &long_payload);
    let mut msgs = [[0u8; 32]; 4];
    let lens = [
        distributor::message(&mut msgs[0], echo_pid, echo::ECHO, payload),
        distributor::message(&mut msgs[1], 999_999, echo::ECHO, payload),
        // An entry the target does not serve.
        distributor::message(&mut msgs[2], echo_pid, 40, payload),
        // Too short to hold a route.
        4,
    ];
    let mut replies = [[0u8; 16]; 5];
    let mut list = [BatchEntry::default(); 5];
    for (i, e) in list.iter_mut().enumerate() {
        let (msg, len) = match i {
            4 => (long.as_ptr(), long_len),
            i => (msgs[i].as_ptr(), lens[i]),
        };
        *e = BatchEntry {
            server: dist,
            entry: distributor::DISTRIBUTE,
            msg: msg as u64,
            msg_len: len as u64,
            reply: replies[i].as_mut_ptr() as u64,
            reply_cap: 16,
            status: 0,
        };
    }
    let r = sys::ncallsync(&mut list);
    let sum = u64::from_le_bytes(replies[4][..8].try_into().unwrap_or([0; 8]));
    let status = list.map(|e| Error::decode(e.status));
    let ok = r.is_err()
        && status[0] == Ok(16)
        && replies[0] == *payload
        && status[1] == Err(Error::NotFound)
        && status[2] == Err(Error::NoSys)
        && status[3] == Err(Error::Invalid)
        && status[4] == Ok(8)
        && sum == long_sum;
    if !ok {
        println!("batchtest: members through the distributor: {r:?} {status:?}, sum {sum} (want {long_sum})");
        return 1;
    }
    0
}

/// The distribution server's system calls driven directly by a process that
/// is its own server: requests it sends itself (without waiting) queue at
/// its port; `acc_many` takes them all, in order, in one call;
/// `forward_many` passes them on to an echo server with their routing
/// information popped, failing the ones that cannot go, and the replies
/// come back as the requests' results. Bad arguments change nothing.
fn server_calls(echo_pid: u64) -> u32 {
    const M: usize = 5;
    let mut failures = 0;
    let me = sys::getpid();
    let mut msgs = [[0u8; 24]; M];
    let mut replies = [[0u8; 16]; M];
    let mut ids = [0u64; M];
    let payload = |i: usize| (i as u64 * 0x0303 + 1).to_le_bytes();
    for i in 0..M {
        // Member 3 names a server that does not exist.
        let target = if i == 3 { 999_999 } else { echo_pid };
        distributor::message(&mut msgs[i], target, echo::ECHO, &payload(i));
        // SAFETY: the reply buffers outlive the requests: every one is
        // fetched below.
        ids[i] = unsafe { sys::request(me, 0, &msgs[i], replies[i].as_mut_ptr(), 16) }.unwrap_or(0);
    }
    let mut infos = [AccInfo::default(); 8];
    let got = sys::acc_many(ACC_NOWAIT | 1, &mut infos);
    let in_order = (0..M).all(|i| infos[i].rid == ids[i] && infos[i].len == 24 && infos[i].inline[..8] == payload(i));
    if got != Ok(M) || !in_order {
        println!("batchtest: acc_many took {got:?}, in order and content: {in_order}");
        failures += 1;
    }
    if sys::acc_many(ACC_NOWAIT | 1, &mut infos) != Err(Error::Busy) {
        println!("batchtest: acc_many with nothing waiting did not say Busy");
        failures += 1;
    }
    let mut list = [ForwardEntry::default(); M + 1];
    for (i, f) in list.iter_mut().enumerate().take(M) {
        *f = ForwardEntry {
            rid: infos[i].rid,
            server: if i == 3 { 999_999 } else { echo_pid },
            entry: echo::ECHO,
            // Member 4 would pop more than its message holds.
            trim: if i == 4 { 100 } else { distributor::ROUTE as u64 },
            status: 0,
        };
    }
    // Member 0 again: passed on already, no longer held.
    list[M] = list[0];
    let passed = sys::forward_many(&mut list);
    let status = list.map(|f| Error::decode(f.status));
    let want = [
        Ok(0),
        Ok(0),
        Ok(0),
        Err(Error::NotFound),
        Err(Error::Invalid),
        Err(Error::NotFound),
    ];
    if passed != Ok(3) || status != want {
        println!("batchtest: forward_many passed {passed:?}, statuses {status:?}");
        failures += 1;
    }
    // The results: the echo server saw each message without its route.
    for _ in 0..M {
        let Ok((id, status)) = sys::fetch(1_000_000_000) else {
            println!("batchtest: a forwarded request never came back");
            failures += 1;
            break;
        };
        let Some(i) = ids.iter().position(|&x| x == id) else {
            failures += 1;
            continue;
        };
        let want = match i {
            3 => Err(Error::NotFound),
            4 => Err(Error::Invalid),
            _ => Ok(8),
        };
        if Error::decode(status) != want || (want == Ok(8) && replies[i][..8] != payload(i)) {
            println!("batchtest: forwarded request {i}: {:?}", Error::decode(status));
            failures += 1;
        }
    }
    // Bad arguments: no entries, too many, memory that is not the caller's.
    let mut too_many = [AccInfo::default(); MAX_BATCH as usize + 1];
    let mut too_many_fwd = [ForwardEntry::default(); MAX_BATCH as usize + 1];
    let kernel = 0xffff_8000_0000_0000u64;
    // SAFETY: the kernel must refuse these pointers without touching them.
    let (acc_bad, fwd_bad, fwd_unmapped) = unsafe {
        (
            sys::syscall(Sys::AccMany as u64, [ACC_NOWAIT | 1, kernel, 1, 0, 0, 0]),
            sys::syscall(Sys::ForwardMany as u64, [kernel, 1, 0, 0, 0, 0]),
            sys::syscall(Sys::ForwardMany as u64, [0x10, 1, 0, 0, 0, 0]),
        )
    };
    let mut one = [ForwardEntry {
        rid: 424_242,
        server: echo_pid,
        entry: echo::ECHO,
        trim: 0,
        status: 0,
    }];
    let bad = [
        sys::acc_many(ACC_NOWAIT | 1, &mut []) == Err(Error::Invalid),
        sys::acc_many(ACC_NOWAIT | 1, &mut too_many) == Err(Error::Invalid),
        Error::decode(acc_bad) == Err(Error::Fault),
        sys::forward_many(&mut []) == Err(Error::Invalid),
        sys::forward_many(&mut too_many_fwd) == Err(Error::Invalid),
        Error::decode(fwd_bad) == Err(Error::Fault),
        Error::decode(fwd_unmapped) == Err(Error::Fault),
        sys::forward_many(&mut one) == Ok(0) && Error::decode(one[0].status) == Err(Error::NotFound),
    ];
    if bad.contains(&false) {
        println!("batchtest: bad arguments to acc_many/forward_many: {bad:?}");
        failures += 1;
    }
    failures
}

/// `endr_many_acc` driven by a process that is its own server: requests it
/// sends itself are taken in one call and answered in one; a call named
/// twice, one never held and a reply not in the server's memory are each
/// refused in their own `status` and change nothing (the refused call is
/// still held, and answered later); bad lists change nothing either.
fn server_replies() -> u32 {
    const M: usize = 3;
    let mut failures = 0;
    let me = sys::getpid();
    let mut msgs = [[0u8; 8]; M];
    let mut replies = [[0u8; 8]; M];
    let mut ids = [0u64; M];
    for i in 0..M {
        msgs[i] = (i as u64 * 0x0505 + 3).to_le_bytes();
        // SAFETY: the reply buffers outlive the requests: every one is
        // fetched below.
        ids[i] = unsafe { sys::request(me, 0, &msgs[i], replies[i].as_mut_ptr(), 8) }.unwrap_or(0);
    }
    let mut infos = [AccInfo::default(); 4];
    let got = sys::endr_many_acc(&mut [], ACC_NOWAIT | 1, &mut infos);
    if got != Ok(M) || (0..M).any(|i| infos[i].rid != ids[i]) {
        println!("batchtest: endr_many_acc took {got:?}");
        failures += 1;
    }
    let answers = [[0x11u8; 8], [0x22; 8], [0x33; 8]];
    let entry = |rid: u64, reply: u64| ReplyEntry {
        rid,
        reply,
        reply_len: 8,
        status: 0,
    };
    let kernel = 0xffff_8000_0000_0000u64;
    let mut list = [
        entry(ids[0], answers[0].as_ptr() as u64),
        entry(ids[1], answers[1].as_ptr() as u64),
        // Answered just above; never held; a reply in kernel memory.
        entry(ids[0], answers[2].as_ptr() as u64),
        entry(424_242, answers[2].as_ptr() as u64),
        entry(ids[2], kernel),
    ];
    let r = sys::endr_many_acc(&mut list, ACC_NOWAIT | 1, &mut infos);
    let status = list.map(|e| Error::decode(e.status));
    let want = [
        Ok(0),
        Ok(0),
        Err(Error::NotFound),
        Err(Error::NotFound),
        Err(Error::Fault),
    ];
    if r != Err(Error::Busy) || status != want {
        println!("batchtest: endr_many_acc gave {r:?}, statuses {status:?}");
        failures += 1;
    }
    // Bad arguments, naming the call still held: refused before it is ended.
    let mut last = [entry(ids[2], answers[2].as_ptr() as u64)];
    let mut too_many = [AccInfo::default(); MAX_BATCH as usize + 1];
    let mut too_many_replies = [entry(ids[2], answers[2].as_ptr() as u64); MAX_BATCH as usize + 1];
    // SAFETY: the kernel must refuse these pointers without touching them.
    let (bad_out, bad_list) = unsafe {
        (
            sys::syscall(
                Sys::EndrManyAcc as u64,
                [last.as_ptr() as u64, 1, ACC_NOWAIT | 1, kernel, 1, 0],
            ),
            sys::syscall(
                Sys::EndrManyAcc as u64,
                [kernel, 1, ACC_NOWAIT | 1, infos.as_mut_ptr() as u64, 1, 0],
            ),
        )
    };
    let bad = [
        sys::endr_many_acc(&mut last, ACC_NOWAIT | 1, &mut []) == Err(Error::Invalid),
        sys::endr_many_acc(&mut last, ACC_NOWAIT | 1, &mut too_many) == Err(Error::Invalid),
        sys::endr_many_acc(&mut too_many_replies, ACC_NOWAIT | 1, &mut infos) == Err(Error::Invalid),
        Error::decode(bad_out) == Err(Error::Fault),
        Error::decode(bad_list) == Err(Error::Fault),
    ];
    if bad.contains(&false) {
        println!("batchtest: bad arguments to endr_many_acc: {bad:?}");
        failures += 1;
    }
    // The refused call is still held: answered now, alone.
    let r = sys::endr_many_acc(&mut last, ACC_NOWAIT | 1, &mut infos);
    if r != Err(Error::Busy) || last[0].status != 0 {
        println!(
            "batchtest: endr_many_acc of the held call gave {r:?}, status {}",
            last[0].status
        );
        failures += 1;
    }
    for _ in 0..M {
        let Ok((id, status)) = sys::fetch(1_000_000_000) else {
            println!("batchtest: an answered request never came back");
            failures += 1;
            break;
        };
        let i = ids.iter().position(|&x| x == id);
        if i.is_none_or(|i| status != 8 || replies[i] != answers[i]) {
            println!("batchtest: answered request {i:?}: status {status:#x}");
            failures += 1;
        }
    }
    failures
}

tessera_rt::entry!(main);

/// `batchtest hold`: a batch of slow requests to `e1` and `e2`, for the
/// caller to be killed while it waits (`killed_caller`).
fn hold() -> i32 {
    let servers = [sys::wait_for_name("e1"), sys::wait_for_name("e2")];
    // 200 ms a member, 800 ms a server: the batch must still be out when
    // the killer, woken behind two servers burning their CPUs on a busy
    // host, looks (at 20 ms a member it was once over before it looked).
    let work = 200_000u64.to_le_bytes();
    let mut replies = [[0u8; 16]; 8];
    let mut list = [BatchEntry::default(); 8];
    for (i, (e, r)) in list.iter_mut().zip(replies.iter_mut()).enumerate() {
        *e = BatchEntry {
            server: servers[i % 2],
            entry: echo::WORK,
            msg: work.as_ptr() as u64,
            msg_len: 8,
            reply: r.as_mut_ptr() as u64,
            reply_cap: 16,
            status: 0,
        };
    }
    let _ = sys::ncallsync(&mut list);
    // Not reached: killed while it waits.
    2
}

/// A batch's caller killed while its members are out: the servers finish
/// them for nobody, and serve the next caller as before.
fn killed_caller(e1: u64) -> u32 {
    let Ok(child) = sys::spawn_on("batchtest", &["hold"], tessera_rt::abi::ANY_CPU) else {
        println!("batchtest: cannot start a holding caller");
        return 1;
    };
    let mut blocked = false;
    for _ in 0..2000 {
        if sys::proc_info(child).is_ok_and(|i| i.state == tessera_rt::abi::state::BLOCKED) {
            blocked = true;
            break;
        }
        sys::sleep_ns(100_000);
    }
    let killed = sys::kill(child).is_ok();
    let status = sys::wait(child);
    let mut reply = [0u8; 8];
    let answered = echo::echo(e1, b"after it", &mut reply) == Ok(8) && &reply == b"after it";
    if !(blocked && killed && answered) || status == Ok(2) {
        println!(
            "batchtest: killed caller: blocked {blocked}, killed {killed}, exit {status:?}, answered after {answered}"
        );
        return 1;
    }
    0
}

/// A server that dies in the middle of a batch: the member it answered
/// has its reply, the one it died holding and the one still queued end
/// with NotFound, and the caller is woken once all are back; a batch to
/// the dead server then fails member by member, and the caller's next
/// batch to a live server (`live`) is served. Once with the dying server
/// on the caller's CPU (the batch is handed over as a call is), once on
/// another one.
fn server_dies(live: u64, msgs: &[[u8; 16]; N], cpus: u64) -> u32 {
    let mut failures = 0;
    let mut replies = [[0u8; 16]; 3];
    let _ = sys::set_affinity(0, 0);
    for (name, cpu) in [("d0", 0), ("d1", 1 % cpus)] {
        let Ok(pid) = sys::spawn_on("echo", &[name], cpu) else {
            println!("batchtest: cannot start {name}");
            failures += 1;
            continue;
        };
        let server = sys::wait_for_name(name);
        let mut list = [BatchEntry::default(); 3];
        let fill = |list: &mut [BatchEntry; 3], replies: &mut [[u8; 16]; 3], to: u64| {
            *replies = [[0; 16]; 3];
            for (i, (e, r)) in list.iter_mut().zip(replies.iter_mut()).enumerate() {
                *e = BatchEntry {
                    server: to,
                    entry: if i == 1 { echo::CRASH } else { echo::ECHO },
                    msg: msgs[i].as_ptr() as u64,
                    msg_len: 16,
                    reply: r.as_mut_ptr() as u64,
                    reply_cap: 16,
                    status: 0,
                };
            }
        };
        fill(&mut list, &mut replies, server);
        let r = sys::ncallsync(&mut list);
        let status = list.map(|e| Error::decode(e.status));
        let died = r == Err(Error::NotFound)
            && status == [Ok(16), Err(Error::NotFound), Err(Error::NotFound)]
            && replies[0] == msgs[0]
            && replies[1..] == [[0; 16]; 2];
        let _ = sys::wait(pid);
        fill(&mut list, &mut replies, server);
        let r_dead = sys::ncallsync(&mut list);
        let dead =
            r_dead == Err(Error::NotFound) && list.iter().all(|e| Error::decode(e.status) == Err(Error::NotFound));
        fill(&mut list, &mut replies, live);
        list[1].entry = echo::ECHO;
        let r_live = sys::ncallsync(&mut list);
        let served = r_live == Ok(0) && (0..3).all(|i| list[i].status == 16 && replies[i] == msgs[i]);
        if !(died && dead && served) {
            println!(
                "batchtest: server {name} dying mid-batch: {r:?} {status:?}; then dead {r_dead:?}, live {r_live:?}"
            );
            failures += 1;
        }
    }
    let _ = sys::set_affinity(0, tessera_rt::abi::ANY_CPU);
    failures
}
