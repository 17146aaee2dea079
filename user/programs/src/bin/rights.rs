//! The system and console rights from the side of a process that holds
//! neither: every global setting, and the console's input, is refused with
//! `Denied` and left as it was, while what is its own to do still works.
//! Usage: `rights <pid>`, where `pid` is a process that is not its child.
//! Exits 0 if all went as it should.
#![no_std]
#![no_main]
extern crate alloc;

use tessera_rt::abi::{self, Error, LoadPolicy, PoolRule, PoolSettings, SpawnOptions};
use tessera_rt::{println, sys};

fn main(args: &[&str]) -> i32 {
    let Some(stranger) = args.get(1).and_then(|a| a.parse::<u64>().ok()) else {
        println!("usage: rights <pid of a process that is not my child>");
        return 2;
    };
    let failures = core::cell::Cell::new(0u32);
    let fail = || failures.set(failures.get() + 1);
    let expect = |what: &str, got: Result<u64, Error>, want: Result<u64, Error>| {
        if got != want {
            println!("rights: {what} gave {got:?}, not {want:?}");
            fail();
        }
    };

    // The settings as they are, read without any right.
    let settings = match user_programs::pool::current() {
        Ok(c) => c,
        Err(e) => {
            println!("rights: the pool's settings cannot be read: {e:?}");
            return 1;
        }
    };
    let off = PoolSettings {
        reuse: 0,
        reduce: 0,
        ..settings.settings
    };
    let rule = PoolRule {
        kind: abi::PoolKind::Space as u64,
        count: 1000,
        ..PoolRule::default()
    };
    expect("pool_set", sys::pool_set(&off, &[rule]), Err(Error::Denied));
    expect("pool_flush", sys::pool_flush(), Err(Error::Denied));
    expect(
        "a pool setting",
        user_programs::pool::setting("mode basic"),
        Err(Error::Denied),
    );
    expect(
        "set_policy",
        sys::set_policy(LoadPolicy::Demand).map(|p| p as u64),
        Err(Error::Denied),
    );
    expect("placing a stranger", sys::set_affinity(stranger, 0), Err(Error::Denied));
    expect("killing a stranger", sys::kill(stranger), Err(Error::Denied));
    expect(
        "taking the console's input",
        sys::calls::console_attach(0),
        Err(Error::Denied),
    );
    let with_right = SpawnOptions {
        rights: abi::rights::SYSTEM,
        ..SpawnOptions::DEFAULT
    };
    expect(
        "giving a right it does not hold",
        sys::spawn("tiny", &[], &with_right),
        Err(Error::Denied),
    );
    match user_programs::pool::current() {
        Ok(now) if now == settings => {}
        other => {
            println!("rights: the pool's settings changed: {other:?}");
            fail();
        }
    }

    // Its own child is its own to place.
    match sys::spawn("sleeper", &["50"], &SpawnOptions::DEFAULT) {
        Ok(child) => {
            expect("placing its child", sys::set_affinity(child, 0), Ok(0));
            expect("placing itself", sys::set_affinity(0, abi::ANY_CPU), Ok(0));
            expect("its child's end", sys::wait(child), Ok(0));
        }
        Err(e) => {
            println!("rights: cannot start a child: {e:?}");
            fail();
        }
    }
    println!("rights: {} unexpected result(s)", failures.get());
    i32::from(failures.get() != 0)
}
tessera_rt::entry!(main);
