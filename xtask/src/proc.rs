//! Child processes that cannot outlive xtask: a hung or crashed guest must
//! never leave a QEMU behind, whatever happens to xtask itself.
//!
//! Three mechanisms, because each covers a case the others miss:
//! - every child leads its own process group, so a timeout kills the child
//!   *and* anything it started (the benchmark script starts QEMUs);
//! - `PR_SET_PDEATHSIG` kills the child if xtask dies without a chance to
//!   clean up (SIGKILL, a panic that aborts);
//! - SIGINT/SIGTERM/SIGHUP handlers kill every live child group: since the
//!   groups are not in the terminal's foreground group, Ctrl-C reaches xtask
//!   only, and xtask must pass it on.
//!
//! Linux only; std has no wrappers for these, so a few libc functions are
//! declared here (std links libc anyway).

use std::ffi::{c_int, c_ulong};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use crate::protocol::Ending;

unsafe extern "C" {
    fn prctl(option: c_int, ...) -> c_int;
    fn getppid() -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
    fn signal(sig: c_int, handler: usize) -> usize;
    fn raise(sig: c_int) -> c_int;
    fn _exit(status: c_int) -> !;
}

const PR_SET_PDEATHSIG: c_int = 1;
const SIGHUP: c_int = 1;
const SIGINT: c_int = 2;
const SIGKILL: c_int = 9;
const SIGTERM: c_int = 15;
const SIG_DFL: usize = 0;

/// Live child process groups (0 = free slot). A fixed array of atomics,
/// because the signal handler may touch nothing that allocates or locks.
static GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];
static HANDLERS: Once = Once::new();

extern "C" fn on_fatal_signal(sig: c_int) {
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe.
            unsafe { kill(-pgid, SIGKILL) };
        }
    }
    // Die of the same signal, so that make and the shell see the real cause.
    // SAFETY: signal(2) and raise(3) are async-signal-safe.
    unsafe {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

fn install_handlers() {
    HANDLERS.call_once(|| {
        let handler = on_fatal_signal as extern "C" fn(c_int) as usize;
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // SAFETY: the handler only calls async-signal-safe functions.
            unsafe { signal(sig, handler) };
        }
    });
}

/// A child in its own process group, killed with its group when dropped
/// unless it was reaped first.
pub struct Supervised {
    child: Child,
    slot: Option<usize>,
    reaped: bool,
}

impl Supervised {
    pub fn spawn(cmd: &mut Command) -> io::Result<Supervised> {
        install_handlers();
        let parent = std::process::id() as c_int;
        cmd.process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // The death signal follows the *thread* that forked; callers
                // keep that thread alive until the child is reaped.
                if prctl(PR_SET_PDEATHSIG, SIGKILL as c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // xtask may have died before prctl took effect.
                if getppid() != parent {
                    _exit(1);
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let pid = child.id() as i32;
        let slot = GROUPS
            .iter()
            .position(|s| s.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst).is_ok());
        Ok(Supervised {
            child,
            slot,
            reaped: false,
        })
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    fn forget_group(&mut self) {
        if let Some(slot) = self.slot.take() {
            GROUPS[slot].store(0, Ordering::SeqCst);
        }
    }

    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child.try_wait()?;
        if status.is_some() {
            self.reaped = true;
            self.forget_group();
        }
        Ok(status)
    }

    /// Kills the whole group (before reaping the leader, so the group id
    /// cannot have been reused) and reaps the leader.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        if !self.reaped {
            // SAFETY: plain syscall; the group is ours and still exists.
            unsafe { kill(-(self.child.id() as c_int), SIGKILL) };
        }
        let status = self.child.wait()?;
        self.reaped = true;
        self.forget_group();
        Ok(status)
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.kill();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

pub struct Line {
    /// Time from spawn until the line was read.
    pub at: Duration,
    pub text: String,
}

pub struct Output {
    pub ending: Ending,
    pub lines: Vec<Line>,
    pub stderr: Vec<String>,
    pub elapsed: Duration,
}

impl Output {
    pub fn texts(&self) -> Vec<String> {
        self.lines.iter().map(|l| l.text.clone()).collect()
    }
}

/// How long to keep reading after the child exited or was killed: a
/// grandchild that escaped the kill could hold the pipe open forever.
const GRACE: Duration = Duration::from_secs(1);
const POLL: Duration = Duration::from_millis(20);

/// Runs `cmd` with stdin closed and stdout (and unless `inherit_stderr`,
/// stderr) read line by line, calling `on_line` as each line arrives;
/// kills the child's whole group after `timeout`.
pub fn run_captured(
    cmd: &mut Command,
    timeout: Duration,
    inherit_stderr: bool,
    mut on_line: impl FnMut(Stream, &str),
) -> io::Result<Output> {
    run_watched(cmd, timeout, inherit_stderr, |stream, line| {
        on_line(stream, line);
        None
    })
}

/// Like `run_captured`, but `on_line` may ask for the child to be killed
/// (SIGKILL, its whole group) that long after the line arrived: a crash
/// in the middle of what the child was saying it did. The ending is then
/// the signal, not a timeout.
pub fn run_watched(
    cmd: &mut Command,
    timeout: Duration,
    inherit_stderr: bool,
    mut on_line: impl FnMut(Stream, &str) -> Option<Duration>,
) -> io::Result<Output> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    cmd.stderr(if inherit_stderr {
        Stdio::inherit()
    } else {
        Stdio::piped()
    });
    let start = Instant::now();
    let mut child = Supervised::spawn(cmd)?;
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.child().stdout.take() {
        spawn_reader(out, Stream::Out, start, tx.clone());
    }
    if let Some(err) = child.child().stderr.take() {
        spawn_reader(err, Stream::Err, start, tx.clone());
    }
    drop(tx);

    let deadline = start + timeout;
    let mut lines = Vec::new();
    let mut stderr = Vec::new();
    let mut status = None;
    let mut timed_out = false;
    let mut stop_reading_at = None;
    let mut kill_at: Option<Instant> = None;
    loop {
        match rx.recv_timeout(POLL) {
            Ok((stream, at, text)) => {
                if let Some(after) = on_line(stream, &text)
                    && kill_at.is_none()
                {
                    kill_at = Some(Instant::now() + after);
                }
                match stream {
                    Stream::Out => lines.push(Line { at, text }),
                    Stream::Err => stderr.push(text),
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if status.is_none() {
            if let Some(s) = child.try_wait()? {
                status = Some(s);
                stop_reading_at = Some(now + GRACE);
            } else if kill_at.is_some_and(|t| now >= t) {
                status = Some(child.kill()?);
                stop_reading_at = Some(now + GRACE);
            } else if now >= deadline {
                status = Some(child.kill()?);
                timed_out = true;
                stop_reading_at = Some(now + GRACE);
            }
        }
        if stop_reading_at.is_some_and(|t| now >= t) {
            break;
        }
    }
    // The pipes closed but the child may still be running.
    while status.is_none() {
        if let Some(s) = child.try_wait()? {
            status = Some(s);
        } else if Instant::now() >= deadline {
            status = Some(child.kill()?);
            timed_out = true;
        } else {
            thread::sleep(POLL);
        }
    }
    let elapsed = start.elapsed();
    let status = status.expect("loop above ends only with a status");
    let ending = if timed_out {
        Ending::TimedOut
    } else if let Some(code) = status.code() {
        Ending::Code(code)
    } else {
        Ending::Signal(status.signal().unwrap_or(0))
    };
    Ok(Output {
        ending,
        lines,
        stderr,
        elapsed,
    })
}

type Message = (Stream, Duration, String);

fn spawn_reader(pipe: impl Read + Send + 'static, stream: Stream, start: Instant, tx: mpsc::Sender<Message>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let at = start.elapsed();
                    // Guest output is not guaranteed to be UTF-8.
                    let text = String::from_utf8_lossy(&buf);
                    let text = text.trim_end_matches(['\n', '\r']).to_string();
                    if tx.send((stream, at, text)).is_err() {
                        break;
                    }
                }
            }
        }
    });
}
