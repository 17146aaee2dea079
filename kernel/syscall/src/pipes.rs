//! Kernel pipes from their two sides: a Linux process's read, write,
//! readv and writev on a descriptor bound to one, served here with no
//! rendezvous (`abi::linux::KERNEL_SERVED_ON_PIPES`), and on an AF_UNIX
//! stream socket's end, which reads one pipe and writes another
//! (`KERNEL_SERVED_ON_SOCKETS`, with sendto and recvfrom), as is a pread64 of
//! a regular file's cached pages and its fstat from the attributes kept
//! with them (`KERNEL_SERVED_ON_FILES`), and its
//! supervisor's `linux_pipe`, which keeps the bindings in step with the
//! descriptor table the supervisor keeps (`resource::pipe`).

use crate::linux::{errno, fail};
use abi::Error;
use abi::linux::pipe::op;
use abi::linux::{RESTART_MARK, nr};
use core::sync::atomic::Ordering;
use ipc::process::{self as proc, Process};
use kcore::arch::x86_64::trap::TrapFrame;
use resource::file_cache;
use resource::pipe::{self, End, Fail, Served};

/// Linux's most bytes one read or write moves.
const MAX_RW_COUNT: u64 = 0x7fff_f000;
const IOV_MAX: u64 = 1024;

/// Call `n` of `me` on descriptor `a[0]`, if a kernel pipe or a stream
/// socket's end is bound there and the kernel serves what it comes to:
/// its return value. None: the supervisor serves it (no binding; a write
/// with no reader left, whose SIGPIPE is the supervisor's to send).
#[inline]
pub fn serve(me: &Process, n: u64, a: &[u64; 6]) -> Option<u64> {
    let end = match pipe::bound(me.pid(), a[0])? {
        Served::Pipe(end) if n <= nr::WRITEV => end,
        Served::Sock(s) => return serve_sock(me, n, a, &s),
        _ => return None,
    };
    let r = match n {
        nr::READ => pipe::read(me, &end, a[1], a[2].min(MAX_RW_COUNT) as usize, true),
        nr::WRITE => pipe::write(me, &end, a[1], a[2].min(MAX_RW_COUNT) as usize, true),
        _ => match vectored(me, &end, n == nr::WRITEV, (a[1], a[2]), true) {
            Ok(r) => r,
            Err(e) => return Some(fail(e)),
        },
    };
    Some(match r {
        Ok(v) => v as u64,
        Err(Fail::NoReaders) => return None,
        Err(f) => fail(errno_of(f)),
    })
}

fn errno_of(f: Fail) -> i64 {
    match f {
        Fail::Again => errno::EAGAIN,
        Fail::Interrupted => errno::ERESTARTSYS,
        Fail::Fault => errno::EFAULT,
        Fail::WrongEnd => errno::EBADF,
        Fail::NoMemory => errno::ENOMEM,
        Fail::NoReaders => errno::EPIPE,
    }
}

/// `MSG_*` flags the kernel serves on a stream socket's end; MSG_OOB goes
/// to the supervisor. MSG_WAITALL is as without it and MSG_EOR means
/// nothing on a stream. MSG_PEEK takes its bytes from the first buffer
/// of a vectored call only.
const MSG_OOB: u64 = 1;
const MSG_PEEK: u64 = 2;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_NOSIGNAL: u64 = 0x4000;

/// Call `n` of `me` on the stream socket's end `s` bound at `a[0]`: read,
/// write, readv, writev, and sendto, recvfrom, sendmsg and recvmsg
/// without ancillary data. The peer's name is none (an unnamed pair's),
/// a name to send to is errno::EISCONN, as Linux's on a connected stream.
fn serve_sock(me: &Process, n: u64, a: &[u64; 6], s: &pipe::SockEnd) -> Option<u64> {
    let (write, flags) = match n {
        nr::READ | nr::READV => (false, 0),
        nr::WRITE | nr::WRITEV => (true, 0),
        nr::RECVFROM => (false, a[3]),
        nr::SENDTO => (true, a[3]),
        nr::RECVMSG => (false, a[2]),
        nr::SENDMSG => (true, a[2]),
        _ => return None,
    };
    if flags & MSG_OOB != 0 {
        return None;
    }
    let peek = !write && flags & MSG_PEEK != 0;
    let may_wait = flags & MSG_DONTWAIT == 0;
    // The pieces: (iov, count) of a vectored call, else one buffer.
    let (iov, one) = match n {
        nr::READV | nr::WRITEV => (Some((a[1], a[2])), (0, 0)),
        nr::SENDMSG | nr::RECVMSG => {
            // msghdr's name, its length, the pieces and their count.
            let h = match (
                kcore::uaccess::read::<[u64; 2]>(a[1]),
                kcore::uaccess::read::<[u64; 2]>(a[1] + 16),
            ) {
                (Ok(x), Ok(y)) => [x[0], x[1], y[0], y[1]],
                _ => return Some(fail(errno::EFAULT)),
            };
            let (name, namelen) = (h[0], h[1] & 0xffff_ffff);
            if write && name != 0 && namelen != 0 {
                return Some(fail(errno::EISCONN));
            }
            if !write {
                // No sender's name, no ancillary data, no flags.
                let none = kcore::uaccess::write(a[1] + 8, &0u32)
                    .and_then(|()| kcore::uaccess::write(a[1] + 40, &0u64))
                    .and_then(|()| kcore::uaccess::write(a[1] + 48, &0u32));
                if none.is_err() {
                    return Some(fail(errno::EFAULT));
                }
            }
            (Some((h[2], h[3])), (0, 0))
        }
        nr::SENDTO if a[4] != 0 && a[5] != 0 => return Some(fail(errno::EISCONN)),
        nr::RECVFROM if a[4] != 0 && a[5] != 0 => {
            if kcore::uaccess::write(a[5], &0u32).is_err() {
                return Some(fail(errno::EFAULT));
            }
            (None, (a[1], a[2]))
        }
        _ => (None, (a[1], a[2])),
    };
    let Some(end) = s.side(write) else {
        // Shut down for reading: EOF, as Linux's once drained; for
        // writing: errno::EPIPE, and SIGPIPE (the supervisor's) unless not asked.
        return match write {
            false => Some(0),
            true if flags & MSG_NOSIGNAL != 0 => Some(fail(errno::EPIPE)),
            true => None,
        };
    };
    let r = match iov {
        Some((at, count)) if peek => match first_piece(at, count) {
            Ok((addr, len)) => pipe::peek(me, &end, addr, len.min(MAX_RW_COUNT) as usize, may_wait),
            Err(e) => return Some(fail(e)),
        },
        None if peek => pipe::peek(me, &end, one.0, one.1.min(MAX_RW_COUNT) as usize, may_wait),
        Some(v) => match vectored(me, &end, write, v, may_wait) {
            Ok(r) => r,
            Err(e) => return Some(fail(e)),
        },
        None if write => pipe::write(me, &end, one.0, one.1.min(MAX_RW_COUNT) as usize, may_wait),
        None => pipe::read(me, &end, one.0, one.1.min(MAX_RW_COUNT) as usize, may_wait),
    };
    Some(match r {
        Ok(v) => v as u64,
        Err(Fail::NoReaders) if flags & MSG_NOSIGNAL == 0 => return None,
        Err(f) => fail(errno_of(f)),
    })
}

/// The most bytes a pread64 served from a file's cache asks for: the
/// pages one cache read takes (64 from a page boundary); a longer one
/// goes to the supervisor, which reads until the end or the count.
const MAX_CACHED_PREAD: u64 = 64 * 4096;

/// `pread64(fd, buf, count, offset)` of `me`, whose supervisor is `sup`,
/// if `fd` is bound to a file's cache that holds every page it reads
/// (and its supervisor is still granted the cache): the bytes, copied
/// once. None: the supervisor serves it (a miss, a hole, EOF not known
/// here, a fault, a negative offset, a count of 0 or beyond the most).
#[inline]
pub fn serve_pread(me: &Process, sup: u64, a: &[u64; 6]) -> Option<u64> {
    let Some(Served::File(cache, _)) = pipe::bound(me.pid(), a[0]) else {
        return None;
    };
    let (buf, count, offset) = (a[1], a[2], a[3]);
    if count == 0 || count > MAX_CACHED_PREAD || (offset as i64) < 0 {
        return None;
    }
    file_cache::read_from(&cache, sup, offset, buf, count as usize)
        .ok()
        .map(|n| n as u64)
}

const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_NO_AUTOMOUNT: u64 = 0x800;
const AT_EMPTY_PATH: u64 = 0x1000;

/// `fstat(fd, buf)`, or `newfstatat(fd, "", buf, AT_EMPTY_PATH)`, of `me`,
/// whose supervisor is `sup`, if `fd` is bound to a file's cache with
/// `FILE_STAT` and the file server keeps the file's attributes there: 0,
/// or EFAULT for a `buf` not the process's to write (as Linux's). None:
/// the supervisor serves it (not known here, a path, other flags, a path
/// it cannot read: its EFAULT).
#[inline]
pub fn serve_fstat(me: &Process, sup: u64, n: u64, a: &[u64; 6]) -> Option<u64> {
    let Some(Served::File(cache, true)) = pipe::bound(me.pid(), a[0]) else {
        return None;
    };
    let buf = if n == nr::NEWFSTATAT {
        let flags = a[3];
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH) != 0 || flags & AT_EMPTY_PATH == 0 {
            return None;
        }
        let mut first = [0u8; 1];
        kcore::uaccess::UserRange::new(a[1], 1)
            .and_then(|r| r.read(&mut first))
            .ok()?;
        if first[0] != 0 {
            return None;
        }
        a[2]
    } else {
        a[1]
    };
    match file_cache::stat_from(&cache, sup, buf) {
        Ok(()) => Some(0),
        Err(abi::Error::Fault) => Some(fail(errno::EFAULT)),
        Err(_) => None,
    }
}

/// The first piece of `count` at `iov` that is not empty ((0, 0): none).
fn first_piece(iov: u64, count: u64) -> Result<(u64, u64), i64> {
    if count > IOV_MAX {
        return Err(errno::EMSGSIZE);
    }
    for i in 0..count {
        let v: [u64; 2] = kcore::uaccess::read(iov + i * 16).map_err(|_| errno::EFAULT)?;
        if v[1] > 0 {
            return Ok((v[0], v[1]));
        }
    }
    Ok((0, 0))
}

/// readv and writev: the pieces in order, as one call. A readv waits for
/// its first bytes only and then takes what is there; a writev waits for
/// room for all. Unlike Linux, a writev of at most PIPE_BUF bytes in
/// several pieces is atomic per piece, not as a whole.
fn vectored(
    me: &Process,
    end: &End,
    write: bool,
    (iov, count): (u64, u64),
    may_wait: bool,
) -> Result<Result<usize, Fail>, i64> {
    if count > IOV_MAX {
        return Err(errno::EINVAL);
    }
    let mut pieces = [(0u64, 0u64); 16];
    let mut total: u64 = 0;
    let mut done = 0usize;
    let mut first = true;
    for chunk in 0..count.div_ceil(16) {
        let n = (count - chunk * 16).min(16) as usize;
        for (i, p) in pieces[..n].iter_mut().enumerate() {
            let at = iov + (chunk * 16 + i as u64) * 16;
            let v: [u64; 2] = kcore::uaccess::read(at).map_err(|_| errno::EFAULT)?;
            total = total
                .checked_add(v[1])
                .filter(|&t| t <= isize::MAX as u64)
                .ok_or(errno::EINVAL)?;
            *p = (v[0], v[1]);
        }
        for &(addr, len) in &pieces[..n] {
            if len == 0 {
                continue;
            }
            let len = len.min(MAX_RW_COUNT) as usize;
            let r = if write {
                pipe::write(me, end, addr, len, may_wait)
            } else {
                pipe::read(me, end, addr, len, first && may_wait)
            };
            first = false;
            match r {
                Ok(k) => {
                    done += k;
                    if k < len {
                        return Ok(Ok(done));
                    }
                }
                Err(_) if done > 0 => return Ok(Ok(done)),
                Err(e) => return Ok(Err(e)),
            }
        }
    }
    Ok(Ok(done))
}

/// A call that gave up its wait for a signal: it waits for the attention
/// stop on the way out, where the supervisor decides (`RESTART_MARK`).
pub fn note_restart(n: u64) {
    sched::with_current(|c| c.restart_call.store(n | RESTART_MARK, Ordering::Release));
}

/// After the way out: a call given up for a stop that did not come
/// (another computation of the process took it) runs again.
pub fn restart_unclaimed(frame: &mut TrapFrame) {
    let n = sched::with_current(|c| c.restart_call.swap(0, Ordering::AcqRel)).unwrap_or(0);
    if n & RESTART_MARK != 0 && frame.rax == fail(errno::ERESTARTSYS) {
        frame.rax = n & !RESTART_MARK;
        frame.rip -= 2;
    }
}

/// Whether `frame`'s result asks for `note_restart`.
pub fn gave_up(rax: u64) -> bool {
    rax == fail(errno::ERESTARTSYS)
}

/// `linux_pipe(op, pid, a, b, c)` of supervisor `me`.
pub fn linux_pipe(me: &Process, op: u64, pid: u64, a: u64, b: u64, c: u64) -> Result<u64, Error> {
    let p = proc::get(pid).ok_or(Error::NotFound)?;
    if !ipc::supervise::serves_process(me.pid(), &p) || p.has_exited() {
        return Err(Error::Denied);
    }
    const O_NONBLOCK: u64 = 0o4000;
    const O_CLOEXEC: u64 = 0o2000000;
    const FD_CLOEXEC: u64 = 1;
    match op {
        op::CREATE => pipe::create(&p, a, b, c & O_NONBLOCK != 0, c & O_CLOEXEC != 0).map(|id| id.raw()),
        op::DUP => pipe::dup(&p, a, b, c & O_CLOEXEC != 0).map(|()| 0),
        op::CLOSE => pipe::close(&p, a).map(|()| 0),
        op::SETFL => pipe::set_nonblock(&p, a, b & O_NONBLOCK != 0).map(|()| 0),
        op::STATE => pipe::state_of(&p, a, b),
        op::WATCH => pipe::watch(&p, a, me.pid(), b).map(|()| 0),
        op::RESIZE => pipe::resize(&p, a, b),
        op::ID => pipe::id_of(&p, a),
        op::SOCKPAIR => pipe::sockpair(&p, a, b, c & O_NONBLOCK != 0, c & O_CLOEXEC != 0).map(|id| id.raw()),
        op::SHUTDOWN => pipe::shutdown(&p, a, b).map(|()| 0),
        op::BIND_FILE => {
            let cache = file_cache::for_binding(me.pid(), resource::ResId::from_raw(b))?;
            let stat = c & abi::linux::pipe::FILE_STAT != 0;
            pipe::bind_file(&p, a, cache, stat, c & O_CLOEXEC != 0).map(|()| 0)
        }
        op::SETFD => pipe::set_cloexec(&p, a, b & FD_CLOEXEC != 0).map(|()| 0),
        op::TAKE | op::PEEK | op::PUT => moved(me, &p, op, a, (b, c)),
        _ => Err(Error::Invalid),
    }
}

/// TAKE, PEEK and PUT: bytes between process `p`'s pipe at `fd` and the
/// supervisor `me`'s own memory, never waiting (the supervisor holds the
/// call and watches the pipe instead: it must stay free to serve signals).
fn moved(me: &Process, p: &Process, o: u64, fd: u64, (addr, len): (u64, u64)) -> Result<u64, Error> {
    let write = o == op::PUT;
    let end = pipe::side_at(p.pid(), fd, write)?;
    let len = len.min(MAX_RW_COUNT) as usize;
    let r = match o {
        op::PUT => pipe::write(me, &end, addr, len, false),
        op::PEEK => pipe::peek(me, &end, addr, len, false),
        _ if addr == 0 => pipe::drop_bytes(&end, len),
        _ => pipe::read(me, &end, addr, len, false),
    };
    r.map(|n| n as u64).map_err(|f| match f {
        Fail::Again => Error::Busy,
        Fail::NoReaders => Error::Deadlock,
        Fail::Fault => Error::Fault,
        Fail::NoMemory => Error::NoMemory,
        Fail::WrongEnd | Fail::Interrupted => Error::Invalid,
    })
}
