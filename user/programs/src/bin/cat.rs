//! `cat path...`: prints files from the file server.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_api::fs::{O_RDONLY, client::File};
use tessera_rt::sys;

fn main(args: &[&str]) -> i32 {
    let mut status = 0;
    let mut buf = alloc::vec![0u8; 4096];
    for p in &args[1..] {
        let path = filecmd::absolute(p);
        let mut f = match File::open(&path, O_RDONLY, 0) {
            Ok(f) => f,
            Err(e) => {
                status = filecmd::fail("cat", &path, e);
                continue;
            }
        };
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let _ = sys::console_write(&buf[..n]);
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) => {
                    status = filecmd::fail("cat", &path, e);
                    break;
                }
            }
        }
    }
    status
}
tessera_rt::entry!(main);
