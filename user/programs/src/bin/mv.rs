//! `mv from to`: renames (into `to` if it is a directory).
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_api::fs::client;
use tessera_rt::println;

fn main(args: &[&str]) -> i32 {
    let [_, from, to] = args else {
        println!("usage: mv from to");
        return 2;
    };
    let from = filecmd::absolute(from);
    let mut to = filecmd::absolute(to);
    if client::stat(&to).is_ok_and(|s| s.is_dir()) {
        to = filecmd::join(&to, filecmd::base_name(&from));
    }
    match client::rename(&from, &to) {
        Ok(()) => 0,
        Err(e) => filecmd::fail("mv", &from, e),
    }
}
tessera_rt::entry!(main);
