//! Passes bad pointers and lengths to every system call that takes one and
//! checks that each comes back as an error code (the process survives).
#![no_std]
#![no_main]
use core::mem::size_of;
use tessera_rt::abi::{Error, INSPECT_MAX, KindCount, ResKind, Sys, Topic};
use tessera_rt::{println, sys};

const BAD: [u64; 6] = [
    0,
    0xffff_ffff_8010_0000, // kernel text
    0xffff_8000_0000_0000, // kernel direct map
    0x0000_7fff_ffff_fff8, // straddles the end of user space
    0x0000_6000_0000_0000, // unmapped user memory
    0x8000_0000_0000_0000, // non-canonical
];

fn main(_args: &[&str]) -> i32 {
    // A call this process sends itself, to be accepted below with its
    // description going to memory that is not there.
    // SAFETY: no reply buffer (length 0).
    let sent = unsafe { sys::request(sys::getpid(), 0, &[], core::ptr::null_mut(), 0) }.is_ok();
    let mut failures = u32::from(!sent);
    let mut check = |name: &str, n: u64, a: [u64; 6], want: Result<u64, &[Error]>| {
        // SAFETY: the call is expected to fail cleanly; it writes nothing valid.
        let r = Error::decode(unsafe { sys::syscall(n, a) });
        let ok = match (r, want) {
            (Err(e), Err(allowed)) => allowed.contains(&e),
            (Ok(v), Ok(w)) => v == w,
            _ => false,
        };
        if !ok {
            println!("badptr: {name} {:x?} gave {:?}", a, r);
            failures += 1;
        }
    };
    let tiny = sys::plate_find("bin/tiny").unwrap_or(0);
    let counts = [Topic::Counts as u64, 0, 0];
    let count_size = size_of::<KindCount>() as u64;
    for &p in &BAD {
        check("clock", Sys::Clock as u64, [p, 0, 0, 0, 0, 0], Err(&[Error::Fault]));
        check(
            "inspect",
            Sys::Inspect as u64,
            [counts[0], counts[1], counts[2], p, 4, count_size],
            Err(&[Error::Fault]),
        );
        check(
            "plate_read",
            Sys::PlateRead as u64,
            [tiny, 0, p, 16, 0, 0],
            Err(&[Error::Fault]),
        );
        check(
            "console_write",
            Sys::ConsoleWrite as u64,
            [p, 16, 0, 0, 0, 0],
            Err(&[Error::Fault]),
        );
        check(
            "proc_info",
            Sys::ProcInfo as u64,
            [0, p, 0, 0, 0, 0],
            Err(&[Error::Fault]),
        );
        check(
            "proc_list",
            Sys::ProcList as u64,
            [p, 4, 0, 0, 0, 0],
            Err(&[Error::Fault]),
        );
        check(
            "sys_info",
            Sys::SysInfo as u64,
            [p, 0, 0, 0, 0, 0],
            Err(&[Error::Fault]),
        );
        check(
            "spawn path",
            Sys::Spawn as u64,
            [p, 5, 0, 0, 0, 0],
            Err(&[Error::Fault]),
        );
        // An options pointer of 0 means "defaults"; every other bad one is a fault.
        if p != 0 {
            check(
                "spawn options",
                Sys::Spawn as u64,
                [b"tiny".as_ptr() as u64, 4, 0, 0, p, 0],
                Err(&[Error::Fault]),
            );
        }
    }
    check(
        "huge write",
        Sys::ConsoleWrite as u64,
        [0x1000, u64::MAX, 0, 0, 0, 0],
        Err(&[Error::Fault, Error::Invalid]),
    );
    check(
        "huge spawn",
        Sys::Spawn as u64,
        [b"tiny".as_ptr() as u64, u64::MAX, 0, 0, 0, 0],
        Err(&[Error::Invalid]),
    );
    check(
        "abi version",
        Sys::AbiVersion as u64,
        [0; 6],
        Ok(tessera_rt::abi::ABI_VERSION),
    );
    check("unknown number", 12345, [0; 6], Err(&[Error::NoSys]));
    check(
        "wait self",
        Sys::Wait as u64,
        [sys::getpid(), 0, 0, 0, 0, 0],
        Err(&[Error::Deadlock]),
    );
    check(
        "wait stranger",
        Sys::Wait as u64,
        [999_999, 0, 0, 0, 0, 0],
        Err(&[Error::NotFound]),
    );
    check("map zero", Sys::Map as u64, [0, 0, 3, 0, 0, 0], Err(&[Error::Invalid]));
    check(
        "map huge",
        Sys::Map as u64,
        [0, u64::MAX, 3, 0, 0, 0],
        Err(&[Error::Invalid]),
    );
    check(
        "unmap text",
        Sys::Unmap as u64,
        [0x400000, 4096, 0, 0, 0, 0],
        Err(&[Error::Invalid]),
    );
    check(
        "affinity",
        Sys::SetAffinity as u64,
        [0, 1 << 40, 0, 0, 0, 0],
        Err(&[Error::Invalid]),
    );
    // A policy that does not exist is not an argument of the call (the
    // decoding refuses it); a real one without the system right is refused.
    check(
        "policy",
        Sys::SetPolicy as u64,
        [77, 0, 0, 0, 0, 0],
        Err(&[Error::Invalid]),
    );
    check(
        "policy without the right",
        Sys::SetPolicy as u64,
        [tessera_rt::abi::LoadPolicy::Demand as u64, 0, 0, 0, 0, 0],
        Err(&[Error::Denied]),
    );
    let mut buf = [0u8; 4096];
    let at = buf.as_mut_ptr() as u64;
    check(
        "inspect: wrong record size",
        Sys::Inspect as u64,
        [counts[0], 0, 0, at, 1, count_size + 8],
        Err(&[Error::Invalid]),
    );
    check(
        "inspect: more than INSPECT_MAX at once",
        Sys::Inspect as u64,
        [counts[0], 0, 0, at, INSPECT_MAX + 1, count_size],
        Err(&[Error::Invalid]),
    );
    check(
        "inspect: no such topic",
        Sys::Inspect as u64,
        [999, 0, 0, at, 1, count_size],
        Err(&[Error::Invalid]),
    );
    for kind in [ResKind::Container as u64, ResKind::Computation as u64, 77] {
        check(
            "inspect: a kind with no list",
            Sys::Inspect as u64,
            [
                Topic::Resources as u64,
                kind,
                0,
                at,
                1,
                size_of::<tessera_rt::abi::ResRecord>() as u64,
            ],
            Err(&[Error::Invalid]),
        );
    }
    check(
        "plate_read: not a plate",
        Sys::PlateRead as u64,
        [sys::getpid(), 0, at, 16, 0, 0],
        Err(&[Error::Invalid]),
    );
    check(
        "plate_read: past the end",
        Sys::PlateRead as u64,
        [tiny, u64::MAX, at, 16, 0, 0],
        Ok(0),
    );
    check(
        "acc into unmapped memory",
        Sys::Acc as u64,
        [1 | tessera_rt::abi::ACC_NOWAIT, BAD[4], 0, 0, 0, 0],
        Err(&[Error::Fault]),
    );
    // A short buffer gets what fits and learns how many there are.
    let mut one = [KindCount::default(); 1];
    let kinds = ResKind::ALL.len();
    if sys::inspect(0, 0, &mut one) != Ok(kinds) || one[0].kind != ResKind::Process as u64 {
        println!("badptr: inspect into one record gave {:?}", one[0]);
        failures += 1;
    }
    let mut past = [KindCount { kind: 99, live: 99 }; 1];
    if sys::inspect(0, 100, &mut past) != Ok(kinds) || past[0].kind != 99 {
        println!("badptr: inspect past the end wrote {:?}", past[0]);
        failures += 1;
    }
    println!("badptr: {failures} unexpected result(s)");
    i32::from(failures != 0)
}
tessera_rt::entry!(main);
