//! The page access program of Tender's evaluation (seed 000, fig. 8): its
//! BSS holds PAGES pages and it writes one byte in each, once. With the
//! argument `report` it prints its own page-fault counts as BENCH lines.

use tessera_rt::{println, sys};

/// The program with `$pages` pages of BSS: its BSS, and its entry, which
/// runs `run` over it.
macro_rules! program {
    ($pages:expr) => {
        const PAGES: usize = $pages;
        static mut BSS: [[u8; 4096]; PAGES] = [[0; 4096]; PAGES];

        fn main(args: &[&str]) -> i32 {
            $crate::pageaccess::run::<PAGES>(&raw mut BSS, args)
        }
        tessera_rt::entry!(main);
    };
}
pub(crate) use program;

pub fn run<const PAGES: usize>(bss: *mut [[u8; 4096]; PAGES], args: &[&str]) -> i32 {
    for i in 0..PAGES {
        // SAFETY: the array is this program's BSS; each write stays in page i.
        unsafe { core::ptr::write_volatile((bss as *mut u8).add(i * 4096), 1) };
    }
    if args.get(1) == Some(&"report") {
        let info = sys::proc_info(0).expect("proc_info");
        let policy = if info.policy == 1 { "eager" } else { "demand" };
        let f = info.faults;
        for (cat, n) in [
            ("text", f.text),
            ("data", f.data),
            ("bss", f.bss),
            ("stack", f.stack),
            ("heap", f.heap),
        ] {
            println!("BENCH,pageaccess,faults_{cat}_{policy},{PAGES},{n},count");
        }
    }
    0
}
