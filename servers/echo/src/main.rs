//! The echo server (interface: `tessera_api::echo`). Registers its name,
//! then accepts calls for ever: ECHO replies with the message, SUM reads
//! the whole message by reference and replies with the sum of its bytes,
//! CRASH dies holding the call.
#![no_std]
#![no_main]
use tessera_api::echo;
use tessera_rt::abi::AccInfo;
use tessera_rt::{println, sys};

fn main(args: &[&str]) -> i32 {
    let name = args.get(1).copied().unwrap_or(echo::NAME);
    if let Err(e) = sys::name_register(name, echo::ENTRIES) {
        println!("echo: cannot register: {e:?}");
        return 1;
    }
    let mut info = AccInfo::default();
    let mut buf = [0u8; 4096];
    // The reply to the call being ended by the next endr_acc.
    let mut rid = 0;
    let mut reply = [0u8; 64];
    let mut reply_len = 0;
    loop {
        match sys::endr_acc(rid, &reply[..reply_len], echo::ENTRIES, &mut info) {
            Ok(next) => rid = next,
            // Ending the previous call failed: still accept the next.
            Err(_) if rid != 0 => {
                rid = 0;
                reply_len = 0;
                continue;
            }
            Err(_) => return 1,
        }
        reply_len = 0;
        match info.entry {
            echo::ECHO => {
                reply_len = (info.len as usize).min(64);
                reply[..reply_len].copy_from_slice(&info.inline[..reply_len]);
            }
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
                reply[..8].copy_from_slice(&sum.to_le_bytes());
                reply_len = 8;
            }
            echo::WORK => {
                let us = u64::from_le_bytes(info.inline[..8].try_into().unwrap_or([0; 8]));
                let end = sys::rdtsc() + us * (sys::clock().tsc_hz / 1_000_000);
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
                reply_len = (info.len as usize).min(64);
                reply[..reply_len].copy_from_slice(&info.inline[..reply_len]);
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
