//! The echo server (interface: `tessera_api::echo`). Registers its name,
//! then accepts calls for ever: ECHO replies with the message, SUM reads
//! the whole message by reference and replies with the sum of its bytes,
//! WORK burns the CPU for a while and replies with when it did, PIECES
//! replies in pieces and ends with their total, CRASH dies holding the call.
#![no_std]
#![no_main]
use tessera_api::echo;
use tessera_rt::abi::AccInfo;
use tessera_rt::{println, sys};

/// What the next `endr_acc` replies with.
#[derive(Clone, Copy)]
enum Reply {
    None,
    /// The first bytes of the message (from its description).
    Message(usize),
    /// The first bytes of the server's own reply buffer.
    Own(usize),
}

fn main(args: &[&str]) -> i32 {
    let name = args.get(1).copied().unwrap_or(echo::NAME);
    if let Err(e) = sys::name_register(name, echo::ENTRIES) {
        println!("echo: cannot register: {e:?}");
        return 1;
    }
    let mut buf = [0u8; 4096];
    // Two descriptions taking turns: an ECHO reply goes out straight from
    // the description its call came in, while the next call is described
    // into the other one (no copy of the message in between).
    let mut infos = [AccInfo::default(); 2];
    let mut cur = 0;
    // The call ended by the next endr_acc, and its reply.
    let mut rid = 0;
    let mut reply = Reply::None;
    let mut own = [0u8; 16];
    loop {
        let [a, b] = &mut infos;
        let (this, next) = if cur == 0 { (&*a, b) } else { (&*b, a) };
        let bytes = match reply {
            Reply::None => &[][..],
            Reply::Message(n) => &this.inline[..n],
            Reply::Own(n) => &own[..n],
        };
        match sys::endr_acc(rid, bytes, echo::ENTRIES, next) {
            Ok(next) => rid = next,
            // Ending the previous call failed: still accept the next.
            Err(_) if rid != 0 => {
                rid = 0;
                reply = Reply::None;
                continue;
            }
            Err(_) => return 1,
        }
        cur ^= 1;
        let info = &infos[cur];
        reply = Reply::None;
        match info.entry {
            echo::ECHO => reply = Reply::Message((info.len as usize).min(info.inline.len())),
            echo::SUM => {
                let mut sum = 0u64;
                let mut at = 0;
                while at < info.len {
                    let n = ((info.len - at) as usize).min(buf.len());
                    if sys::rv_read(rid, at, &mut buf[..n]).is_err() {
                        break;
                    }
                    sum += buf[..n].iter().map(|&b| b as u64).sum::<u64>();
                    at += n as u64;
                }
                own[..8].copy_from_slice(&sum.to_le_bytes());
                reply = Reply::Own(8);
            }
            echo::WORK => {
                let us = u64::from_le_bytes(info.inline[..8].try_into().unwrap_or([0; 8]));
                let start = sys::rdtsc();
                let end = start + us * (sys::clock().tsc_hz / 1_000_000);
                // Computation, not waiting: no `pause` in the loop. Under
                // QEMU's multi-threaded TCG every `pause` leaves the virtual
                // CPU's loop and takes QEMU's global lock, so servers that
                // "work" with it serialise on that lock instead of running
                // side by side.
                let mut x = us | 1;
                while sys::rdtsc() < end {
                    for _ in 0..64 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    }
                }
                core::hint::black_box(x);
                // When the work ran: a benchmark sees from it whether the
                // work was held up (it ends at a fixed TSC).
                own[..8].copy_from_slice(&start.to_le_bytes());
                own[8..16].copy_from_slice(&sys::rdtsc().to_le_bytes());
                reply = Reply::Own(16);
            }
            echo::PIECES => {
                let n = u64::from_le_bytes(info.inline[..8].try_into().unwrap_or([0; 8]));
                let mut at = 0;
                let mut written = Ok(());
                while at < n && written.is_ok() {
                    let piece = (n - at).min(1000) as usize;
                    for (i, b) in buf[..piece].iter_mut().enumerate() {
                        *b = ((at as usize + i) * 3) as u8;
                    }
                    written = sys::rv_write(rid, at, &buf[..piece]).map(drop);
                    at += piece as u64;
                }
                let ended = written.and_then(|()| sys::endr_len(rid, n));
                if let Err(e) = ended {
                    let _ = sys::rv_fail(rid, e);
                }
                rid = 0;
            }
            echo::CRASH => {
                // SAFETY: not safe: dies by a null dereference, holding the call.
                unsafe { core::ptr::read_volatile(core::ptr::null::<u64>()) };
            }
            _ => {
                let _ = sys::rv_fail(rid, tessera_rt::abi::Error::NoSys);
                rid = 0;
            }
        }
    }
}
tessera_rt::entry!(main);
