//! The inspector's records (`inspect` system call): resources by kind, the
//! pool's settings, contents and memory, the mediator's counters and recent
//! trace, the servers and the processors, as arrays of `abi` records. User
//! space formats them (the shell's `res`, `pool`, `trace`, `servers` ...).
//!
//! A topic may have more records than one call returns: a call names the
//! first it wants (`start`) and gets how many there are, so the caller
//! pages through them. Records are gathered into a buffer reserved before
//! any table is locked, and copied out after.

use abi::{
    CounterRecord, CpuRecord, CpuTimeRecord, Error, INSPECT_MAX, IpcTotals, KindCount, PoolRecord, PoolRule,
    PoolSettings, ResRecord, ServerRecord, Topic, TraceRecord, name_field,
};
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use kcore::uaccess::{self, Pod, UserRange};
use resource::{Kind, ResId, mediator, physmem, plate, pool, program, vregion, vspace};

/// The window of a topic's records one call returns, and their count.
pub struct Page<T> {
    start: u64,
    capacity: usize,
    items: Vec<T>,
    total: u64,
}

impl<T> Page<T> {
    pub fn new(start: u64, capacity: usize) -> Result<Page<T>, Error> {
        let mut items = Vec::new();
        items.try_reserve_exact(capacity).map_err(|_| Error::NoMemory)?;
        Ok(Page {
            start,
            capacity,
            items,
            total: 0,
        })
    }

    /// The first INSPECT_MAX records (for the kernel's own tests).
    pub fn first() -> Result<Page<T>, Error> {
        Page::new(0, INSPECT_MAX as usize)
    }

    /// Counts one record, and makes and keeps it if it is in the window
    /// (never allocating: the room was reserved at the start).
    fn offer(&mut self, make: impl FnOnce() -> T) {
        if self.total >= self.start && self.items.len() < self.capacity {
            self.items.push(make());
        }
        self.total += 1;
    }

    pub fn items(&self) -> &[T] {
        &self.items
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

/// The `inspect` system call: fills `out` with the topic's records from
/// `start` on, and returns how many there are.
pub fn serve(topic: Topic, arg: u64, start: u64, out: u64, capacity: u64, size: u64) -> Result<u64, Error> {
    let w = Window {
        start,
        out,
        capacity,
        size,
    };
    match topic {
        Topic::Counts => w.send(counts),
        Topic::Resources => w.try_send(|p| resources(p, arg)),
        Topic::PoolSettings => w.send(pool_settings),
        Topic::PoolRules => w.send(pool_rules),
        Topic::Pool => w.send(pool_contents),
        Topic::Trace => w.send(|p| trace(p, arg)),
        Topic::Counters => w.send(counters),
        Topic::Servers => w.send(servers),
        Topic::Ipc => w.send(ipc_totals),
        Topic::Cpus => w.send(cpus),
        Topic::Devices => w.send(devices),
        Topic::Nvm => w.send(nvm_files),
        Topic::NvmStore => w.send(nvm_store),
        Topic::CpuTimes => w.send(cpu_times),
    }
}

/// Where the caller wants a topic's records: from record `start`, at most
/// `capacity` of `size` bytes each, at user address `out`.
struct Window {
    start: u64,
    out: u64,
    capacity: u64,
    size: u64,
}

impl Window {
    /// Checks the caller's buffer before any work, gathers the records
    /// (`fill`) and copies them out.
    fn try_send<T: Pod>(&self, fill: impl FnOnce(&mut Page<T>) -> Result<(), Error>) -> Result<u64, Error> {
        if self.size != core::mem::size_of::<T>() as u64 || self.capacity > INSPECT_MAX {
            return Err(Error::Invalid);
        }
        UserRange::new(self.out, (self.capacity * self.size) as usize)?;
        let mut page = Page::new(self.start, self.capacity as usize)?;
        fill(&mut page)?;
        uaccess::write_list(self.out, page.items())?;
        Ok(page.total)
    }

    /// `try_send` for records whose gathering cannot fail.
    fn send<T: Pod>(&self, fill: impl FnOnce(&mut Page<T>)) -> Result<u64, Error> {
        self.try_send(|p| {
            fill(p);
            Ok(())
        })
    }
}

pub fn counts(page: &mut Page<KindCount>) {
    for (kind, n) in resource::counts() {
        page.offer(|| KindCount {
            kind: kind as u64,
            live: n as u64,
        });
    }
}

/// The resources of one kind. Kinds without a list (computations, work
/// areas, containers, boxes) are `Invalid`.
pub fn resources(page: &mut Page<ResRecord>, kind: u64) -> Result<(), Error> {
    let record = |id: ResId, owner: u64| ResRecord {
        id: id.raw(),
        owner,
        ..ResRecord::default()
    };
    match Kind::from_u64(kind).ok_or(Error::Invalid)? {
        Kind::Plate => plate::list(&mut |id, name, bytes| {
            page.offer(|| ResRecord {
                bytes,
                name: name_field(name),
                ..record(id, 0)
            })
        }),
        Kind::Program => program::list(&mut |id, e| {
            page.offer(|| {
                let (text, data, bss) = e.value.sizes();
                ResRecord {
                    value: e.value.entry,
                    links: [e.value.plate.raw(), 0, 0],
                    detail: [text, data, bss, alloc::sync::Arc::strong_count(&e.value) as u64 - 1],
                    name: name_field(&e.value.name),
                    ..record(id, e.owner)
                }
            })
        }),
        Kind::VirtualSpace => vspace::list(&mut |id, owner, regions, bytes| {
            page.offer(|| ResRecord {
                bytes,
                value: regions as u64,
                ..record(id, owner)
            })
        }),
        Kind::VirtualRegion => vregion::list(&mut |id, owner, pages, place| {
            page.offer(|| ResRecord {
                value: pages as u64,
                detail: [place as u64, 0, 0, 0],
                ..record(id, owner)
            })
        }),
        Kind::VirtualUserSpace => vspace::list_attachments(&mut |id, l, w| {
            page.offer(|| ResRecord {
                value: w.base,
                links: [l.region.raw(), w.space.raw(), l.container.raw()],
                ..record(id, w.owner)
            })
        }),
        Kind::Process => {
            for pid in ipc::process::pids().unwrap_or_default() {
                if let Some(p) = resource::proc::get(pid) {
                    page.offer(|| ResRecord {
                        value: pid,
                        links: [p.program().raw(), p.space_id().raw(), 0],
                        name: name_field(p.name()),
                        ..record(resource::process::id_of(pid), p.parent())
                    });
                }
            }
        }
        Kind::PhysicalMemory => physmem::list(&mut |id, owner, pages| {
            page.offer(|| ResRecord {
                bytes: pages as u64 * 4096,
                value: pages as u64,
                ..record(id, owner)
            })
        }),
        Kind::Computation
        | Kind::VirtualKernelSpace
        | Kind::Container
        | Kind::ContainerBox
        | Kind::Device
        | Kind::Pipe
        | Kind::FileCache => {
            return Err(Error::Invalid);
        }
    }
    Ok(())
}

pub fn pool_settings(page: &mut Page<PoolSettings>) {
    let s = pool::settings();
    page.offer(|| PoolSettings {
        reuse: u64::from(s.reuse),
        reduce: u64::from(s.reduce),
        unused_ns: s.unused_ns,
        interval_ns: s.interval_ns,
    });
}

pub fn pool_rules(page: &mut Page<PoolRule>) {
    for r in pool::settings().add {
        page.offer(|| PoolRule {
            kind: r.kind as u64,
            plate: r.key.raw(),
            pages: r.pages as u64,
            count: r.count as u64,
        });
    }
}

pub fn pool_contents(page: &mut Page<PoolRecord>) {
    for (kind, r) in pool::PoolKind::ALL.iter().zip(pool::report()) {
        page.offer(|| PoolRecord {
            kind: *kind as u64,
            count: r.count as u64,
            bytes: r.bytes,
            hits: r.stats.hits,
            misses: r.stats.misses,
            added: r.stats.added,
            reduced: r.stats.reduced,
        });
    }
}

pub fn trace(page: &mut Page<TraceRecord>, n: u64) {
    mediator::trace(n.min(INSPECT_MAX) as usize, &mut |e| {
        page.offer(|| TraceRecord {
            seq: e.seq,
            caller: e.caller,
            kind: u64::from(e.kind),
            id: e.id,
            result: e.result,
            cycles: e.cycles,
            op: name_field(mediator::OP_NAMES.get(e.op as usize).copied().unwrap_or("?")),
        })
    });
}

pub fn counters(page: &mut Page<CounterRecord>) {
    mediator::counters(&mut |kind, op, calls, errors, cycles| {
        page.offer(|| CounterRecord {
            kind: u64::from(kind),
            calls,
            errors,
            cycles,
            op: name_field(op),
        })
    });
}

pub fn servers(page: &mut Page<ServerRecord>) {
    ipc::names::list(&mut |name, pid| {
        let Some(p) = resource::proc::get(pid) else {
            return;
        };
        page.offer(|| {
            let (queued, held) = p.port().backlog();
            let mut r = ServerRecord {
                pid,
                accepted: p.port().accepted.load(Relaxed),
                answered: p.port().answered.load(Relaxed),
                forwarded: p.port().forwarded.load(Relaxed),
                queued: queued as u64,
                held: held as u64,
                in_flight: ipc::rings::in_flight(&p).unwrap_or(u64::MAX),
                name: name_field(name),
                ..ServerRecord::default()
            };
            if let Some(c) = p.computation() {
                r.alive = 1;
                r.affinity = match c.affinity.load(Relaxed) {
                    kcore::computation::ANY_CPU => abi::ANY_CPU,
                    cpu => cpu as u64,
                };
                r.last_cpu = c.last_cpu.load(Relaxed) as u64;
            }
            r
        });
    });
}

pub fn ipc_totals(page: &mut Page<IpcTotals>) {
    page.offer(|| IpcTotals {
        calls: ipc::rendezvous::CALLS.load(Relaxed),
        bytes_copied: ipc::rendezvous::BYTES_COPIED.load(Relaxed),
        direct_switches: sched::DIRECT_SWITCHES.load(Relaxed),
    });
}

pub fn cpus(page: &mut Page<CpuRecord>) {
    for c in kcore::cpu::online_cpus() {
        page.offer(|| CpuRecord {
            index: c.index as u64,
            apic_id: u64::from(c.apic_id),
            ticks: c.ticks.load(Relaxed),
            calls_served: c.calls_served.load(Relaxed),
        });
    }
}

pub fn devices(page: &mut Page<abi::DeviceRecord>) {
    for d in resource::device::records() {
        page.offer(|| d);
    }
}

/// The NVM store's text files.
pub fn nvm_files(page: &mut Page<abi::NvmRecord>) {
    resource::nvm::files(&mut |r| page.offer(|| r));
}

/// The NVM store as a whole: one record, or none without a store.
pub fn nvm_store(page: &mut Page<abi::NvmStoreInfo>) {
    if let Some(info) = resource::nvm::info() {
        page.offer(|| info);
    }
}

/// CPU time of every live process, of the ended ones by group, and of the
/// idle computations (`kcore::cpuacct`).
pub fn cpu_times(page: &mut Page<CpuTimeRecord>) {
    let ns = kcore::clock::cycles_to_ns;
    for pid in ipc::process::pids().unwrap_or_default() {
        if let Some(p) = resource::proc::get(pid) {
            let (cycles, kernel) = p.cpu_cycles();
            page.offer(|| CpuTimeRecord {
                pid,
                parent: p.parent(),
                flags: p.cpu_flags() | abi::CPU_LIVE,
                count: 1,
                ns: ns(cycles),
                kernel_ns: ns(kernel),
                name: name_field(p.name()),
            });
        }
    }
    kcore::cpuacct::ended(&mut |g| {
        page.offer(|| CpuTimeRecord {
            flags: g.flags,
            count: g.count,
            ns: ns(g.cycles),
            kernel_ns: ns(g.kernel_cycles),
            name: g.name,
            ..CpuTimeRecord::default()
        })
    });
    let idle = ns(sched::idle_cycles());
    page.offer(|| CpuTimeRecord {
        flags: abi::CPU_IDLE,
        count: kcore::cpu::online_count() as u64,
        ns: idle,
        kernel_ns: idle,
        name: name_field("idle"),
        ..CpuTimeRecord::default()
    });
}
