//! The console as processes use it: writes go straight out; a read waits
//! until the core's input ring has something, woken by the input hook.
//! A process may take the console's input for itself (`console_attach`:
//! the Linux personality's terminal, whose line discipline is in user
//! space): input then arrives as an event on one of its port's entries
//! (seed 003: an interrupt turned into communication), Ctrl-C included,
//! and its reads take what is buffered without waiting.

use abi::{Error, call};
use alloc::sync::Arc;
use alloc::vec::Vec;
use ipc::process::{self as proc, Process};
use kcore::sync::IrqMutex;
use kcore::uaccess;
use sched::WaitQueue;

static INPUT_WAITERS: WaitQueue = WaitQueue::new();

/// The process holding the console's input (its pid: the interrupt
/// must never drop the last reference to a process), and the entry its
/// events go to.
static ATTACHED: IrqMutex<Option<(u64, u64)>> = IrqMutex::new(None);

/// The attached process, if it still takes events (one that ended lets
/// go of the console).
fn holder() -> Option<(Arc<Process>, u64)> {
    let mut a = ATTACHED.lock();
    let (pid, entry) = (*a)?;
    match proc::get(pid) {
        Some(p) if !p.has_exited() && !p.port().closed() => Some((p, entry)),
        _ => {
            *a = None;
            None
        }
    }
}

/// `console_attach`: input goes to `me`'s `entry` (u64::MAX: back to
/// readers). Busy while another live process holds it.
pub fn attach(me: &Process, entry: u64) -> Result<(), Error> {
    if entry != u64::MAX && entry >= 61 {
        return Err(Error::Invalid);
    }
    let current = holder();
    let mut a = ATTACHED.lock();
    match current {
        Some((p, _)) if p.pid() != me.pid() => return Err(Error::Busy),
        _ => {}
    }
    *a = if entry == u64::MAX {
        None
    } else {
        Some((me.pid(), entry))
    };
    drop(a);
    // Input that came before is the new holder's (or the readers') now.
    input_ready();
    Ok(())
}

/// The hook the console's interrupt calls when input arrived.
pub fn input_ready() {
    match holder() {
        Some((p, entry)) => {
            if let Some(c) = ipc::port::post_event(&p, entry) {
                sched::wake(&c);
            }
        }
        None => INPUT_WAITERS.wake_all(),
    }
}

/// Ctrl-C on the console: the attached process reads it as input (its
/// line discipline turns it into a signal); otherwise it interrupts the
/// foreground process.
pub fn interrupt_key() -> bool {
    if ATTACHED.lock().is_some() {
        return false;
    }
    proc::interrupt_foreground()
}

/// Blocks the calling process until input arrives, then returns what is
/// buffered (at least one byte). None if the process was killed meanwhile.
pub fn read(buf: &mut [u8]) -> Option<usize> {
    if buf.is_empty() {
        return Some(0);
    }
    let mut n = 0;
    let ok = INPUT_WAITERS.wait_until(|| {
        // While a process holds the console, its input is not for readers.
        if holder().is_some() {
            return false;
        }
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

pub fn sys_console_read(me: &Process, a: call::ConsoleRead) -> Result<u64, Error> {
    let to = uaccess::UserRange::of(a.buf.0)?;
    if to.is_empty() {
        return Ok(0);
    }
    let mut buf = [0u8; 256];
    let want = to.len().min(buf.len());
    let n = match holder() {
        // The holder takes what is there, without waiting.
        Some((p, _)) if p.pid() == me.pid() => kcore::console::take_buffered(&mut buf[..want]),
        _ => read(&mut buf[..want]).ok_or(Error::Denied)?,
    };
    to.write(&buf[..n])?;
    Ok(n as u64)
}
