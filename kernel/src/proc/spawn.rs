//! Building a process from its constituents (Tender's process creation):
//! program, virtual space, regions for text, data, BSS and stack attached
//! to the space, the work area holding the arguments, and a computation.
//! With eager loading every page is allocated and filled here, so the
//! program runs without a single page fault; with demand loading nothing is,
//! and each first touch faults the page in.

use super::program::{self, Program};
use super::{Process, Route};
use crate::arch::x86_64::trap::TrapFrame;
use crate::mm::frames;
use crate::mm::layout::{PAGE_SIZE, phys_to_virt};
use crate::sched::{self, computation::Computation};
use crate::sync::IrqMutex;
use crate::syscall::uaccess;
use crate::vm::region::{Backing, Kind, Region};
use crate::vm::space::{SpaceError, VirtualSpace};
use crate::vm::{USER_ANON_BASE, USER_STACK_SIZE, USER_STACK_TOP};
use abi::{Error, LoadPolicy, SpawnOptions};
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64};

impl From<SpaceError> for Error {
    fn from(e: SpaceError) -> Self {
        match e {
            SpaceError::OutOfMemory => Error::NoMemory,
            SpaceError::BadRange => Error::BadProgram,
        }
    }
}

/// The 4 KiB work area (Tender's work-area virtual kernel space): kernel
/// memory that carries the program name and arguments from the creator to
/// the new process, which copies them onto its stack at its first entry.
pub struct WorkArea {
    frame: u64,
    len: usize,
}

impl WorkArea {
    /// `name` then each argument, NUL-terminated, in one page.
    pub fn new(name: &str, args: &[u8]) -> Result<WorkArea, Error> {
        let len = name.len() + 1 + args.len() + usize::from(!args.is_empty() && args.last() != Some(&0));
        if len > PAGE_SIZE as usize {
            return Err(Error::Invalid);
        }
        let frame = frames::alloc(1).map_err(|_| Error::NoMemory)?;
        let page = phys_to_virt(frame) as *mut u8;
        // SAFETY: the frame is ours; all writes stay within `len` <= 4096 bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(name.as_ptr(), page, name.len());
            page.add(name.len()).write(0);
            core::ptr::copy_nonoverlapping(args.as_ptr(), page.add(name.len() + 1), args.len());
            if len > name.len() + 1 + args.len() {
                page.add(len - 1).write(0);
            }
        }
        Ok(WorkArea { frame, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the frame holds `len` initialised bytes for as long as self lives.
        unsafe { core::slice::from_raw_parts(phys_to_virt(self.frame) as *const u8, self.len) }
    }
}

impl Drop for WorkArea {
    fn drop(&mut self) {
        frames::free(self.frame, 1);
    }
}

/// Copies the arguments onto the user stack in the usual layout (argc, argv
/// pointers, NULL, then the strings) and points the entry registers at them:
/// `rdi` = argc, `rsi` = argv.
pub fn push_arguments(area: &WorkArea, frame: &mut TrapFrame) -> Result<(), Error> {
    let bytes = area.bytes();
    let strings_at = (USER_STACK_TOP - bytes.len() as u64) & !15;
    uaccess::copy_to_user(strings_at, bytes)?;
    let argc = bytes.iter().filter(|&&b| b == 0).count() as u64;
    let vector_at = (strings_at - 8 * (argc + 2)) & !15;
    uaccess::write(vector_at, &argc)?;
    let mut offset = 0u64;
    for (i, s) in bytes.split(|&b| b == 0).take(argc as usize).enumerate() {
        uaccess::write(vector_at + 8 * (1 + i as u64), &(strings_at + offset))?;
        offset += s.len() as u64 + 1;
    }
    uaccess::write(vector_at + 8 * (1 + argc), &0u64)?;
    frame.rsp = vector_at;
    frame.rdi = argc;
    frame.rsi = vector_at + 8;
    Ok(())
}

/// Finds a program in the initial archive: `name` alone means `bin/name`.
pub fn find_program(path: &str) -> Result<(String, &'static [u8]), Error> {
    let archive = crate::initrd::archive().ok_or(Error::NotFound)?;
    let file = if path.contains('/') {
        String::from(path)
    } else {
        alloc::format!("bin/{path}")
    };
    let image = platform::cpio::find(archive, &file).ok_or(Error::NotFound)?;
    let name = path.rsplit('/').next().unwrap_or(path);
    Ok((String::from(name), image))
}

/// The regions a program's segments need, attached to `space`.
fn attach_program(space: &mut VirtualSpace, prog: &Program, eager: bool) -> Result<(), Error> {
    for seg in &prog.segments {
        let page_start = seg.vaddr & !(PAGE_SIZE - 1);
        let pre = (seg.vaddr - page_start) as usize;
        let end = (seg.vaddr + seg.memsz).next_multiple_of(PAGE_SIZE);
        let image = &prog.image[seg.offset as usize..(seg.offset + seg.filesz) as usize];
        let mut pieces: [(Kind, u64, u64, Backing); 2] = [(Kind::Text, 0, 0, Backing::Zero); 2];
        if !seg.writable {
            pieces[0] = (
                Kind::Text,
                page_start,
                end,
                Backing::Image {
                    bytes: image,
                    offset: pre,
                },
            );
        } else {
            // File-backed data, then the BSS pages beyond it.
            let data_end = if seg.filesz == 0 {
                page_start
            } else {
                (seg.vaddr + seg.filesz).next_multiple_of(PAGE_SIZE)
            };
            pieces[0] = (
                Kind::Data,
                page_start,
                data_end,
                Backing::Image {
                    bytes: image,
                    offset: pre,
                },
            );
            pieces[1] = (Kind::Bss, data_end, end, Backing::Zero);
        }
        for (kind, from, to, backing) in pieces {
            if to <= from {
                continue;
            }
            let mut r = Region::new(
                kind,
                ((to - from) / PAGE_SIZE) as usize,
                backing,
                seg.writable,
                seg.executable,
            )
            .map_err(|_| Error::NoMemory)?;
            if eager {
                r.populate_all().map_err(|_| Error::NoMemory)?;
            }
            space.attach(from, r)?;
        }
    }
    let mut stack = Region::new(
        Kind::Stack,
        (USER_STACK_SIZE / PAGE_SIZE) as usize,
        Backing::Zero,
        true,
        false,
    )
    .map_err(|_| Error::NoMemory)?;
    if eager {
        stack.populate_all().map_err(|_| Error::NoMemory)?;
    }
    space.attach(USER_STACK_TOP - USER_STACK_SIZE, stack)?;
    Ok(())
}

/// Creates a process running `path` with `args` (NUL-separated) and makes it
/// runnable. `parent` is the pid that may wait for it.
pub fn spawn(path: &str, args: &[u8], options: &SpawnOptions, parent: u64) -> Result<u64, Error> {
    sched::reap();
    let policy = match LoadPolicy::from_u64(options.policy).ok_or(Error::Invalid)? {
        LoadPolicy::Default => super::default_policy(),
        p => p,
    };
    let affinity = match options.cpu {
        abi::ANY_CPU => crate::sched::computation::ANY_CPU,
        c if (c as usize) < crate::cpu::online_count() => c as usize,
        _ => return Err(Error::Invalid),
    };
    let (name, image) = find_program(path)?;
    let prog = program::parse(image)?;
    let mut space = VirtualSpace::new().map_err(|_| Error::NoMemory)?;
    attach_program(&mut space, &prog, policy == LoadPolicy::Eager)?;
    let work_area = WorkArea::new(&name, args)?;
    let pid = super::next_pid();
    let process = Arc::new(Process {
        pid,
        name,
        parent: AtomicU64::new(parent),
        policy,
        route: Route::Native,
        root: space.root(),
        space: IrqMutex::new(Some(space)),
        active_cpus: AtomicU64::new(0),
        computation: IrqMutex::new(None),
        work_area: IrqMutex::new(Some(work_area)),
        faults: Default::default(),
        killed: AtomicBool::new(false),
        exit_status: IrqMutex::new(None),
        exited: super::WaitQueue::new(),
        anon_next: AtomicU64::new(USER_ANON_BASE),
    });
    let comp = Computation::new_user(process.clone(), prog.entry, USER_STACK_TOP, 0, 0, affinity)
        .map_err(|_| Error::NoMemory)?;
    *process.computation.lock() = Some(Arc::downgrade(&comp));
    if options.foreground != 0 {
        super::set_foreground(pid);
    }
    super::register(process);
    sched::enqueue(comp);
    Ok(pid)
}
