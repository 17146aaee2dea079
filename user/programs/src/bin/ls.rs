//! `ls [-l] [-a] [path...]`: lists directories (default `/`) from the file
//! server; `-l` adds mode, links, owner, group, size and link targets.
#![no_std]
#![no_main]
extern crate alloc;
#[path = "../filecmd.rs"]
mod filecmd;

use alloc::vec::Vec;
use tessera_api::fs::{self, S_IFMT, Stat, client};
use tessera_rt::println;

fn mode_string(mode: u32) -> [u8; 10] {
    let kind = match mode & S_IFMT {
        fs::S_IFDIR => b'd',
        fs::S_IFLNK => b'l',
        fs::S_IFREG => b'-',
        0o020000 => b'c',
        0o060000 => b'b',
        0o010000 => b'p',
        0o140000 => b's',
        _ => b'?',
    };
    let mut s = [b'-'; 10];
    s[0] = kind;
    for (i, c) in b"rwxrwxrwx".iter().enumerate() {
        if mode & (0o400 >> i) != 0 {
            s[1 + i] = *c;
        }
    }
    s
}

fn line(path: &str, name: &str, st: &Stat, long: bool) {
    if !long {
        println!("{name}");
        return;
    }
    let m = mode_string(st.mode);
    let target = if st.is_symlink() {
        client::readlink(path)
            .map(|t| alloc::format!(" -> {}", alloc::string::String::from_utf8_lossy(&t)))
            .unwrap_or_default()
    } else {
        alloc::string::String::new()
    };
    println!(
        "{} {:3} {:5} {:5} {:9} {name}{target}",
        core::str::from_utf8(&m).unwrap_or("?"),
        st.nlink,
        st.uid,
        st.gid,
        st.size
    );
}

fn list(path: &str, long: bool, all: bool) -> i32 {
    let path = filecmd::absolute(path);
    let st = match client::lstat(&path) {
        Ok(st) => st,
        Err(e) => return filecmd::fail("ls", &path, e),
    };
    if !st.is_dir() {
        line(&path, &path, &st, long);
        return 0;
    }
    let mut entries = match client::read_dir(&path) {
        Ok(e) => e,
        Err(e) => return filecmd::fail("ls", &path, e),
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for e in entries {
        let name = alloc::string::String::from_utf8_lossy(&e.name);
        if !all && name.starts_with('.') {
            continue;
        }
        let full = filecmd::join(&path, &name);
        match client::lstat(&full) {
            Ok(st) => line(&full, &name, &st, long),
            Err(err) => println!("{name}: {err}"),
        }
    }
    0
}

fn main(args: &[&str]) -> i32 {
    let long = args.iter().skip(1).any(|a| a.starts_with('-') && a.contains('l'));
    let all = args.iter().skip(1).any(|a| a.starts_with('-') && a.contains('a'));
    let paths: Vec<&str> = args.iter().skip(1).copied().filter(|a| !a.starts_with('-')).collect();
    if paths.is_empty() {
        return list("/", long, all);
    }
    let mut status = 0;
    for p in &paths {
        if paths.len() > 1 {
            println!("{p}:");
        }
        status |= list(p, long, all);
    }
    status
}
tessera_rt::entry!(main);
