//! Prints who it is and its arguments.
#![no_std]
#![no_main]
use tessera_rt::{entry, println, sys};

fn main(args: &[&str]) -> i32 {
    println!(
        "hello from pid {} with {} argument(s): {:?}",
        sys::getpid(),
        args.len() - 1,
        &args[1..]
    );
    0
}
entry!(main);
