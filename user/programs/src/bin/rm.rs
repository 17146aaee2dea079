//! `rm [-r] path...`: removes files (`-r`: directories and all they hold).
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use tessera_api::fs::{Errno, client};

fn remove(path: &str, recursive: bool) -> Result<(), Errno> {
    let st = client::lstat(path)?;
    if !st.is_dir() {
        return client::unlink(path);
    }
    if !recursive {
        return Err(Errno::EISDIR);
    }
    for e in client::read_dir(path)? {
        if e.name == b"." || e.name == b".." {
            continue;
        }
        let name = alloc::string::String::from_utf8_lossy(&e.name);
        remove(&filecmd::join(path, &name), true)?;
    }
    client::rmdir(path)
}

fn main(args: &[&str]) -> i32 {
    let recursive = args.contains(&"-r");
    let mut status = 0;
    for p in args[1..].iter().filter(|a| **a != "-r") {
        let path = filecmd::absolute(p);
        if let Err(e) = remove(&path, recursive) {
            status = filecmd::fail("rm", &path, e);
        }
    }
    status
}
tessera_rt::entry!(main);
