//! The mediator: the one way to operate on a resource, from system calls
//! and from inside the kernel alike (seed 000 §2.1: all calls to the
//! resource programs go through one program, which makes the OS
//! observable). As seL4's `decodeInvocation` switches once on the object
//! type and hands off to the object's own file, an operation here is a
//! typed function of one kind's module (`vregion::create`,
//! `container::move_ica`, ...; `query` and `delete` below go to the kind
//! the identifier names), and each enters through `invoke` with its code
//! (`abi::ResOp`), the identifiers it names with what each must be, and
//! its work. `invoke` checks those identifiers (kind, slot, generation,
//! owner) before anything changes, hands off once to the work, and counts
//! (per kind and code, with the cycles) and traces the call. The result
//! is the operation's own type: a create gives a `ResId`, a query a
//! `ResInfo`.

use super::{KERNEL, Kind, ResId};
use abi::{Error, ResInfo, ResOp};
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::clock;

/// What an operation needs of one identifier it names, for the mediator
/// to check before the operation runs.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// Nothing (a place left empty).
    None,
    /// A live resource of the kind (plates and programs anyone may use).
    Live(Kind),
    /// A live resource of the kind that the caller may change: its owner
    /// or the kernel (`Resource::check` says what that is for the kind).
    Owned(Kind),
    /// An identifier of the kind, whose existence and the caller's right
    /// the operation checks under the lock its work holds anyway, before
    /// it changes anything (the container paths, where a second look
    /// would cost as much as the work itself).
    OfKind(Kind),
    /// An identifier of any kind, served by that kind (query, delete).
    AnyKind,
}

/// The identifiers an operation names (the first is the one the trace
/// records when the operation makes nothing).
pub type Ids = [(ResId, Need); 3];

/// A place of `Ids` left empty.
pub const NO_ID: (ResId, Need) = (ResId::NONE, Need::None);

/// For an operation that names one identifier.
pub const fn only(id: ResId, need: Need) -> Ids {
    [(id, need), NO_ID, NO_ID]
}

/// For an operation that names no identifier.
pub const NO_IDS: Ids = [NO_ID; 3];

/// What the trace records of a result: the identifier an operation made.
pub trait Outcome {
    #[inline(always)]
    fn made(&self) -> Option<ResId> {
        None
    }
}

impl Outcome for ResId {
    #[inline(always)]
    fn made(&self) -> Option<ResId> {
        Some(*self)
    }
}
impl Outcome for () {}
impl Outcome for u64 {}
impl Outcome for ResInfo {}
impl Outcome for abi::SegmentInfo {}

/// Performs operation `code` for `caller` (a pid, or `KERNEL`): checks
/// `ids`, then does `work`, then counts and traces the call.
#[inline(always)]
pub fn invoke<T: Outcome>(
    caller: u64,
    code: ResOp,
    ids: Ids,
    work: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    invoke_then(caller, code, ids, work, |_| {})
}

/// `invoke`, which also hands the call's cycles to `account` (a kind's
/// own statistics: they are read anyway).
#[inline(always)]
pub fn invoke_then<T: Outcome>(
    caller: u64,
    code: ResOp,
    ids: Ids,
    work: impl FnOnce() -> Result<T, Error>,
    account: impl FnOnce(u64),
) -> Result<T, Error> {
    let t0 = clock::cycles();
    if caller != KERNEL && makes(code) {
        note_maker(caller);
    }
    let result = check(caller, &ids).and_then(|()| work());
    let cycles = clock::cycles() - t0;
    account(cycles);
    let subject = ids[0].0;
    let id = match &result {
        Ok(out) => out.made().unwrap_or(subject),
        Err(_) => subject,
    };
    // The row of the kind the operation is about (for the operations on
    // any kind, the one its identifier names; 0: none).
    let row = match code.kind() {
        Some(k) => k as usize,
        None => super::kind_of(subject).map_or(0, |k| k as usize),
    };
    note(
        caller,
        row,
        code as usize,
        id.raw(),
        result.as_ref().err().copied(),
        cycles,
    );
    result
}

/// Whether an operation may leave the caller owning a resource it must
/// release at exit (the others make nothing for the caller, or mark the
/// new owner themselves).
const fn makes(code: ResOp) -> bool {
    !matches!(
        code,
        ResOp::Send | ResOp::Receive | ResOp::MoveIca | ResOp::Exchange | ResOp::Query | ResOp::ProgramSegment
    )
}

/// The checks of every identifier, before the operation runs.
#[inline(always)]
fn check(caller: u64, ids: &Ids) -> Result<(), Error> {
    for &(id, need) in ids {
        let (kind, change) = match need {
            Need::None => continue,
            Need::AnyKind => {
                super::kind_of(id)?;
                continue;
            }
            Need::OfKind(k) => {
                expect(id, k)?;
                continue;
            }
            Need::Live(k) => (k, false),
            Need::Owned(k) => (k, true),
        };
        expect(id, kind)?;
        super::of(kind).check(caller, id, change)?;
    }
    Ok(())
}

/// Checks an identifier's kind before anything is done with it.
#[inline(always)]
fn expect(id: ResId, kind: Kind) -> Result<(), Error> {
    if id.kind() == kind as u8 {
        Ok(())
    } else {
        Err(Error::Invalid)
    }
}

/// Marks `pid` as owning resources beyond its own parts, so that its exit
/// looks for them (`resource::release_owned_by`).
pub fn note_maker(pid: u64) {
    let done = ipc::process::with_current(|p| {
        if p.pid() == pid {
            p.mark_maker();
            true
        } else {
            false
        }
    });
    if done != Some(true)
        && let Some(p) = ipc::process::get(pid)
    {
        p.mark_maker();
    }
}

// ---- the operations on any kind ----

/// Describes a resource (`res_query`) to its owner (or the kernel): a
/// description names the resource's parts, where it lies and, for
/// physical memory, real addresses. What anybody may use or see anyway
/// (plates, programs, processes, devices) is described to anybody.
pub fn query(caller: u64, id: ResId) -> Result<ResInfo, Error> {
    invoke(caller, ResOp::Query, only(id, Need::AnyKind), || {
        let kind = super::kind_of(id)?;
        let public = matches!(kind, Kind::Plate | Kind::Program | Kind::Process | Kind::Device);
        super::of(kind).check(caller, id, !public)?;
        super::of(kind).query(id)
    })
}

/// Deletes a resource (`res_delete`): its kind checks that the caller may,
/// and that nothing else still uses it.
pub fn delete(caller: u64, id: ResId) -> Result<(), Error> {
    invoke(caller, ResOp::Delete, only(id, Need::AnyKind), || {
        super::of(super::kind_of(id)?).delete(caller, id)
    })
}

/// The operation names, indexed by code (for the inspector).
pub const OP_NAMES: [&str; OPS] = {
    let mut names = [""; OPS];
    let mut i = 0;
    while i < OPS {
        names[i] = ResOp::ALL[i].name();
        i += 1;
    }
    names
};

// ---- counters and trace ----

/// Rows by kind code (codes start at 1; row 0: no kind).
const KINDS: usize = Kind::ALL.len() + 1;
const OPS: usize = ResOp::ALL.len();

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
