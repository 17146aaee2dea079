//! `text16m`: the huge program (the paper's `gcc`, tens of MiB of text): a 16 MiB table in
//! its text segment, of which it reads one page in `textwork::STRIDE`.
//! Exits 0 if the pages read hold what the table was built with.
#![no_std]
#![no_main]
#[path = "../textwork.rs"]
mod textwork;

static TABLE: [u8; 16 << 20] = [textwork::FILL; 16 << 20];

fn main(_: &[&str]) -> i32 {
    textwork::run(&TABLE)
}
tessera_rt::entry!(main);
