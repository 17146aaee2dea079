//! Building a process from its constituent resources, and taking it apart
//! (Tender's process creation and deletion, seed 000 §2.2–2.3).
//!
//! Every resource is made or changed through the mediator, and before
//! making one the pool is asked for it: a virtual space with the program's
//! regions already attached (kind 6); failing that, an empty space (2), the
//! program's shared text (5: its frames are every process's of the
//! program), regions of the right size (3), the program itself (4), a work
//! area (1). With eager loading
//! every page is present when the process starts, so it runs without a
//! single page fault; with demand loading pages come at first touch.

use crate::mediator;
use crate::proc::program::Program;
use crate::vspace::{self, At};
use crate::{KERNEL, ResId, computation, plate, pool, process, program, vkspace, vregion};
use abi::{Error, LoadPolicy, SpawnOptions};
use alloc::vec::Vec;
use ipc::process::Route;
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::mm::layout::PAGE_SIZE;
use kcore::uaccess;
use kcore::vm::region::Kind as RegionKind;
use kcore::vm::{LINUX_STACK_DEFAULT, LINUX_STACK_MAX, USER_STACK_SIZE, USER_STACK_TOP};

fn delete(id: ResId) {
    let _ = mediator::delete(KERNEL, id);
}

/// A one-page region attached in the kernel: a work area (pool kind 1).
pub fn new_work_area() -> Result<ResId, Error> {
    let region = vregion::create(KERNEL, RegionKind::Data, 1, true, false)?;
    vkspace::create(KERNEL, region).inspect_err(|_| delete(region))
}

/// An empty region of `pages` (pool kind 3).
pub fn new_region(pages: usize) -> Result<ResId, Error> {
    vregion::create(KERNEL, RegionKind::Heap, pages as u64, true, false)
}

fn region(pages: usize) -> Result<ResId, Error> {
    match pool::take_region(pages) {
        Some(r) => Ok(r),
        None => new_region(pages),
    }
}

/// The one executable segment, if the program has exactly one (only then
/// is a pooled text region unambiguous).
fn text_segment(prog: &Program) -> Option<usize> {
    let mut exec = prog.segments.iter().enumerate().filter(|(_, s)| s.executable);
    match (exec.next(), exec.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

fn pages_of(prog: &Program, segment: usize) -> (u64, usize) {
    let s = &prog.segments[segment];
    let start = s.vaddr & !(PAGE_SIZE - 1);
    let end = (s.vaddr + s.memsz).next_multiple_of(PAGE_SIZE);
    (start, ((end - start) / PAGE_SIZE) as usize)
}

/// The program's text made ahead (pool kind 5), for the plate's program:
/// its shared text, kept by the pool (None), or for text in the NVM a
/// region mapping it, for the caller to keep.
pub fn new_text_region(plate: ResId) -> Result<Option<ResId>, Error> {
    let program = take_program(plate)?;
    let prog = crate::program::get(program)?;
    let result = text_segment(&prog).ok_or(Error::Invalid).and_then(|seg| {
        if !shares_text(&prog.segments[seg]) {
            let r = region(pages_of(&prog, seg).1)?;
            return vregion::load(KERNEL, r, program, seg, true)
                .map(|_| Some(r))
                .inspect_err(|_| delete(r));
        }
        for (i, s) in prog.segments.iter().enumerate() {
            if shares_text(s) {
                let (master, mine) = master_text(program, &prog, i)?;
                if mine {
                    delete(master);
                }
            }
        }
        Ok(None)
    });
    give_back_program(plate, program);
    result
}

/// Whether every process of a program maps this segment's frames: a
/// read-only segment loaded from the image. (NVM text is the NVM's pages,
/// shared as they are; a pager's pages are its file's.)
fn shares_text(seg: &crate::proc::program::Segment) -> bool {
    !seg.writable && !seg.in_nvm && !seg.paged
}

/// The shared text of segment `seg` of the program (`pool::master`),
/// made if there is none yet: loaded, no page present (each comes at the
/// first touch of any process, once for all), paid for by its plate's
/// maker while any process maps it. Also whether it is the caller's to
/// delete once shared (the pool could not keep it).
fn master_text(program: ResId, prog: &Program, seg: usize) -> Result<(ResId, bool), Error> {
    if let Some(m) = pool::master(prog.plate, seg) {
        return Ok((m, false));
    }
    let pages = pages_of(prog, seg).1;
    let r = region(pages)?;
    let made = vregion::load(KERNEL, r, program, seg, false).and_then(|_| {
        let payer = plate::payer(prog.plate);
        let charge =
            kcore::mm::quota::Charge::new(payer.as_ref(), pages as u64 * PAGE_SIZE).map_err(|_| Error::Limit)?;
        vregion::make_joint(KERNEL, r, charge)
    });
    if let Err(e) = made {
        delete(r);
        return Err(e);
    }
    match pool::keep_master(prog.plate, seg, r) {
        pool::Master::Kept => Ok((r, false)),
        pool::Master::Other(m) => {
            delete(r);
            Ok((m, false))
        }
        pool::Master::Refused => Ok((r, true)),
    }
}

/// A region over the program's shared text of segment `seg`, its pages
/// all present with `eager`.
fn shared_text(program: ResId, prog: &Program, seg: usize, eager: bool) -> Result<ResId, Error> {
    // Reduce may delete the shared text between its look-up and its
    // share (nobody mapped it): one more try makes a new one.
    let mut tries = 2;
    let r = loop {
        tries -= 1;
        let (master, mine) = master_text(program, prog, seg)?;
        let shared = vregion::share_joint(KERNEL, master);
        if mine {
            delete(master);
        }
        match shared {
            Err(Error::NotFound) if tries > 0 => continue,
            done => break done?,
        }
    };
    if eager {
        vregion::with_detached(KERNEL, r, |g| g.populate_all())
            .and_then(|done| done.map_err(|_| Error::NoMemory))
            .inspect_err(|_| delete(r))?;
    }
    Ok(r)
}

fn take_program(plate: ResId) -> Result<ResId, Error> {
    match pool::take_program(plate) {
        Some(p) => Ok(p),
        None => program::create(KERNEL, plate),
    }
}

/// A program the kernel took for a composition goes back to the pool, if
/// it is still the live program of `plate` (the pool is keyed by what its
/// resources contain), or is deleted.
fn give_back_program(plate: ResId, program: ResId) {
    let whole = crate::program::get(program).is_ok_and(|p| p.plate == plate);
    crate::set_owner(program, KERNEL);
    if !(whole && pool::reuse_enabled() && pool::put_program(plate, program)) {
        delete(program);
    }
}

/// Detaches everything from a space and deletes it all.
pub fn destroy_space(space: ResId) {
    // A batch from the first each time: deleting one takes it off the
    // list, so those left before the next batch are the ones that would
    // not go. One that would not go after another went is looked at again
    // in a batch of its own making (the other may have taken it along),
    // before it is counted as staying.
    let mut batch = [(ResId::NONE, ResId::NONE); vspace::BATCH];
    let mut skip = 0;
    loop {
        let k = vspace::of_space(space, skip, &mut batch);
        if k == 0 {
            break;
        }
        let mut fresh = true;
        for &(link, region) in &batch[..k] {
            if mediator::delete(KERNEL, link).is_ok() {
                delete(region);
                fresh = false;
            } else if fresh {
                skip += 1;
            } else {
                break;
            }
        }
    }
    delete(space);
}

/// Attaches to `space` the regions of every segment of `prog` and a stack.
fn attach_program(space: ResId, program: ResId, prog: &Program, eager: bool) -> Result<(), Error> {
    let text = text_segment(prog);
    for (i, seg) in prog.segments.iter().enumerate() {
        let (start, pages) = pages_of(prog, i);
        let mut parts: Vec<(u64, ResId)> = Vec::new();
        // The program's shared text: the frames of every process of it
        // (seed 000's text sharing). Without memory or room in its
        // payer's limit for it, a text of this process's own.
        let shared = if shares_text(seg) {
            shared_text(program, prog, i, eager).ok()
        } else {
            None
        };
        if let Some(r) = shared {
            parts.push((start, r));
        } else if !seg.writable {
            // Pooled text has every page loaded: a demand-loaded process
            // takes it too (its pages are the program's, read-only).
            let pooled = if Some(i) == text {
                pool::take_text(prog.plate)
            } else {
                None
            };
            let r = match pooled {
                Some(r) => r,
                None => {
                    // NVM text needs no frames: a pooled region's would go.
                    let r = if seg.in_nvm { new_region(pages)? } else { region(pages)? };
                    vregion::load(KERNEL, r, program, i, eager).inspect_err(|_| delete(r))?;
                    r
                }
            };
            parts.push((start, r));
        } else {
            // File-backed data, then the BSS pages beyond it.
            let data_pages = if seg.filesz == 0 {
                0
            } else {
                (((seg.vaddr + seg.filesz).next_multiple_of(PAGE_SIZE) - start) / PAGE_SIZE) as usize
            };
            if data_pages > 0 {
                let r = region(data_pages)?;
                vregion::load(KERNEL, r, program, i, eager).inspect_err(|_| delete(r))?;
                parts.push((start, r));
            }
            if pages > data_pages {
                let r = region(pages - data_pages)?;
                vregion::clear(KERNEL, r, RegionKind::Bss, true, eager).inspect_err(|_| delete(r))?;
                parts.push((start + data_pages as u64 * PAGE_SIZE, r));
            }
        }
        for (base, r) in parts {
            vspace::attach(KERNEL, space, r, At::Address(base)).inspect_err(|_| delete(r))?;
        }
    }
    let stack = region((USER_STACK_SIZE / PAGE_SIZE) as usize)?;
    vregion::clear(KERNEL, stack, RegionKind::Stack, true, eager).inspect_err(|_| delete(stack))?;
    vspace::attach(KERNEL, space, stack, At::Address(USER_STACK_TOP - USER_STACK_SIZE))
        .inspect_err(|_| delete(stack))?;
    Ok(())
}

/// A new virtual space with every region of the plate's program attached
/// and loaded (pool kind 6, for the add function), built from pooled parts
/// (spaces, text regions, regions) where there are some.
pub fn compose_space(plate: ResId) -> Result<ResId, Error> {
    let program = take_program(plate)?;
    let result = compose_with(program, plate, true, false);
    give_back_program(plate, program);
    result
}

fn compose_with(program: ResId, plate: ResId, eager: bool, take_full: bool) -> Result<ResId, Error> {
    let prog = crate::program::get(program)?;
    if take_full && let Some(space) = pool::take_full(plate) {
        // A space left by an earlier process of this program: give its
        // writable regions their initial content back. Demand loading
        // takes it too: its present pages are the program's initial ones
        // once refreshed, and a space left by every ended process that no
        // creation takes again would only pile up in the pool.
        let refreshed = vspace::get(KERNEL, space)?.lock().refresh(eager);
        match refreshed {
            Ok(()) => return Ok(space),
            Err(_) => {
                destroy_space(space);
                return Err(Error::NoMemory);
            }
        }
    }
    let space = match pool::take_space() {
        Some(s) => s,
        None => vspace::create(KERNEL)?,
    };
    match attach_program(space, program, &prog, eager) {
        Ok(()) => {
            vspace::mark_composed(space, plate);
            Ok(space)
        }
        Err(e) => {
            destroy_space(space);
            Err(e)
        }
    }
}

/// Eager loading of pages a pager has (an OFF2F program's data, in file
/// 1): each is taken from the file's page cache, or asked of the pager
/// now by the process composing `p`, which waits (seed 001's data read as
/// Tender loads: all at creation), and copied for `p` to write. Pages
/// read counted as `p`'s; with no process composing (the kernel's own
/// compositions), they come at faults.
fn page_in_all(p: &super::Process) -> Result<(), Error> {
    let Some(me) = ipc::process::current() else {
        return Ok(());
    };
    let space = p.space().ok_or(Error::NotFound)?;
    let mut from = 0;
    let mut wanted = Vec::new();
    while from != u64::MAX {
        wanted.clear();
        from = space.lock().pending_pages((from, u64::MAX), &mut wanted, 16);
        for &(va, req) in &wanted {
            // The file's cached page, if any, with no message.
            let cached = space.lock().map_cached(va).is_some();
            if !cached {
                let frame = ipc::pager::page_in(&me, &req)?;
                let resolved = space
                    .lock()
                    .supply(va, frame.into_raw(), &req)
                    .map_err(|_| Error::NoMemory)?;
                if resolved.paged {
                    p.count_paged(1);
                }
            }
            // A copy of its own now, writable: an eager process takes no
            // fault, not even its first write's.
            space
                .lock()
                .resolve_fault(va, true, false)
                .map_err(|_| Error::NoMemory)?;
        }
    }
    Ok(())
}

/// Finds a program in the initial archive: `name` alone means `bin/name`.
pub fn find_plate(path: &str) -> Result<ResId, Error> {
    if path.contains('/') {
        return plate::find(KERNEL, path);
    }
    let mut file = alloc::string::String::new();
    file.try_reserve_exact(4 + path.len()).map_err(|_| Error::NoMemory)?;
    file.push_str("bin/");
    file.push_str(path);
    plate::find(KERNEL, &file)
}

/// Creates a process running `path` with `args` (NUL-separated) and makes it
/// runnable, holding `options.rights`. `parent` is the pid that may wait for
/// it; whether it may give those rights is the caller's to check. Out of
/// memory, the pool gives back what it holds first (`pool::or_reclaim`).
pub fn spawn(path: &str, args: &[u8], options: &SpawnOptions, parent: u64) -> Result<u64, Error> {
    pool::or_reclaim(|| spawn_once(path, args, options, parent))
}

fn spawn_once(path: &str, args: &[u8], options: &SpawnOptions, parent: u64) -> Result<u64, Error> {
    kcore::computation::reap();
    let policy = match LoadPolicy::from_u64(options.policy).ok_or(Error::Invalid)? {
        LoadPolicy::Default => ipc::process::default_policy(),
        p => p,
    };
    if options.cpu != abi::ANY_CPU && options.cpu as usize >= kcore::cpu::online_count() {
        return Err(Error::Invalid);
    }
    if options.rights & !abi::rights::ALL != 0 {
        return Err(Error::Invalid);
    }
    let route = route_of(options, parent)?;
    let plate = match options.tag {
        0 => find_plate(path)?,
        tag => plate::find_tagged(KERNEL, path, tag)?,
    };
    let eager = policy == LoadPolicy::Eager;
    let how = Composition {
        policy,
        parent,
        route,
        cpu: options.cpu,
        kernel_limit: options.kernel_limit,
        lender: 0,
    };
    let pid = compose_and_start(
        plate,
        args,
        &how,
        |program| compose_with(program, plate, eager, true),
        |p| {
            if options.rights != 0 {
                p.give_rights(options.rights);
            }
            if eager {
                page_in_all(p)?;
            }
            if matches!(route, Route::Linux { .. }) {
                attach_linux_stack(p, options.stack)?;
                crate::pipe::inherit_exec(p)?;
                p.set_linux_start_signals(options.sigmask & !abi::linux::sigmask::UNBLOCKABLE, options.sigpending);
            }
            Ok(())
        },
    )?;
    if options.foreground != 0 {
        ipc::process::set_foreground(pid);
    }
    Ok(pid)
}

/// Where a Linux program's stack below the 64 KiB one begins, for a
/// stack of `limit` bytes (its RLIMIT_STACK; 0: Linux's default), or
/// `None` when the 64 KiB one is all of it.
fn linux_stack_base(limit: u64) -> Option<u64> {
    let limit = match limit {
        0 => LINUX_STACK_DEFAULT,
        l => l.min(LINUX_STACK_MAX),
    } & !(PAGE_SIZE - 1);
    (limit > USER_STACK_SIZE).then(|| USER_STACK_TOP - limit)
}

/// A Linux program's stack grows, at faults below it, from the 64 KiB of
/// the composition down to its limit (the space's stack floor), as Linux's
/// VM_GROWSDOWN: a program that never goes deep pays nothing at exec, fork
/// or end for a list of megabytes of pages, and the pages it grows over
/// are filled at their first touch whatever the loading policy. The end
/// gives the stack back its 64 KiB, so the pooled space stays the
/// program's.
fn attach_linux_stack(p: &super::Process, limit: u64) -> Result<(), Error> {
    let floor = linux_stack_base(limit).unwrap_or(0);
    if let Some(space) = p.space() {
        space.lock().set_stack_floor(floor);
    }
    Ok(())
}

/// Where the new process's system calls go. A Linux program's supervisor
/// must be alive, and its creator itself or a child of its creator's: a
/// process cannot hand its calls to a stranger.
fn route_of(options: &SpawnOptions, parent: u64) -> Result<Route, Error> {
    match options.personality {
        abi::linux::NATIVE => Ok(Route::Native),
        abi::linux::LINUX => {
            let s = ipc::process::get(options.supervisor).ok_or(Error::NotFound)?;
            if s.has_exited() || !(s.pid() == parent || s.is_child_of(parent)) || options.linux_pid == 0 {
                return Err(Error::Invalid);
            }
            Ok(Route::Linux {
                supervisor: s.pid(),
                pid: options.linux_pid,
            })
        }
        _ => Err(Error::Invalid),
    }
}

/// Takes an ended process apart: its anonymous memory is deleted. Only
/// what the kernel composed goes to the pool (when reuse is on): its space,
/// if it still holds exactly the program's regions, under the plate they
/// came from; its work area; its program. A process composed of parts of
/// another process's making leaves nothing in the pool: its parts are
/// deleted.
pub fn decompose(p: &super::Process) {
    p.forget_ica_target();
    let Some(space_ref) = p.take_space() else { return };
    // A space another process holds now is that one's to take apart: its
    // lender's (a borrower gave it back), or a borrower's (handed over as
    // this process, its user, began to end).
    if let Some(to) = p.space_left_to() {
        // The memory's owner and the break go to the space's user now (a
        // borrower handed the space over in turn may have ended already:
        // whoever owns it last passes it on).
        let user = space_ref.lock().user();
        if to != 0 && user != 0 && vspace::owned_by(p.space_id(), p.pid()) {
            crate::set_owner(p.space_id(), user);
            if let Some(u) = ipc::process::get(user) {
                u.set_brk(p.brk());
            }
        }
        drop(space_ref);
        // The borrower may have ended meanwhile and taken the space apart
        // while this end still held it, which its deletion refuses: the
        // last holder deletes it (refused while anyone uses it, or while
        // anything is attached to it).
        if to != 0 {
            delete(p.space_id());
        }
        release_parts(p);
        return;
    }
    // The pooled space's next program has a limit of its own, if any, and
    // a stack as it was composed: one that stays grown (no memory for its
    // shorter list) is not pooled, lest eager loading fill all of it.
    let shrunk = {
        let mut s = space_ref.lock();
        s.set_stack_floor(0);
        s.shrink_stack((USER_STACK_SIZE / PAGE_SIZE) as usize)
    };
    // One at a time, allocating nothing (teardown must not).
    let mut skip = 0;
    loop {
        let heap = space_ref
            .lock()
            .regions()
            .filter(|a| a.region.kind == RegionKind::Heap)
            .nth(skip)
            .map(|a| (a.link_id, a.region_id));
        let Some((link, region)) = heap else { break };
        if mediator::delete(KERNEL, link).is_ok() {
            delete(region);
        } else {
            skip += 1;
        }
    }
    let space = p.space_id();
    let attached = space_ref.lock().region_count();
    drop(space_ref);
    crate::set_owner(space, KERNEL);
    // The copies its forks left for its next go with it.
    pool::drop_forks(space);
    let poolable = shrunk
        && p.kernel_composed()
        && vspace::composition(space).is_some_and(|c| c.plate == p.plate() && c.attachments == attached);
    let kept = if poolable {
        pool::reuse_enabled() && pool::put_full(p.plate(), space)
    } else {
        shrunk && keep_fork_copy(space)
    };
    if !kept {
        destroy_space(space);
    }
    pool::text_unused(p.plate());
    release_parts(p);
}

/// Keeps an ended fork's copy `space` (the kernel's now), emptied, for the
/// next fork of the same space by the same process, while that process
/// lives on in it (`pool::put_fork`): whether it was kept.
fn keep_fork_copy(space: ResId) -> bool {
    let Some((from, owner)) = vspace::fork_of(space) else {
        return false;
    };
    let parent_lives = ipc::process::get(owner).is_some_and(|o| !o.has_exited() && o.space_id() == from);
    parent_lives && pool::reuse_enabled() && vspace::empty_for_fork(space) && pool::put_fork(from, owner, space)
}

/// An ended process's program and work area: back to the pool, or deleted.
fn release_parts(p: &super::Process) {
    let area = p.take_work_area();
    if p.kernel_composed() {
        give_back_program(p.plate(), p.program());
    } else {
        delete(p.program());
    }
    if let Some(area) = area {
        release_work_area(area, p.kernel_composed());
    }
}

/// A work area whose arguments have been delivered: back to the pool if
/// the kernel made it, or deleted.
pub fn release_work_area(area: ResId, kernel_made: bool) {
    crate::set_owner(area, KERNEL);
    if !(kernel_made && pool::reuse_enabled() && pool::put_work_area(area)) {
        delete_work_area(area);
    }
}

/// Deletes a work area and its region.
fn delete_work_area(area: ResId) {
    let region = crate::vkspace::region_of(area);
    delete(area);
    if let Some(r) = region {
        delete(r);
    }
}

/// Copies the arguments from the work area onto the user stack in the usual
/// layout (argc, argv pointers, NULL, then the strings) and points the entry
/// registers at them: `rdi` = argc, `rsi` = argv.
/// A Linux program's first stack, as Linux lays it out (the System V
/// x86_64 ABI): argc at the stack pointer, then argv, a null, envp, a
/// null, the auxiliary vector, with the strings above. The work area holds
/// the name, then argc in decimal, the path execve was given (AT_EXECFN),
/// argv, then the environment: a count, since any argument may be empty.
pub fn push_linux_stack(area: ResId, frame: &mut TrapFrame, program: ResId) -> Result<(), Error> {
    let prog = crate::program::get(program)?;
    let bytes = crate::vkspace::read(area)?;
    let mut strings = bytes.split(|&b| b == 0);
    strings.next(); // the name (the kernel's; argv[0] is the program's)
    let all: Vec<&[u8]> = crate::try_collect(strings)?;
    // The last piece is what follows the final NUL (empty).
    let all = &all[..all.len().saturating_sub(1)];
    let (argc, execfn, rest) = match all {
        [argc, execfn, rest @ ..] => (linux_count(argc).ok_or(Error::Invalid)?, *execfn, rest),
        _ => return Err(Error::Invalid),
    };
    if argc > rest.len() {
        return Err(Error::Invalid);
    }
    let (argv, envp) = rest.split_at(argc);
    // The strings, then 16 random bytes and the platform's name, from the
    // top down; the whole first stack is laid out here and copied to the
    // process once (a copy per string and per word cost more than the
    // bytes).
    let t = kcore::clock::cycles();
    let mut random = [0u8; 16];
    for (i, b) in random.iter_mut().enumerate() {
        *b = (t.rotate_left(i as u32 * 7) ^ (t >> (i % 8))) as u8 ^ (i as u8).wrapping_mul(151);
    }
    let platform: &[u8] = b"x86_64";
    let strings_len: usize = argv
        .iter()
        .chain(envp)
        .chain([&execfn])
        .map(|s| s.len() + 1)
        .sum::<usize>()
        + platform.len()
        + 1
        + 17;
    let strings_at = USER_STACK_TOP - strings_len as u64;
    // argc, argv, null, envp, null, auxv pairs, AT_NULL pair: 8-byte words
    // below the strings, argc 16-byte aligned.
    const AUXV: usize = 17;
    let words = 1 + argv.len() + 1 + envp.len() + 1 + 2 * (AUXV + 1);
    let sp = (strings_at - 8 * words as u64) & !15;
    let mut image: Vec<u8> = Vec::new();
    image
        .try_reserve_exact((USER_STACK_TOP - sp) as usize)
        .map_err(|_| Error::NoMemory)?;
    image.resize((USER_STACK_TOP - sp) as usize, 0);
    let mut top = USER_STACK_TOP;
    let mut place = |data: &[u8]| -> u64 {
        top -= data.len() as u64 + 1;
        let at = (top - sp) as usize;
        image[at..at + data.len()].copy_from_slice(data);
        top
    };
    let mut argv_at = Vec::new();
    let mut envp_at = Vec::new();
    argv_at.try_reserve_exact(argv.len()).map_err(|_| Error::NoMemory)?;
    envp_at.try_reserve_exact(envp.len()).map_err(|_| Error::NoMemory)?;
    // The path is the topmost string, as on Linux.
    let execfn = place(execfn);
    for s in argv {
        argv_at.push(place(s));
    }
    for s in envp {
        envp_at.push(place(s));
    }
    let platform = place(platform);
    let random_at = place(&random);
    let auxv: [(u64, u64); AUXV] = [
        (3, prog.phdr),  // AT_PHDR
        (4, 56),         // AT_PHENT
        (5, prog.phnum), // AT_PHNUM
        (6, PAGE_SIZE),  // AT_PAGESZ
        (7, 0),          // AT_BASE: no interpreter
        (8, 0),          // AT_FLAGS
        (9, prog.entry), // AT_ENTRY
        (11, 0),         // AT_UID
        (12, 0),         // AT_EUID
        (13, 0),         // AT_GID
        (14, 0),         // AT_EGID
        (15, platform),  // AT_PLATFORM
        (16, 0),         // AT_HWCAP
        (17, 100),       // AT_CLKTCK
        (23, 0),         // AT_SECURE
        (25, random_at), // AT_RANDOM
        (31, execfn),    // AT_EXECFN
    ];
    let mut at = 0;
    let mut push = |v: u64| {
        image[at..at + 8].copy_from_slice(&v.to_le_bytes());
        at += 8;
    };
    push(argv_at.len() as u64);
    for &a in &argv_at {
        push(a);
    }
    push(0);
    for &e in &envp_at {
        push(e);
    }
    push(0);
    for (k, v) in auxv {
        push(k);
        push(v);
    }
    push(0);
    push(0);
    uaccess::copy_to_user(sp, &image)?;
    frame.rsp = sp;
    frame.rdi = 0;
    frame.rsi = 0;
    // The System V ABI's rdx at entry: a function for atexit, none here.
    frame.rdx = 0;
    Ok(())
}

/// argc as the work area spells it: decimal digits, no more than a page
/// of arguments could need.
fn linux_count(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 4 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, &d| n * 10 + usize::from(d - b'0')))
}

pub fn push_arguments(area: ResId, frame: &mut TrapFrame) -> Result<(), Error> {
    let bytes = crate::vkspace::read(area)?;
    let strings_at = (USER_STACK_TOP - bytes.len() as u64) & !15;
    uaccess::copy_to_user(strings_at, &bytes)?;
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

/// A copy of Linux process `parent` (waiting in a fork its supervisor
/// serves), whose calls go to `supervisor` as Linux pid `linux_pid`: the
/// same program, a new space with the parent's read-only regions shared
/// (their frames, not copies: seed 000's text sharing) and its private
/// ones copy-on-write, starting with registers `regs` (the parent's, rax 0)
/// and signal mask `sigmask` (the forking thread's), nothing pending.
/// Started; its parent (who may wait for it) is the supervisor.
pub fn fork(
    parent: &super::Process,
    regs: abi::linux::Regs,
    supervisor: u64,
    linux_pid: u64,
    sigmask: u64,
) -> Result<u64, Error> {
    let (how, regs) = linux_child(parent, regs, supervisor, linux_pid, 0)?;
    compose_and_start(
        parent.plate(),
        b"",
        &how,
        |_| copy_space(parent),
        |child| {
            child.mark_forked();
            crate::pipe::inherit(parent, child)?;
            // Its break is where the parent's is: the copied space holds
            // the parent's break memory, which the child goes on from.
            child.set_brk(parent.brk());
            child.set_start_regs(regs);
            child.set_linux_start_signals(sigmask, 0);
            Ok(())
        },
    )
}

/// A Linux vfork child of `parent` (waiting in a vfork its supervisor
/// serves), whose calls go to `supervisor` as Linux pid `linux_pid`: a
/// process of its own (pid, computation, supervisor, kernel-served
/// descriptors), composed in the parent's space itself, lent to it
/// (Tender's resources exist apart from the processes that use them), so
/// that what it writes and maps, and where it moves the break, its parent
/// sees. It holds the space until it ends, an exec included (the program
/// exec starts is a new process with a space of its own), then gives it
/// back; should the parent end first, the space is handed over to it.
/// Busy when the space is lent to as many as it may be (`MAX_BORROWERS`),
/// which a copy (`fork`) serves instead. Its signal mask is `sigmask`.
pub fn vfork(
    parent: &super::Process,
    regs: abi::linux::Regs,
    supervisor: u64,
    linux_pid: u64,
    sigmask: u64,
) -> Result<u64, Error> {
    let (how, regs) = linux_child(parent, regs, supervisor, linux_pid, parent.pid())?;
    compose_and_start(
        parent.plate(),
        b"",
        &how,
        |_| {
            // Its memory, its own or lent to it (a vfork child's vfork).
            let space = parent.space().ok_or(Error::NotFound)?;
            let holds = space.lock().holds(parent.pid());
            if holds {
                Ok(parent.space_id())
            } else {
                Err(Error::NotFound)
            }
        },
        |child| {
            child.mark_forked();
            // Its break is its lender's (see `linux.rs`'s brk).
            crate::pipe::inherit(parent, child)?;
            child.set_start_regs(regs);
            child.set_linux_start_signals(sigmask, 0);
            Ok(())
        },
    )
}

/// How a Linux fork or vfork child of `parent` is placed (its calls to
/// `supervisor` as Linux pid `linux_pid`, in a space `lender` lends, 0 for
/// its own), and its first registers: the parent's, with fork's 0 in rax.
fn linux_child(
    parent: &super::Process,
    regs: abi::linux::Regs,
    supervisor: u64,
    linux_pid: u64,
    lender: u64,
) -> Result<(Composition, alloc::boxed::Box<abi::linux::Regs>), Error> {
    kcore::computation::reap();
    let how = Composition {
        policy: parent.policy(),
        parent: supervisor,
        route: Route::Linux {
            supervisor,
            pid: linux_pid,
        },
        cpu: abi::ANY_CPU,
        kernel_limit: 0,
        lender,
    };
    let mut regs = kcore::mm::heap::try_box(regs).map_err(|_| Error::NoMemory)?;
    regs.rax = 0;
    Ok((how, regs))
}

/// How a new process is placed: its loading policy, the pid that may wait
/// for it, where its calls go, its CPU.
struct Composition {
    policy: LoadPolicy,
    parent: u64,
    route: Route,
    cpu: u64,
    kernel_limit: u64,
    /// The space `make_space` gives is this process's, lent: a failure
    /// leaves it to its lender (0: none).
    lender: u64,
}

/// Composes a process of `plate`'s program, the space `make_space` gives
/// (the program's id in hand), a work area with `args`; lets `prepare`
/// finish it before it runs, then starts it. On any failure every part
/// goes back or is deleted.
fn compose_and_start(
    plate: ResId,
    args: &[u8],
    how: &Composition,
    make_space: impl FnOnce(ResId) -> Result<ResId, Error>,
    prepare: impl FnOnce(&super::Process) -> Result<(), Error>,
) -> Result<u64, Error> {
    let program = take_program(plate)?;
    let space = match make_space(program) {
        Ok(s) => s,
        Err(e) => {
            give_back_program(plate, program);
            return Err(e);
        }
    };
    let drop_space = |space| {
        if how.lender == 0 {
            destroy_space(space);
        }
    };
    let work_area = match pool::take_work_area().map_or_else(new_work_area, Ok) {
        Ok(w) => w,
        Err(e) => {
            drop_space(space);
            give_back_program(plate, program);
            return Err(e);
        }
    };
    let name = crate::program::get(program)?.name.clone();
    let composed = vkspace::write(KERNEL, work_area, name.as_bytes(), args).and_then(|_| {
        let terms = super::Terms {
            policy: how.policy,
            parent: how.parent,
            route: how.route,
            kernel_limit: how.kernel_limit,
            lender: how.lender,
        };
        process::create(KERNEL, program, space, work_area, terms)
    });
    let process = match composed {
        Ok(p) => p,
        Err(e) => {
            delete(work_area);
            drop_space(space);
            give_back_program(plate, program);
            return Err(e);
        }
    };
    let pid = process.index() as u64;
    if let Some(p) = ipc::process::get(pid)
        && let Err(e) = prepare(&p)
    {
        drop(p);
        super::abandon(pid);
        return Err(e);
    }
    // From here the process owns its parts; if it cannot start, ending it
    // takes them apart again.
    let started = computation::create(KERNEL, process, how.cpu).and_then(|_| process::start(KERNEL, process));
    if let Err(e) = started {
        super::abandon(pid);
        return Err(e);
    }
    Ok(pid)
}

/// A new space (the kernel's) holding a copy of what `p` has attached of
/// its own (`vspace::copy`): of its lender's, in a space lent to it.
/// Into the copy an earlier fork of the same space for the same process
/// left when it ended (`pool::take_fork`), if there is one.
fn copy_space(p: &super::Process) -> Result<ResId, Error> {
    let (from, owner) = (p.space_id(), p.memory_owner());
    let spare = pool::take_fork(from, owner);
    vspace::copy_reusing(KERNEL, from, owner, spare)
}
