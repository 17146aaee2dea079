//! Kernel memory a process causes, charged to it: an `Account` is a
//! counter of bytes with a limit, and a `Charge` is an amount held on an
//! account for as long as the memory it stands for lives (a region's
//! bookkeeping, a space's page tables, a call object in flight), given
//! back when the charge is dropped, so the counter cannot drift.
//!
//! Accounts form a tree: a process's account is a child of its creator's,
//! and a charge counts on every account up to the root, each within its
//! own limit. A process therefore cannot escape its limit by spawning
//! children that spend for it, nor by leaving memory behind in the
//! kernel when it exits (the charge outlives the process, on its
//! creator's accounts). The kernel's own memory is charged to nobody.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

pub struct Account {
    used: AtomicU64,
    limit: u64,
    parent: Option<Arc<Account>>,
}

/// The charge would pass an account's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit;

impl Account {
    /// An account of its own, with `limit` bytes.
    pub fn root(limit: u64) -> Arc<Account> {
        Arc::new(Account {
            used: AtomicU64::new(0),
            limit,
            parent: None,
        })
    }

    /// An account under `parent`'s, with `limit` bytes (0: the parent's),
    /// never more than the parent's.
    pub fn child(parent: &Arc<Account>, limit: u64) -> Arc<Account> {
        let limit = if limit == 0 {
            parent.limit
        } else {
            limit.min(parent.limit)
        };
        Arc::new(Account {
            used: AtomicU64::new(0),
            limit,
            parent: Some(parent.clone()),
        })
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether anything more may be charged here and above.
    pub fn has_room(&self) -> bool {
        let mut a = Some(self);
        while let Some(acc) = a {
            if acc.used() >= acc.limit {
                return false;
            }
            a = acc.parent.as_deref();
        }
        true
    }

    /// Adds `bytes` here and on every account above, if none passes its
    /// limit (otherwise nothing is added).
    fn add(&self, bytes: u64) -> Result<(), OverLimit> {
        let mut a = Some(self);
        while let Some(acc) = a {
            let added = acc.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                u.checked_add(bytes).filter(|&n| n <= acc.limit)
            });
            if added.is_err() {
                // Take back what was added below this one.
                let mut b = Some(self);
                while let Some(x) = b.filter(|x| !core::ptr::eq(*x, acc)) {
                    x.used.fetch_sub(bytes, Ordering::Relaxed);
                    b = x.parent.as_deref();
                }
                return Err(OverLimit);
            }
            a = acc.parent.as_deref();
        }
        Ok(())
    }

    /// Adds `bytes` here and above whatever the limits (memory already
    /// made: the next charge is refused instead).
    fn force(&self, bytes: u64) {
        let mut a = Some(self);
        while let Some(acc) = a {
            acc.used.fetch_add(bytes, Ordering::Relaxed);
            a = acc.parent.as_deref();
        }
    }

    fn sub(&self, bytes: u64) {
        let mut a = Some(self);
        while let Some(acc) = a {
            acc.used.fetch_sub(bytes, Ordering::Relaxed);
            a = acc.parent.as_deref();
        }
    }
}

/// Bytes held on an account (none: the kernel's own), given back when
/// dropped.
#[derive(Default)]
pub struct Charge {
    account: Option<Arc<Account>>,
    bytes: u64,
}

impl Charge {
    /// Nothing charged to anybody (the kernel's own memory).
    pub const NONE: Charge = Charge {
        account: None,
        bytes: 0,
    };

    /// `bytes` charged to `account` (nobody's if None), if it has room.
    pub fn new(account: Option<&Arc<Account>>, bytes: u64) -> Result<Charge, OverLimit> {
        let Some(account) = account else {
            return Ok(Charge::NONE);
        };
        account.add(bytes)?;
        Ok(Charge {
            account: Some(account.clone()),
            bytes,
        })
    }

    /// `Charge::new` on an account reference the caller hands over (one
    /// reference count less to take and give back).
    pub fn on_own(account: Arc<Account>, bytes: u64) -> Result<Charge, OverLimit> {
        account.add(bytes)?;
        Ok(Charge {
            account: Some(account),
            bytes,
        })
    }

    /// An empty charge on `account`, to grow later.
    pub fn on(account: Option<&Arc<Account>>) -> Charge {
        Charge {
            account: account.cloned(),
            bytes: 0,
        }
    }

    /// `bytes` more, if the account has room.
    pub fn grow(&mut self, bytes: u64) -> Result<(), OverLimit> {
        if let Some(a) = &self.account {
            a.add(bytes)?;
        }
        self.bytes += bytes;
        Ok(())
    }

    /// `bytes` more, for memory already made (see `Account::force`).
    pub fn grow_anyway(&mut self, bytes: u64) {
        if let Some(a) = &self.account {
            a.force(bytes);
        }
        self.bytes += bytes;
    }

    /// `bytes` less (memory that went before the rest of what the charge
    /// stands for).
    pub fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        if let Some(a) = &self.account {
            a.sub(bytes);
        }
        self.bytes -= bytes;
    }

    /// Whether its account may take more.
    pub fn has_room(&self) -> bool {
        self.account.as_ref().is_none_or(|a| a.has_room())
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The account it is on (None: the kernel's memory).
    pub fn account(&self) -> Option<&Arc<Account>> {
        self.account.as_ref()
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(a) = &self.account {
            a.sub(self.bytes);
        }
    }
}
