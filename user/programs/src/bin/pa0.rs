//! Page access program with 0 BSS pages (see pageaccess.rs).
#![no_std]
#![no_main]
#[path = "../pageaccess.rs"]
mod pageaccess;

const PAGES: usize = 0;
static mut BSS: [[u8; 4096]; PAGES] = [[0; 4096]; PAGES];

fn main(args: &[&str]) -> i32 {
    pageaccess::run::<PAGES>(&raw mut BSS, args)
}
tessera_rt::entry!(main);
