//! Devices as resources, tried as a hostile driver would: the right to
//! claim, bridges never claimable, one holder at a time, BARs mapped once
//! and only memory ones, configuration space where a driver may write and
//! nowhere else, DMA addresses only of present contiguous memory and only
//! for a holder, a device's registers never copied by the kernel, and a
//! holder killed mid-work leaving the device quiet and claimable again.
//! Needs `rights::DEVICE` (the test gives it); drives QEMU's PCI test
//! device (`pci-testdev`, 1b36:0005: a memory BAR, an I/O BAR, no
//! interrupt), which every test boot has, and checks that the pseudo-NVM
//! (ivshmem, 1af4:1110) is never a driver's: the kernel keeps it. Exits 0
//! if all held.
#![no_std]
#![no_main]

extern crate alloc;

use tessera_api::echo;
use tessera_rt::abi::{self, DeviceRecord, Error, SpawnOptions};
use tessera_rt::ica::Ica;
use tessera_rt::{println, sys};

const TESTDEV: (u64, u64) = (0x1b36, 0x0005);
const IVSHMEM: (u64, u64) = (0x1af4, 0x1110);
const HOST_BRIDGE: (u64, u64) = (0x8086, 0x1237);
const IDE: (u64, u64) = (0x8086, 0x7010);

fn check(ok: bool, what: &str, failures: &mut u32) {
    if !ok {
        println!("devtest: FAILED {what}");
        *failures += 1;
    }
}

fn info(id: u64) -> DeviceRecord {
    let mut r = DeviceRecord::default();
    let _ = sys::device_info(id, &mut r);
    r
}

fn spawn_self(args: &[&str], rights: u64, cpu: u64) -> Result<u64, Error> {
    let options = SpawnOptions {
        rights,
        cpu,
        ..SpawnOptions::DEFAULT
    };
    sys::spawn("devtest", args, &options)
}

/// A child's part: what a process without the right gets.
fn without_right() -> i32 {
    let Ok(id) = sys::device_find(TESTDEV.0, TESTDEV.1, 0) else {
        return 2;
    };
    let page = Ica::create(1);
    let dma = page.as_ref().map(|p| sys::dma_address(p.addr(), 4096));
    let denied = sys::device_claim(id) == Err(Error::Denied) && matches!(dma, Ok(Err(Error::Denied)));
    i32::from(!denied)
}

/// A child's part: claim and map the device, then wait to be killed.
fn hold() -> i32 {
    let Ok(id) = sys::device_find(TESTDEV.0, TESTDEV.1, 0) else {
        return 2;
    };
    if sys::device_claim(id).is_err() || sys::device_map(id, 0).is_err() {
        return 3;
    }
    loop {
        sys::sleep_ns(1_000_000_000);
    }
}

/// Waits (up to about two seconds) until `pid` holds device `id`.
fn wait_holder(id: u64, pid: u64) -> bool {
    for _ in 0..2000 {
        if info(id).holder == pid {
            return true;
        }
        sys::sleep_ns(1_000_000);
    }
    false
}

fn main(args: &[&str]) -> i32 {
    match args.get(1).copied() {
        Some("without-right") => return without_right(),
        Some("hold") => return hold(),
        _ => {}
    }
    let mut failures = 0;
    let f = &mut failures;

    // Finding and describing: anyone may.
    let Ok(dev) = sys::device_find(TESTDEV.0, TESTDEV.1, 0) else {
        println!("devtest: FAILED no pci-testdev device");
        return 1;
    };
    let rec = info(dev);
    check(
        rec.vendor == TESTDEV.0 && rec.device == TESTDEV.1 && rec.holder == 0 && rec.bars[0].size != 0,
        "the test device's record",
        f,
    );
    check(
        sys::device_find(0xffff, 0xffff, 0) == Err(Error::NotFound),
        "no such device",
        f,
    );
    check(
        sys::device_find(TESTDEV.0, TESTDEV.1, 99) == Err(Error::NotFound),
        "no 100th device",
        f,
    );
    let forged = dev ^ (1 << 40);
    check(
        sys::device_info(forged, &mut DeviceRecord::default()) == Err(Error::NotFound),
        "a forged id is found nowhere",
        f,
    );
    check(
        sys::device_claim(forged) == Err(Error::NotFound),
        "a forged id is not claimed",
        f,
    );
    let program = sys::plate_find("bin/tiny").unwrap_or(0);
    check(
        sys::device_claim(program) == Err(Error::Invalid),
        "another kind's id is not claimed",
        f,
    );

    // The right to claim.
    let child = spawn_self(&["without-right"], 0, abi::ANY_CPU);
    check(
        child.and_then(sys::wait) == Ok(0),
        "a process without the right claims nothing and learns no address",
        f,
    );
    let bridge = sys::device_find(HOST_BRIDGE.0, HOST_BRIDGE.1, 0).unwrap_or(0);
    check(
        sys::device_claim(bridge) == Err(Error::Denied),
        "a bridge is never claimed",
        f,
    );
    let ivshmem = sys::device_find(IVSHMEM.0, IVSHMEM.1, 0);
    check(
        ivshmem.and_then(sys::device_claim) == Err(Error::Denied),
        "the pseudo-NVM is the kernel's, never a driver's",
        f,
    );

    // Claimed: once, by one holder.
    check(sys::device_claim(dev).is_ok(), "the holder claims", f);
    check(sys::device_claim(dev) == Err(Error::Invalid), "claiming twice", f);
    check(info(dev).holder == sys::getpid(), "the record names the holder", f);

    // BARs: memory ones, once each.
    let regs = sys::device_map(dev, 0);
    check(regs.is_ok(), "BAR 0 is mapped", f);
    check(sys::device_map(dev, 0) == Err(Error::Busy), "a BAR is mapped once", f);
    for bar in [1, 6, 99, u64::MAX] {
        check(sys::device_map(dev, bar) == Err(Error::Invalid), "no such BAR", f);
    }
    if let Ok(ide) = sys::device_find(IDE.0, IDE.1, 0) {
        let io = sys::device_claim(ide).and_then(|()| sys::device_map(ide, 4));
        check(io == Err(Error::Invalid), "an I/O BAR is not mapped", f);
        check(sys::res_delete(ide).is_ok(), "the IDE controller given back", f);
    }

    // Configuration space.
    let id_word = rec.device << 16 | rec.vendor;
    check(sys::device_config_read(dev, 0, 4) == Ok(id_word), "config read", f);
    for (off, width) in [(0, 3), (1, 2), (2, 4), (256, 1), (255, 2), (u64::MAX, 4), (0, 8)] {
        check(
            sys::device_config_read(dev, off, width) == Err(Error::Invalid),
            "a bad config read",
            f,
        );
    }
    for off in [0x00, 0x08, 0x10, 0x18, 0x20, 0x30, 0x3c] {
        check(
            sys::device_config_write(dev, off, 4, 0) == Err(Error::Denied),
            "config outside the driver's part is refused",
            f,
        );
    }
    let bar0 = sys::device_config_read(dev, 0x10, 4);
    check(bar0 == Ok(rec.bars[0].base), "a refused BAR write changed nothing", f);
    let cmd = sys::device_config_read(dev, 4, 2).unwrap_or(0);
    check(
        sys::device_config_write(dev, 4, 2, cmd).is_ok(),
        "the command register is the driver's",
        f,
    );
    check(
        sys::device_config_write(dev, 4, 1, 0x100) == Err(Error::Invalid),
        "a value wider than the write",
        f,
    );

    // Interrupts: this device has no pin; entries past 60 never.
    check(sys::device_irq(dev, 61) == Err(Error::Invalid), "entry 61", f);
    check(
        sys::device_irq(dev, 3) == Err(Error::NoSys),
        "a device without a pin",
        f,
    );
    check(
        sys::device_irq_done(dev) == Err(Error::Invalid),
        "done without a binding",
        f,
    );

    // DMA addresses: present, contiguous memory of a holder's.
    match Ica::create(2) {
        Ok(ica) => {
            let a = sys::dma_address(ica.addr(), 8192);
            check(a.is_ok_and(|p| p != 0 && p % 4096 == 0), "an ICA's address", f);
            check(
                sys::dma_address(ica.addr() + 4095, 2) == a.map(|p| p + 4095),
                "an address inside an ICA",
                f,
            );
            check(sys::dma_address(ica.addr(), 8193).is_err(), "past the ICA's end", f);
            check(sys::dma_address(ica.addr(), 0) == Err(Error::Invalid), "zero bytes", f);
        }
        Err(e) => check(false, &alloc::format!("ica_create: {e:?}"), f),
    }
    if let Ok(r) = regs {
        check(
            sys::dma_address(r, 16) == Err(Error::Invalid),
            "a device's registers are not memory",
            f,
        );
        // A device's registers as a message: the server's read of it is
        // refused, nothing crashes.
        if let Ok(server) = sys::spawn_on("echo", &["dev.echo"], abi::ANY_CPU)
            && sys::wait_for_name("dev.echo") == server
        {
            // SAFETY: the mapping is this process's, 256 bytes of registers.
            let msg = unsafe { core::slice::from_raw_parts(r as *const u8, 200) };
            let _ = echo::sum(server, msg);
            check(
                echo::echo(server, b"alive", &mut [0u8; 8]) == Ok(5),
                "the server lives on",
                f,
            );
            sys::stop(server);
        }
    }
    check(sys::dma_address(0x10, 8) == Err(Error::Fault), "unmapped memory", f);
    check(sys::dma_address(u64::MAX - 4, 16).is_err(), "an address that wraps", f);

    // Given back: the holder's mapping goes, the device is free.
    check(sys::res_delete(dev).is_ok(), "the holder gives the device back", f);
    check(info(dev).holder == 0, "nobody holds it", f);
    check(
        sys::device_map(dev, 0) == Err(Error::Denied),
        "no mapping after giving back",
        f,
    );
    check(
        sys::device_config_read(dev, 0, 4) == Err(Error::Denied),
        "no configuration after giving back",
        f,
    );

    // A holder killed mid-work (on every CPU in turn): the device is
    // quiet and free again, and the next claim works.
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    for cpu in 0..cpus {
        let Ok(pid) = spawn_self(&["hold"], abi::rights::DEVICE, cpu) else {
            check(false, "spawn a holder", f);
            continue;
        };
        check(wait_holder(dev, pid), "the holder holds", f);
        let _ = sys::kill(pid);
        let _ = sys::wait(pid);
        let quiet = sys::device_claim(dev).is_ok()
            && sys::device_config_read(dev, 4, 2).is_ok_and(|c| c & 0b110 == 0)
            && sys::res_delete(dev).is_ok();
        check(quiet, "a killed holder's device is quiet and claimable", f);
    }

    println!("devtest: {failures} unexpected result(s)");
    i32::from(failures != 0)
}

tessera_rt::entry!(main);
