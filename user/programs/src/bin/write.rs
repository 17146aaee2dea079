//! `write [-a] path words...`: writes the words and a newline to a file,
//! replacing what it held (`-a`: appending).
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use alloc::vec::Vec;
use tessera_api::fs::{O_APPEND, O_CREAT, O_TRUNC, O_WRONLY, client::File};
use tessera_rt::println;

fn main(args: &[&str]) -> i32 {
    let append = args.get(1) == Some(&"-a");
    let rest = &args[if append { 2 } else { 1 }..];
    let Some((path, words)) = rest.split_first() else {
        println!("usage: write [-a] path words...");
        return 2;
    };
    let path = filecmd::absolute(path);
    let mut text: Vec<u8> = words.join(" ").into_bytes();
    text.push(b'\n');
    let flags = O_WRONLY | O_CREAT | if append { O_APPEND } else { O_TRUNC };
    let mut f = match File::open(&path, flags, 0o644) {
        Ok(f) => f,
        Err(e) => return filecmd::fail("write", &path, e),
    };
    match f.write(&text) {
        Ok(_) => 0,
        Err(e) => filecmd::fail("write", &path, e),
    }
}
tessera_rt::entry!(main);
