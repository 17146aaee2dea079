//! The inspector's reports: resources by kind, the pool's contents and
//! memory, the mediator's counters and recent trace, as text for the shell
//! (`inspect` system call).

use abi::Error;
use alloc::string::String;
use core::fmt::Write;
use resource::{Kind, ResId, mediator, plate, pool, program, vregion, vspace};

fn kind_name(k: u8) -> &'static str {
    Kind::from_u64(k as u64).map_or("?", |k| k.name())
}

pub fn report(topic: &str) -> Result<String, Error> {
    let mut out = String::new();
    let words: alloc::vec::Vec<&str> = topic.split_ascii_whitespace().collect();
    match words.as_slice() {
        ["resources"] | [] => resources(&mut out),
        ["resources", kind] => resources_of(&mut out, kind)?,
        ["pool"] => pool_report(&mut out),
        ["trace"] => trace(&mut out, 20),
        ["trace", n] => trace(&mut out, n.parse().map_err(|_| Error::Invalid)?),
        ["counters"] => counters(&mut out),
        ["servers"] => servers(&mut out),
        _ => return Err(Error::Invalid),
    }
    Ok(out)
}

fn resources(out: &mut String) {
    let _ = writeln!(out, "{:<20} {:>6}", "kind", "live");
    for (kind, n) in resource::counts() {
        let _ = writeln!(out, "{:<20} {:>6}", kind.name(), n);
    }
    let _ = writeln!(
        out,
        "mediator: {} operations so far ('inspect counters', 'inspect trace')",
        mediator::total_calls()
    );
}

fn resources_of(out: &mut String, kind: &str) -> Result<(), Error> {
    let _ = writeln!(out, "{:<14} {:>6}  detail", "id", "owner");
    match kind {
        "plate" | "plates" => plate::list(&mut |id, name, bytes| {
            let _ = writeln!(out, "{:<14?} {:>6}  {name} ({bytes} bytes)", id, 0);
        }),
        "program" | "programs" => program::list(&mut |id, e| {
            let (t, d, b) = e.value.sizes();
            let _ = writeln!(
                out,
                "{:<14?} {:>6}  {} entry {:#x} text {t} data {d} bss {b} (users {})",
                id,
                e.owner,
                e.value.name,
                e.value.entry,
                alloc::sync::Arc::strong_count(&e.value) - 1
            );
        }),
        "space" | "spaces" => vspace::list(&mut |id, owner, regions, bytes| {
            let _ = writeln!(
                out,
                "{:<14?} {:>6}  {regions} regions attached, {} KiB",
                id,
                owner,
                bytes / 1024
            );
        }),
        "region" | "regions" => vregion::list(&mut |id, owner, pages, place| {
            let _ = writeln!(out, "{:<14?} {:>6}  {pages} pages, {place}", id, owner);
        }),
        "attachment" | "attachments" | "userspace" => vspace::list_attachments(&mut |id, l, w| {
            let _ = write!(
                out,
                "{:<14?} {:>6}  region {:?} in space {:?} at {:#x}",
                id, w.owner, l.region, w.space, w.base
            );
            let _ = if l.container == ResId::NONE {
                writeln!(out)
            } else {
                writeln!(out, ", held by container {:?}", l.container)
            };
        }),
        "process" | "processes" => {
            for pid in ipc::process::pids() {
                if let Some(p) = resource::proc::get(pid) {
                    let _ = writeln!(
                        out,
                        "{:<14?} {:>6}  {} program {:?} space {:?}",
                        resource::process::id_of(pid),
                        p.parent.load(core::sync::atomic::Ordering::Relaxed) as i64,
                        p.name,
                        p.program,
                        p.space_id
                    );
                }
            }
        }
        "physical" => {
            let _ = writeln!(out, "{} runs", resource::of(Kind::PhysicalMemory).count());
        }
        _ => return Err(Error::Invalid),
    }
    Ok(())
}

fn pool_report(out: &mut String) {
    let s = pool::settings();
    let _ = writeln!(
        out,
        "reuse {}, reduce {} (unused {} ms, every {} ms), {} add rule(s)",
        if s.reuse { "on" } else { "off" },
        if s.reduce { "on" } else { "off" },
        s.unused_ns / 1_000_000,
        s.interval_ns / 1_000_000,
        s.add.len()
    );
    for rule in &s.add {
        let _ = writeln!(out, "  add {rule:?}");
    }
    let _ = writeln!(
        out,
        "{:<42} {:>5} {:>9} {:>7} {:>7} {:>6} {:>7}",
        "pool kind (seed 000, table 1)", "count", "KiB", "hits", "misses", "added", "reduced"
    );
    let report = pool::report();
    let mut total = 0;
    for ((_, name), r) in pool::POOL_KINDS.iter().zip(report.iter()) {
        total += r.bytes;
        let _ = writeln!(
            out,
            "{:<42} {:>5} {:>9} {:>7} {:>7} {:>6} {:>7}",
            name,
            r.count,
            r.bytes / 1024,
            r.stats.hits,
            r.stats.misses,
            r.stats.added,
            r.stats.reduced
        );
    }
    let _ = writeln!(out, "pool memory: {} KiB", total / 1024);
}

fn trace(out: &mut String, n: usize) {
    let _ = writeln!(
        out,
        "{:>6} {:>6} {:<20} {:<18} {:<14} {:>7} {:>8}",
        "seq", "caller", "kind", "operation", "id", "result", "cycles"
    );
    mediator::trace(n, &mut |e| {
        let _ = writeln!(
            out,
            "{:>6} {:>6} {:<20} {:<18} {:<14?} {:>7} {:>8}",
            e.seq,
            e.caller,
            kind_name(e.kind),
            mediator::OP_NAMES[e.op as usize],
            ResId::from_raw(e.id),
            e.result,
            e.cycles
        );
    });
}

fn servers(out: &mut String) {
    use core::sync::atomic::Ordering::Relaxed;
    let _ = writeln!(
        out,
        "{:<14} {:>5} {:>6} {:>5} {:>9} {:>9} {:>9} {:>6} {:>5} {:>6}",
        "name", "pid", "placed", "ran", "accepted", "answered", "forwarded", "queued", "held", "ring"
    );
    ipc::names::list(&mut |name, pid| {
        let Some(p) = resource::proc::get(pid) else {
            return;
        };
        let comp = p.computation.lock().as_ref().and_then(|c| c.1.upgrade());
        let (placed, ran) = comp.map_or((String::from("-"), -1), |c| {
            let placed = match c.affinity.load(Relaxed) {
                kcore::computation::ANY_CPU => String::from("any"),
                cpu => alloc::format!("{cpu}"),
            };
            (placed, c.last_cpu.load(Relaxed) as i64)
        });
        let (queued, held) = p.port.backlog();
        // Requests it sent through its rings that are not back yet.
        let ring = ipc::rings::in_flight(&p).map_or(String::from("-"), |n| alloc::format!("{n}"));
        let _ = writeln!(
            out,
            "{name:<14} {pid:>5} {placed:>6} {ran:>5} {:>9} {:>9} {:>9} {queued:>6} {held:>5} {ring:>6}",
            p.port.accepted.load(Relaxed),
            p.port.answered.load(Relaxed),
            p.port.forwarded.load(Relaxed),
        );
    });
    let _ = writeln!(
        out,
        "rendezvous completed: {}, bytes copied between processes: {}, direct switches: {}",
        ipc::rendezvous::CALLS.load(Relaxed),
        ipc::rendezvous::BYTES_COPIED.load(Relaxed),
        sched::DIRECT_SWITCHES.load(Relaxed)
    );
}

fn counters(out: &mut String) {
    let _ = writeln!(
        out,
        "{:<20} {:<18} {:>9} {:>7} {:>12}",
        "kind", "operation", "calls", "errors", "cycles/call"
    );
    mediator::counters(&mut |k, op, calls, errors, cycles| {
        let _ = writeln!(
            out,
            "{:<20} {:<18} {:>9} {:>7} {:>12}",
            kind_name(k),
            op,
            calls,
            errors,
            cycles / calls.max(1)
        );
    });
}
