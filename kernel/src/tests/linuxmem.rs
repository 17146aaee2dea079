//! The memory calls a supervisor makes for its Linux process, under
//! hostile input: `caller_protect` (the kernel's mprotect on the waiting
//! process) and the parts of shared mappings a partial munmap keeps
//! (`Region::share_part`). Bad input is an error, never a panic, and
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
