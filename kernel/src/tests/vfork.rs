//! A space lent to a Linux vfork child (`linux_vfork`, `spawn::vfork`,
//! `VirtualSpace::lend`): only the supervisor holding the parent's call
//! lends it, so a stranger's request and forged or stale calls make no
//! process; a space has a bounded list of borrowers, each of which reaches
//! it as its own memory; and the space goes with its last holder, whether
//! the child or the parent ends first, with nothing left behind.

use super::{end, live, ok};
use abi::linux::Regs;
use alloc::format;
use alloc::string::String;
use ipc::process as proc;
use kcore::ensure;
use kcore::ktest::TestResult;
use kcore::mm::quota::Account;
use kcore::uaccess::UserRange;
use kcore::vm::USER_STACK_TOP;
use kcore::vm::space::{MAX_BORROWERS, VirtualSpace};

/// Where each test writes in a sleeper's memory: inside its top stack
/// page, below its arguments.
const AT: u64 = USER_STACK_TOP - 4096 + 512;

fn read(pid: u64) -> Result<[u8; 64], abi::Error> {
    let mut b = [0u8; 64];
    proc::read_user_of(pid, UserRange::new(AT, 64)?, &mut b).map(|()| b)
}

pub fn vfork_lends_a_space_only_as_asked() -> TestResult {
    // The space's own rules, with made-up pids.
    let mut s = VirtualSpace::new().map_err(|_| "no memory for a space")?;
    ensure!(!s.lend(7), "a space nobody uses was lent");
    ensure!(s.bind(5, &Account::root(1 << 20)), "bind");
    ensure!(!s.lend(5) && !s.lend(0), "lent to its user, or to pid 0");
    ensure!(s.lend(7) && !s.lend(7), "lent to 7 once and only once");
    ensure!(s.holds(5) && s.holds(7) && !s.holds(8) && !s.holds(0), "who holds it");
    ensure!(
        !s.give_back(8) && !s.give_back(0) && !s.give_back(5),
        "given back by a stranger"
    );
    for pid in 8..8 + MAX_BORROWERS as u64 - 1 {
        ensure!(s.lend(pid), "borrower {pid} of {MAX_BORROWERS} refused");
    }
    ensure!(!s.lend(100), "lent to more than {MAX_BORROWERS}");
    ensure!(
        s.give_back(7) && !s.holds(7) && s.lend(100),
        "a place given back is free again"
    );
    // Its user ends: a borrower becomes its user, the others stay.
    // (100 took the place 7 gave back, the first.)
    ensure!(
        s.hand_over() == Some(100) && s.user() == 100 && !s.holds(5),
        "handed over to the first borrower"
    );
    ensure!(s.holds(8) && s.is_lent(), "the other borrowers keep it");
    s.unbind();
    ensure!(!s.holds(8) && !s.holds(100) && !s.is_lent(), "unbound, yet held");
    ensure!(s.hand_over().is_none(), "handed over with no borrower");
    drop(s);

    // Only the supervisor of a process waiting in a call lends its space:
    // a native process naming calls it does not hold makes nothing.
    let (stranger, other) = (live()?, live()?);
    let p = proc::get(stranger).ok_or("gone")?;
    let before = proc::count();
    let refused =
        [0u64, 1, 1 << 40, u64::MAX].map(|rid| syscall::forks::linux_vfork(&p, rid, stranger, 1000 + rid % 7).err());
    let foreign = syscall::forks::linux_vfork(&p, 0, other, 1000).err();
    let made = proc::count() - before;
    let lent = proc::get(other)
        .and_then(|o| o.space())
        .is_some_and(|s| s.lock().is_lent());
    drop(p);
    end(stranger);
    end(other);
    ensure!(
        refused.iter().all(Option::is_some) && foreign.is_some(),
        "a stranger's vfork: {refused:?}, {foreign:?}"
    );
    ensure!(made == 0 && !lent, "{made} processes made, a space lent: {lent}");
    Ok(())
}

/// A child in `lender`'s space that faults at once and waits for ever
/// in the call that takes its fault to `supervisor` (a sleeper, which
/// never accepts it), until it is killed.
fn borrower(lender: u64, supervisor: u64) -> Result<u64, String> {
    let l = proc::get(lender).ok_or("lender gone")?;
    let regs = Regs {
        rip: 0x1000,
        rsp: USER_STACK_TOP - 2048,
        rflags: 0x202,
        ..Regs::default()
    };
    ok(resource::proc::spawn::vfork(&l, regs, supervisor, 4242, 0))
}

fn footprint() -> ([usize; resource::Kind::ALL.len()], usize) {
    kcore::computation::reap_all();
    (resource::counts().map(|(_, n)| n), kcore::mm::frames::stats().free)
}

/// Kills a borrower made by `borrower` and reaps it (its parent is its
/// supervisor).
fn end_borrower(child: u64, supervisor: u64) -> Result<u64, String> {
    let _ = proc::kill(child);
    ok(proc::wait(supervisor, child))
}

fn round() -> TestResult {
    let pattern: [u8; 64] = core::array::from_fn(|i| i as u8 ^ 0xa5);
    let sup = live()?;
    // The child ends first: the space goes back to its lender, whole.
    let lender = live()?;
    ok(proc::write_user_of(lender, ok(UserRange::new(AT, 64))?, &pattern))?;
    let child = borrower(lender, sup)?;
    let space = proc::get(lender).and_then(|p| p.space()).ok_or("no space")?;
    let held = space.lock().holds(child);
    let seen = read(child);
    // A second borrower's borrower (a vfork child's vfork) holds it too.
    let grandchild = borrower(child, sup)?;
    let both = space.lock().holds(grandchild) && space.lock().holds(child);
    let status = end_borrower(child, sup)?;
    let after_child = space.lock().holds(child);
    let status2 = end_borrower(grandchild, sup)?;
    let (user, lent) = {
        let s = space.lock();
        (s.user(), s.is_lent())
    };
    drop(space);
    let kept = read(lender);
    end(lender);
    ensure!(
        held && seen == Ok(pattern),
        "the child holds the space: {held}, reads {seen:?}"
    );
    ensure!(
        both && !after_child,
        "the grandchild's hold: {both}, the ended child's: {after_child}"
    );
    ensure!(
        status == abi::KILLED_STATUS && status2 == abi::KILLED_STATUS,
        "the children ended with {status}, {status2}"
    );
    ensure!(user == lender && !lent, "after the children: user {user}, lent {lent}");
    ensure!(kept == Ok(pattern), "the lender's memory after its children: {kept:?}");

    // The lender ends first: the child is handed the space, keeps reaching
    // the bytes, and takes the space apart at its own end.
    let lender = live()?;
    ok(proc::write_user_of(lender, ok(UserRange::new(AT, 64))?, &pattern))?;
    let child = borrower(lender, sup)?;
    end(lender);
    let handed = proc::get(child).and_then(|c| c.space()).map(|s| s.lock().user());
    let seen = read(child);
    let status = end_borrower(child, sup)?;
    end(sup);
    ensure!(
        handed == Some(child),
        "the space after its lender ended: user {handed:?}"
    );
    ensure!(seen == Ok(pattern), "the handed-over child reads {seen:?}");
    ensure!(
        status == abi::KILLED_STATUS,
        "the handed-over child ended with {status}"
    );
    Ok(())
}

pub fn vfork_space_goes_with_its_last_holder() -> TestResult {
    // Warm up (tables, the pool), then nothing may stay behind.
    round()?;
    resource::pool::flush();
    let before = footprint();
    round()?;
    resource::pool::flush();
    let after = footprint();
    ensure!(
        after == before,
        "{}",
        format!("resources and free frames {before:?} before, {after:?} after")
    );
    Ok(())
}
