//! A relay stage: `relay <own name> <next server name> forward|nested|auto`.
//! With `forward`, each call goes on to the next server, which replies
//! straight to the original caller (multi-stage request with direct
//! return); with `nested`, the relay calls the next server itself, passing
//! the caller's message by reference, and relays the reply back; with
//! `auto`, the request's own flag decides (AnT's flag in the control ICA:
//! CONTROL_DIRECT_RETURN forwards, otherwise nested).
#![no_std]
#![no_main]
use tessera_api::relay;
use tessera_rt::abi::{AccInfo, CALL_BY_REF, CONTROL_DIRECT_RETURN};
use tessera_rt::{println, sys};

fn main(args: &[&str]) -> i32 {
    let (Some(me), Some(next_name), Some(mode)) = (args.get(1), args.get(2), args.get(3)) else {
        println!("usage: relay <name> <next> forward|nested|auto");
        return 2;
    };
    if sys::name_register(me, relay::ENTRIES).is_err() {
        return 1;
    }
    let mut next = 0;
    let mut info = AccInfo::default();
    let mut reply = [0u8; 64];
    loop {
        let Ok(rid) = sys::acc(relay::ENTRIES, &mut info) else {
            return 1;
        };
        // Late binding: the next stage may have started after us and not
        // have registered yet; wait for it a little.
        for _ in 0..1000 {
            if next != 0 {
                break;
            }
            next = sys::name_lookup(next_name).unwrap_or(0);
            if next == 0 {
                sys::sleep_ns(1_000_000);
            }
        }
        let forward = match *mode {
            "forward" => true,
            "auto" => info.flags & CONTROL_DIRECT_RETURN != 0,
            _ => false,
        };
        if forward {
            if sys::forward(rid, next, relay::ECHO).is_err() {
                let _ = sys::rv_fail(rid, tessera_rt::abi::Error::NotFound);
            }
        } else {
            // SAFETY: a by-reference call names the rid in the pointer slot.
            let r = unsafe {
                sys::call_raw(
                    next,
                    relay::ECHO | CALL_BY_REF,
                    rid,
                    info.len,
                    reply.as_mut_ptr() as u64,
                    reply.len() as u64,
                )
            };
            match r {
                Ok(n) => {
                    let _ = sys::endr(rid, &reply[..(n as usize).min(reply.len())]);
                }
                Err(e) => {
                    let _ = sys::rv_fail(rid, e);
                }
            }
        }
    }
}
tessera_rt::entry!(main);
