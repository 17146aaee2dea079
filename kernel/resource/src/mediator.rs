//! The mediator: the one way to operate on a resource, from system calls
//! and from inside the kernel alike. A request is first decoded into an
//! `Op` whose identifiers are checked (kind, slot, generation, owner)
//! before anything changes; then it is dispatched to the kind's module.
//! Every operation is counted (per kind and operation, with its cycles)
//! and recorded in a bounded trace, so the system's behaviour can be
//! watched from the inspector (seed 000 §2.1: all calls to the resource
//! programs go through one program, which makes the OS observable).

use super::{
    Kind, ResId, computation, container, container_box, physmem, plate, process, program, vkspace, vregion, vspace,
    vuspace,
};
use abi::{Error, LoadPolicy, RegionKind, ResInfo};
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::clock;

/// A decoded request.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    FindPlate {
        name: &'a str,
    },
    CreateProgram {
        plate: ResId,
    },
    CreateSpace,
    CreateRegion {
        kind: RegionKind,
        pages: u64,
        writable: bool,
        executable: bool,
    },
    /// Attach a region to a space (creates a VirtualUserSpace).
    Attach {
        space: ResId,
        region: ResId,
        base: u64,
    },
    /// Attach a one-page region in the kernel (creates a VirtualKernelSpace).
    AttachKernel {
        region: ResId,
    },
    CreatePhysical {
        pages: u64,
    },
    CreateProcess {
        program: ResId,
        space: ResId,
        work_area: ResId,
        policy: LoadPolicy,
        parent: u64,
    },
    CreateComputation {
        process: ResId,
        cpu: u64,
    },
    /// Fill a region with segment `segment` of a program, every page present.
    /// With `populate`, every page is made present now (eager loading).
    Load {
        region: ResId,
        program: ResId,
        segment: usize,
        populate: bool,
    },
    /// Give a region zero content of `kind` (BSS, stack, heap).
    Clear {
        region: ResId,
        kind: RegionKind,
        writable: bool,
        populate: bool,
    },
    /// Store a name and arguments in a work area.
    WriteWorkArea {
        area: ResId,
        name: &'a [u8],
        args: &'a [u8],
    },
    Start {
        process: ResId,
    },
    // Container IPC (seed 004).
    CreateContainer {
        pages: u64,
        addr: u64,
    },
    CreateBox {
        pages: u64,
        initial: u64,
        lower: u64,
        upper: u64,
        flags: u64,
    },
    GrantBox {
        bx: ResId,
        pid: u64,
        rights: u64,
    },
    Send {
        container: ResId,
        bx: ResId,
        addr: u64,
        mode: abi::ContainerMode,
    },
    Receive {
        container: ResId,
        bx: ResId,
        addr: u64,
        mode: abi::ContainerMode,
        timeout_ns: u64,
    },
    Push {
        container: ResId,
        target: u64,
        addr: u64,
        mode: abi::ContainerMode,
    },
    Steal {
        container: ResId,
        target: u64,
        addr: u64,
        mode: abi::ContainerMode,
    },
    /// An AnT ICA: physically contiguous pages attached to the caller.
    CreateIca {
        pages: u64,
    },
    /// Re-attach a container (ICA) to another process without copying.
    Remap {
        container: ResId,
        target: u64,
        addr: u64,
    },
    Exchange {
        container: ResId,
        target: u64,
        theirs: ResId,
    },
    Query {
        id: ResId,
    },
    /// Describe segment `index` of a program.
    QuerySegment {
        program: ResId,
        index: usize,
    },
    Delete {
        id: ResId,
    },
}

/// The operation names, for counters and the trace.
pub const OP_NAMES: [&str; 21] = [
    "find",
    "create",
    "attach",
    "attach_kernel",
    "create_process",
    "create_computation",
    "load",
    "clear",
    "write",
    "start",
    "query",
    "delete",
    "create_program",
    "create_region",
    "grant",
    "send",
    "receive",
    "push",
    "steal",
    "exchange",
    "create_box",
];

impl Op<'_> {
    fn code(&self) -> usize {
        match self {
            Op::FindPlate { .. } => 0,
            Op::CreateSpace | Op::CreatePhysical { .. } => 1,
            Op::Attach { .. } => 2,
            Op::AttachKernel { .. } => 3,
            Op::CreateProcess { .. } => 4,
            Op::CreateComputation { .. } => 5,
            Op::Load { .. } => 6,
            Op::Clear { .. } => 7,
            Op::WriteWorkArea { .. } => 8,
            Op::Start { .. } => 9,
            Op::Query { .. } | Op::QuerySegment { .. } => 10,
            Op::Delete { .. } => 11,
            Op::CreateProgram { .. } => 12,
            Op::CreateRegion { .. } => 13,
            Op::CreateContainer { .. } | Op::CreateIca { .. } => 1,
            Op::Remap { .. } => 2,
            Op::GrantBox { .. } => 14,
            Op::Send { .. } => 15,
            Op::Receive { .. } => 16,
            Op::Push { .. } => 17,
            Op::Steal { .. } => 18,
            Op::Exchange { .. } => 19,
            Op::CreateBox { .. } => 20,
        }
    }

    /// The kind the operation is about (for counting).
    fn kind(&self) -> u8 {
        let k = match self {
            Op::FindPlate { .. } => Kind::Plate,
            Op::CreateProgram { .. } | Op::QuerySegment { .. } => Kind::Program,
            Op::CreateSpace => Kind::VirtualSpace,
            Op::CreateRegion { .. } | Op::Load { .. } | Op::Clear { .. } => Kind::VirtualRegion,
            Op::Attach { .. } => Kind::VirtualUserSpace,
            Op::AttachKernel { .. } | Op::WriteWorkArea { .. } => Kind::VirtualKernelSpace,
            Op::CreatePhysical { .. } => Kind::PhysicalMemory,
            Op::CreateProcess { .. } | Op::Start { .. } => Kind::Process,
            Op::CreateComputation { .. } => Kind::Computation,
            Op::CreateContainer { .. }
            | Op::CreateIca { .. }
            | Op::Remap { .. }
            | Op::Push { .. }
            | Op::Steal { .. }
            | Op::Exchange { .. } => Kind::Container,
            Op::CreateBox { .. } | Op::GrantBox { .. } | Op::Send { .. } | Op::Receive { .. } => Kind::ContainerBox,
            Op::Query { id } | Op::Delete { id } => return id.kind(),
        };
        k as u8
    }

    /// Whether the operation may leave the caller owning a resource it
    /// must release at exit. The others create nothing for the caller, or
    /// (container operations) mark the new owner themselves.
    fn may_make(&self) -> bool {
        !matches!(
            self,
            Op::Send { .. }
                | Op::Receive { .. }
                | Op::Remap { .. }
                | Op::Exchange { .. }
                | Op::Query { .. }
                | Op::QuerySegment { .. }
        )
    }

    /// The main identifier the operation names (for the trace).
    fn subject(&self) -> ResId {
        match *self {
            Op::CreateProgram { plate } => plate,
            Op::Attach { region, .. } | Op::AttachKernel { region } => region,
            Op::CreateProcess { program, .. } | Op::QuerySegment { program, .. } => program,
            Op::CreateComputation { process, .. } | Op::Start { process } => process,
            Op::Load { region, .. } | Op::Clear { region, .. } => region,
            Op::WriteWorkArea { area, .. } => area,
            Op::Query { id } | Op::Delete { id } => id,
            Op::Push { container, .. }
            | Op::Steal { container, .. }
            | Op::Exchange { container, .. }
            | Op::Remap { container, .. } => container,
            Op::Send { bx, .. } | Op::Receive { bx, .. } | Op::GrantBox { bx, .. } => bx,
            _ => ResId::NONE,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Value {
    Id(ResId),
    Info(ResInfo),
    Segment(abi::SegmentInfo),
    /// A container sent or received: its id, where it is attached, its size.
    Received {
        id: ResId,
        addr: u64,
        size: u64,
    },
    Done,
}

impl Value {
    pub fn id(self) -> Result<ResId, Error> {
        match self {
            Value::Id(id) => Ok(id),
            _ => Err(Error::Invalid),
        }
    }
}

/// Checks an identifier's kind before anything is done with it.
fn expect(id: ResId, kind: Kind) -> Result<(), Error> {
    if id.kind() == kind as u8 {
        Ok(())
    } else {
        Err(Error::Invalid)
    }
}

/// Decode-time checks: every identifier of the right kind, and existing
/// where the operation needs it to (the kind modules check ownership and
/// state again under their locks).
fn validate(caller: u64, op: &Op) -> Result<(), Error> {
    match *op {
        Op::CreateProgram { plate } => {
            expect(plate, Kind::Plate)?;
            plate::check(plate)
        }
        Op::Attach { space, region, .. } => {
            expect(space, Kind::VirtualSpace)?;
            expect(region, Kind::VirtualRegion)?;
            vspace::get(caller, space)?;
            vregion::check(region, caller)
        }
        Op::AttachKernel { region } | Op::Load { region, .. } | Op::Clear { region, .. } => {
            expect(region, Kind::VirtualRegion)?;
            vregion::check(region, caller)?;
            if let Op::Load { program, .. } = *op {
                expect(program, Kind::Program)?;
                program::check(program)?;
            }
            Ok(())
        }
        Op::CreateProcess {
            program,
            space,
            work_area,
            ..
        } => {
            expect(program, Kind::Program)?;
            expect(space, Kind::VirtualSpace)?;
            expect(work_area, Kind::VirtualKernelSpace)?;
            program::check(program)?;
            vspace::get(caller, space)?;
            vkspace::check(caller, work_area)
        }
        Op::CreateComputation { process, .. } | Op::Start { process } => {
            expect(process, Kind::Process)?;
            process::get(caller, process).map(drop)
        }
        Op::WriteWorkArea { area, .. } => {
            expect(area, Kind::VirtualKernelSpace)?;
            vkspace::check(caller, area)
        }
        Op::Query { id } | Op::Delete { id } => Kind::from_u64(id.kind() as u64).map(drop).ok_or(Error::Invalid),
        Op::QuerySegment { program, .. } => {
            expect(program, Kind::Program)?;
            program::check(program)
        }
        Op::FindPlate { .. } | Op::CreateSpace | Op::CreateRegion { .. } | Op::CreatePhysical { .. } => Ok(()),
        Op::CreateContainer { .. } | Op::CreateBox { .. } | Op::CreateIca { .. } => Ok(()),
        Op::Remap { container, .. } => expect(container, Kind::Container),
        Op::GrantBox { bx, .. } => expect(bx, Kind::ContainerBox),
        Op::Send { container, bx, .. } => {
            expect(container, Kind::Container)?;
            expect(bx, Kind::ContainerBox)
        }
        Op::Receive {
            container, bx, mode, ..
        } => {
            if container != ResId::NONE || mode == abi::ContainerMode::Swap {
                expect(container, Kind::Container)?;
            }
            expect(bx, Kind::ContainerBox)
        }
        Op::Push { container, .. } | Op::Steal { container, .. } => expect(container, Kind::Container),
        Op::Exchange { container, theirs, .. } => {
            expect(container, Kind::Container)?;
            expect(theirs, Kind::Container)
        }
    }
}

fn dispatch(caller: u64, op: Op) -> Result<Value, Error> {
    let id = |r: Result<ResId, Error>| r.map(Value::Id);
    match op {
        Op::FindPlate { name } => id(plate::find(name)),
        Op::CreateProgram { plate } => id(program::create(caller, plate)),
        Op::CreateSpace => id(vspace::create(caller)),
        Op::CreateRegion {
            kind,
            pages,
            writable,
            executable,
        } => id(vregion::create(caller, kind, pages, writable, executable)),
        Op::Attach { space, region, base } => id(vuspace::create(caller, space, region, base)),
        Op::AttachKernel { region } => id(vkspace::create(caller, region)),
        Op::CreatePhysical { pages } => id(physmem::create(caller, pages)),
        Op::CreateProcess {
            program,
            space,
            work_area,
            policy,
            parent,
        } => id(crate::proc::create(caller, program, space, work_area, policy, parent).map(|p| process::id_of(p.pid))),
        Op::CreateComputation { process, cpu } => id(computation::create(caller, process, cpu)),
        Op::Load {
            region,
            program,
            segment,
            populate,
        } => {
            let prog = program::get(program)?;
            vregion::load(caller, region, &prog, segment, populate).map(|_| Value::Done)
        }
        Op::Clear {
            region,
            kind,
            writable,
            populate,
        } => vregion::clear(caller, region, kind, writable, populate).map(|_| Value::Done),
        Op::WriteWorkArea { area, name, args } => {
            // Each string NUL-terminated: the name, then every argument.
            let end: &[u8] = if args.is_empty() || args.ends_with(&[0]) {
                &[]
            } else {
                &[0]
            };
            vkspace::write(caller, area, &[name, &[0], args, end]).map(|_| Value::Done)
        }
        Op::Start { process } => crate::proc::start(caller, process).map(|_| Value::Done),
        Op::CreateContainer { pages, addr } => id(container::create(caller, pages, addr)),
        Op::CreateIca { pages } => id(container::create_ica(caller, pages)),
        Op::Remap {
            container,
            target,
            addr,
        } => container::remap(caller, container, target, addr).map(|addr| Value::Received {
            id: container,
            addr,
            size: 0,
        }),
        Op::CreateBox {
            pages,
            initial,
            lower,
            upper,
            flags,
        } => id(container_box::create(caller, pages, initial, lower, upper, flags)),
        Op::GrantBox { bx, pid, rights } => container_box::grant(caller, bx, pid, rights).map(|_| Value::Done),
        Op::Send {
            container,
            bx,
            addr,
            mode,
        } => container_box::send(caller, container, bx, addr, mode).map(|(id, size)| Value::Received {
            id,
            addr: 0,
            size,
        }),
        Op::Receive {
            container,
            bx,
            addr,
            mode,
            timeout_ns,
        } => container_box::receive(caller, container, bx, addr, mode, timeout_ns)
            .map(|(id, addr, size)| Value::Received { id, addr, size }),
        Op::Push {
            container,
            target,
            addr,
            mode,
        } => id(container::push(caller, container, target, addr, mode)),
        Op::Steal {
            container,
            target,
            addr,
            mode,
        } => id(container::steal(caller, container, target, addr, mode)),
        Op::Exchange {
            container,
            target,
            theirs,
        } => container::exchange(caller, container, target, theirs).map(|_| Value::Done),
        Op::Query { id } => query(id).map(Value::Info),
        Op::QuerySegment { program, index } => {
            let prog = program::get(program)?;
            let s = prog.segments.get(index).ok_or(Error::NotFound)?;
            Ok(Value::Segment(abi::SegmentInfo {
                vaddr: s.vaddr,
                memsz: s.memsz,
                filesz: s.filesz,
                prot: abi::prot::READ
                    | if s.writable { abi::prot::WRITE } else { 0 }
                    | if s.executable { abi::prot::EXEC } else { 0 },
            }))
        }
        Op::Delete { id } => delete(caller, id).map(|_| Value::Done),
    }
}

/// Marks `pid` as a process that operates on resources itself, so that its
/// exit releases whatever it still owns.
/// Marks `pid` as owning resources beyond its own parts, so that its exit
/// looks for them (`resource::release_owned_by`).
pub fn note_maker(pid: u64) {
    use core::sync::atomic::Ordering::{Acquire, Release};
    let done = ipc::process::with_current(|p| {
        if p.pid == pid {
            if !p.made_resources.load(Acquire) {
                p.made_resources.store(true, Release);
            }
            true
        } else {
            false
        }
    });
    if done != Some(true)
        && let Some(p) = ipc::process::get(pid)
    {
        p.made_resources.store(true, Release);
    }
}

fn query(id: ResId) -> Result<ResInfo, Error> {
    match Kind::from_u64(id.kind() as u64).ok_or(Error::Invalid)? {
        Kind::Process => process::query(id),
        Kind::Program => program::query(id),
        Kind::Plate => plate::query(id),
        Kind::Computation => computation::query(id),
        Kind::VirtualSpace => vspace::query(id),
        Kind::VirtualRegion => vregion::query(id),
        Kind::VirtualUserSpace => vuspace::query(id),
        Kind::VirtualKernelSpace => vkspace::query(id),
        Kind::PhysicalMemory => physmem::query(id),
        Kind::Container => container::query(id),
        Kind::ContainerBox => container_box::query(id),
    }
}

fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    match Kind::from_u64(id.kind() as u64).ok_or(Error::Invalid)? {
        Kind::Program => program::delete(caller, id),
        Kind::VirtualSpace => vspace::delete(caller, id),
        Kind::VirtualRegion => vregion::delete(caller, id),
        Kind::VirtualUserSpace => vuspace::delete(caller, id),
        Kind::VirtualKernelSpace => vkspace::delete(caller, id),
        Kind::PhysicalMemory => physmem::delete(caller, id),
        Kind::Computation => computation::delete(caller, id),
        Kind::Container => container::delete(caller, id),
        Kind::ContainerBox => container_box::delete(caller, id),
        // Plates live as long as the archive; processes end by exit or kill.
        Kind::Plate | Kind::Process => Err(Error::Denied),
    }
}

/// Performs `op` for `caller` (a pid, or `KERNEL`).
pub fn invoke(caller: u64, op: Op) -> Result<Value, Error> {
    let t0 = clock::cycles();
    if caller != super::KERNEL && op.may_make() {
        note_maker(caller);
    }
    let result = validate(caller, &op).and_then(|()| dispatch(caller, op));
    let cycles = clock::cycles() - t0;
    record(caller, &op, &result, cycles);
    result
}

/// `invoke(me.pid, Op::Remap { .. })` for process `me` itself (the
/// `ica_move` system call): the same check, count and trace entry, with
/// the operation's kind and code known beforehand and the caller at hand
/// (`container::remap_from` keeps its last target).
#[inline(always)]
pub fn remap(me: &ipc::process::Process, container: ResId, target: u64, addr: u64) -> Result<u64, Error> {
    let t0 = clock::cycles();
    let result = match expect(container, Kind::Container) {
        Ok(()) => container::remap_from(me, container, target, addr),
        Err(e) => Err(e),
    };
    let cycles = clock::cycles() - t0;
    // The move's share of the containers' cost breakdown (seed 004).
    container::STATS[container::ATTACH].fetch_add(cycles, Ordering::Relaxed);
    let op = Op::Remap {
        container,
        target,
        addr,
    };
    note(
        me.pid,
        op.kind() as usize,
        op.code(),
        container.raw(),
        result.err(),
        cycles,
    );
    result
}

// ---- counters and trace ----

const KINDS: usize = 12;
const OPS: usize = OP_NAMES.len();

struct Counter {
    calls: AtomicU64,
    errors: AtomicU64,
    cycles: AtomicU64,
}

static COUNTERS: [[Counter; OPS]; KINDS] = [const {
    [const {
        Counter {
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            cycles: AtomicU64::new(0),
        }
    }; OPS]
}; KINDS];

#[derive(Debug, Clone, Copy, Default)]
pub struct TraceEntry {
    pub seq: u64,
    pub caller: u64,
    pub kind: u8,
    pub op: u8,
    pub id: u64,
    /// 0 on success, else the negated error code.
    pub result: i64,
    pub cycles: u64,
}

const TRACE_LEN: usize = 256;

/// One slot of the trace ring. Written without a lock (every system call
/// records, so a lock here would serialise all CPUs): `stamp` is odd while
/// a writer fills the slot and `2 * (seq + 1)` once entry `seq` is in it,
/// so a reader keeps only slots whose stamp was the same before and after
/// it read them (a sequence lock per slot).
struct Slot {
    stamp: AtomicU64,
    caller: AtomicU64,
    /// kind << 8 | op
    what: AtomicU64,
    id: AtomicU64,
    result: AtomicU64,
    cycles: AtomicU64,
}

static TRACE: [Slot; TRACE_LEN] = [const {
    Slot {
        stamp: AtomicU64::new(0),
        caller: AtomicU64::new(0),
        what: AtomicU64::new(0),
        id: AtomicU64::new(0),
        result: AtomicU64::new(0),
        cycles: AtomicU64::new(0),
    }
}; TRACE_LEN];

/// Sequence number of the next trace entry.
static TRACE_NEXT: AtomicU64 = AtomicU64::new(0);

/// Claims a trace slot for entry `seq` (odd stamp `2 * seq + 1`). Writers
/// of entries TRACE_LEN apart may reach a slot at once, and both filling it
/// could leave a mix that a reader takes for whole: only a writer that
/// finds the slot idle (even stamp) and holding an older entry gets it.
#[inline(always)]
pub fn claim(stamp: &AtomicU64, seq: u64) -> bool {
    let mine = 2 * seq + 1;
    let old = stamp.load(Ordering::Relaxed);
    old & 1 == 0
        && old < mine
        && stamp
            .compare_exchange(old, mine, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

fn record(caller: u64, op: &Op, result: &Result<Value, Error>, cycles: u64) {
    let kind = (op.kind() as usize).min(KINDS - 1);
    let id = match result {
        Ok(Value::Id(id)) => id.raw(),
        _ => op.subject().raw(),
    };
    note(caller, kind, op.code(), id, result.as_ref().err().copied(), cycles);
}

/// Counts a call of operation `code` on `kind` and adds it to the trace.
#[inline(always)]
fn note(caller: u64, kind: usize, code: usize, id: u64, error: Option<Error>, cycles: u64) {
    let c = &COUNTERS[kind][code];
    c.calls.fetch_add(1, Ordering::Relaxed);
    c.cycles.fetch_add(cycles, Ordering::Relaxed);
    let code_result = match error {
        None => 0,
        Some(e) => {
            c.errors.fetch_add(1, Ordering::Relaxed);
            -(e as i64)
        }
    };
    let seq = TRACE_NEXT.fetch_add(1, Ordering::Relaxed);
    let slot = &TRACE[(seq % TRACE_LEN as u64) as usize];
    // A writer that loses the slot drops its entry (the counters above
    // still have it).
    if !claim(&slot.stamp, seq) {
        return;
    }
    // The odd stamp must be seen before any field changes.
    core::sync::atomic::fence(Ordering::Release);
    slot.caller.store(caller, Ordering::Relaxed);
    slot.what.store(((kind as u64) << 8) | code as u64, Ordering::Relaxed);
    slot.id.store(id, Ordering::Relaxed);
    slot.result.store(code_result as u64, Ordering::Relaxed);
    slot.cycles.store(cycles, Ordering::Relaxed);
    slot.stamp.store(2 * seq + 2, Ordering::Release);
}

/// Entry `seq` of the trace, if its slot holds it whole.
fn read_slot(seq: u64) -> Option<TraceEntry> {
    let slot = &TRACE[(seq % TRACE_LEN as u64) as usize];
    let want = 2 * seq + 2;
    if slot.stamp.load(Ordering::Acquire) != want {
        return None;
    }
    let what = slot.what.load(Ordering::Relaxed);
    let e = TraceEntry {
        seq,
        caller: slot.caller.load(Ordering::Relaxed),
        kind: (what >> 8) as u8,
        op: what as u8,
        id: slot.id.load(Ordering::Relaxed),
        result: slot.result.load(Ordering::Relaxed) as i64,
        cycles: slot.cycles.load(Ordering::Relaxed),
    };
    // The fields must be read before the stamp is checked again.
    core::sync::atomic::fence(Ordering::Acquire);
    (slot.stamp.load(Ordering::Relaxed) == want).then_some(e)
}

/// The last `n` trace entries, oldest first (an entry being rewritten at
/// that moment is left out).
pub fn trace(n: usize, f: &mut dyn FnMut(&TraceEntry)) {
    let next = TRACE_NEXT.load(Ordering::Acquire);
    let n = n.min(TRACE_LEN).min(next as usize);
    for seq in next - n as u64..next {
        if let Some(e) = read_slot(seq) {
            f(&e);
        }
    }
}

/// (kind, operation, calls, errors, cycles) for every pair used so far.
pub fn counters(f: &mut dyn FnMut(u8, &str, u64, u64, u64)) {
    for (k, row) in COUNTERS.iter().enumerate() {
        for (o, c) in row.iter().enumerate() {
            let calls = c.calls.load(Ordering::Relaxed);
            if calls > 0 {
                f(
                    k as u8,
                    OP_NAMES[o],
                    calls,
                    c.errors.load(Ordering::Relaxed),
                    c.cycles.load(Ordering::Relaxed),
                );
            }
        }
    }
}

pub fn total_calls() -> u64 {
    COUNTERS.iter().flatten().map(|c| c.calls.load(Ordering::Relaxed)).sum()
}
