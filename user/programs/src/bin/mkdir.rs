//! `mkdir [-p] path...`: makes directories (`-p`: and their parents, and
//! no complaint if they exist).
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_api::fs::{Errno, client};

fn main(args: &[&str]) -> i32 {
    let parents = args.contains(&"-p");
    let mut status = 0;
    for p in args[1..].iter().filter(|a| **a != "-p") {
        let path = filecmd::absolute(p);
        if parents {
            let mut at = alloc::string::String::new();
            for part in path.split('/').filter(|s| !s.is_empty()) {
                at.push('/');
                at.push_str(part);
                match client::mkdir(&at, 0o755) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => {
                        status = filecmd::fail("mkdir", &at, e);
                        break;
                    }
                }
            }
        } else if let Err(e) = client::mkdir(&path, 0o755) {
            status = filecmd::fail("mkdir", &path, e);
        }
    }
    status
}
tessera_rt::entry!(main);
