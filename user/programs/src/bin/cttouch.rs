//! Sends its container by MOVE, then touches it: the kernel must have taken
//! the mapping away, so the touch faults and the process is killed.
#![no_std]
#![no_main]
use tessera_rt::abi::ContainerMode;
use tessera_rt::{println, sys};

fn main(_args: &[&str]) -> i32 {
    let bx = sys::box_create(1, 0, 0, 4, 0).expect("box");
    let c = sys::container_create(1).expect("container");
    let addr = sys::container_addr(c).expect("addr");
    // SAFETY: the container is attached at `addr` until it is sent.
    unsafe { core::ptr::write_volatile(addr as *mut u64, 42) };
    sys::container_send(c, bx, 0, ContainerMode::Move).expect("send");
    // SAFETY: not safe: the container was moved away; this must fault.
    let v = unsafe { core::ptr::read_volatile(addr as *const u64) };
    println!("cttouch: read {v} from a moved container");
    0
}
tessera_rt::entry!(main);
