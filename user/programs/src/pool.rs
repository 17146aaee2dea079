//! The resource pool's settings as the kernel holds them, read back as
//! records and put in the terms of `etc/pool.conf`'s language
//! (`tessera_conf::pool`).

use abi::{Error, PoolRule, PoolSettings};
use tessera_conf::pool::PoolConfig;
use tessera_rt::{abi, sys};

/// The kernel's settings and add rules as they are.
pub fn current() -> Result<PoolConfig, Error> {
    let mut settings = [PoolSettings::default()];
    sys::inspect(0, 0, &mut settings)?;
    Ok(PoolConfig {
        settings: settings[0],
        rules: sys::inspect_all::<PoolRule>(0)?,
    })
}
