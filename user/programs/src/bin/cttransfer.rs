//! Container IPC between two processes (seed 004, beside Linux's
//! `transfer`): one message of 4 KiB … 2 MiB from this process to a child,
//! plus a 1-byte acknowledgement back, the way Linux's pipe, vmsplice and
//! shared memory + futex are measured. The message goes through a
//! container box in each mode (COPY, SHARE, MOVE, SWAP), or directly: push
//! (COPY, SHARE, MOVE) or exchange. After the container is on its way the
//! sender calls the child (call → acc → endr: the doorbell) and the child's
//! 1-byte reply is the acknowledgement, sent once it holds the message.
//!
//! What each method costs in a steady stream of messages is in its figure:
//! the child deletes a container it was given (COPY, SHARE, MOVE, push),
//! and for MOVE the sender makes a new container for every message (its
//! old one left with the message). Every message carries its number in its
//! first and last word, which the child checks: a transfer that delivered
//! the wrong pages ends the run with an error.
//!
//! `BENCH,transfer,<method>[_cross_cpu],<bytes>,<ns>,ns` per message, and
//! `<method>[_cross_cpu]_syscalls` / `_switches` / `_ipis` (count per
//! message, both processes and the kernel's wake-ups). The child runs on
//! the sender's CPU, and with two CPUs also on the other one
//! (`_cross_cpu`). Usage: cttransfer [short] | cttransfer serve
#![no_std]
#![no_main]
use tessera_rt::abi::{AccInfo, BOX_RECEIVE, BOX_UNSCRUBBED, ContainerMode as M, SpawnOptions};
use tessera_rt::{println, sys};

/// The child's entries: SETUP (a method, a size, the box, the child's own
/// container for exchange), MESSAGE (a message is on its way: for a push,
/// the container's id), DONE (end).
const SETUP: u64 = 1;
const MESSAGE: u64 = 2;
const DONE: u64 = 3;
const ENTRIES: u64 = 1 << SETUP | 1 << MESSAGE | 1 << DONE;

/// How a message travels.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Box(M),
    Push(M),
    Exchange,
}

const WAYS: [(Way, &str); 8] = [
    (Way::Box(M::Copy), "box_copy"),
    (Way::Box(M::Share), "box_share"),
    (Way::Box(M::Move), "box_move"),
    (Way::Box(M::Swap), "box_swap"),
    (Way::Push(M::Copy), "push_copy"),
    (Way::Push(M::Share), "push_share"),
    (Way::Push(M::Move), "push_move"),
    (Way::Exchange, "exchange"),
];

fn code(w: Way) -> u64 {
    WAYS.iter().position(|(x, _)| *x == w).unwrap_or(0) as u64
}

fn words(msg: &[u8]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (i, c) in msg.chunks_exact(8).take(4).enumerate() {
        w[i] = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
    }
    w
}

fn bytes(w: [u64; 4]) -> [u8; 32] {
    let mut b = [0u8; 32];
    for (i, x) in w.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes());
    }
    b
}

/// The first and the last word of a container of `pages` at `addr`.
fn ends(addr: u64, pages: u64) -> (*mut u64, *mut u64) {
    (addr as *mut u64, (addr + pages * 4096 - 8) as *mut u64)
}

/// Marks a message with its number `seq`.
fn stamp(addr: u64, pages: u64, seq: u64) {
    let (first, last) = ends(addr, pages);
    // SAFETY: a container of `pages` pages is attached at `addr`, writable.
    unsafe {
        first.write_volatile(seq);
        last.write_volatile(seq);
    }
}

fn stamped(addr: u64, pages: u64, seq: u64) -> bool {
    let (first, last) = ends(addr, pages);
    // SAFETY: as in `stamp`, in the receiver's space.
    unsafe { first.read_volatile() == seq && last.read_volatile() == seq }
}

/// The child: receives messages as the sender announces them, checks each
/// one's number and acknowledges it with one byte.
fn serve() -> i32 {
    let mut info = AccInfo::default();
    let mut rid = 0;
    let mut ack = [0u8; 8];
    let mut ack_len = 0;
    // The current method, size, box, own container (SWAP, exchange) and
    // where a pushed container goes.
    let (mut way, mut pages, mut bx, mut mine, mut at) = (Way::Exchange, 0, 0, 0, 0);
    let mut seq = 0u64;
    loop {
        rid = match sys::endr_acc(rid, &ack[..ack_len], ENTRIES, &mut info) {
            Ok(r) => r,
            Err(e) => {
                println!("cttransfer: serve: {e:?}");
                return 1;
            }
        };
        let [a, b, c, d] = words(&info.inline[..32]);
        ack_len = 1;
        ack[0] = 1;
        match info.entry {
            SETUP => {
                way = WAYS.get(a as usize).map_or(Way::Exchange, |w| w.0);
                (pages, bx, seq) = (b, c, 0);
                if mine != 0 {
                    let _ = sys::res_delete(mine);
                    mine = 0;
                }
                // A container of its own for SWAP (the sender gives one for
                // exchange); for a push, a place the sender is told of: the
                // container made there to find it goes again at once.
                match way {
                    Way::Box(M::Swap) => mine = sys::container_create(pages).unwrap_or(0),
                    Way::Exchange => {
                        mine = d;
                        at = sys::container_addr(mine).unwrap_or(0);
                    }
                    Way::Push(_) => {
                        let probe = sys::container_create(pages).unwrap_or(0);
                        at = sys::container_addr(probe).unwrap_or(0);
                        let _ = sys::res_delete(probe);
                    }
                    Way::Box(_) => {}
                }
                ack[..8].copy_from_slice(&at.to_le_bytes());
                ack_len = 8;
                if (way == Way::Box(M::Swap) || way == Way::Exchange) && mine == 0 {
                    ack[0] = 0;
                    ack_len = 1;
                }
            }
            MESSAGE => {
                seq += 1;
                if !receive(way, (pages, bx, mine, at), a, seq) {
                    println!("cttransfer: message {seq} did not arrive whole");
                    ack[0] = 0;
                }
            }
            DONE => {
                let _ = sys::endr(rid, &[1]);
                return 0;
            }
            _ => ack[0] = 0,
        }
    }
}

/// Takes message `seq` as `way` brings it, with the method's size, box,
/// own container and place for pushes; `pushed` is the id of a container
/// pushed into this process.
fn receive(way: Way, (pages, bx, mine, at): (u64, u64, u64, u64), pushed: u64, seq: u64) -> bool {
    match way {
        Way::Box(M::Swap) => match sys::container_receive(mine, bx, 0, M::Swap, 0) {
            Ok((_, r)) => stamped(r.addr, pages, seq),
            Err(_) => false,
        },
        Way::Box(mode) => match sys::container_receive(0, bx, 0, mode, 0) {
            Ok((id, r)) => {
                let ok = stamped(r.addr, pages, seq);
                ok & sys::res_delete(id).is_ok()
            }
            Err(_) => false,
        },
        // Where the sender was told to put it (a push elsewhere would end
        // this process with a fault here).
        Way::Push(_) => stamped(at, pages, seq) & sys::res_delete(pushed).is_ok(),
        Way::Exchange => stamped(at, pages, seq),
    }
}

/// Counts of the whole system (both processes), for the per-message counts.
fn counts() -> [u64; 3] {
    sys::sys_info().map_or([0; 3], |i| [i.syscalls, i.context_switches, i.ipis])
}

/// Sends `n` messages of `pages` to `child` (after one not timed) by
/// `way`; returns the time per message and the counts per message.
fn stream(child: u64, way: Way, pages: u64, n: u64) -> Result<(u64, [f64; 3]), &'static str> {
    let mode = match way {
        Way::Box(m) | Way::Push(m) => m,
        Way::Exchange => M::Swap,
    };
    let bx = match way {
        Way::Box(_) => {
            // Unscrubbed by choice: sender and receiver trust each other,
            // and seed 004's figures say nothing of clearing pages.
            let bx = sys::box_create(pages, 2, 1, 8, BOX_UNSCRUBBED).map_err(|_| "box")?;
            sys::box_grant(bx, child, BOX_RECEIVE).map_err(|_| "grant")?;
            bx
        }
        _ => 0,
    };
    let mut mine = sys::container_create(pages).map_err(|_| "container")?;
    // The child's container for exchange: pushed there (the parent may).
    let theirs = if way == Way::Exchange {
        let c = sys::container_create(pages).map_err(|_| "container")?;
        sys::container_push(c, child, M::Move).map_err(|_| "push")?
    } else {
        0
    };
    let mut ack = [0u8; 8];
    let setup = bytes([code(way), pages, bx, theirs]);
    let n_ack = sys::call(child, SETUP, &setup, &mut ack).map_err(|_| "setup")?;
    let at = u64::from_le_bytes(ack);
    if n_ack == 1 && ack[0] != 1 {
        return Err("setup refused");
    }
    let mut addr = sys::container_addr(mine).map_err(|_| "addr")?;
    let mut seq = 0;
    let mut bad = false;
    let one = |seq: u64, mine: &mut u64, addr: &mut u64| -> Result<(), &'static str> {
        if mode == M::Move && seq > 1 {
            *mine = sys::container_create(pages).map_err(|_| "container")?;
            *addr = sys::container_addr(*mine).map_err(|_| "addr")?;
        }
        stamp(*addr, pages, seq);
        let pushed = match way {
            Way::Box(m) => sys::container_send(*mine, bx, 0, m).map(|_| 0),
            Way::Push(m) => sys::calls::container_push(*mine, child, at, m),
            Way::Exchange => sys::container_exchange(*mine, child, theirs),
        }
        .map_err(|_| "send")?;
        let mut ack = [0u8; 1];
        let r = sys::call(child, MESSAGE, &pushed.to_le_bytes(), &mut ack);
        if r != Ok(1) || ack[0] != 1 {
            return Err("acknowledgement");
        }
        Ok(())
    };
    // One message first: its first steps (tables, free lists) are made
    // once, not per message.
    seq += 1;
    one(seq, &mut mine, &mut addr)?;
    let c0 = counts();
    let t0 = sys::rdtsc();
    for _ in 0..n {
        seq += 1;
        if let Err(e) = one(seq, &mut mine, &mut addr) {
            bad = true;
            println!("cttransfer: message {seq}: {e}");
            break;
        }
    }
    let ns = sys::tsc_to_ns(sys::rdtsc() - t0) / n;
    let c1 = counts();
    // Whatever is left of the method's containers goes.
    if mode != M::Move {
        let _ = sys::res_delete(mine);
    }
    if bx != 0 {
        let _ = sys::res_delete(bx);
    }
    if bad {
        return Err("transfer");
    }
    // The counts include the one system call that read them.
    Ok((
        ns,
        core::array::from_fn(|i| (c1[i] - c0[i] - u64::from(i == 0)) as f64 / n as f64),
    ))
}

fn measure(cpu: u64, suffix: &str, sizes: &[u64], n: u64) -> bool {
    let o = SpawnOptions {
        cpu,
        ..SpawnOptions::DEFAULT
    };
    let Ok(child) = sys::spawn("cttransfer", &["serve"], &o) else {
        println!("BENCH-ERROR cttransfer: cannot start the receiver");
        return false;
    };
    let mut ok = true;
    for &pages in sizes {
        let bytes = pages * 4096;
        for (way, name) in WAYS {
            match stream(child, way, pages, n) {
                Ok((ns, [syscalls, switches, ipis])) => {
                    println!("BENCH,transfer,{name}{suffix},{bytes},{ns},ns");
                    println!("BENCH,transfer,{name}{suffix}_syscalls,{bytes},{syscalls:.1},count");
                    println!("BENCH,transfer,{name}{suffix}_switches,{bytes},{switches:.1},count");
                    println!("BENCH,transfer,{name}{suffix}_ipis,{bytes},{ipis:.1},count");
                }
                Err(e) => {
                    println!("BENCH-ERROR cttransfer {name}{suffix} {bytes}: {e}");
                    ok = false;
                }
            }
        }
    }
    let _ = sys::call(child, DONE, &[], &mut [0u8; 1]);
    ok &= sys::wait(child) == Ok(0);
    ok
}

fn main(args: &[&str]) -> i32 {
    if args.get(1) == Some(&"serve") {
        return serve();
    }
    let short = args.get(1) == Some(&"short");
    let sizes: &[u64] = if short {
        &[1, 16, 512]
    } else {
        &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    };
    let n = if short { 2 } else { 20 };
    let _ = sys::set_affinity(0, 0);
    let mut ok = measure(0, "", sizes, n);
    if sys::sys_info().map_or(1, |i| i.cpus) > 1 {
        ok &= measure(1, "_cross_cpu", sizes, n);
    }
    i32::from(!ok)
}

tessera_rt::entry!(main);
