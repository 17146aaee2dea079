//! The key calls (add_key, request_key, keyctl) and their files: keys are
//! the shared server's (`shared/keys.rs`), so each call is passed there
//! with the calling thread and its effective ids, and that server reads
//! and writes the caller's memory itself. The quotas of
//! `/proc/sys/kernel/keys` and the list of `/proc/keys` are the shared
//! server's too.

use super::{Out, Sup};
use crate::proto::{self, ctl, keys as kop, pass, word};
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::keys::SETTINGS;
use linuxabi::nr;

/// Whether `n` is a key call.
pub fn is_key_call(n: u64) -> bool {
    matches!(n, nr::ADD_KEY | nr::REQUEST_KEY | nr::KEYCTL)
}

/// The setting a path of `/proc/sys/kernel/keys` names.
pub fn setting_of(abs: &str) -> Option<usize> {
    let name = abs.strip_prefix("/proc/sys/kernel/keys/")?;
    SETTINGS.iter().position(|s| *s == name)
}

impl Sup {
    /// Passes key call `n` on to the shared server.
    pub(super) fn key_call(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        let who = self.cred.euid as u64 | (self.cred.egid as u64) << 32;
        let pid = self.pid as u64;
        let w = match n {
            nr::ADD_KEY => [pass::KEY_ADD, pid, who, a[0], a[1], a[2], a[3], a[4]],
            nr::REQUEST_KEY => [pass::KEYCTL, pid, who, kop::REQUEST, a[0], a[1], a[2], a[3]],
            // keyctl's operation is an int: the upper half is not looked at.
            _ => [pass::KEYCTL, pid, who, a[0] as u32 as u64, a[1], a[2], a[3], a[4]],
        };
        self.pass(rid, n, a, &w)
    }

    /// Key setting `index`, after setting it to `new`.
    pub(super) fn keys_setting(&self, index: usize, new: Option<u64>) -> Result<u64, i64> {
        let r = self.ctl(&[ctl::KEYS, kop::SETTING, index as u64, new.unwrap_or(u64::MAX)]);
        match errno::of(word(&r, 0)) {
            Some(e) => Err(e),
            None => Ok(word(&r, 0)),
        }
    }

    /// `/proc/keys`: the keys the process may view.
    pub(super) fn keys_list(&self) -> Vec<u8> {
        let tid = self.threads.caller as u64;
        let who = self.cred.euid as u64 | (self.cred.egid as u64) << 32;
        let r = self.ctl(&[ctl::KEYS, kop::LIST, self.pid as u64, tid, who]);
        let mut b = proto::bytes(r.get(1..).unwrap_or(&[]));
        b.truncate(word(&r, 0) as usize);
        b
    }
}
