//! Futexes (Linux's fast user-space locks) of the computations of Linux
//! processes: a computation waits in the kernel on a 32-bit word of user
//! memory until another wakes that word, or a deadline passes, or its
//! process is killed or asked to stop for a signal. The kernel serves
//! these calls itself: a futex touches only memory and the waits of
//! computations, none of the state the supervisor keeps.
//!
//! A private futex (`FUTEX_PRIVATE_FLAG`) is known by its space and
//! address; a shared one by the physical address of its word, so that
//! processes sharing the page (MAP_SHARED memory after a fork) meet on it;
//! one in private memory, whose frame a fork's copy-on-write may change,
//! by its space and address (`Key::SharedPrivate`).
//! As in Linux, a private wake does not find a shared waiter. The waiters
//! are one list: a wait adds itself before it compares the word, so a
//! wake that follows a change of the word always finds it.

use crate::process::Process;
use abi::Error;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use kcore::computation::{Computation, State};
use kcore::sync::IrqMutex;

/// What a futex is known by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// (space root, address).
    Private(u64, u64),
    /// Physical address of the word.
    Shared(u64),
    /// A shared futex in the process's private memory: (space root,
    /// address), as Linux keys it, since the word's frame changes when a
    /// write copies a page a fork shares (a waiter keyed by the old frame
    /// would never be woken). Apart from `Private`: a private wake does not
    /// find a shared waiter.
    SharedPrivate(u64, u64),
}

struct Waiter {
    key: Key,
    bitset: u32,
    comp: Arc<Computation>,
}

/// Every computation waiting on a futex. A computation waits on one at a
/// time, so the list is bounded by the computations, which are charged.
static WAITERS: IrqMutex<Vec<Waiter>> = IrqMutex::new(Vec::new());

/// How a wait ended without a wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    /// The word did not hold the value (EAGAIN).
    Again,
    /// The deadline passed (ETIMEDOUT).
    TimedOut,
    /// Its process was asked to stop for a signal (EINTR), or killed.
    Interrupted,
    /// The word is not readable user memory (EFAULT).
    Fault,
    /// No room to list the waiter (ENOMEM).
    NoMemory,
}

/// The key of the word at `addr` (4-byte aligned) of process `p`.
pub fn key_of(p: &Process, addr: u64, private: bool) -> Result<Key, Error> {
    if private {
        return Ok(Key::Private(p.root(), addr));
    }
    let space = p.space().ok_or(Error::NotFound)?;
    let mut s = space.lock();
    let phys = s.physical(addr).map_err(|_| Error::Fault)?;
    if s.region_at(addr).is_some_and(|a| a.region.forkable()) {
        return Ok(Key::SharedPrivate(p.root(), addr));
    }
    Ok(Key::Shared(phys))
}

fn read_word(addr: u64) -> Result<u32, WaitError> {
    kcore::uaccess::read::<u32>(addr).map_err(|_| WaitError::Fault)
}

/// Whether `me` is still listed, and so not woken.
fn listed(w: &[Waiter], me: &Arc<Computation>) -> Option<usize> {
    w.iter().position(|x| Arc::ptr_eq(&x.comp, me))
}

/// The current computation of `p` waits on the word at `addr` while it
/// holds `val`, until a wake whose bitset meets `bitset`, or `deadline`
/// (ns since boot).
pub fn wait(
    p: &Process,
    addr: u64,
    val: u32,
    private: bool,
    bitset: u32,
    deadline: Option<u64>,
) -> Result<(), WaitError> {
    // Read first: the page is then present, and its frame the key.
    read_word(addr)?;
    let key = key_of(p, addr, private).map_err(|_| WaitError::Fault)?;
    let me = sched::current().ok_or(WaitError::Interrupted)?;
    {
        let mut w = WAITERS.lock();
        w.try_reserve(1).map_err(|_| WaitError::NoMemory)?;
        w.push(Waiter {
            key,
            bitset,
            comp: me.clone(),
        });
    }
    let leave = |e: WaitError| -> Result<(), WaitError> {
        let mut w = WAITERS.lock();
        match listed(&w, &me) {
            Some(i) => {
                w.swap_remove(i);
                Err(e)
            }
            // Woken meanwhile: the wake counted it.
            None => Ok(()),
        }
    };
    match read_word(addr) {
        Ok(v) if v == val => {}
        Ok(_) => return leave(WaitError::Again),
        Err(e) => return leave(e),
    }
    loop {
        {
            let mut w = WAITERS.lock();
            let Some(i) = listed(&w, &me) else {
                return Ok(());
            };
            let stop = if p.is_killed() || p.attention_pending() || me.attention.load(Ordering::Acquire) {
                Some(WaitError::Interrupted)
            } else if deadline.is_some_and(|d| kcore::clock::nanos() >= d) {
                Some(WaitError::TimedOut)
            } else {
                None
            };
            if let Some(e) = stop {
                w.swap_remove(i);
                return Err(e);
            }
            // Blocked under the list's lock, which every wake takes before
            // the state's: no wake falls between the look and the block. A
            // kill or an attention request wakes it without the list's
            // lock, so their marks are looked at again under the state's.
            let mut state = me.state.lock();
            if me.killed() || p.attention_pending() || me.attention.load(Ordering::Acquire) {
                continue;
            }
            *state = State::Blocked;
            drop(state);
            if let Some(d) = deadline {
                sched::wake_at(d, me.clone());
            }
        }
        sched::schedule();
        if deadline.is_some() {
            sched::cancel_wake(&me);
        }
    }
}

/// Wakes at most `n` computations waiting on `key` whose bitset meets
/// `bitset`; returns how many.
pub fn wake(key: Key, n: u64, bitset: u32) -> u64 {
    let mut w = WAITERS.lock();
    let mut woken = 0;
    let mut i = 0;
    while i < w.len() && woken < n {
        if w[i].key == key && w[i].bitset & bitset != 0 {
            let x = w.swap_remove(i);
            sched::wake(&x.comp);
            woken += 1;
        } else {
            i += 1;
        }
    }
    woken
}

/// Wakes at most `n` waiting on `from`, then moves at most `m` of the
/// others to `to`; returns how many it woke and moved.
pub fn requeue(from: Key, to: Key, n: u64, m: u64) -> u64 {
    let woken = wake(from, n, u32::MAX);
    let mut w = WAITERS.lock();
    let mut moved = 0;
    for x in w.iter_mut() {
        if moved >= m {
            break;
        }
        if x.key == from {
            x.key = to;
            moved += 1;
        }
    }
    woken + moved
}

/// A computation of `p` ends while others go on: the waiters on its
/// clear-tid word (a shared futex, as Linux wakes it) learn it.
pub fn wake_word(p: &Process, addr: u64, n: u64) {
    if let Ok(key) = key_of(p, addr, false) {
        wake(key, n, u32::MAX);
    }
}
