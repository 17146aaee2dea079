//! `text128k`: the medium program (the paper's `less`, 138 KiB of text): a 128 KiB table in
//! its text segment, of which it reads one page in `textwork::STRIDE`.
//! Exits 0 if the pages read hold what the table was built with.
#![no_std]
#![no_main]
#[path = "../textwork.rs"]
mod textwork;

static TABLE: [u8; 128 << 10] = [textwork::FILL; 128 << 10];

fn main(_: &[&str]) -> i32 {
    textwork::run(&TABLE)
}
tessera_rt::entry!(main);
