//! The resource pool's settings, in the language of `etc/pool.conf`
//! (`tessera_conf::pool`), applied to the kernel's pool: the kernel's
//! settings are read back as records, changed line by line, and given back
//! whole (`pool_set`). Needs the system right.

use abi::{Error, PoolRule, PoolSettings};
use tessera_conf::pool::{Effect, PoolConfig, parse};
use tessera_rt::{abi, println, sys};

/// Largest settings file init reads.
const FILE_LIMIT: usize = 64 * 1024;

/// The kernel's settings and add rules as they are.
pub fn current() -> Result<PoolConfig, Error> {
    let mut settings = [PoolSettings::default()];
    sys::inspect(0, 0, &mut settings)?;
    Ok(PoolConfig {
        settings: settings[0],
        rules: sys::inspect_all::<PoolRule>(0)?,
    })
}

fn plate(file: &str) -> Result<u64, Error> {
    sys::plate_find(file)
}

fn set(config: &PoolConfig) -> Result<u64, Error> {
    sys::pool_set(&config.settings, &config.rules)
}

/// Applies one setting line; returns how many resources the add function made.
pub fn setting(line: &str) -> Result<u64, Error> {
    let mut config = current()?;
    match config.apply(&parse(line)?, &mut plate)? {
        Effect::None => Ok(0),
        Effect::Changed => set(&config),
        Effect::Flush => sys::pool_flush().map(|_| 0),
    }
}

/// Applies a settings file of the archive (init, at boot): its lines apply
/// in order to the kernel's settings with no add rules, as the file is the
/// whole of them. A bad line is reported and skipped, as the kernel did
/// when it read the file itself; a missing file changes nothing.
pub fn apply_file(file: &str) {
    let Ok(text) = sys::read_plate(file, FILE_LIMIT) else {
        return;
    };
    let name = file.rsplit('/').next().unwrap_or(file);
    let mut config = match current() {
        Ok(c) => c,
        Err(e) => return println!("{name}: cannot read the pool's settings: {e:?}"),
    };
    config.rules.clear();
    let text = core::str::from_utf8(&text).unwrap_or("");
    let flush = config.apply_text(text, &mut plate, &mut |line, e| {
        println!("{name}: '{}': {:?}", line.trim(), e)
    });
    if flush {
        let _ = sys::pool_flush();
    }
    if let Err(e) = set(&config) {
        println!("{name}: cannot add resources: {e:?}");
    }
}
