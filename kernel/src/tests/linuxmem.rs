//! The memory calls a supervisor makes for its Linux process, under
//! hostile input: `caller_protect` (the kernel's mprotect on the waiting
//! process) and the parts of shared mappings a partial munmap keeps
//! (`Region::share_part`), and a file mapping's limits and end
//! (`caller_map_file`, `caller_file_end`). Bad input is an error, never a panic, and
//! nothing leaks.

use super::{end, live, ok};
use abi::Error;
use alloc::format;
use ipc::process as proc;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::frames;
use kcore::vm::USER_STACK_TOP;
use kcore::vm::region::{Backing, Kind, Region};

const READ: u64 = 1;

/// mprotect as `caller_protect` makes it: unaligned, wrapping, kernel-half,
/// unmapped and unknown-bit requests are refused; a process that is not
/// waiting in a call its caller serves cannot be named.
pub fn caller_protect_is_checked() -> TestResult {
    let (a, stranger) = (live()?, live()?);
    let (pa, ps) = (proc::get(a).ok_or("a gone")?, proc::get(stranger).ok_or("gone")?);
    let page = USER_STACK_TOP - 4096;
    let cases = [
        ("unaligned", page + 1, 4096, READ, Err(Error::Invalid)),
        ("unknown bits", page, 4096, 0x40, Err(Error::Invalid)),
        ("a wrapping length", page, u64::MAX - 100, READ, Err(Error::NoMemory)),
        (
            "the kernel half",
            0xffff_8000_0000_0000,
            4096,
            READ,
            Err(Error::NoMemory),
        ),
        ("past user space", page, 1 << 48, READ, Err(Error::NoMemory)),
        ("nothing mapped", 0x1000_0000_0000, 4096, READ, Err(Error::NoMemory)),
        ("length 0", 0x1000_0000_0000, 0, READ, Ok(0)),
        // The stack is not anonymous memory: accepted and not applied.
        ("the stack", page, 4096, READ, Ok(0)),
    ];
    let got = cases.map(|(what, addr, len, prot, want)| (what, syscall::linux_mprotect(&pa, addr, len, prot), want));
    let foreign = [0u64, 1, u64::MAX, a].map(|rid| ipc::supervise::waiting(&ps, rid).err());
    let alive = !pa.has_exited();
    drop((pa, ps));
    end(a);
    end(stranger);
    for (what, got, want) in got {
        ensure!(got == want, "{what}: {got:?}, not {want:?}");
    }
    ensure!(
        foreign.iter().all(Option::is_some),
        "a process named by a call it is not waiting in: {foreign:?}"
    );
    ensure!(alive, "the refused calls ended the process");
    Ok(())
}

/// Parts of a shared region: only ranges inside it, only of a region
/// whose frames are shared; each part maps the same frames, and the
/// frames go with the last holder of any part.
pub fn shared_parts_are_checked() -> TestResult {
    let before = frames::stats().free;
    {
        let mut whole = ok(Region::new(Kind::Heap, 4, Backing::Zero, true, false).map_err(|_| Error::NoMemory))?;
        ensure!(
            whole.share_part(0, 1).is_err(),
            "a part of a region that shares nothing"
        );
        let other = ok(whole.share().map_err(|_| Error::NoMemory))?;
        let refused = [(3, 2), (0, 0), (usize::MAX, 2), (4, 1), (1, usize::MAX)]
            .map(|(first, pages)| whole.share_part(first, pages).is_err());
        ensure!(refused.iter().all(|&r| r), "ranges out of the region: {refused:?}");
        let part = ok(whole.share_part(1, 2).map_err(|_| Error::NoMemory))?;
        ensure!(part.pages() == 2, "a part of {} pages", part.pages());
        ensure!(
            part.frame(0) == whole.frame(1) && part.frame(1) == other.frame(2),
            "a part over other frames"
        );
        ensure!(whole.sharers() == 2, "{} sharers of the whole", whole.sharers());
        drop(whole);
        drop(other);
        ensure!(part.frame(1).is_some(), "the part lost its frames");
    }
    let after = frames::stats().free;
    ensure!(
        after == before,
        "{}",
        format!("frames free {before} before, {after} after")
    );
    Ok(())
}

/// A file mapping's limits and end (`caller_map_file`, `caller_file_end`):
/// bad limits, addresses and ends are refused; mprotect past a limit is
/// refused (Denied: the process's EACCES) after changing the mappings
/// before the refusing one and none after it; a page past the end is
/// `PastEnd` and its private copy goes when the end moves down over it.
pub fn file_map_limits_are_checked() -> TestResult {
    use abi::linux::{MAP_FIXED, MAY_EXEC};
    use kcore::vm::space::FaultError;
    const PAGE: u64 = 4096;
    const RW: u64 = READ | 2;
    let a = live()?;
    let pa = proc::get(a).ok_or("a gone")?;
    let outcome = (|| -> TestResult {
        let at = ok(syscall::linux_map_into(&pa, 0, 4 * PAGE, READ, 0))?;
        // The second page: a mapping of its own that may never be written.
        ok(syscall::linux_map_into(&pa, at + PAGE, PAGE, READ, MAP_FIXED))?;
        let refused = [
            ("unknown bits", at + PAGE, 0x10, 0, 0, 0),
            ("no mapping starts there", at + PAGE + 1, 0, 0, 0, 0),
            ("inside a mapping", at + 3 * PAGE, 0, 0, 0, 0),
            ("nothing mapped", 0x5000_0000_0000, 0, 0, 0, 0),
            ("the stack", USER_STACK_TOP - 4096, 0, 0, 0, 0),
            ("an end no file has", at + PAGE, 0, 7, 0, u64::MAX),
            ("a first page no file has", at + PAGE, 0, 7, u64::MAX, 1),
        ];
        for (what, addr, may, file, first, pages) in refused {
            let r = syscall::linux_map_file(&pa, addr, may, file, first, pages);
            ensure!(r == Err(Error::Invalid), "{what}: {r:?}");
        }
        ok(syscall::linux_map_file(&pa, at + PAGE, MAY_EXEC, 0, 0, 0))?;
        // Writable now: limits it breaks are refused.
        let wr = ok(syscall::linux_map_into(&pa, 0, PAGE, RW, 0))?;
        let r = syscall::linux_map_file(&pa, wr, MAY_EXEC, 0, 0, 0);
        ensure!(
            r == Err(Error::Invalid),
            "a writable mapping never to be written: {r:?}"
        );
        let r = syscall::linux_mprotect(&pa, at + PAGE, PAGE, RW);
        ensure!(r == Err(Error::Denied), "PROT_WRITE past the limit: {r:?}");
        ok(syscall::linux_mprotect(&pa, at + PAGE, PAGE, READ | 4))?;
        // Over three mappings: the first changes, the rest do not.
        let r = syscall::linux_mprotect(&pa, at, 4 * PAGE, RW);
        ensure!(r == Err(Error::Denied), "over three mappings: {r:?}");
        let writable = |addr: u64| {
            pa.space()
                .and_then(|s| s.lock().region_at(addr).map(|r| r.region.writable))
        };
        ensure!(writable(at) == Some(true), "the mapping before it unchanged");
        ensure!(writable(at + PAGE) == Some(false), "the refusing one changed");
        ensure!(writable(at + 2 * PAGE) == Some(false), "the one after it changed");
        // A file end: page 1 of a two-page mapping is past a one-page file.
        let f = ok(syscall::linux_map_into(&pa, 0, 2 * PAGE, RW, 0))?;
        ok(syscall::linux_map_file(&pa, f, MAY_EXEC | 2, 77, 0, 1))?;
        let fault = |addr: u64| {
            pa.space()
                .map(|s| s.lock().resolve_fault(addr, true, false).map(|_| ()))
        };
        ensure!(fault(f) == Some(Ok(())), "the file's page: {:?}", fault(f));
        ensure!(
            fault(f + PAGE) == Some(Err(FaultError::PastEnd)),
            "past the end: {:?}",
            fault(f + PAGE)
        );
        let r = syscall::linux_file_end(&pa, 0, 5);
        ensure!(r == Err(Error::Invalid), "file 0: {r:?}");
        ensure!(syscall::linux_file_end(&pa, 78, 0) == Ok(0), "another file's mappings");
        ensure!(syscall::linux_file_end(&pa, 77, 0) == Ok(1), "one mapping of file 77");
        let kept = pa
            .space()
            .and_then(|s| s.lock().region_at(f).map(|r| r.region.frame(0).is_some()));
        ensure!(kept == Some(false), "the private copy past the new end stayed");
        ensure!(fault(f) == Some(Err(FaultError::PastEnd)), "cut to 0: {:?}", fault(f));
        ensure!(syscall::linux_file_end(&pa, 77, 2) == Ok(1), "grown again");
        ensure!(fault(f + PAGE) == Some(Ok(())), "grown: {:?}", fault(f + PAGE));
        Ok(())
    })();
    let alive = !pa.has_exited();
    drop(pa);
    end(a);
    outcome?;
    ensure!(alive, "the refused calls ended the process");
    Ok(())
}

/// A private file mapping's pages that are still the file's
/// (`Region::keep_file_pages`): a write to the file reaches them, and
/// every region still mapping the frame (a fork's copy, a part munmap
/// cut out) sees it, until the region writes the page, which makes it
/// its own. Out-of-page and absent pages take nothing; every frame goes
/// back when the regions go.
pub fn file_pages_take_writes_until_written() -> TestResult {
    const PAGE: usize = 4096;
    let before = frames::stats().free;
    let outcome = (|| -> TestResult {
        let no_memory = |_| "no memory";
        let mut r = Region::new(Kind::Heap, 3, Backing::Zero, true, false).map_err(no_memory)?;
        r.populate(0).map_err(no_memory)?;
        r.populate(1).map_err(no_memory)?;
        ensure!(r.keep_file_pages() == Ok(2), "two present pages kept");
        ensure!(r.keep_file_pages().is_err(), "kept twice");
        ensure!(
            r.is_file_page(0) && r.is_file_page(1) && !r.is_file_page(2),
            "which pages are the file's"
        );
        ensure!(r.fork_shared(0), "a file page mapped writable");
        let refused = [
            r.write_file_page(0, PAGE - 4, &[1; 10]),
            r.write_file_page(0, usize::MAX, &[1]),
            r.write_file_page(2, 0, &[1]),
            r.write_file_page(7, 0, &[1]),
        ];
        ensure!(refused.iter().all(|&w| !w), "bad writes taken: {refused:?}");
        let read = |g: &Region, at: usize| {
            let mut b = [0u8; 2];
            g.read_at(at, &mut b).then_some(b)
        };
        ensure!(r.write_file_page(0, 10, b"ab"), "a file page refused a write");
        ensure!(read(&r, 10) == Some(*b"ab"), "the write not there");
        let mut c = r.fork_copy().map_err(no_memory)?;
        ensure!(
            c.is_file_page(0) && c.frame(0) == r.frame(0),
            "the fork's copy is not the file's"
        );
        let mut other = Region::new(Kind::Heap, 1, Backing::Zero, true, false).map_err(no_memory)?;
        other.populate(0).map_err(no_memory)?;
        let mut other_copy = other.fork_copy().map_err(no_memory)?;
        ensure!(
            other.keep_file_pages().is_err() && other_copy.keep_file_pages().is_err(),
            "pages a fork shares made a file's"
        );
        drop((other, other_copy));
        ensure!(r.write_file_page(0, 20, b"cd"), "after the fork");
        ensure!(read(&c, 20) == Some(*b"cd"), "the copy does not see the file's write");
        // The copy writes page 0: its own from then on.
        c.break_fork(0).map_err(no_memory)?;
        ensure!(
            !c.is_file_page(0) && c.frame(0) != r.frame(0),
            "written, still the file's"
        );
        ensure!(r.write_file_page(0, 30, b"ef"), "after the copy wrote");
        ensure!(!c.write_file_page(0, 30, b"gh"), "a written page took a file write");
        ensure!(read(&c, 30) != Some(*b"ef"), "the copy's own page changed");
        // A part of the copy cut out keeps its file page.
        let mut part = Region::new(Kind::Heap, 1, Backing::Zero, true, false).map_err(no_memory)?;
        let pa = c.frame(1).ok_or("page 1 absent")?;
        ensure!(!part.adopt_file_page(0, 0), "frame 0 adopted");
        ensure!(part.adopt_file_page(0, pa), "a file page not adopted");
        ensure!(!part.adopt_file_page(0, pa), "adopted over a present page");
        ensure!(!part.adopt_file_page(1, pa), "adopted past the end");
        ensure!(part.write_file_page(0, 40, b"ij"), "the part's file page");
        ensure!(read(&r, PAGE + 40) == Some(*b"ij"), "the original does not see it");
        // The original writes page 1: a copy (the others hold the frame).
        let own = r.break_fork(1).map_err(no_memory)?;
        ensure!(
            Some(own) != part.frame(0) && part.is_file_page(0),
            "the others' page moved"
        );
        drop((r, c, part));
        Ok(())
    })();
    let after = frames::stats().free;
    outcome?;
    ensure!(
        after == before,
        "{}",
        format!("frames free {before} before, {after} after")
    );
    Ok(())
}

/// `caller_file_written` under hostile input: file 0, a range past what
/// an offset reaches, too many bytes are refused; another file, a range
/// no mapping has, a page the process wrote and a page past the end
/// take nothing; a page still the file's takes the bytes; a process that
/// is not waiting in a call its caller serves cannot be named.
pub fn caller_file_written_is_checked() -> TestResult {
    use abi::linux::{FILE_WRITTEN_MAX, MAY_EXEC, MAY_WRITE};
    const PAGE: u64 = 4096;
    const RW: u64 = READ | 2;
    let (a, stranger) = (live()?, live()?);
    let (pa, ps) = (proc::get(a).ok_or("a gone")?, proc::get(stranger).ok_or("gone")?);
    let outcome = (|| -> TestResult {
        let f = ok(syscall::linux_map_into(&pa, 0, 2 * PAGE, RW, 0))?;
        let space = pa.space().ok_or("no space")?;
        for i in 0..2 {
            space
                .lock()
                .resolve_fault(f + i * PAGE, true, false)
                .map_err(|_| "fault")?;
        }
        ok(syscall::linux_map_file(&pa, f, MAY_EXEC | MAY_WRITE, 77, 0, 2))?;
        let file_page = |addr: u64| {
            space
                .lock()
                .region_at(addr)
                .map(|r| r.region.is_file_page(((addr - r.base) / PAGE) as usize))
        };
        ensure!(file_page(f) == Some(true), "the mapping's pages are not the file's");
        let big = alloc::vec![7u8; FILE_WRITTEN_MAX + 1];
        let refused = [
            ("file 0", 0, 0, &b"x"[..]),
            ("a wrapping range", 77, u64::MAX, &b"xy"[..]),
            ("past what an offset reaches", 77, i64::MAX as u64, &b"xy"[..]),
            ("too many bytes", 77, 0, &big[..]),
        ];
        for (what, file, offset, data) in refused {
            let r = syscall::linux_file_written(&pa, file, offset, data);
            ensure!(r == Err(Error::Invalid), "{what}: {r:?}");
        }
        let none = [
            ("another file", 78, 0, &b"x"[..]),
            ("past the mapping", 77, 2 * PAGE, &b"x"[..]),
            ("no bytes", 77, 0, &b""[..]),
        ];
        for (what, file, offset, data) in none {
            let r = syscall::linux_file_written(&pa, file, offset, data);
            ensure!(r == Ok(0), "{what}: {r:?}");
        }
        let r = syscall::linux_file_written(&pa, 77, PAGE - 1, b"ab");
        ensure!(r == Ok(2), "across the two pages: {r:?}");
        let mut b = [0u8; 2];
        space.lock().copy_out(f + PAGE - 1, &mut b).map_err(|_| "read")?;
        ensure!(&b == b"ab", "the bytes not there: {b:?}");
        // The process writes page 0: its own, which a file write misses.
        space.lock().resolve_fault(f, true, false).map_err(|_| "write fault")?;
        ensure!(file_page(f) == Some(false), "a written page is still the file's");
        let r = syscall::linux_file_written(&pa, 77, 0, b"q");
        ensure!(r == Ok(0), "a written page took it: {r:?}");
        // Cut to one page: page 1 goes, and takes nothing.
        ensure!(syscall::linux_file_end(&pa, 77, 1) == Ok(1), "the end moved");
        let r = syscall::linux_file_written(&pa, 77, PAGE, b"z");
        ensure!(r == Ok(0), "a page past the end took it: {r:?}");
        Ok(())
    })();
    let foreign = [0u64, 1, u64::MAX, a].map(|rid| ipc::supervise::waiting(&ps, rid).err());
    let alive = !pa.has_exited();
    drop((pa, ps));
    end(a);
    end(stranger);
    outcome?;
    ensure!(
        foreign.iter().all(Option::is_some),
        "a process named by a call it is not waiting in: {foreign:?}"
    );
    ensure!(alive, "the refused calls ended the process");
    Ok(())
}
