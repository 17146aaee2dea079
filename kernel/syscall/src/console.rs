//! The console as processes use it: writes go straight out; a read waits
//! until the core's input ring has something, woken by the input hook.

use abi::{Error, call};
use alloc::vec::Vec;
use kcore::uaccess;
use sched::WaitQueue;

static INPUT_WAITERS: WaitQueue = WaitQueue::new();

/// The hook the console's interrupt calls when input arrived.
pub fn input_ready() {
    INPUT_WAITERS.wake_all();
}

/// Blocks the calling process until input arrives, then returns what is
/// buffered (at least one byte). None if the process was killed meanwhile.
pub fn read(buf: &mut [u8]) -> Option<usize> {
    if buf.is_empty() {
        return Some(0);
    }
    let mut n = 0;
    let ok = INPUT_WAITERS.wait_until(|| {
        n = kcore::console::take_buffered(buf);
        n > 0
    });
    ok.then_some(n)
}

pub fn sys_console_write(a: call::ConsoleWrite) -> Result<u64, Error> {
    let len = (a.bytes.0.len as usize).min(uaccess::MAX_COPY);
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| Error::NoMemory)?;
    buf.resize(len, 0);
    uaccess::copy_from_user(&mut buf, a.bytes.0.addr)?;
    kcore::console::write_bytes(&buf);
    Ok(len as u64)
}

pub fn sys_console_read(a: call::ConsoleRead) -> Result<u64, Error> {
    let to = uaccess::UserRange::of(a.buf.0)?;
    if to.is_empty() {
        return Ok(0);
    }
    let mut buf = [0u8; 256];
    let want = to.len().min(buf.len());
    let n = read(&mut buf[..want]).ok_or(Error::Denied)?;
    to.write(&buf[..n])?;
    Ok(n as u64)
}
