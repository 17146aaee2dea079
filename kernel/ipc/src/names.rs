//! The name service: servers register a name, clients look it up. A name
//! belongs to one process and disappears when that process ends.

use abi::Error;
use alloc::collections::BTreeMap;
use alloc::string::String;
use kcore::sync::IrqMutex;

static NAMES: IrqMutex<BTreeMap<String, u64>> = IrqMutex::new(BTreeMap::new());

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
    n.insert(String::from(name), pid);
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
