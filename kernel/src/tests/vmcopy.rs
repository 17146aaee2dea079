//! `caller_vm_copy` and `linux_process` (process_vm_readv and
//! process_vm_writev) under hostile input: a copy stops at the first
//! piece it cannot make (an address outside user space, nothing mapped, a
//! process gone) with the count before it; a caller that is not waiting
//! in a call its holder serves, or a process the holder does not serve,
//! cannot be named; a long copy is refused whole.

use super::{end, live, ok};
use abi::Error;
use ipc::process as proc;
use ipc::vmcopy;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::uaccess::UserRange;
use kcore::vm::USER_STACK_TOP;

fn read(pid: u64, at: u64) -> Result<[u8; 64], Error> {
    let mut b = [0u8; 64];
    proc::read_user_of(pid, UserRange::new(at, 64)?, &mut b).map(|()| b)
}

pub fn vm_copy_is_checked() -> TestResult {
    let (a, b, stranger) = (live()?, live()?, live()?);
    let ps = proc::get(stranger).ok_or("gone")?;
    // Inside each sleeper's top stack page, below its arguments.
    let at = USER_STACK_TOP - 4096 + 512;
    let pattern: [u8; 64] = core::array::from_fn(|i| i as u8 ^ 0x5a);
    ok(proc::write_user_of(a, ok(UserRange::new(at, 64))?, &pattern))?;
    let into_b = vmcopy::copy((a, at), (b, at + 8), 64, true);
    let seen_b = read(b, at + 8);
    let from_b = vmcopy::copy((a, at + 128), (b, at + 8), 64, false);
    let seen_a = read(a, at + 128);
    let own = vmcopy::copy((a, at + 256), (a, at), 64, false);
    let seen_own = read(a, at + 256);
    let edge = vmcopy::copy((a, at), (b, USER_STACK_TOP - 16), 64, true);
    let kernel = vmcopy::copy((a, at), (b, 0xffff_8000_0000_0000), 64, true);
    let wrapping = vmcopy::copy((a, u64::MAX - 8), (b, at), 64, false);
    let unmapped = vmcopy::copy((a, at), (b, 0x1000_0000_0000), 64, false);
    let strangers = [0u64, 1, u64::MAX, a].map(|rid| vmcopy::caller_vm_copy(&ps, rid, b, (at, at, 64), true).err());
    let too_long = vmcopy::caller_vm_copy(&ps, 0, b, (at, at, abi::linux::VM_COPY_MAX + 1), true).err();
    let not_linux = vmcopy::linux_process(&ps, stranger, a);
    let unchanged = read(b, at + 8);
    end(b);
    let gone = vmcopy::copy((a, at), (b, at), 64, true);
    drop(ps);
    end(a);
    end(stranger);
    ensure!(into_b == 64 && seen_b == Ok(pattern), "into b: {into_b}, {seen_b:?}");
    ensure!(from_b == 64 && seen_a == Ok(pattern), "out of b: {from_b}, {seen_a:?}");
    ensure!(
        own == 64 && seen_own == Ok(pattern),
        "within one process: {own}, {seen_own:?}"
    );
    ensure!(edge == 16, "up to the end of the stack: {edge}, not 16");
    ensure!(kernel == 0, "into the kernel half: {kernel}");
    ensure!(wrapping == 0, "from a wrapping address: {wrapping}");
    ensure!(unmapped == 0, "from nothing mapped: {unmapped}");
    ensure!(
        strangers.iter().all(Option::is_some),
        "a process named by a call it is not waiting in: {strangers:?}"
    );
    ensure!(too_long == Some(Error::Invalid), "a copy past the limit: {too_long:?}");
    ensure!(
        not_linux == Err(Error::NotFound),
        "a native process as a Linux one: {not_linux:?}"
    );
    ensure!(unchanged == Ok(pattern), "the refused calls changed the target");
    ensure!(gone == 0, "into a process that ended: {gone}");
    Ok(())
}
