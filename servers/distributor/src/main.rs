//! The distribution server (AnT, seed 002 §3.5): takes requests for other
//! servers (a batch from `ncallsync`, or single calls) and fans them out,
//! without waiting, to the servers that implement them (on other CPUs).
//! Each message ends with its target (pid, entry). The distributor accepts
//! every call waiting in one system call (`acc_many`), pops each call's
//! routing information and passes all of them on in one more
//! (`forward_many`): AnT's multi-stage request with direct return, so each
//! target replies straight to the caller, and for a batch the kernel
//! counts the members coming back and wakes the caller once, with every
//! result. Two system calls per batch, none per request.
#![no_std]
#![no_main]
use tessera_api::distributor as d;
use tessera_rt::abi::{AccInfo, Error, ForwardEntry, MAX_BATCH};
use tessera_rt::{println, sys};

const K: usize = MAX_BATCH as usize;

/// Where call `info` goes: its routing information, from the inline bytes,
/// or from the caller's message when it is longer than they are.
fn route_of(info: &AccInfo) -> Result<(u64, u64), Error> {
    let len = info.len as usize;
    if len < d::ROUTE {
        return Err(Error::Invalid);
    }
    let mut route = [0u8; d::ROUTE];
    if len <= info.inline.len() {
        route.copy_from_slice(&info.inline[len - d::ROUTE..len]);
    } else {
        sys::rv_read(info.rid, (len - d::ROUTE) as u64, &mut route)?;
    }
    Ok(d::route(&route))
}

fn main(_args: &[&str]) -> i32 {
    if sys::name_register(d::NAME, d::ENTRIES).is_err() {
        println!("distributor: cannot register");
        return 1;
    }
    let mut infos = [AccInfo::default(); K];
    let mut list = [ForwardEntry::default(); K];
    loop {
        let n = match sys::acc_many(d::ENTRIES, &mut infos) {
            Ok(n) => n,
            Err(e) => {
                println!("distributor: acc_many: {e:?}");
                return 1;
            }
        };
        let mut m = 0;
        for info in &infos[..n] {
            match route_of(info) {
                Ok((server, entry)) => {
                    list[m] = ForwardEntry {
                        rid: info.rid,
                        server,
                        entry,
                        trim: d::ROUTE as u64,
                        status: 0,
                    };
                    m += 1;
                }
                Err(e) => {
                    let _ = sys::rv_fail(info.rid, e);
                }
            }
        }
        // A call that cannot go on (no such target or entry) is ended by
        // the kernel with its error: its caller learns why.
        if m > 0
            && let Err(e) = sys::forward_many(&mut list[..m])
        {
            println!("distributor: forward_many: {e:?}");
        }
    }
}
tessera_rt::entry!(main);
