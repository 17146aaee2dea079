//! `caller_read_many` (several ranges of a waiting Linux process's memory
//! into its supervisor's, in one call) under hostile input: ranges are
//! read in order up to the first that cannot be (outside user space,
//! unmapped, wrapping, a buffer of the supervisor's that cannot take
//! them), which says how many were; an empty, too long or too large list
//! is refused before anything is read; only the supervisor holding the
//! call can name it, and only while it holds it.

use super::routed::first_on;
use super::{Supervised, ok};
use abi::linux::entry;
use abi::{Error, ReadEntry};
use ipc::process as proc;
use ipc::supervise::read_many;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::uaccess::UserRange;
use kcore::vm::USER_STACK_TOP;

fn range(addr: u64, buf: u64, len: u64) -> ReadEntry {
    ReadEntry { addr, buf, len }
}

fn bytes<const N: usize>(pid: u64, at: u64) -> Result<[u8; N], Error> {
    let mut b = [0u8; N];
    proc::read_user_of(pid, UserRange::new(at, N)?, &mut b).map(|()| b)
}

pub fn read_many_is_checked() -> TestResult {
    let f = Supervised::new(4243)?;
    let (sup, stranger, child) = (f.sup, f.stranger, f.child.clone());
    // It faults at once: its call waits at `sup`, which accepts it below.
    let outcome = (|| -> TestResult {
        let child = child.clone()?;
        let rid = first_on(sup, entry::FAULT)?.rid();
        let get = |pid| proc::get(pid).ok_or("a test process is gone");
        let (s, st, c) = (get(sup)?, get(stranger)?, get(child)?);
        // In the child's (lent) stack page, below the sleeper's arguments,
        // and in the supervisor's.
        let at = USER_STACK_TOP - 4096 + 512;
        let dst = USER_STACK_TOP - 4096 + 1024;
        let pattern: [u8; 64] = core::array::from_fn(|i| i as u8 ^ 0x5a);
        ok(proc::write_user_of(child, ok(UserRange::new(at, 64))?, &pattern))?;
        ok(proc::write_user_of(sup, ok(UserRange::new(dst, 64))?, &[0; 64]))?;

        let three = read_many(
            &s,
            rid,
            &[range(at, dst, 16), range(at + 40, dst + 16, 8), range(at, dst + 24, 8)],
        );
        let seen = ok(bytes::<32>(sup, dst))?;
        let mut want = [0u8; 32];
        want[..16].copy_from_slice(&pattern[..16]);
        want[16..24].copy_from_slice(&pattern[40..48]);
        want[24..].copy_from_slice(&pattern[..8]);
        ensure!(three == Ok(3) && seen == want, "three ranges: {three:?}, {seen:?}");

        // Ranges into the same bytes: each in turn, the last one stays.
        let overlapping = read_many(&s, rid, &[range(at, dst, 16), range(at + 32, dst + 8, 16)]);
        let seen = ok(bytes::<24>(sup, dst))?;
        ensure!(
            overlapping == Ok(2) && seen[..8] == pattern[..8] && seen[8..] == pattern[32..48],
            "overlapping buffers: {overlapping:?}, {seen:?}"
        );

        // It stops at the first range it cannot read; those after it are not read.
        ok(proc::write_user_of(sup, ok(UserRange::new(dst, 64))?, &[0; 64]))?;
        let kernel = 0xffff_8000_0000_0000;
        let unmapped = 0x1000_0000_0000;
        let cases = [
            ("the kernel half", range(kernel, dst + 8, 8)),
            ("nothing mapped", range(unmapped, dst + 8, 8)),
            ("a wrapping range", range(u64::MAX - 4, dst + 8, 8)),
            ("across the top of the stack", range(USER_STACK_TOP - 4, dst + 8, 8)),
            ("into the supervisor's kernel half", range(at, kernel, 8)),
            ("into nothing mapped of the supervisor's", range(at, unmapped, 8)),
            ("into a wrapping buffer", range(at, u64::MAX - 4, 8)),
        ];
        for (what, bad) in cases {
            let r = read_many(&s, rid, &[range(at, dst, 8), bad, range(at, dst + 16, 8)]);
            let seen = ok(bytes::<24>(sup, dst))?;
            ensure!(
                r == Ok(1) && seen[..8] == pattern[..8] && seen[8..] == [0; 16],
                "{what}: {r:?}, {seen:?}"
            );
        }

        // Lists refused whole: nothing is read.
        ok(proc::write_user_of(sup, ok(UserRange::new(dst, 64))?, &[0; 64]))?;
        let many = [range(at, dst, 1); abi::MAX_BATCH as usize + 1];
        let half = abi::MAX_COPY as u64 / 2 + 1;
        let lists: [(&str, &[ReadEntry]); 5] = [
            ("an empty list", &[]),
            ("more than MAX_BATCH ranges", &many),
            (
                "more than MAX_COPY bytes",
                &[range(at, dst, 8), range(at, dst, half), range(at, dst, half)],
            ),
            ("a length of 2^64 - 1", &[range(at, dst, 8), range(at, dst, u64::MAX)]),
            (
                "lengths that wrap in sum",
                &[range(at, dst, 8), range(at, dst, u64::MAX - 2), range(at, dst, 8)],
            ),
        ];
        for (what, list) in lists {
            let r = read_many(&s, rid, list);
            ensure!(r == Err(Error::Invalid), "{what}: {r:?}");
        }
        ensure!(ok(bytes::<64>(sup, dst))? == [0; 64], "a refused list read something");

        // Only the holder of the call, while it holds it.
        let one = [range(at, dst, 8)];
        let strangers = [
            ("a stranger", read_many(&st, rid, &one)),
            ("the process itself", read_many(&c, rid, &one)),
            ("rid 0", read_many(&s, 0, &one)),
            ("rid 2^64 - 1", read_many(&s, u64::MAX, &one)),
            ("a rid not held", read_many(&s, rid + 1, &one)),
            ("a made-up rid", read_many(&s, rid ^ (1 << 40), &one)),
        ];
        for (who, r) in strangers {
            ensure!(r.is_err(), "{who} read the waiting process: {r:?}");
        }
        ok(ipc::supervise::finish(&s, rid, 0))?;
        let after = read_many(&s, rid, &one);
        ensure!(after.is_err(), "a call no longer held was read: {after:?}");
        ensure!(ok(bytes::<64>(sup, dst))? == [0; 64], "a refused caller's read wrote");
        Ok(())
    })();
    f.end();
    outcome
}
