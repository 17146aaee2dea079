//! `cp from to`: copies a file (into `to` if it is a directory).
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_api::fs::{
    O_CREAT, O_RDONLY, O_TRUNC, O_WRONLY,
    client::{self, File},
};
use tessera_rt::println;

fn main(args: &[&str]) -> i32 {
    let [_, from, to] = args else {
        println!("usage: cp from to");
        return 2;
    };
    let from = filecmd::absolute(from);
    let mut to = filecmd::absolute(to);
    if client::stat(&to).is_ok_and(|s| s.is_dir()) {
        to = filecmd::join(&to, filecmd::base_name(&from));
    }
    let mut src = match File::open(&from, O_RDONLY, 0) {
        Ok(f) => f,
        Err(e) => return filecmd::fail("cp", &from, e),
    };
    let mode = src.stat().map_or(0o644, |s| s.mode & 0o7777);
    let mut dst = match File::open(&to, O_WRONLY | O_CREAT | O_TRUNC, mode) {
        Ok(f) => f,
        Err(e) => return filecmd::fail("cp", &to, e),
    };
    let mut buf = alloc::vec![0u8; 64 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return 0,
            Ok(n) => n,
            Err(e) => return filecmd::fail("cp", &from, e),
        };
        if let Err(e) = dst.write(&buf[..n]) {
            return filecmd::fail("cp", &to, e);
        }
    }
}
tessera_rt::entry!(main);
