//! Resource system calls (Tender's native resource interface): decoded
//! here, checked and performed by the mediator.

use crate::{MAX_TEXT, id, system};
use abi::{Error, LoadPolicy, call};
use ipc::process as proc;
use kcore::uaccess;
use resource::vspace::{self, At};
use resource::{computation, container as containers, container_box, physmem, process, program, vkspace, vregion};

pub fn sys_res_create(me: &proc::Process, c: call::ResCreate) -> Result<u64, Error> {
    use abi::ResKind as K;
    let me = me.pid();
    let id = match c.kind {
        K::Program => program::create(me, id(c.a))?,
        // Out of memory, the pool gives back what it holds first.
        K::VirtualSpace => resource::pool::or_reclaim(|| vspace::create(me))?,
        K::VirtualRegion => {
            let kind = abi::RegionKind::from_u64(c.b).ok_or(Error::Invalid)?;
            let (writable, executable) = (c.c & abi::prot::WRITE != 0, c.c & abi::prot::EXEC != 0);
            resource::pool::or_reclaim(|| vregion::create(me, kind, c.a, writable, executable))?
        }
        K::VirtualUserSpace => vspace::attach(me, id(c.a), id(c.b), At::Address(c.c))?.id,
        K::VirtualKernelSpace => vkspace::create(me, id(c.a))?,
        K::PhysicalMemory => resource::pool::or_reclaim(|| physmem::create(me, c.a))?,
        K::Process => {
            let policy = LoadPolicy::from_u64(c.d).ok_or(Error::Invalid)?;
            let terms = resource::proc::Terms {
                policy,
                parent: me,
                route: ipc::process::Route::Native,
                kernel_limit: 0,
                lender: 0,
            };
            process::create(me, id(c.a), id(c.b), id(c.c), terms)?
        }
        K::Computation => computation::create(me, id(c.a), c.b)?,
        K::Container => resource::pool::or_reclaim(|| containers::create(me, c.a, c.b))?,
        K::ContainerBox => container_box::create(me, c.a, c.b, c.c, c.d, 0)?,
        // Plates come from the archive and devices from the buses.
        // Pipes come from supervisors (`linux_pipe`).
        // File caches come from `file_cache(CREATE)`.
        K::Plate | K::Device | K::Pipe | K::FileCache => return Err(Error::Denied),
    };
    Ok(id.raw())
}

pub fn sys_work_area_write(me: &proc::Process, a: call::WorkAreaWrite) -> Result<u64, Error> {
    let args = uaccess::read_arg_bytes(a.strings, MAX_TEXT)?;
    // The first NUL-terminated string is the program name.
    let (name, rest) = match args.iter().position(|&b| b == 0) {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (&args[..], &[][..]),
    };
    vkspace::write(me.pid(), id(a.area), name, rest).map(|()| 0)
}

/// A plate's bytes. Plates are read-only, readable by anyone: the read
/// checks the identifier (kind, slot, generation) in the
/// plates' table and copies, with no operation of the mediator's to make.
pub fn sys_plate_read(a: call::PlateRead) -> Result<u64, Error> {
    // One read returns at most MAX_COPY bytes; the buffer is checked whole.
    let buf = uaccess::UserRange::new(a.buf.0.addr, (a.buf.0.len as usize).min(uaccess::MAX_COPY))?;
    let data = resource::plate::content(id(a.plate))?;
    let from = usize::try_from(a.offset).unwrap_or(usize::MAX).min(data.len());
    let n = buf.len().min(data.len() - from);
    buf.prefix(n).write(&data[from..from + n])?;
    Ok(n as u64)
}

pub fn sys_pool_set(me: &proc::Process, a: call::PoolSet) -> Result<u64, Error> {
    use abi::{MAX_POOL_RULES, PoolRule};
    system(me)?;
    let settings: abi::PoolSettings = uaccess::read_in(a.settings)?;
    if a.rules.count > MAX_POOL_RULES {
        return Err(Error::Limit);
    }
    let mut buf = core::mem::MaybeUninit::<[PoolRule; MAX_POOL_RULES as usize]>::uninit();
    let list = uaccess::UserRange::of_list(a.rules)?;
    let rules = uaccess::read_list(&mut buf, list)?;
    let settings = resource::pool::settings_from(&settings, rules)?;
    let adds = !settings.add.is_empty();
    resource::pool::set(settings);
    if !adds {
        return Ok(0);
    }
    resource::pool::add().map(|n| n as u64)
}
