//! Exits 0 if its arguments are exactly `argcheck x yy zzz`, 1 otherwise:
//! proves the work area carries arguments intact.
#![no_std]
#![no_main]
fn main(args: &[&str]) -> i32 {
    i32::from(args != ["argcheck", "x", "yy", "zzz"])
}
tessera_rt::entry!(main);
