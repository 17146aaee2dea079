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
    loop {
        let Ok(rid) = sys::acc(echo::ENTRIES, &mut info) else {
            return 1;
        };
        match info.entry {
            echo::ECHO => {
                let n = (info.len as usize).min(64);
                let _ = sys::endr(rid, &info.inline[..n]);
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
                let _ = sys::endr(rid, &sum.to_le_bytes());
            }
            echo::WORK => {
                let us = u64::from_le_bytes(info.inline[..8].try_into().unwrap_or([0; 8]));
                let end = sys::rdtsc() + us * (sys::clock().tsc_hz / 1_000_000);
                while sys::rdtsc() < end {
                    core::hint::spin_loop();
                }
                let n = (info.len as usize).min(64);
                let _ = sys::endr(rid, &info.inline[..n]);
            }
            echo::CRASH => {
                // SAFETY: not safe: dies by a null dereference, holding the call.
                unsafe { core::ptr::read_volatile(core::ptr::null::<u64>()) };
            }
            _ => {
                let _ = sys::rv_fail(rid, tessera_rt::abi::Error::NoSys);
            }
        }
    }
}
tessera_rt::entry!(main);
