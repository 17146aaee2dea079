//! The kernel key retention service for every Linux process: keys are
//! system-wide objects (`linuxabi::keys` keeps them and their rules), so
//! they are this server's, as SysV IPC's are. Supervisors pass add_key,
//! request_key and keyctl here (`pass::KEY_ADD`, `pass::KEYCTL`) with the
//! caller's thread and effective ids; this server copies the strings and
//! payloads from the caller's memory itself, as Linux's call does, and
//! ends the call at once (nothing waits: with no request-key program a
//! key that is not there is ENOKEY). A process's keyrings follow its
//! fork, exec, thread ends and end (`procs.rs`).

use super::{End, Shared};
use crate::proto::{self, keys as kop, pass, word};
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::keys::{self as k, Caller};
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// `/proc/keys` at most (the rest is left out).
const LIST_MAX: usize = 64 << 10;
/// A key type's name at most, with its zero (Linux's key_get_type_from_user).
const TYPE_MAX: usize = 32;
/// A description or a callout's text at most, with its zero.
const TEXT_MAX: usize = 4096;

/// A zero-terminated string of at most `max` bytes with its zero from
/// the caller's memory, read a page at a time so that a string ending
/// before an unmapped page is found; EINVAL if it does not end in time
/// (as Linux's strndup_user).
fn read_str(rid: u64, addr: u64, max: usize) -> Result<Vec<u8>, i64> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < max {
        let page_left = 4096 - (at % 4096) as usize;
        let n = page_left.min(max - out.len());
        let mut buf = alloc::vec![0u8; n];
        calls::caller_read(rid, at, &mut buf).map_err(|_| errno::EFAULT)?;
        if let Some(z) = buf.iter().position(|&b| b == 0) {
            out.extend_from_slice(&buf[..z]);
            return Ok(out);
        }
        out.extend_from_slice(&buf);
        at = at.checked_add(n as u64).ok_or(errno::EFAULT)?;
    }
    Err(errno::EINVAL)
}

/// A key type's name: not empty, and a name starting with '.' (the
/// kernel's own types) is refused before anything else is read.
fn read_type(rid: u64, addr: u64) -> Result<Vec<u8>, i64> {
    let t = read_str(rid, addr, TYPE_MAX)?;
    match t.first() {
        None => Err(errno::EINVAL),
        Some(b'.') => Err(errno::EPERM),
        Some(_) => Ok(t),
    }
}

fn read_bytes(rid: u64, addr: u64, len: u64) -> Result<Vec<u8>, i64> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len as usize).map_err(|_| errno::ENOMEM)?;
    buf.resize(len as usize, 0);
    calls::caller_read(rid, addr, &mut buf).map_err(|_| errno::EFAULT)?;
    Ok(buf)
}

/// Copies `data` to the caller's buffer if it holds it all (Linux's
/// KEYCTL_READ copies nothing into a shorter one) and returns `data`'s
/// whole length.
fn give(rid: u64, buf: u64, len: u64, data: &[u8]) -> Result<i64, i64> {
    if buf != 0 && len > 0 && !data.is_empty() && data.len() as u64 <= len {
        calls::caller_write(rid, buf, data).map_err(|_| errno::EFAULT)?;
    }
    Ok(data.len() as i64)
}

fn caller(w: &[u64]) -> Caller {
    let pid = word(w, 1) as u32;
    let tid = (word(w, 1) >> 32) as u32;
    Caller {
        pid,
        tid: if tid == 0 { pid } else { tid },
        uid: word(w, 2) as u32,
        gid: (word(w, 2) >> 32) as u32,
    }
}

impl Shared {
    /// A key call passed by a supervisor: [op, pid | tid << 32, uid | gid
    /// << 32, arguments...]; it ends here.
    pub(super) fn keys_pass(&mut self, rid: u64, w: &[u64]) {
        let c = caller(w);
        let a = [word(w, 3), word(w, 4), word(w, 5), word(w, 6), word(w, 7)];
        let r = match word(w, 0) {
            pass::KEY_ADD => self.key_add(rid, &c, a).map(i64::from),
            _ => self.keyctl(rid, &c, a),
        };
        let _ = calls::caller_return(rid, r.map_or_else(errno::fail, |v| v as u64));
    }

    /// add_key(type, description, payload, length, keyring).
    fn key_add(&mut self, rid: u64, c: &Caller, a: [u64; 5]) -> Result<i32, i64> {
        if a[3] > k::ADD_PAYLOAD_MAX {
            return Err(errno::EINVAL);
        }
        let ty = read_type(rid, a[0])?;
        let desc = if a[1] != 0 {
            Some(read_str(rid, a[1], TEXT_MAX)?)
        } else {
            None
        };
        let payload = if a[3] > 0 {
            Some(read_bytes(rid, a[2], a[3])?)
        } else {
            None
        };
        let now = sys::now_ns();
        self.keys
            .add(c, &ty, desc.as_deref(), payload.as_deref(), a[4] as i32, now)
    }

    /// keyctl(op, ...) and request_key (`keys::REQUEST`).
    fn keyctl(&mut self, rid: u64, c: &Caller, a: [u64; 5]) -> Result<i64, i64> {
        let now = sys::now_ns();
        match a[0] {
            kop::REQUEST => {
                let ty = read_type(rid, a[1])?;
                let desc = read_str(rid, a[2], TEXT_MAX)?;
                let callout = if a[3] != 0 {
                    Some(read_str(rid, a[3], TEXT_MAX)?)
                } else {
                    None
                };
                self.keys
                    .request(c, &ty, &desc, callout.as_deref(), a[4] as i32, now)
                    .map(i64::from)
            }
            k::op::JOIN_SESSION_KEYRING => {
                let name = if a[1] != 0 {
                    Some(read_str(rid, a[1], TEXT_MAX)?)
                } else {
                    None
                };
                self.keys.join(c, name.as_deref()).map(i64::from)
            }
            k::op::UPDATE => {
                if a[3] > k::UPDATE_PAYLOAD_MAX {
                    return Err(errno::EINVAL);
                }
                let payload = if a[3] > 0 {
                    Some(read_bytes(rid, a[2], a[3])?)
                } else {
                    None
                };
                self.keys.update(c, a[1] as i32, payload.as_deref(), now)
            }
            k::op::DESCRIBE => {
                let t = self.keys.describe(c, a[1] as i32, now)?;
                // Linux copies the text only into a buffer that holds it all.
                if a[2] != 0 && a[3] >= t.len() as u64 {
                    calls::caller_write(rid, a[2], &t).map_err(|_| errno::EFAULT)?;
                }
                Ok(t.len() as i64)
            }
            k::op::READ => {
                let data = self.keys.read(c, a[1] as i32, a[3], now)?;
                give(rid, a[2], a[3], &data)
            }
            k::op::SEARCH => {
                let ty = read_type(rid, a[2])?;
                let desc = read_str(rid, a[3], TEXT_MAX)?;
                self.keys
                    .search_op(c, a[1] as i32, &ty, &desc, a[4] as i32, now)
                    .map(i64::from)
            }
            op => self.keys.ctl(c, op, [a[1], a[2], a[3], a[4]], now),
        }
    }

    /// `ctl::KEYS`: [keys::SETTING, index, value or u64::MAX] → [value or
    /// -errno]; [keys::LIST, pid, tid, uid | gid << 32] → [length, text].
    pub(super) fn keys_ctl(&mut self, w: &[u64]) -> End {
        match word(w, 1) {
            kop::SETTING => {
                let v = (word(w, 3) != u64::MAX).then(|| word(w, 3));
                let r = self.keys.setting(word(w, 2) as usize, v);
                End::Reply(alloc::vec![r.unwrap_or_else(errno::fail)])
            }
            kop::LIST => {
                let c = caller(&[0, word(w, 2) | word(w, 3) << 32, word(w, 4)]);
                let mut t = self.keys.list(&c, sys::now_ns()).into_bytes();
                t.truncate(LIST_MAX);
                let mut out = alloc::vec![t.len() as u64];
                out.extend(proto::name_words(&t));
                End::Reply(out)
            }
            _ => End::Reply(alloc::vec![errno::fail(errno::EINVAL)]),
        }
    }
}
