//! Tender's resources (資源): every object the OS manages is a resource of a
//! kind, each kind in its own module with its own table (管理表) and its own
//! operations, and every operation goes through one dispatch point, the
//! mediator (`mediator.rs`). A resource exists independently of the others:
//! a virtual space with no process, a region with no space, a program with
//! no process. A process is only a composition of them (`proc::spawn`), and
//! because the constituents outlive the process, the pool (`pool.rs`) can
//! keep them for the next creation.
//!
//! | kind | module | the object |
//! |---|---|---|
//! | process | `process.rs` | `proc::Process` (table keyed by pid) |
//! | program | `program.rs` | `proc::program::Program` |
//! | plate | `plate.rs` | a file of the initial archive, in memory |
//! | computation | `computation.rs` | `sched::computation::Computation` |
//! | virtual space | `vspace.rs` | `vm::space::VirtualSpace` |
//! | virtual region | `vregion.rs` | `vm::region::Region` |
//! | virtual user space | `vuspace.rs` | a region attached to a space at a user address |
//! | virtual kernel space | `vkspace.rs` | a region attached in the kernel (the work area) |
//! | physical memory | `physmem.rs` | a run of contiguous frames |

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod computation;
pub mod container;
pub mod container_box;
pub mod fifo;
pub mod mediator;
pub mod physmem;
pub mod plate;
pub mod pool;
pub mod proc;
pub mod process;
pub mod program;
pub mod vkspace;
pub mod vregion;
pub mod vspace;
pub mod vuspace;

pub use abi::ResKind as Kind;
use abi::{Error, ResInfo};
pub use restable::ResId;
use restable::{IdError, Table};

/// Pid of the kernel as the owner or caller of a resource operation.
pub const KERNEL: u64 = 0;

/// Most resources of one kind at once.
const TABLE_LIMIT: usize = 1 << 20;

/// A table slot: the resource and the process that owns it (0: the kernel).
/// Only its owner, or the kernel, may change or delete a resource.
pub struct Entry<T> {
    pub owner: u64,
    pub value: T,
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

/// The resources of `table` that `pid` owns (collected, so that the table's
/// lock can go before they are deleted one by one).
pub fn ids_owned_by<T>(table: &ResTable<T>, pid: u64) -> alloc::vec::Vec<ResId> {
    table.iter().filter(|(_, e)| e.owner == pid).map(|(id, _)| id).collect()
}

/// Gives entry `id` of `table` to `owner` (nothing if it is gone).
pub fn give<T>(table: &mut ResTable<T>, id: ResId, owner: u64) {
    if let Ok(e) = table.get_mut(id) {
        e.owner = owner;
    }
}

/// Inserts a new resource, giving the value back if the table is full.
pub fn insert<T>(table: &mut ResTable<T>, owner: u64, value: T) -> Result<ResId, Error> {
    table.insert(Entry { owner, value }).map_err(|(e, _)| id_error(e))
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

/// Creates the resources that exist from boot: the plates of the archive.
pub fn init() {
    plate::init_from_archive();
}

/// Deletes what a process still owned when it ended (resources it made
/// through the native API and never handed over).
pub fn release_owned_by(pid: u64) {
    // Containers and boxes first (they hold attachments), then attachments,
    // so that spaces and regions are free to go.
    container::release_owned_by(pid);
    container_box::release_owned_by(pid);
    vuspace::release_owned_by(pid);
    vkspace::release_owned_by(pid);
    vspace::release_owned_by(pid);
    vregion::release_owned_by(pid);
    physmem::release_owned_by(pid);
    program::release_owned_by(pid);
}

/// Hands a resource, and the resources it is composed of, to `owner`:
/// to a new process when it is composed, to the kernel when it is pooled.
pub fn set_owner(id: ResId, owner: u64) {
    match Kind::from_u64(id.kind() as u64) {
        Some(Kind::VirtualSpace) => {
            vspace::set_owner(id, owner);
            for (link, region) in vuspace::of_space(id) {
                vuspace::set_owner(link, owner);
                vregion::set_owner(region, owner);
            }
        }
        Some(Kind::VirtualKernelSpace) => {
            vkspace::set_owner(id, owner);
            if let Some(r) = vkspace::region_of(id) {
                vregion::set_owner(r, owner);
            }
        }
        Some(Kind::VirtualRegion) => vregion::set_owner(id, owner),
        Some(Kind::VirtualUserSpace) => vuspace::set_owner(id, owner),
        Some(Kind::Program) => program::set_owner(id, owner),
        _ => {}
    }
}

/// Live resources per kind, for the inspector and leak tests.
pub fn counts() -> [(Kind, usize); 11] {
    [
        (Kind::Process, process::count()),
        (Kind::Program, program::count()),
        (Kind::Plate, plate::count()),
        (Kind::Computation, computation::count()),
        (Kind::VirtualSpace, vspace::count()),
        (Kind::VirtualRegion, vregion::count()),
        (Kind::VirtualUserSpace, vuspace::count()),
        (Kind::VirtualKernelSpace, vkspace::count()),
        (Kind::PhysicalMemory, physmem::count()),
        (Kind::Container, container::count()),
        (Kind::ContainerBox, container_box::count()),
    ]
}
