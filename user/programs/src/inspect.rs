//! The inspector's reports, formatted from the kernel's records (the
//! `inspect` system call): live resources by kind and the list of one kind,
//! the resource pool, the mediator's trace and counters, the servers and
//! the processors. The shell's `res`, `pool`, `trace`, `counters`,
//! `servers` and `cpus` print them.

use abi::{
    CounterRecord, CpuRecord, CpuTimeRecord, DeviceRecord, Error, IpcTotals, KindCount, PoolKind, PoolRecord,
    RegionPlace, ResKind, ResRecord, ServerRecord, TraceRecord, name_str,
};
use alloc::string::String;
use alloc::vec::Vec;
use restable::ResId;
use tessera_rt::{abi, print, println, sys};

/// A resource identifier as the kernel writes it: kind:index.generation.
fn id(raw: u64) -> String {
    alloc::format!("{:?}", ResId::from_raw(raw))
}

fn kind_name(kind: u64) -> &'static str {
    ResKind::from_u64(kind).map_or("?", ResKind::name)
}

/// The kind a word of `res <kind>` names.
pub fn kind_named(word: &str) -> Option<ResKind> {
    Some(match word {
        "plate" | "plates" => ResKind::Plate,
        "program" | "programs" => ResKind::Program,
        "space" | "spaces" => ResKind::VirtualSpace,
        "region" | "regions" => ResKind::VirtualRegion,
        "attachment" | "attachments" | "userspace" => ResKind::VirtualUserSpace,
        "process" | "processes" => ResKind::Process,
        "physical" => ResKind::PhysicalMemory,
        _ => return None,
    })
}

/// Live resources per kind.
pub fn resources() -> Result<(), Error> {
    let counts = sys::inspect_all::<KindCount>(0)?;
    println!("{:<20} {:>6}", "kind", "live");
    for c in counts {
        println!("{:<20} {:>6}", kind_name(c.kind), c.live);
    }
    println!(
        "mediator: {} operations so far ('counters', 'trace')",
        sys::sys_info()?.resource_ops
    );
    Ok(())
}

/// The resources of one kind.
pub fn resources_of(kind: ResKind) -> Result<(), Error> {
    let list = sys::inspect_all::<ResRecord>(kind as u64)?;
    println!("{:<14} {:>6}  detail", "id", "owner");
    for r in &list {
        let name = name_str(&r.name);
        let detail = match kind {
            ResKind::Plate => alloc::format!("{name} ({} bytes)", r.bytes),
            ResKind::Program => alloc::format!(
                "{name} entry {:#x} text {} data {} bss {} (users {})",
                r.value,
                r.detail[0],
                r.detail[1],
                r.detail[2],
                r.detail[3]
            ),
            ResKind::VirtualSpace => alloc::format!("{} regions attached, {} KiB", r.value, r.bytes / 1024),
            ResKind::VirtualRegion => alloc::format!("{} pages, {}", r.value, place(r.detail[0])),
            ResKind::VirtualUserSpace => {
                let mut d = alloc::format!(
                    "region {} in space {} at {:#x}",
                    id(r.links[0]),
                    id(r.links[1]),
                    r.value
                );
                if r.links[2] != 0 {
                    d += &alloc::format!(", held by container {}", id(r.links[2]));
                }
                d
            }
            ResKind::Process => alloc::format!(
                "{name} pid {} program {} space {}",
                r.value,
                id(r.links[0]),
                id(r.links[1])
            ),
            ResKind::PhysicalMemory => alloc::format!("{} pages", r.value),
            _ => String::new(),
        };
        // A process's owner is its parent; an orphan has none.
        let owner = if r.owner == u64::MAX { -1 } else { r.owner as i64 };
        println!("{:<14} {:>6}  {detail}", id(r.id), owner);
    }
    if kind == ResKind::PhysicalMemory {
        println!("{} runs", list.len());
    }
    Ok(())
}

fn place(code: u64) -> &'static str {
    match RegionPlace::from_u64(code) {
        Some(RegionPlace::Detached) => "detached",
        Some(RegionPlace::InSpace) => "in a space",
        Some(RegionPlace::InKernel) => "in the kernel",
        Some(RegionPlace::InContainer) => "a container's",
        Some(RegionPlace::Moving) => "moving",
        None => "?",
    }
}

/// Seed 000's table 1, in its order.
fn pool_kind_name(kind: u64) -> &'static str {
    match PoolKind::from_u64(kind) {
        Some(PoolKind::WorkArea) => "work area (virtual kernel space)",
        Some(PoolKind::Space) => "virtual space",
        Some(PoolKind::Region) => "virtual region (by size)",
        Some(PoolKind::Program) => "program",
        Some(PoolKind::Text) => "text region with content",
        Some(PoolKind::Full) => "virtual space with all regions attached",
        None => "?",
    }
}

/// The program a plate holds, by the name the pool language uses for it.
fn program_of(plate: u64, plates: &[ResRecord]) -> String {
    let file = plates.iter().find(|p| p.id == plate).map_or("?", |p| name_str(&p.name));
    String::from(file.strip_prefix("bin/").unwrap_or(file))
}

/// The pool: its settings and add rules, then what it holds and did by kind.
pub fn pool() -> Result<(), Error> {
    let config = crate::pool::current()?;
    let s = config.settings;
    let on = |v: u64| if v != 0 { "on" } else { "off" };
    println!(
        "reuse {}, reduce {} (unused {} ms, every {} ms), {} add rule(s)",
        on(s.reuse),
        on(s.reduce),
        s.unused_ns / 1_000_000,
        s.interval_ns / 1_000_000,
        config.rules.len()
    );
    let plates = if config.rules.iter().any(|r| r.plate != 0) {
        sys::inspect_all::<ResRecord>(ResKind::Plate as u64)?
    } else {
        Vec::new()
    };
    for r in &config.rules {
        println!("  {}", tessera_conf::pool::rule_line(r, &program_of(r.plate, &plates)));
    }
    println!(
        "{:<42} {:>5} {:>9} {:>7} {:>7} {:>6} {:>7}",
        "pool kind (seed 000, table 1)", "count", "KiB", "hits", "misses", "added", "reduced"
    );
    let mut total = 0;
    for r in sys::inspect_all::<PoolRecord>(0)? {
        total += r.bytes;
        println!(
            "{:<42} {:>5} {:>9} {:>7} {:>7} {:>6} {:>7}",
            pool_kind_name(r.kind),
            r.count,
            r.bytes / 1024,
            r.hits,
            r.misses,
            r.added,
            r.reduced
        );
    }
    println!("pool memory: {} KiB", total / 1024);
    Ok(())
}

/// The mediator's last `n` operations, oldest first.
pub fn trace(n: u64) -> Result<(), Error> {
    let entries = sys::inspect_all::<TraceRecord>(n)?;
    println!(
        "{:>6} {:>6} {:<20} {:<18} {:<14} {:>7} {:>8}",
        "seq", "caller", "kind", "operation", "id", "result", "cycles"
    );
    for e in entries {
        println!(
            "{:>6} {:>6} {:<20} {:<18} {:<14} {:>7} {:>8}",
            e.seq,
            e.caller,
            kind_name(e.kind),
            name_str(&e.op),
            id(e.id),
            e.result,
            e.cycles
        );
    }
    Ok(())
}

/// The mediator's operations by kind and operation.
pub fn counters() -> Result<(), Error> {
    let counters = sys::inspect_all::<CounterRecord>(0)?;
    println!(
        "{:<20} {:<18} {:>9} {:>7} {:>12}",
        "kind", "operation", "calls", "errors", "cycles/call"
    );
    for c in counters {
        println!(
            "{:<20} {:<18} {:>9} {:>7} {:>12}",
            kind_name(c.kind),
            name_str(&c.op),
            c.calls,
            c.errors,
            c.cycles / c.calls.max(1)
        );
    }
    Ok(())
}

/// The registered servers: where each is placed and ran, what it served.
pub fn servers() -> Result<(), Error> {
    let servers = sys::inspect_all::<ServerRecord>(0)?;
    let mut totals = [IpcTotals::default()];
    sys::inspect(0, 0, &mut totals)?;
    println!(
        "{:<14} {:>5} {:>6} {:>5} {:>9} {:>9} {:>9} {:>6} {:>5} {:>6}",
        "name", "pid", "placed", "ran", "accepted", "answered", "forwarded", "queued", "held", "ring"
    );
    for s in servers {
        let (placed, ran) = match (s.alive, s.affinity) {
            (0, _) => (String::from("-"), -1),
            (_, abi::ANY_CPU) => (String::from("any"), s.last_cpu as i64),
            (_, cpu) => (alloc::format!("{cpu}"), s.last_cpu as i64),
        };
        let ring = if s.in_flight == u64::MAX {
            String::from("-")
        } else {
            alloc::format!("{}", s.in_flight)
        };
        println!(
            "{:<14} {:>5} {placed:>6} {ran:>5} {:>9} {:>9} {:>9} {:>6} {:>5} {ring:>6}",
            name_str(&s.name),
            s.pid,
            s.accepted,
            s.answered,
            s.forwarded,
            s.queued,
            s.held
        );
    }
    let t = totals[0];
    println!(
        "rendezvous completed: {}, bytes copied between processes: {}, direct switches: {}",
        t.calls, t.bytes_copied, t.direct_switches
    );
    Ok(())
}

/// The processors: timer ticks and calls served for other CPUs.
pub fn cpus() -> Result<(), Error> {
    let cpus = sys::inspect_all::<CpuRecord>(0)?;
    println!(
        "{} CPUs online, TSC {} MHz",
        cpus.len(),
        sys::clock().tsc_hz / 1_000_000
    );
    for c in cpus {
        println!(
            "  cpu {:2}  apic {:2}  ticks {:8}  calls served {}",
            c.index, c.apic_id, c.ticks, c.calls_served
        );
    }
    Ok(())
}

/// CPU time by process (`Topic::CpuTimes`): every live process, the
/// ended ones summed by group, the idle computations; nanoseconds (under
/// icount, instructions), with the kernel's part. One line each, for
/// programs to read (`/proc/tessera/cpu`): `pid parent kind count ns
/// kernel_ns name`, kind `live`/`ended` and `linux`/`forked`/`native`, or
/// `idle`.
pub fn cpu_times() -> Result<(), Error> {
    let records = sys::inspect_all::<CpuTimeRecord>(0)?;
    println!("pid parent kind count ns kernel_ns name");
    for r in records {
        let kind = if r.flags & abi::CPU_IDLE != 0 {
            "idle"
        } else {
            let alive = if r.flags & abi::CPU_LIVE != 0 { "live" } else { "ended" };
            let how = if r.flags & abi::CPU_FORKED != 0 {
                "forked"
            } else if r.flags & abi::CPU_LINUX != 0 {
                "linux"
            } else {
                "native"
            };
            &*alloc::format!("{alive}/{how}")
        };
        println!(
            "{} {} {kind} {} {} {} {}",
            r.pid,
            r.parent,
            r.count,
            r.ns,
            r.kernel_ns,
            name_str(&r.name)
        );
    }
    Ok(())
}

/// The PCI functions: where they are, what they are, who drives them.
pub fn devices() -> Result<(), Error> {
    let devices = sys::inspect_all::<DeviceRecord>(0)?;
    println!("{} PCI functions", devices.len());
    for d in devices {
        let (bus, dev, func) = (d.bdf >> 8, (d.bdf >> 3) & 0x1f, d.bdf & 7);
        print!(
            "  {bus:02x}:{dev:02x}.{func}  {:04x}:{:04x}  class {:06x}",
            d.vendor, d.device, d.class
        );
        if d.pin != 0 {
            print!("  INT{} irq {}", (b'A' + (d.pin as u8 - 1) % 4) as char, d.line);
        }
        if d.msix != 0 {
            print!("  msi-x {}", d.msix);
        }
        match d.holder {
            0 => println!(),
            pid => println!("  driver {pid}, {} interrupts", d.interrupts),
        }
        for (i, b) in d.bars.iter().enumerate().filter(|(_, b)| b.size != 0) {
            let kind = if b.flags & abi::BAR_IO != 0 { "io " } else { "mem" };
            println!("      bar {i} {kind} {:#x} size {:#x}", b.base, b.size);
        }
    }
    Ok(())
}

/// The NVM store: its room, and its text files with the regions mapping
/// each (seed 001).
pub fn nvm() -> Result<(), Error> {
    let Some(s) = sys::inspect_all::<abi::NvmStoreInfo>(0)?.first().copied() else {
        println!("no NVM store on this machine");
        return Ok(());
    };
    println!(
        "NVM: {} MiB at {:#x}; {} of {} pages free (largest run {}), {} of {} files, change {}{}",
        s.size >> 20,
        s.base,
        s.free_pages,
        s.data_pages,
        s.largest_free_run,
        s.files,
        s.capacity,
        s.sequence,
        if s.busy != 0 { ", a change is running" } else { "" }
    );
    if s.orphaned_pages > 0 {
        println!("  {} pages of replaced or deleted files still mapped", s.orphaned_pages);
    }
    println!("  {:>10} {:>7} {:>16} {:>5} NAME", "BYTES", "PAGES", "CRC-64", "USERS");
    for f in sys::inspect_all::<abi::NvmRecord>(0)? {
        println!(
            "  {:>10} {:>7} {:016x} {:>5} {}",
            f.len,
            f.pages,
            f.crc,
            f.users,
            name_str(&f.name)
        );
    }
    Ok(())
}
