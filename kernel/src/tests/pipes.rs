//! Kernel pipes (`resource::pipe`) as a hostile or careless supervisor and
//! dying processes use them: buffers charged to the process they serve
//! and refused when its limit is reached, descriptors that do not lead to
//! a pipe, operations on a process the caller does not serve, and pipes
//! that go back, with their memory, when their holders end.

use super::{end, heap_comes_back, heap_in_use, live, ok};
use abi::Error;
use abi::linux::pipe::{CAPACITY, op};
use alloc::vec::Vec;
use ipc::process as proc;
use kcore::ensure;
use kcore::ktest::TestResult;
use resource::{KERNEL, Kind, pipe};

fn pipes() -> usize {
    resource::counts()
        .iter()
        .find(|(k, _)| *k == Kind::Pipe)
        .map_or(0, |(_, n)| *n)
}

/// A pipe bound in a process, copied to another (as fork does), goes with
/// the last of them, and its buffer's charge with it.
pub fn kernel_pipes_go_with_their_last_holder() -> TestResult {
    twice_heap_back(holders_round)
}

/// `round` once to warm the tables up (processes, pipes, the pool), then
/// again with the heap watched: it must come back to its level.
fn twice_heap_back(round: fn() -> TestResult) -> TestResult {
    round()?;
    let heap0 = heap_in_use();
    let snap = || {
        (
            kcore::mm::heap::stats().live,
            resource::counts().map(|(_, n)| n),
            proc::count(),
        )
    };
    let before = snap();
    round()?;
    heap_comes_back(heap0)
        .map_err(|now| alloc::format!("the heap went from {heap0} to {now} bytes; {before:?} -> {:?}", snap()))
}

fn holders_round() -> TestResult {
    kcore::computation::reap_all();
    let (pipes0, bound0) = (pipes(), pipe::bindings());
    let (a, b) = (live()?, live()?);
    let (pa, pb) = (proc::get(a).ok_or("a gone")?, proc::get(b).ok_or("b gone")?);
    let used0 = pa.account().used();
    let id = ok(pipe::create(&pa, 3, 4, false, false))?;
    let charged = pa.account().used() - used0;
    ok(pipe::inherit(&pa, &pb))?;
    ok(pipe::dup(&pb, 4, 9, false))?;
    ensure!(
        pipes() == pipes0 + 1 && pipe::bindings() == bound0 + 5,
        "one pipe, five numbers: {} pipes, {} numbers",
        pipes() - pipes0,
        pipe::bindings() - bound0
    );
    ensure!(charged >= CAPACITY as u64, "its buffer charged {charged} bytes");
    ensure!(ok(pipe::held(a, id))? == 0, "a new pipe holds bytes");
    drop(pa);
    end(a);
    ensure!(pipes() == pipes0 + 1, "the pipe went with one of its holders");
    ensure!(ok(pipe::held(KERNEL, id))? == 0, "the pipe is not the kernel's to ask");
    drop(pb);
    end(b);
    kcore::computation::reap_all();
    ensure!(pipes() == pipes0, "the pipe outlived its holders");
    ensure!(pipe::bindings() == bound0, "numbers outlived their processes");
    ensure!(
        pipe::held(KERNEL, id) == Err(Error::NotFound),
        "the pipe's id still names something"
    );
    Ok(())
}

/// Descriptors that lead nowhere, and numbers out of bounds, are errors
/// that change nothing.
pub fn kernel_pipe_descriptors_are_checked() -> TestResult {
    let a = live()?;
    let pa = proc::get(a).ok_or("a gone")?;
    let before = (pipes(), pipe::bindings());
    let checks = [
        (
            "both ends at one number",
            pipe::create(&pa, 5, 5, false, false).err(),
            Error::Invalid,
        ),
        (
            "a number past the bound",
            pipe::create(&pa, 5, 1 << 20, false, false).err(),
            Error::Invalid,
        ),
        (
            "dup of a number bound to nothing",
            pipe::dup(&pa, 7, 8, false).err(),
            Error::NotFound,
        ),
        (
            "close of a number bound to nothing",
            pipe::close(&pa, 7).err(),
            Error::NotFound,
        ),
        (
            "close-on-exec of a number bound to nothing",
            pipe::set_cloexec(&pa, 7, true).err(),
            Error::NotFound,
        ),
        (
            "close-on-exec of a number past any table",
            pipe::set_cloexec(&pa, u64::MAX, false).err(),
            Error::NotFound,
        ),
        (
            "a close-on-exec pipe at a number past the bound",
            pipe::create(&pa, 5, 1 << 20, false, true).err(),
            Error::Invalid,
        ),
        (
            "state of a number bound to nothing",
            pipe::state_of(&pa, 7, 0).err(),
            Error::NotFound,
        ),
        (
            "resize of a number bound to nothing",
            pipe::resize(&pa, 7, 4096).err(),
            Error::NotFound,
        ),
        (
            "a watch on an entry past the port's",
            pipe::watch(&pa, 7, a, 99).err(),
            Error::Invalid,
        ),
    ];
    let changed = (pipes(), pipe::bindings()) != before;
    ok(pipe::create(&pa, 3, 4, false, false))?;
    let resized = [
        ("beyond 2^31 bytes", pipe::resize(&pa, 3, 1 << 32).err(), Error::Invalid),
        ("beyond the most", pipe::resize(&pa, 3, 4 << 20).err(), Error::Denied),
    ];
    // splice's ends: a number bound to nothing, the wrong end of a pipe.
    let sides = [
        (
            "a splice's side at a number bound to nothing",
            pipe::side_at(a, 7, false).err(),
            Error::NotFound,
        ),
        (
            "a splice taking from a write end",
            pipe::side_at(a, 4, false).err(),
            Error::Invalid,
        ),
        (
            "a splice putting into a read end",
            pipe::side_at(a, 3, true).err(),
            Error::Invalid,
        ),
    ];
    let right_sides = pipe::side_at(a, 3, false).is_ok() && pipe::side_at(a, 4, true).is_ok();
    // Dropping bytes (a splice's take): never waits, never from a write end.
    let drops = match (pipe::side_at(a, 3, false), pipe::side_at(a, 4, true)) {
        (Ok(r), Ok(w)) => [pipe::drop_bytes(&r, 10), pipe::drop_bytes(&w, 10)],
        // Not what the check wants: it fails below, after the cleanup.
        _ => [Err(pipe::Fail::NoMemory); 2],
    };
    let grown = pipe::resize(&pa, 4, 1 << 20);
    let shrunk = pipe::resize(&pa, 3, 0);
    let marked = [
        pipe::set_cloexec(&pa, 3, true),
        pipe::set_cloexec(&pa, 3, false),
        pipe::dup(&pa, 4, 200, true),
        pipe::set_cloexec(&pa, 200, false),
    ];
    drop(pa);
    end(a);
    ensure!(right_sides, "a pipe's own ends are not splice's sides");
    ensure!(
        drops == [Err(pipe::Fail::Again), Err(pipe::Fail::WrongEnd)],
        "dropping from an empty pipe and from its write end: {drops:?}"
    );
    for (what, got, want) in checks.into_iter().chain(resized).chain(sides) {
        ensure!(got == Some(want), "{what}: {got:?}, not {want:?}");
    }
    ensure!(!changed, "a refused operation changed the pipes");
    ensure!(grown == Ok(1 << 20), "F_SETPIPE_SZ to 1 MiB gave {grown:?}");
    ensure!(shrunk == Ok(4096), "F_SETPIPE_SZ to 0 gave {shrunk:?}");
    ensure!(
        marked.iter().all(Result::is_ok),
        "close-on-exec of bound numbers: {marked:?}"
    );
    Ok(())
}

/// Stream socket pairs (two pipes, an end at each of two numbers): bad
/// numbers and operations are errors that change nothing; a shutdown
/// holds for every process sharing the end (as fork shares it) and the
/// peer sees it; both pipes, charged to the process, go with the last
/// holder, and the heap comes back.
pub fn kernel_socket_pairs_are_checked() -> TestResult {
    twice_heap_back(socket_round)
}

fn socket_round() -> TestResult {
    use abi::linux::pipe::state;
    kcore::computation::reap_all();
    let (pipes0, bound0) = (pipes(), pipe::bindings());
    let (a, b) = (live()?, live()?);
    let (pa, pb) = (proc::get(a).ok_or("a gone")?, proc::get(b).ok_or("b gone")?);
    ok(pipe::create(&pa, 7, 8, false, false))?;
    let before = (pipes(), pipe::bindings());
    let checks = [
        (
            "both ends at one number",
            pipe::sockpair(&pa, 5, 5, false, false).err(),
            Error::Invalid,
        ),
        (
            "a number past the bound",
            pipe::sockpair(&pa, 5, 1 << 20, false, false).err(),
            Error::Invalid,
        ),
        (
            "shutdown of a number bound to nothing",
            pipe::shutdown(&pa, 9, 2).err(),
            Error::NotFound,
        ),
        (
            "shutdown of a pipe's end",
            pipe::shutdown(&pa, 7, 1).err(),
            Error::NotFound,
        ),
        ("shutdown how 3", pipe::shutdown(&pa, 7, 3).err(), Error::Invalid),
    ];
    let changed = (pipes(), pipe::bindings()) != before;
    let used0 = pa.account().used();
    ok(pipe::sockpair(&pa, 3, 4, false, false))?;
    let charged = pa.account().used() - used0;
    let made = (pipes() - before.0, pipe::bindings() - before.1);
    let sides = [
        ("state of a third side", pipe::state_of(&pa, 3, 2).err(), Error::Invalid),
        (
            "shutdown how 3 of a socket",
            pipe::shutdown(&pa, 3, 3).err(),
            Error::Invalid,
        ),
        (
            "resize of a socket's end",
            pipe::resize(&pa, 3, 4096).err(),
            Error::NotFound,
        ),
    ];
    ok(pipe::inherit(&pa, &pb))?;
    // The child shuts its copy for writing: the parent's is shut too, and
    // the peer reads EOF.
    ok(pipe::shutdown(&pb, 3, 1))?;
    ok(pipe::shutdown(&pb, 3, 1))?;
    let own = ok(pipe::state_of(&pa, 3, 1))?;
    let peer = ok(pipe::state_of(&pa, 4, 0))?;
    let reads = ok(pipe::state_of(&pa, 3, 0))?;
    ok(pipe::set_nonblock(&pa, 4, true))?;
    let nonblock = ok(pipe::state_of(&pb, 4, 1))? & state::NONBLOCK != 0;
    let watched = pipe::watch(&pa, 4, a, 5);
    drop((pa, pb));
    end(a);
    end(b);
    kcore::computation::reap_all();
    for (what, got, want) in checks.into_iter().chain(sides) {
        ensure!(got == Some(want), "{what}: {got:?}, not {want:?}");
    }
    ensure!(!changed, "a refused operation changed the pipes");
    ensure!(made == (2, 2), "a pair made {made:?} (pipes, numbers), not (2, 2)");
    ensure!(charged >= 2 * CAPACITY as u64, "two buffers charged {charged} bytes");
    ensure!(
        own == state::SHUT,
        "the parent's end after the child's shutdown: {own:#x}"
    );
    ensure!(peer & state::WRITERS == 0, "the peer still has a writer: {peer:#x}");
    ensure!(reads & state::SHUT == 0, "the side not shut is shut");
    ensure!(nonblock, "O_NONBLOCK set in one process is not the description's");
    ensure!(watched.is_ok(), "a watch on a socket's end: {watched:?}");
    ensure!(pipes() == pipes0, "the pipes outlived their holders");
    ensure!(pipe::bindings() == bound0, "numbers outlived their processes");
    Ok(())
}

/// A supervisor may bind, read the state of or watch only the pipes of a
/// process it serves: another process's call is refused.
pub fn only_a_supervisor_binds_pipes() -> TestResult {
    let (a, stranger) = (live()?, live()?);
    let (pa, ps) = (proc::get(a).ok_or("a gone")?, proc::get(stranger).ok_or("gone")?);
    ok(pipe::create(&pa, 3, 4, false, false))?;
    let refused = [
        op::CREATE,
        op::DUP,
        op::CLOSE,
        op::SETFL,
        op::STATE,
        op::WATCH,
        op::RESIZE,
        op::ID,
        op::SETFD,
        op::SOCKPAIR,
        op::SHUTDOWN,
        op::TAKE,
        op::PUT,
        op::PEEK,
    ]
    .map(|o| syscall::pipes::linux_pipe(&ps, o, a, 3, 4, 0).err());
    let missing = syscall::pipes::linux_pipe(&ps, op::STATE, 1 << 40, 3, 0, 0).err();
    let bound = pipe::bindings();
    drop((pa, ps));
    end(a);
    end(stranger);
    ensure!(
        refused.iter().all(|r| *r == Some(Error::Denied)),
        "a stranger's linux_pipe gave {refused:?}"
    );
    ensure!(
        missing == Some(Error::NotFound),
        "a process that is not there: {missing:?}"
    );
    ensure!(bound >= 2, "the refused calls took the bindings away");
    Ok(())
}

/// Pipes until the process's kernel memory is used up: then an error,
/// never a panic, and everything goes back when the process ends.
pub fn kernel_pipe_buffers_are_limited() -> TestResult {
    twice_heap_back(limited_round)
}

fn limited_round() -> TestResult {
    kcore::computation::reap_all();
    let pipes0 = pipes();
    let p = super::live_limited(1 << 20, proc::KERNEL_PID)?;
    let pp = proc::get(p).ok_or("gone")?;
    let mut made = Vec::new();
    let refused = loop {
        let fd = 2 * made.len() as u64;
        match pipe::create(&pp, fd, fd + 1, false, false) {
            Ok(id) => made.push(id),
            Err(e) => break e,
        }
        if made.len() > 64 {
            break Error::Invalid;
        }
    };
    drop(pp);
    end(p);
    kcore::computation::reap_all();
    ensure!(
        refused == Error::Limit && (8..16).contains(&made.len()),
        "1 MiB took {} pipes, then {refused:?}",
        made.len()
    );
    ensure!(pipes() == pipes0, "pipes outlived their process");
    Ok(())
}

/// A regular file's cache binds only for a supervisor the cache's owner
/// granted it (not with a stale id), a bound number is no pipe, and the
/// bindings go with their process; once the owner ends, a bound number's
/// reads miss (the supervisor answers them).
pub fn file_caches_bind_only_when_granted() -> TestResult {
    use resource::file_cache as fc;
    kcore::computation::reap_all();
    let bound0 = pipe::bindings();
    let (owner, sup, linux) = (live()?, live()?, live()?);
    let pl = proc::get(linux).ok_or("the process gone")?;
    let id = ok(fc::create(owner))?;
    ensure!(
        fc::for_binding(sup, id).err() == Some(Error::Denied),
        "a cache not granted binds"
    );
    ok(fc::grant(owner, id, sup, true))?;
    let stale = resource::ResId::from_raw(id.raw() ^ (1 << 32));
    ensure!(fc::for_binding(sup, stale).is_err(), "a stale id binds");
    ok(pipe::bind_file(&pl, 3, ok(fc::for_binding(sup, id))?, false, false))?;
    ok(pipe::dup(&pl, 3, 7, false))?;
    ensure!(
        pipe::bindings() == bound0 + 2,
        "two numbers: {}",
        pipe::bindings() - bound0
    );
    ensure!(
        pipe::state_of(&pl, 7, 0).err() == Some(Error::NotFound),
        "a file's number answers as a pipe"
    );
    let Some(pipe::Served::File(cache, _)) = pipe::bound(linux, 7) else {
        return Err("the number leads to no file cache".into());
    };
    // An empty cache misses; so does one whose owner ended.
    const BUF: u64 = 0x1000_0000;
    ensure!(
        fc::read_from(&cache, sup, 0, BUF, 16).err() == Some(Error::NotFound),
        "an empty cache served a read"
    );
    end(owner);
    ensure!(
        fc::read_from(&cache, sup, 0, BUF, 16).err() == Some(Error::NotFound),
        "a dead cache served a read"
    );
    ensure!(fc::for_binding(sup, id).is_err(), "a dead cache binds");
    drop(cache);
    drop(pl);
    end(linux);
    end(sup);
    kcore::computation::reap_all();
    ensure!(pipe::bindings() == bound0, "numbers outlived their process");
    Ok(())
}

/// A cache's attributes are set and forgotten by its owner only (not
/// with a foreign or stale id, nor from a bad pointer); a bound number's
/// fstat reads them only with `FILE_STAT`, only for a granted reader,
/// only while known: a revoke and the owner's end forget them, and a bad
/// buffer is a fault (EFAULT), not a miss.
pub fn file_cache_attributes_owner_only() -> TestResult {
    use abi::file_cache::STAT_LEN;
    use resource::file_cache as fc;
    const BAD: u64 = 0x1000_0000;
    kcore::computation::reap_all();
    let bound0 = pipe::bindings();
    let (owner, sup, linux, stranger) = (live()?, live()?, live()?, live()?);
    let pl = proc::get(linux).ok_or("the process gone")?;
    let id = ok(fc::create(owner))?;
    ok(fc::grant(owner, id, sup, true))?;
    let stale = resource::ResId::from_raw(id.raw() ^ (1 << 32));
    let attrs = Some([7u8; STAT_LEN]);
    let refused = [
        ("a foreign process", fc::store_attrs(stranger, id, attrs), Error::Denied),
        ("a reader", fc::store_attrs(sup, id, attrs), Error::Denied),
        ("a stale id", fc::store_attrs(owner, stale, attrs), Error::NotFound),
        (
            "a bad pointer",
            fc::set_attrs(owner, id, Some(ok(kcore::uaccess::UserRange::new(BAD, STAT_LEN))?)),
            Error::Fault,
        ),
        (
            "a short record",
            fc::set_attrs(owner, id, Some(ok(kcore::uaccess::UserRange::new(BAD, STAT_LEN - 1))?)),
            Error::Invalid,
        ),
    ];
    for (what, r, want) in refused {
        ensure!(r == Err(want), "{what}: {r:?}, not {want:?}");
    }
    ensure!(!ok(fc::has_attrs(id))?, "a refused call set the attributes");
    ok(pipe::bind_file(&pl, 3, ok(fc::for_binding(sup, id))?, true, false))?;
    ok(pipe::dup(&pl, 3, 4, false))?;
    ok(pipe::bind_file(&pl, 5, ok(fc::for_binding(sup, id))?, false, false))?;
    let served = |fd| match pipe::bound(linux, fd) {
        Some(pipe::Served::File(cache, stat)) => Some((cache, stat)),
        _ => None,
    };
    let (cache, stat) = served(3).ok_or("no file at 3")?;
    ensure!(stat, "FILE_STAT not kept");
    ensure!(served(4).is_some_and(|(_, s)| s), "a dup lost FILE_STAT");
    ensure!(served(5).is_some_and(|(_, s)| !s), "a binding without FILE_STAT has it");
    ensure!(
        fc::stat_from(&cache, sup, BAD).err() == Some(Error::NotFound),
        "attributes never said were served"
    );
    ok(fc::store_attrs(owner, id, attrs))?;
    ensure!(ok(fc::has_attrs(id))?, "the owner's attributes not kept");
    ensure!(
        fc::stat_from(&cache, sup, BAD).err() == Some(Error::Fault),
        "a bad buffer is not a fault"
    );
    ensure!(
        fc::stat_from(&cache, stranger, BAD).err() == Some(Error::NotFound),
        "a reader never granted was served"
    );
    ok(fc::store_attrs(owner, id, None))?;
    ensure!(!ok(fc::has_attrs(id))?, "forgetting kept them");
    ok(fc::store_attrs(owner, id, attrs))?;
    ok(fc::revoke(owner, id, 0, 1))?;
    ensure!(!ok(fc::has_attrs(id))?, "a revoke kept them");
    ok(fc::store_attrs(owner, id, attrs))?;
    end(owner);
    ensure!(
        fc::stat_from(&cache, sup, BAD).err() == Some(Error::NotFound),
        "a dead cache served its attributes"
    );
    drop(cache);
    drop(pl);
    end(linux);
    end(sup);
    end(stranger);
    kcore::computation::reap_all();
    ensure!(pipe::bindings() == bound0, "numbers outlived their process");
    Ok(())
}

/// Only the process a cache's owner names publishes for it
/// (`PUBLISH_FOR`): not a stranger, not the owner through it, not with a
/// stale or foreign id, not with the generation of before a revoke, not
/// once the owner named none or ended; nothing is read from the bad
/// buffer before those checks. A publisher's end leaves the cache its
/// owner's; the owner's end takes the cache, the publisher living on.
pub fn file_cache_publisher_named_by_owner_only() -> TestResult {
    use abi::file_cache::{PAGE, PUBLISH_MAX_PAGES};
    use resource::file_cache as fc;
    const BAD: u64 = 0x1000_0000;
    kcore::computation::reap_all();
    let caches0 = fc::count();
    let (owner, publisher, stranger) = (live()?, live()?, live()?);
    let id = ok(fc::create(owner))?;
    let generation = ok(fc::generation(owner, id))?;
    let at = |g: u64| g << 32;
    let refused = [
        (
            "no publisher named",
            fc::publish_for(publisher, id, at(generation), BAD, PAGE),
            Error::Denied,
        ),
        (
            "a stranger names one",
            fc::set_publisher(stranger, id, stranger).map(|()| 0),
            Error::Denied,
        ),
        ("a stranger's generation", fc::generation(stranger, id), Error::Denied),
    ];
    for (what, r, want) in refused {
        ensure!(r == Err(want), "{what}: {r:?}, not {want:?}");
    }
    ok(fc::set_publisher(owner, id, publisher))?;
    ok(fc::revoke(owner, id, 0, 1))?;
    let now = ok(fc::generation(owner, id))?;
    ensure!(now != generation, "a revoke kept the generation {now}");
    let stale = resource::ResId::from_raw(id.raw() ^ (1 << 32));
    let refused = [
        (
            "a stranger",
            fc::publish_for(stranger, id, at(now), BAD, PAGE),
            Error::Denied,
        ),
        (
            "the owner",
            fc::publish_for(owner, id, at(now), BAD, PAGE),
            Error::Denied,
        ),
        (
            "before the revoke",
            fc::publish_for(publisher, id, at(generation), BAD, PAGE),
            Error::Busy,
        ),
        (
            "a stale id",
            fc::publish_for(publisher, stale, at(now), BAD, PAGE),
            Error::NotFound,
        ),
        (
            "a run too long",
            fc::publish_for(publisher, id, at(now), BAD, PUBLISH_MAX_PAGES * PAGE + 1),
            Error::Invalid,
        ),
        (
            "an empty run",
            fc::publish_for(publisher, id, at(now), BAD, 0),
            Error::Invalid,
        ),
        (
            "past the last page",
            fc::publish_for(publisher, id, at(now) | abi::file_cache::MAX_PAGES, BAD, PAGE),
            Error::Limit,
        ),
        // Every check passed: the buffer is read, and faults.
        (
            "a bad buffer",
            fc::publish_for(publisher, id, at(now), BAD, PAGE),
            Error::Fault,
        ),
    ];
    for (what, r, want) in refused {
        ensure!(r == Err(want), "{what}: {r:?}, not {want:?}");
    }
    ensure!(ok(fc::present(id))? == 0, "a refused page is present");
    end(publisher);
    ensure!(fc::count() == caches0 + 1, "the publisher's end took the cache");
    ok(fc::revoke(owner, id, 0, u64::MAX))?;
    let second = live()?;
    ok(fc::set_publisher(owner, id, second))?;
    let now = ok(fc::generation(owner, id))?;
    ok(fc::set_publisher(owner, id, 0))?;
    let r = fc::publish_for(second, id, at(now), BAD, PAGE);
    ensure!(r == Err(Error::Denied), "a publisher named no more: {r:?}");
    ok(fc::set_publisher(owner, id, second))?;
    end(owner);
    kcore::computation::reap_all();
    let r = fc::publish_for(second, id, at(now), BAD, PAGE);
    ensure!(r == Err(Error::NotFound), "after the owner's end: {r:?}");
    ensure!(fc::count() == caches0, "the owner's end left its cache");
    end(second);
    end(stranger);
    kcore::computation::reap_all();
    Ok(())
}
