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

/// A call fanned out and not yet answered. The slots stay where they are
/// and are filled in place: a request costs no clearing or moving of its
/// buffers.
struct Pending {
    /// The call being served; 0 while the slot is free.
    rid: u64,
    /// The target's message stays here until the target has read it.
    msg: [u8; 256],
    reply: [u8; 64],
}

/// The slots of `Pending` calls and a stack of the free ones.
struct Slots {
    pending: [Pending; SLOTS],
    free: [u8; SLOTS],
    nfree: usize,
}

impl Slots {
    fn take(&mut self) -> Option<usize> {
        self.nfree = self.nfree.checked_sub(1)?;
        Some(self.free[self.nfree] as usize)
    }

    fn give_back(&mut self, slot: usize) {
        self.pending[slot].rid = 0;
        self.free[self.nfree] = slot as u8;
        self.nfree += 1;
    }
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
    let mut slots = Slots {
        pending: [const {
            Pending {
                rid: 0,
                msg: [0; 256],
                reply: [0; 64],
            }
        }; SLOTS],
        free: core::array::from_fn(|i| i as u8),
        nfree: SLOTS,
    };
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
            let Some(slot) = slots.take() else {
                break;
            };
            let Ok(rid) = sys::acc(mask, &mut info) else {
                slots.give_back(slot);
                break;
            };
            let len = (info.len as usize).min(256);
            let p = &mut slots.pending[slot];
            p.rid = rid;
            // Short messages came inline with the call.
            let got = if len <= info.inline.len() {
                p.msg[..len].copy_from_slice(&info.inline[..len]);
                true
            } else {
                sys::rv_read(rid, 0, &mut p.msg[..len]).is_ok()
            };
            if len < 16 || !got {
                let _ = sys::rv_fail(rid, Error::Invalid);
                slots.give_back(slot);
                continue;
            }
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
                let _ = sys::rv_fail(rid, Error::Busy);
                slots.give_back(slot);
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
            // The tag is the slot the request went out from (the kernel
            // hands it back as it was given).
            let slot = r.tag as usize;
            let Some(p) = slots.pending.get(slot).filter(|p| p.rid != 0) else {
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
            slots.give_back(slot);
        }
    }
}
tessera_rt::entry!(main);
