//! An unprivileged process trying, with Tessera's own system calls, what
//! issue 16 found possible: each case is one attack, and the program
//! exits 0 if the kernel refused it as it should (the kernel test around
//! it checks what the program cannot see: the pool, the heap, the
//! tables). Usage: `attack <case> [argument]`, with the cases:
//!
//! - `poison <program>`: a process named after `<program>` but built from
//!   this program's own segments (it must never be pooled under that name);
//! - `ownspace`: a process composed of the caller's own live space (Busy);
//! - `attachown`: a region of its own attached to its own space at
//!   `OWN_REGION`, left there at exit (it must not travel into the pool);
//! - `program`: deletes its own program resource (Denied);
//! - `top`: a region attached in the highest user page (Invalid);
//! - `regions`: 1 GiB regions until refused (Limit), then more calls;
//! - `requests <pid>`: requests to a process that never accepts (Busy);
//! - `query`: a resource of the kernel's described to it (Denied);
//! - `personality`: starts the Linux personality's shared server and, as
//!   a process that is none of its supervisors, asks it to list, signal
//!   and reap Linux processes, passes it a Linux call and terminal bytes
//!   of its own making, and calls its event entries: each must be Denied
//!   (a launcher's START is served; waiting for that process is left to
//!   the process that started it: `personality-wait <server> <pid>` tries
//!   from another);
//! - `driver <vendor> <device>`: claims the device, maps its BARs, turns
//!   on bus mastering, binds its interrupt, prints `DRIVER-READY` and
//!   spins until it is killed (needs `rights::DEVICE`).
#![no_std]
#![no_main]
extern crate alloc;

use alloc::string::ToString;
use restable::ResId;
use tessera_api::linux::{self as personality, ctl, pass, shared};
use tessera_rt::abi::{self, Error, LoadPolicy, RegionKind, ResKind, prot};
use tessera_rt::{println, sys};
use user_programs::compose;

/// Where `attachown` leaves its own region (the kernel test looks there).
const OWN_REGION: u64 = 0x3000_0000_0000;
/// The highest user page: the one below the non-canonical hole.
const TOP_PAGE: u64 = 0x7fff_ffff_f000;

/// The resource identifier of process `pid` (kind, index pid, generation 1).
fn process_id(pid: u64) -> u64 {
    ResId::new(ResKind::Process as u8, pid as u32, 1).raw()
}

/// (program, space) of this process, from its own description.
fn my_parts() -> Result<(u64, u64), Error> {
    let info = sys::res_query(process_id(sys::getpid()))?;
    Ok((info.links[0], info.links[1]))
}

fn refused(what: &str, got: Result<u64, Error>, want: &[Error]) -> i32 {
    match got {
        Err(e) if want.contains(&e) => {
            println!("attack: {what}: refused ({e:?})");
            0
        }
        other => {
            println!("attack: FAILED {what}: {other:?}, not one of {want:?}");
            1
        }
    }
}

/// A process named `victim` whose memory is this program's: it may run
/// (it is the caller's own to build), but its parts must not be pooled.
fn poison(victim: &str) -> Result<i32, Error> {
    let named = sys::res_create(
        ResKind::Program,
        sys::plate_find(&alloc::format!("bin/{victim}"))?,
        0,
        0,
        0,
    )?;
    let mine = sys::res_create(ResKind::Program, sys::plate_find("bin/attack")?, 0, 0, 0)?;
    let (space, area) = compose::image(mine)?;
    sys::work_area_write(area, alloc::format!("{victim}\0").as_bytes())?;
    let process = sys::res_create(ResKind::Process, named, space, area, LoadPolicy::Eager as u64)?;
    sys::res_create(ResKind::Computation, process, abi::ANY_CPU, 0, 0)?;
    let pid = sys::process_start(process)?;
    // Whatever it runs ends now.
    sys::sleep_ns(20_000_000);
    let _ = sys::kill(pid);
    let status = sys::wait(pid)?;
    println!("attack: a process named {victim} built of my segments ended with {status:#x}");
    Ok(0)
}

fn ownspace() -> Result<i32, Error> {
    let (program, space) = my_parts()?;
    let area = compose::work_area()?;
    sys::work_area_write(area, b"attack\0")?;
    let got = sys::res_create(ResKind::Process, program, space, area, LoadPolicy::Eager as u64);
    Ok(refused(
        "a process of my own live space",
        got,
        &[Error::Busy, Error::Denied],
    ))
}

fn attachown() -> Result<i32, Error> {
    let (_, space) = my_parts()?;
    let region = compose::region(1, RegionKind::Data, prot::READ | prot::WRITE)?;
    sys::res_create(ResKind::VirtualUserSpace, space, region, OWN_REGION, 0)?;
    // SAFETY: the page was just attached, writable, at this address.
    unsafe { (OWN_REGION as *mut u64).write_volatile(0x5eed_0fa7_7ac4) };
    println!("attack: my own region is attached at {OWN_REGION:#x}");
    Ok(0)
}

fn program() -> Result<i32, Error> {
    let (program, _) = my_parts()?;
    Ok(refused(
        "deleting my program",
        sys::res_delete(program),
        &[Error::Denied, Error::Busy],
    ))
}

fn top() -> Result<i32, Error> {
    let (_, space) = my_parts()?;
    let region = compose::region(1, RegionKind::Text, prot::READ | prot::EXEC)?;
    let got = sys::res_create(ResKind::VirtualUserSpace, space, region, TOP_PAGE, 0);
    let _ = sys::res_delete(region);
    Ok(refused("a region in the highest user page", got, &[Error::Invalid]))
}

fn regions() -> Result<i32, Error> {
    const MAX: usize = 2000;
    // The pool's records once now, so that this program's own heap has
    // room for them later: past its limit it can grow no more, and the
    // question is whether the kernel still serves.
    let _ = sys::inspect_all::<abi::PoolRecord>(0);
    let mut ids = [0u64; MAX];
    let mut n = 0;
    let mut stop = None;
    while n < MAX {
        match compose::region(1 << 18, RegionKind::Heap, prot::READ | prot::WRITE) {
            Ok(id) => {
                ids[n] = id;
                n += 1;
            }
            Err(e) => {
                stop = Some(e);
                break;
            }
        }
    }
    // The kernel must still serve what allocates on its side.
    let pool = sys::inspect_all::<abi::PoolRecord>(0).map(|r| r.len() as u64);
    let info = sys::sys_info().map(|i| i.heap_used);
    println!("attack: {n} regions of 1 GiB, then {stop:?}; pool {pool:?}, heap {info:?}");
    for &id in &ids[..n] {
        let _ = sys::res_delete(id);
    }
    let mut status = refused(
        "1 GiB regions without end",
        stop.map_or(Ok(n as u64), Err),
        &[Error::Limit, Error::NoMemory],
    );
    if pool.is_err() || info.is_err() {
        println!("attack: FAILED the kernel stopped serving: {pool:?} {info:?}");
        status = 1;
    }
    Ok(status)
}

fn requests(target: u64) -> Result<i32, Error> {
    const MAX: u64 = 100_000;
    let msg = [0u8; 16];
    let mut reply = [0u8; 16];
    let mut sent = 0;
    let got = loop {
        if sent == MAX {
            break Ok(sent);
        }
        // SAFETY: the reply buffer lives until this program ends.
        match unsafe { sys::request(target, 1, &msg, reply.as_mut_ptr(), reply.len()) } {
            Ok(_) => sent += 1,
            Err(e) => break Err(e),
        }
    };
    println!("attack: {sent} requests queued at {target}");
    Ok(refused("requests without end", got, &[Error::Busy, Error::Limit]))
}

fn query() -> Result<i32, Error> {
    let records = sys::inspect_all::<abi::ResRecord>(ResKind::VirtualRegion as u64)?;
    let Some(theirs) = records.iter().find(|r| r.owner == 0) else {
        println!("attack: FAILED no region of the kernel's to look at");
        return Ok(1);
    };
    Ok(refused(
        "describing the kernel's region",
        sys::res_query(theirs.id).map(|i| i.bytes),
        &[Error::Denied],
    ))
}

/// One call to the shared server `server` (`entry`, the message `words`).
fn to_shared(server: u64, entry: u64, words: &[u64]) -> Result<u64, Error> {
    let mut reply = [0u8; 64];
    sys::call(server, entry, &personality::bytes(words), &mut reply).map(|n| n as u64)
}

fn personality() -> Result<i32, Error> {
    let server = sys::spawn("linux", &["--server"], &abi::SpawnOptions::DEFAULT)?;
    if sys::wait_for_name(personality::NAME) != server {
        println!("attack: FAILED the shared server {server} did not register");
        return Ok(1);
    }
    let denied = |what, entry, words: &[u64]| refused(what, to_shared(server, entry, words), &[Error::Denied]);
    let mut status = 0;
    status |= denied("listing the Linux processes", shared::CTL, &[ctl::PIDS]);
    status |= denied("killing Linux process 1", shared::CTL, &[ctl::KILL, 1, 1, 9]);
    status |= denied("reaping Linux process 1", shared::CTL, &[ctl::WAIT, 1]);
    status |= denied(
        "a made-up Linux wait4",
        shared::PASS,
        &[pass::WAIT4, 1, u64::MAX, 0, 0, 0],
    );
    status |= denied("bytes for the terminal", shared::TTY_WRITE, &[0x0a78]);
    status |= denied("a call on the alarm's entry", shared::TICK, &[0]);
    status |= denied("a call on the console's entry", shared::INPUT, &[0]);
    // A launcher's request is anyone's: a new Linux process, whose end
    // only its starter may wait for.
    let mut reply = [0u8; 64];
    let got = sys::call(server, shared::CTL, &personality::bytes(&[ctl::START, 1]), &mut reply)?;
    let words = personality::words(&reply[..got]);
    let pid = personality::word(&words, 0);
    if got < 16 || pid == 0 || pid > u32::MAX as u64 {
        println!("attack: FAILED a launcher's START was not served: {words:?}");
        status = 1;
    } else {
        let other = sys::spawn(
            "attack",
            &["personality-wait", &server.to_string(), &pid.to_string()],
            &abi::SpawnOptions::DEFAULT,
        )?;
        if sys::wait(other)? != 0 {
            status = 1;
        }
    }
    let _ = sys::kill(server);
    let _ = sys::wait(server);
    Ok(status)
}

fn personality_wait(server: u64, pid: u64) -> Result<i32, Error> {
    Ok(refused(
        "waiting for a process another launcher started",
        to_shared(server, shared::CTL, &[ctl::WAIT, pid]),
        &[Error::Denied],
    ))
}

fn driver(vendor: u64, device: u64) -> Result<i32, Error> {
    let dev = sys::device_find(vendor, device, 0)?;
    sys::device_claim(dev)?;
    let mut record = abi::DeviceRecord::default();
    sys::device_info(dev, &mut record)?;
    for bar in 0..6 {
        if record.bars[bar].size != 0 && record.bars[bar].flags & abi::BAR_IO == 0 {
            let at = sys::device_map(dev, bar as u64)?;
            println!("attack: BAR{bar} at {at:#x}");
        }
    }
    // Memory decoding and bus mastering on: the device may now do DMA.
    let command = sys::device_config_read(dev, 4, 2)?;
    sys::device_config_write(dev, 4, 2, command | 0x6)?;
    let irq = sys::device_irq(dev, 1);
    let dma = sys::ica_create(1)
        .and_then(sys::container_addr)
        .and_then(|a| sys::dma_address(a, 4096));
    println!("DRIVER-READY interrupt {irq:?} dma {dma:?}");
    loop {
        core::hint::spin_loop();
    }
}

fn main(args: &[&str]) -> i32 {
    let arg = |i: usize| args.get(i).copied().unwrap_or("");
    let number = |i: usize| {
        let s = arg(i);
        match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap_or(0),
            None => s.parse().unwrap_or(0),
        }
    };
    let result = match arg(1) {
        "poison" => poison(arg(2)),
        "ownspace" => ownspace(),
        "attachown" => attachown(),
        "program" => program(),
        "top" => top(),
        "regions" => regions(),
        "requests" => requests(number(2)),
        "query" => query(),
        "driver" => driver(number(2), number(3)),
        "personality" => personality(),
        "personality-wait" => personality_wait(number(2), number(3)),
        "nothing" => Ok(0),
        other => {
            println!("attack: no case {other:?}");
            Ok(2)
        }
    };
    match result {
        Ok(status) => status,
        Err(e) => {
            println!("attack: FAILED {}: {e:?}", arg(1));
            1
        }
    }
}
tessera_rt::entry!(main);
