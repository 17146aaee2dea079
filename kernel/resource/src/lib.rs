//! Tender's resources (資源): every object the OS manages is a resource of a
//! kind. Each kind is one module with its own table (管理表): a unit value
//! implementing `Resource` (check an identifier and the caller's right,
//! query, delete, count, hand over, release) registered in `KINDS`, and its
//! operations, typed functions that each enter the mediator
//! (`mediator::invoke`), which checks the identifiers they name, hands off
//! once to their work, and counts and traces them. A new kind is its
//! module plus one line in `KINDS`.
//!
//! A resource exists independently of the others: a virtual space with no
//! process, a region with no space, a program with no process. A process
//! is only a composition of them (`proc::spawn`), and because the
//! constituents outlive the process, the pool (`pool.rs`) can keep them
//! for the next creation.
//!
//! The mechanism behind a kind (page tables, frames, computations: the
//! unsafe code) is the core's (`kcore`) or the IPC layer's; the module
//! here is the object's only resource-level home.
//!
//! | kind | module | the object |
//! |---|---|---|
//! | process | `process.rs` | `ipc::process::Process` (table keyed by pid) |
//! | program | `program.rs` | `proc::program::Program` |
//! | plate | `plate.rs` | a file of the initial archive, in memory |
//! | computation | `computation.rs` | `kcore::computation::Computation` |
//! | virtual space | `vspace.rs` | `kcore::vm::space::VirtualSpace` |
//! | virtual user space | `vspace.rs` | a region attached to a space at a user address |
//! | virtual region | `vregion.rs` | `kcore::vm::region::Region` |
//! | virtual kernel space | `vkspace.rs` | a region attached in the kernel (the work area) |
//! | physical memory | `physmem.rs` | a run of contiguous frames |
//! | container | `container.rs` | a region handed between processes (seed 004) |
//! | container box | `container_box.rs` | queues of containers between processes |
//! | device | `device.rs` | a PCI function, its BARs, interrupt and DMA for its driver |
//! | pipe | `pipe.rs` | a pipe the kernel serves to Linux processes, their descriptors of it |
//! | file cache | `file_cache.rs` | a file's pages its file server publishes for clients' reads |

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

/// The `Resource` methods of a kind whose table `$table` says it all:
/// checking an identifier, counting, and what a process owns.
macro_rules! table_methods {
    ($table:ident) => {
        fn check(&self, caller: u64, id: ResId, change: bool) -> Result<(), Error> {
            crate::check_in(&$table.lock(), id, caller, change)
        }
        fn count(&self) -> usize {
            $table.lock().len()
        }
        fn table_bytes(&self) -> usize {
            crate::reserved_bytes(&$table.lock())
        }
        fn next_owned_by(&self, pid: u64, from: u32) -> Option<ResId> {
            $table.lock().find_from(from, |e| e.owner == pid)
        }
    };
    // And deleting is taking the entry out (what it holds goes with it).
    ($table:ident, delete) => {
        table_methods!($table);
        fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
            crate::remove_owned(&mut $table.lock(), id, caller).map(drop)
        }
    };
}

pub mod computation;
pub mod container;
pub mod container_box;
pub mod device;
pub mod fifo;
pub mod file_cache;
pub mod mediator;
pub mod nvm;
pub mod physmem;
pub mod pipe;
pub mod plate;
pub mod pool;
pub mod proc;
pub mod process;
pub mod program;
pub mod vkspace;
pub mod vregion;
pub mod vspace;

pub use abi::ResKind as Kind;
use abi::{Error, ResInfo};
use kcore::mm::quota::Charge;
pub use restable::ResId;
use restable::{IdError, Table};

/// Pid of the kernel as the owner or caller of a resource operation.
pub const KERNEL: u64 = 0;

/// Most resources of one kind at once.
const TABLE_LIMIT: usize = 1 << 20;

/// A table slot: the resource, the process that owns it (0: the kernel),
/// and what it costs in kernel memory, charged to the process that made
/// it (none for the kernel's own) until the entry goes. Only its owner,
/// or the kernel, may change or delete a resource.
pub struct Entry<T> {
    pub owner: u64,
    pub value: T,
    pub charge: Charge,
}

/// What a resource of type `T` costs in kernel memory: its table slot and
/// `extra` bytes it holds besides (a region's list of frames, ...).
pub const fn cost<T>(extra: u64) -> u64 {
    (core::mem::size_of::<Entry<T>>() + 16) as u64 + extra
}

/// `bytes` charged to process `caller` (nothing for the kernel).
/// `Iterator::collect` into a `Vec` that allocates fallibly (a system
/// call's path): NoMemory if the heap has no room.
pub fn try_collect<T>(items: impl Iterator<Item = T>) -> Result<alloc::vec::Vec<T>, Error> {
    let mut v = alloc::vec::Vec::new();
    for x in items {
        v.try_reserve(1).map_err(|_| Error::NoMemory)?;
        v.push(x);
    }
    Ok(v)
}

pub fn charge(caller: u64, bytes: u64) -> Result<Charge, Error> {
    ipc::process::charge(caller, bytes)
}

pub type ResTable<T> = Table<Entry<T>>;

pub const fn table<T>(kind: Kind) -> ResTable<T> {
    Table::new(kind as u8, TABLE_LIMIT)
}

pub fn id_error(e: IdError) -> Error {
    match e {
        IdError::WrongKind => Error::Invalid,
        IdError::NoSuch => Error::NotFound,
        IdError::Full => Error::Limit,
        IdError::NoMemory => Error::NoMemory,
    }
}

/// The entry for `id` if `caller` may change it.
pub fn owned<T>(table: &ResTable<T>, id: ResId, caller: u64) -> Result<&Entry<T>, Error> {
    let e = table.get(id).map_err(id_error)?;
    if caller != KERNEL && e.owner != caller {
        return Err(Error::Denied);
    }
    Ok(e)
}

pub fn owned_mut<T>(table: &mut ResTable<T>, id: ResId, caller: u64) -> Result<&mut Entry<T>, Error> {
    owned(table, id, caller)?;
    Ok(table.get_mut(id).expect("checked just above"))
}

/// Takes entry `id` out of `table` if `caller` may change it.
pub fn remove_owned<T>(table: &mut ResTable<T>, id: ResId, caller: u64) -> Result<Entry<T>, Error> {
    remove_unused(table, id, caller, |_| false)
}

/// `remove_owned` unless `in_use` says the resource is in use (`Busy`).
/// The caller drops what it gets after letting go of the table, when that
/// frees memory.
pub fn remove_unused<T>(
    table: &mut ResTable<T>,
    id: ResId,
    caller: u64,
    in_use: impl FnOnce(&T) -> bool,
) -> Result<Entry<T>, Error> {
    if in_use(&owned(table, id, caller)?.value) {
        return Err(Error::Busy);
    }
    table.remove(id).map_err(id_error)
}

/// `Resource::check` for a kind whose table says it all.
pub fn check_in<T>(table: &ResTable<T>, id: ResId, caller: u64, change: bool) -> Result<(), Error> {
    if change {
        owned(table, id, caller).map(drop)
    } else {
        table.check(id).map_err(id_error)
    }
}

/// The resources of `table` that `pid` owns (collected, so that the table's
/// lock can go before they are deleted one by one).
/// Calls `f` on each resource `next` finds, slot by slot from the first
/// (`next(from)`: the first at slot `from` or after): a teardown's walk,
/// which allocates nothing, so that ending a process works when the heap
/// is full.
pub fn each_from(mut next: impl FnMut(u32) -> Option<ResId>, mut f: impl FnMut(ResId)) {
    let mut from = 0;
    while let Some(id) = next(from) {
        f(id);
        match id.index().checked_add(1) {
            Some(n) => from = n,
            None => return,
        }
    }
}

/// Gives entry `id` of `table` to `owner` (nothing if it is gone).
pub fn give<T>(table: &mut ResTable<T>, id: ResId, owner: u64) {
    if let Ok(e) = table.get_mut(id) {
        e.owner = owner;
    }
}

/// Inserts a new resource of the kernel's making (the value is dropped if
/// the table is full).
pub fn insert<T>(table: &mut ResTable<T>, owner: u64, value: T) -> Result<ResId, Error> {
    insert_charged(table, owner, Charge::NONE, value)
}

/// Inserts a new resource whose cost `charge` holds.
pub fn insert_charged<T>(table: &mut ResTable<T>, owner: u64, charge: Charge, value: T) -> Result<ResId, Error> {
    table
        .insert(Entry { owner, value, charge })
        .map_err(|(e, _)| id_error(e))
}

/// `Resource::query` for a kind whose table says it all: `f` gives the
/// entry's bytes, value and links.
pub fn describe<T>(
    table: &ResTable<T>,
    id: ResId,
    f: impl FnOnce(&T) -> (u64, u64, [ResId; 3]),
) -> Result<ResInfo, Error> {
    let e = table.get(id).map_err(id_error)?;
    let (bytes, value, links) = f(&e.value);
    Ok(info(id, e.owner, bytes, value, links))
}

pub fn info(id: ResId, owner: u64, bytes: u64, value: u64, links: [ResId; 3]) -> ResInfo {
    ResInfo {
        id: id.raw(),
        kind: id.kind() as u64,
        owner,
        bytes,
        value,
        links: links.map(|l| l.raw()),
    }
}

/// What every kind gives the mediator and the rest of the kernel: one
/// unit value per kind implements it, registered in `KINDS`. A kind's
/// operations are functions of its module, each through `mediator::invoke`.
pub trait Resource: Sync {
    /// Whether `id` is a live resource of this kind (its slot and
    /// generation) and, with `change`, whether `caller` may change it.
    fn check(&self, caller: u64, id: ResId, change: bool) -> Result<(), Error>;
    fn query(&self, id: ResId) -> Result<ResInfo, Error>;
    /// Deletes it if `caller` may and nothing uses it any more.
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error>;
    /// Live resources of the kind.
    fn count(&self) -> usize;
    /// Heap bytes its table's slots take (it keeps the room it grew to).
    fn table_bytes(&self) -> usize {
        0
    }
    /// Hands it, with the resources it is composed of, to `owner`.
    fn set_owner(&self, _id: ResId, _owner: u64) {}
    /// The first resource of the kind that process `pid` owns at table
    /// slot `from` or after.
    fn next_owned_by(&self, _pid: u64, _from: u32) -> Option<ResId> {
        None
    }
    /// Deletes what process `pid` still owns of this kind.
    fn release_owned_by(&self, pid: u64) {
        each_from(
            |from| self.next_owned_by(pid, from),
            |id| {
                let _ = self.delete(KERNEL, id);
            },
        );
    }
}

/// Every kind, in the order a process's leftovers are released: what
/// holds others first (containers and boxes hold attachments, which hold
/// regions in spaces), so that the held are free to go. A new kind is its
/// module and one line here.
const KINDS: [(Kind, &dyn Resource); Kind::ALL.len()] = [
    (Kind::Device, &device::Devices),
    (Kind::Pipe, &pipe::Pipes),
    (Kind::FileCache, &file_cache::FileCaches),
    (Kind::Container, &container::Containers),
    (Kind::ContainerBox, &container_box::Boxes),
    (Kind::VirtualUserSpace, &vspace::Attachments),
    (Kind::VirtualKernelSpace, &vkspace::KernelSpaces),
    (Kind::VirtualSpace, &vspace::Spaces),
    (Kind::VirtualRegion, &vregion::Regions),
    (Kind::PhysicalMemory, &physmem::Runs),
    (Kind::Program, &program::Programs),
    (Kind::Computation, &computation::Computations),
    (Kind::Process, &process::Processes),
    (Kind::Plate, &plate::Plates),
];

/// Where each kind is in `KINDS`, by kind code; made at compile time,
/// which fails unless every kind is there exactly once.
const PLACE: [usize; Kind::ALL.len() + 1] = {
    let mut place = [usize::MAX; Kind::ALL.len() + 1];
    let mut i = 0;
    while i < KINDS.len() {
        let k = KINDS[i].0 as usize;
        assert!(place[k] == usize::MAX, "a kind registered twice");
        place[k] = i;
        i += 1;
    }
    let mut k = 0;
    while k < Kind::ALL.len() {
        assert!(place[Kind::ALL[k] as usize] != usize::MAX, "a kind not registered");
        k += 1;
    }
    place
};

/// The kind `kind`.
#[inline(always)]
pub fn of(kind: Kind) -> &'static dyn Resource {
    KINDS[PLACE[kind as usize]].1
}

/// The kind an identifier names, if it names one.
#[inline(always)]
pub fn kind_of(id: ResId) -> Result<Kind, Error> {
    Kind::from_u64(id.kind() as u64).ok_or(Error::Invalid)
}

/// Creates the resources that exist from boot: the plates of the archive.
pub fn init() {
    plate::init_from_archive();
    device::init();
    nvm::init();
}

/// Deletes what a process still owned when it ended (resources it made
/// through the native API and never handed over).
pub fn release_owned_by(pid: u64) {
    for (_, kind) in KINDS {
        kind.release_owned_by(pid);
    }
}

/// Hands a resource, and the resources it is composed of, to `owner`:
/// to a new process when it is composed, to the kernel when it is pooled.
pub fn set_owner(id: ResId, owner: u64) {
    if let Ok(k) = kind_of(id) {
        of(k).set_owner(id, owner);
    }
}

/// Live resources per kind, for the inspector and leak tests.
pub fn counts() -> [(Kind, usize); Kind::ALL.len()] {
    core::array::from_fn(|i| (Kind::ALL[i], of(Kind::ALL[i]).count()))
}

/// Heap bytes all resource tables take, live slots or free.
pub fn table_bytes() -> usize {
    Kind::ALL.iter().map(|&k| of(k).table_bytes()).sum()
}

/// Heap bytes `table` takes as the heap counts them: a block of
/// `large::LARGE_MIN` bytes or more in whole pages, so that a table grown
/// past that size leaves no rounding in a leak check's figure.
fn reserved_bytes<T>(table: &Table<T>) -> usize {
    table.reserved().into_iter().map(kcore::mm::heap::charged).sum()
}
