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
use tessera_rt::abi::{AccInfo, CONTROL_DIRECT_RETURN};
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
    // What the last call left to do, done together with the next acc.
    let mut last = Last::Nothing;
    loop {
        let accepted = match last {
            Last::Nothing => sys::acc(relay::ENTRIES, &mut info),
            Last::Reply(rid, n) => sys::endr_acc(rid, &reply[..n], relay::ENTRIES, &mut info),
            Last::Forward(rid) => {
                let r = sys::forward_acc(rid, next, relay::ECHO, relay::ENTRIES, &mut info);
                if r.is_err() {
                    // Not passed on (the next server is gone): fail it, if
                    // it is still ours, and accept afresh.
                    let _ = sys::rv_fail(rid, tessera_rt::abi::Error::NotFound);
                }
                r
            }
        };
        let rid = match accepted {
            Ok(rid) => rid,
            // The previous call's end failed: accept afresh.
            Err(_) if !matches!(last, Last::Nothing) => {
                last = Last::Nothing;
                continue;
            }
            Err(_) => return 1,
        };
        last = Last::Nothing;
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
            last = Last::Forward(rid);
        } else {
            let r = sys::call_by_ref(next, relay::ECHO, rid, &mut reply);
            match r {
                Ok(n) => last = Last::Reply(rid, n.min(reply.len())),
                Err(e) => {
                    let _ = sys::rv_fail(rid, e);
                }
            }
        }
    }
}

/// The end of the previous call, still to be done.
#[derive(Clone, Copy)]
enum Last {
    Nothing,
    Reply(u64, usize),
    Forward(u64),
}

tessera_rt::entry!(main);
