//! The distribution server (AnT, seed 002 §3.5): takes requests for other
//! servers (a batch from `ncallsync`, or single calls) and fans them out,
//! without waiting, to the servers that implement them (on other CPUs).
//! Each message ends with its target (pid, entry). The distributor pops
//! that routing information and forwards the call itself to the target
//! (`forward` with direct return, AnT's flag in the control ICA): the
//! target replies straight to the caller, and for a batch the kernel
//! counts the members coming back and wakes the caller once, with every
//! result. The distributor's loop is one system call per request: forward
//! this one, accept the next.
#![no_std]
#![no_main]
use tessera_api::distributor as d;
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::{println, sys};

/// Where call `rid` (described by `info`) goes: its routing information,
/// read from the inline bytes, or from the caller's message when it is
/// longer than they are.
fn route_of(rid: u64, info: &AccInfo) -> Result<(u64, u64), Error> {
    let len = info.len as usize;
    if len < d::ROUTE {
        return Err(Error::Invalid);
    }
    let mut route = [0u8; d::ROUTE];
    if len <= info.inline.len() {
        route.copy_from_slice(&info.inline[len - d::ROUTE..len]);
    } else {
        sys::rv_read(rid, (len - d::ROUTE) as u64, &mut route)?;
    }
    Ok(d::route(&route))
}

fn main(_args: &[&str]) -> i32 {
    if sys::name_register(d::NAME, d::ENTRIES).is_err() {
        println!("distributor: cannot register");
        return 1;
    }
    let mut info = AccInfo::default();
    let mut next = sys::acc(d::ENTRIES, &mut info);
    loop {
        let rid = match next {
            Ok(rid) => rid,
            Err(e) => {
                println!("distributor: acc: {e:?}");
                return 1;
            }
        };
        next = match route_of(rid, &info) {
            Ok((target, entry)) => {
                match sys::forward_trim_acc(rid, (target, entry, d::ROUTE as u64), d::ENTRIES, &mut info) {
                    Ok(rid) => Ok(rid),
                    Err(e) => {
                        // Not passed on (no such target or entry, or the call
                        // is gone): the caller learns why. If the forward
                        // went through and only the accept failed, the call
                        // is no longer held and this does nothing.
                        let _ = sys::rv_fail(rid, e);
                        sys::acc(d::ENTRIES, &mut info)
                    }
                }
            }
            Err(e) => {
                let _ = sys::rv_fail(rid, e);
                sys::acc(d::ENTRIES, &mut info)
            }
        };
    }
}
tessera_rt::entry!(main);
