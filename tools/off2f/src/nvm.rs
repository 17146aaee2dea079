//! `off2f nvm-*`: the NVM store in an image file on the host, the file QEMU
//! maps as the pseudo-NVM. An image is changed by one process at a time
//! (an exclusive lock); QEMU must not be running on it meanwhile.

use crate::{Failure, flag, operands, option, read, usage};
use nvmstore::file::{FileRegion, parse_size};
use nvmstore::{Error, FormatOptions, Store};
use std::fs::{File, OpenOptions, TryLockError};

/// Smallest image: room for the directory and a useful data area.
const MIN_SIZE: u64 = 1 << 20;

fn open(path: &str, write: bool, create: bool) -> Result<File, Failure> {
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{path}: {e}"))?;
    let locked = if write { file.try_lock() } else { file.try_lock_shared() };
    match locked {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(format!("{path}: in use by another off2f").into()),
        Err(TryLockError::Error(e)) => Err(format!("{path}: cannot lock: {e}").into()),
    }
}

fn region_failure(path: &str, region: &FileRegion, e: Error) -> Failure {
    match (e, region.last_error()) {
        (Error::Region(_), Some(io)) => format!("{path}: {e}: {io}").into(),
        _ => format!("{path}: {e}").into(),
    }
}

fn mount(path: &str, write: bool) -> Result<Store<FileRegion>, Failure> {
    let file = open(path, write, false)?;
    let region = FileRegion::new(file).map_err(|e| format!("{path}: {e}"))?;
    Store::mount(region).map_err(|e| match e {
        Error::NotFormatted => format!("{path}: {e} (off2f nvm-format {path} SIZE)").into(),
        e => format!("{path}: {e}").into(),
    })
}

pub fn format(mut args: Vec<String>) -> Result<(), Failure> {
    let force = flag(&mut args, "--force");
    let capacity = match option(&mut args, "--capacity")? {
        Some(c) => Some(c.parse().map_err(|_| usage(format!("bad capacity {c:?}")))?),
        None => None,
    };
    let [path, size] = operands(args)?;
    let bytes = parse_size(&size)
        .filter(|s| s.is_power_of_two() && *s >= MIN_SIZE)
        .ok_or_else(|| {
            usage(format!(
                "bad size {size:?}: a power of two of at least 1M (QEMU maps it as a PCI BAR)"
            ))
        })?;
    let file = open(&path, true, true)?;
    if !force {
        let existing = FileRegion::new(file.try_clone().map_err(|e| format!("{path}: {e}"))?)
            .map_err(|e| format!("{path}: {e}"))?;
        match Store::mount(existing) {
            Err(Error::NotFormatted) => {}
            Ok(s) => {
                return Err(format!(
                    "{path} holds a store with {} file(s): --force to erase it",
                    s.files().count()
                )
                .into());
            }
            Err(e) => return Err(format!("{path} holds a damaged store ({e}): --force to erase it").into()),
        }
    }
    file.set_len(bytes).map_err(|e| format!("{path}: {e}"))?;
    let region = FileRegion::new(file).map_err(|e| format!("{path}: {e}"))?;
    let store = Store::format(region, FormatOptions { capacity }).map_err(|e| format!("{path}: {e}"))?;
    let space = store.space();
    println!(
        "{path}: empty store of {bytes} bytes: {} data pages, room for {} files",
        space.data_pages, space.capacity
    );
    Ok(())
}

pub fn store(args: Vec<String>) -> Result<(), Failure> {
    let [path, name, file] = operands(args)?;
    let data = read(&file)?;
    let mut store = mount(&path, true)?;
    let before = store.sequence();
    let result = store.store(&name, &data).map(|f| (f.offset, f.pages, f.crc));
    let (offset, pages, crc) = result.map_err(|e| region_failure(&path, store.region(), e))?;
    let what = if store.sequence() == before {
        "unchanged"
    } else {
        "stored"
    };
    println!(
        "{path}: {what} {name}: {} bytes, {pages} page(s) at offset {offset:#x}, CRC-64 {crc:016x}",
        data.len()
    );
    Ok(())
}

pub fn delete(args: Vec<String>) -> Result<(), Failure> {
    let [path, name] = operands(args)?;
    let mut store = mount(&path, true)?;
    store
        .delete(&name)
        .map_err(|e| region_failure(&path, store.region(), e))?;
    println!("{path}: deleted {name}");
    Ok(())
}

pub fn list(mut args: Vec<String>) -> Result<(), Failure> {
    let verify = flag(&mut args, "--verify");
    let [path] = operands(args)?;
    let store = mount(&path, false)?;
    let mut bad = 0;
    for f in store.files() {
        let state = if !verify {
            ""
        } else if store.verify(f.name).map_err(|e| format!("{path}: {e}"))? {
            "  ok"
        } else {
            bad += 1;
            "  CHECKSUM MISMATCH"
        };
        println!(
            "{:<32} {:>10} bytes  {:>6} pages at {:#010x}  crc {:016x}  v{}{state}",
            f.name, f.len, f.pages, f.offset, f.crc, f.version
        );
    }
    let s = store.space();
    println!(
        "{} of {} files; {} of {} pages used, {} free (largest run {}); directory sequence {}",
        s.files,
        s.capacity,
        s.used_pages,
        s.data_pages,
        s.free_pages,
        s.largest_free_run,
        store.sequence()
    );
    if bad > 0 {
        return Err(format!("{path}: {bad} file(s) do not match their checksum").into());
    }
    Ok(())
}
