//! The wall clock (`wall_set`, `wall_clock`): only the supervisor of a
//! process waiting in a call moves it, so a stranger's request, a call
//! that is not there and a forged one leave it where it was.

use super::{end, live};
use ipc::process as proc;
use kcore::ensure;
use kcore::ktest::TestResult;
use syscall::wallclock;

pub fn only_a_supervisor_sets_the_wall_clock() -> TestResult {
    let stranger = live()?;
    let p = proc::get(stranger).ok_or("gone")?;
    let before = wallclock::now();
    let refused = [0, 1, 1 << 40, u64::MAX].map(|rid| wallclock::set(&p, rid, 1 << 62).err());
    let after = wallclock::now();
    drop(p);
    end(stranger);
    ensure!(
        refused.iter().all(|r| r.is_some()),
        "a stranger set the clock: {refused:?}"
    );
    // The refused calls took no time worth a second; a set one would
    // have moved the clock by decades.
    ensure!(
        after >= before && after - before < 10_000_000_000,
        "the clock moved from {before} to {after}"
    );
    Ok(())
}
