//! The distribution server (AnT, seed 002 §3.5): takes requests for other
//! servers (a batch from `ncallsync`, or single calls) and fans them out,
//! non-blocking, to the servers that implement them (on other CPUs), then
//! answers each caller as its result comes back. Each message starts with
//! the target (pid, entry); the rest is the target's message.
#![no_std]
#![no_main]
use tessera_api::distributor as d;
use tessera_rt::abi::{ACC_NOWAIT, AccInfo, Error};
use tessera_rt::{println, sys};

const SLOTS: usize = 64;

struct Pending {
    request: u64,
    rid: u64,
}

fn main(_args: &[&str]) -> i32 {
    if sys::name_register(d::NAME, d::ENTRIES).is_err() {
        println!("distributor: cannot register");
        return 1;
    }
    let mut info = AccInfo::default();
    let mut msg = [0u8; 256];
    let mut replies = [[0u8; 64]; SLOTS];
    let mut pending: [Option<Pending>; SLOTS] = [const { None }; SLOTS];
    let mut outstanding = 0;
    loop {
        // Take every call that is waiting (and wait for one when idle).
        loop {
            let mask = if outstanding == 0 {
                d::ENTRIES
            } else {
                d::ENTRIES | ACC_NOWAIT
            };
            let Some(slot) = pending.iter().position(Option::is_none) else {
                break;
            };
            let Ok(rid) = sys::acc(mask, &mut info) else { break };
            let len = (info.len as usize).min(msg.len());
            if len < 16 || sys::rv_read(rid, 0, &mut msg[..len]).is_err() {
                let _ = sys::rv_fail(rid, Error::Invalid);
                continue;
            }
            let target = u64::from_le_bytes(msg[..8].try_into().unwrap_or([0; 8]));
            let entry = u64::from_le_bytes(msg[8..16].try_into().unwrap_or([0; 8]));
            // SAFETY: the reply slot stays reserved until the result is fetched.
            match unsafe { sys::request(target, entry, &msg[16..len], replies[slot].as_mut_ptr(), 64) } {
                Ok(request) => {
                    pending[slot] = Some(Pending { request, rid });
                    outstanding += 1;
                }
                Err(e) => {
                    let _ = sys::rv_fail(rid, e);
                }
            }
        }
        if outstanding == 0 {
            continue;
        }
        // One result back: answer its caller.
        let Ok((request, status)) = sys::fetch(u64::MAX) else {
            continue;
        };
        if let Some(slot) = pending
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.request == request))
        {
            let p = pending[slot].take().expect("found");
            outstanding -= 1;
            match Error::decode(status) {
                Ok(n) => {
                    let _ = sys::endr(p.rid, &replies[slot][..(n as usize).min(64)]);
                }
                Err(e) => {
                    let _ = sys::rv_fail(p.rid, e);
                }
            }
        }
    }
}
tessera_rt::entry!(main);
