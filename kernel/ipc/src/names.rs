//! The name service: servers register a name, clients look it up. A name
//! belongs to one process and disappears when that process ends. A
//! process holds at most `MAX_PER_PROCESS` names: the table is bounded by
//! the processes, each of them charged to its creator.

use abi::Error;
use alloc::collections::BTreeMap;
use alloc::string::String;
use kcore::sync::IrqMutex;

static NAMES: IrqMutex<BTreeMap<String, u64>> = IrqMutex::new(BTreeMap::new());

/// Names one process may hold (a server registers one or two).
pub const MAX_PER_PROCESS: usize = 16;

pub fn register(name: &str, pid: u64) -> Result<(), Error> {
    if name.is_empty() || name.len() > 64 {
        return Err(Error::Invalid);
    }
    let mut n = NAMES.lock();
    if n.get(name)
        .is_some_and(|&owner| crate::process::get(owner).is_some_and(|p| !p.has_exited()))
    {
        return Err(Error::Busy);
    }
    if n.get(name) != Some(&pid) && n.values().filter(|&&p| p == pid).count() >= MAX_PER_PROCESS {
        return Err(Error::Limit);
    }
    let mut key = String::new();
    key.try_reserve_exact(name.len()).map_err(|_| Error::NoMemory)?;
    key.push_str(name);
    // The map's node has no fallible allocation: the heap's check instead.
    let node = core::alloc::Layout::from_size_align(256, 8).map_err(|_| Error::Invalid)?;
    if !kcore::mm::heap::room_for(node) {
        return Err(Error::NoMemory);
    }
    n.insert(key, pid);
    if let Some(p) = crate::process::get(pid) {
        p.mark_named();
    }
    Ok(())
}

pub fn lookup(name: &str) -> Result<u64, Error> {
    NAMES.lock().get(name).copied().ok_or(Error::NotFound)
}

/// Forgets every name of an ended process.
pub fn forget(pid: u64) {
    NAMES.lock().retain(|_, p| *p != pid);
}

pub fn list(f: &mut dyn FnMut(&str, u64)) {
    for (name, pid) in NAMES.lock().iter() {
        f(name, *pid);
    }
}
