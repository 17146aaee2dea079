//! Checks that it starts from a fresh image: initialised data has its
//! initial value and BSS is zero; then dirties both. Run twice from a
//! pooled (reused) virtual space, it proves the pool gives a process
//! nothing of the previous one. Exits 0 if fresh.
//!
//! `fresh read PATH` first reads PATH's first page from the file server
//! into initialised data not touched before: the server's reply lands
//! in a page that, in an OFF2F program, is still in file 1 (its pager's
//! to supply before the copy). The file must start with `OFF`.
#![no_std]
#![no_main]
use tessera_api::fs::{O_RDONLY, client::File};
use tessera_rt::println;

static mut DATA: [u64; 512] = [0x5eed; 512];
static mut BSS: [u64; 4096] = [0; 4096];
static mut INTO: [u8; 8192] = [7; 8192];

/// Reads `path`'s first page into `INTO`, from its page boundary on.
fn read_into(path: &str) -> bool {
    let into = &raw mut INTO;
    // SAFETY: single-threaded program touching its own statics; nothing
    // else borrows INTO.
    let buf = unsafe { &mut *into };
    let at = buf.as_ptr().align_offset(4096).min(4096);
    let page = &mut buf[at..at + 4096];
    match File::open(path, O_RDONLY, 0).and_then(|f| f.read_at(0, page)) {
        Ok(4096) if page.starts_with(b"OFF") => true,
        r => {
            println!("fresh: reading {path} into data: {r:?}");
            false
        }
    }
}

fn main(args: &[&str]) -> i32 {
    if let [_, "read", path] = args
        && !read_into(path)
    {
        return 2;
    }
    let data = &raw mut DATA;
    let bss = &raw mut BSS;
    // SAFETY: single-threaded program touching its own statics.
    unsafe {
        let fresh = (*data).iter().all(|&x| x == 0x5eed) && (*bss).iter().all(|&x| x == 0);
        for x in (*data).iter_mut().chain((*bss).iter_mut()) {
            core::ptr::write_volatile(x, 0xdead);
        }
        if !fresh {
            println!("fresh: found the previous process's data");
        }
        i32::from(!fresh)
    }
}
tessera_rt::entry!(main);
