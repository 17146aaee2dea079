//! The distribution server (AnT, seed 002 §3.5): takes requests for other
//! servers (a batch from `ncallsync`, or single calls) and fans them out,
//! without waiting, to the servers that implement them (on other CPUs),
//! then answers each caller as its result comes back. Each message starts
//! with the target (pid, entry); the rest is the target's message. The
//! requests go out through its request ring, all those accepted together
//! in one system call, and the results come back in its result ring, where
//! it takes them without a system call.
#![no_std]
#![no_main]
use tessera_api::distributor as d;
use tessera_rt::abi::{ACC_NOWAIT, AccInfo, Control, Error};
use tessera_rt::ring::Ring;
use tessera_rt::{println, sys};

const SLOTS: usize = 64;

struct Pending {
    rid: u64,
    /// The target's message stays here until the target has read it.
    msg: [u8; 256],
    reply: [u8; 64],
}

fn main(_args: &[&str]) -> i32 {
    if sys::name_register(d::NAME, d::ENTRIES).is_err() {
        println!("distributor: cannot register");
        return 1;
    }
    let Ok(mut ring) = Ring::open() else {
        println!("distributor: no rings");
        return 1;
    };
    let mut info = AccInfo::default();
    let mut pending: [Option<Pending>; SLOTS] = [const { None }; SLOTS];
    let mut outstanding = 0;
    loop {
        // Take every call that is waiting (and wait for one when idle).
        let mut pushed = 0;
        loop {
            let mask = if outstanding + pushed == 0 {
                d::ENTRIES
            } else {
                d::ENTRIES | ACC_NOWAIT
            };
            let Some(slot) = pending.iter().position(Option::is_none) else {
                break;
            };
            let Ok(rid) = sys::acc(mask, &mut info) else { break };
            let len = (info.len as usize).min(256);
            let mut p = Pending {
                rid,
                msg: [0; 256],
                reply: [0; 64],
            };
            // Short messages came inline with the call.
            let got = if len <= info.inline.len() {
                p.msg[..len].copy_from_slice(&info.inline[..len]);
                true
            } else {
                sys::rv_read(rid, 0, &mut p.msg[..len]).is_ok()
            };
            if len < 16 || !got {
                let _ = sys::rv_fail(rid, Error::Invalid);
                continue;
            }
            let p = pending[slot].insert(p);
            let request = Control {
                server: u64::from_le_bytes(p.msg[..8].try_into().unwrap_or([0; 8])),
                entry: u64::from_le_bytes(p.msg[8..16].try_into().unwrap_or([0; 8])),
                msg: p.msg[16..].as_ptr() as u64,
                msg_len: (len - 16) as u64,
                reply: p.reply.as_mut_ptr() as u64,
                reply_cap: 64,
                tag: slot as u64,
                ..Control::default()
            };
            if ring.push(&request).is_err() {
                let p = pending[slot].take().expect("just put");
                let _ = sys::rv_fail(p.rid, Error::Busy);
                break;
            }
            pushed += 1;
        }
        if pushed > 0 {
            match ring.submit(pushed) {
                Ok(_) => outstanding += pushed,
                Err(e) => {
                    println!("distributor: submit: {e:?}");
                    return 1;
                }
            }
        }
        if outstanding == 0 {
            continue;
        }
        // Answer the callers of every result that is back (waiting for one
        // when none is).
        let mut answered = false;
        while let Some(r) = ring
            .take()
            .or_else(|| (!answered).then(|| ring.next_result().ok()).flatten())
        {
            answered = true;
            outstanding -= 1;
            let Some(p) = pending.get_mut(r.tag as usize).and_then(Option::take) else {
                continue;
            };
            match r.result() {
                Ok(n) => {
                    let _ = sys::endr(p.rid, &p.reply[..(n as usize).min(64)]);
                }
                Err(e) => {
                    let _ = sys::rv_fail(p.rid, e);
                }
            }
        }
    }
}
tessera_rt::entry!(main);
