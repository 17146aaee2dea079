//! sched_setattr and sched_getattr: `struct sched_attr` read and written
//! as Linux's `sched_copy_attr` and `sched_attr_copy_to_user` do (its size
//! field, a longer structure's tail that must be zeros), the attributes
//! the shared server's (`shared/sched.rs`), SCHED_DEADLINE's parameters
//! among them: kept and reported, as the other policies are, not applied.

use super::Sup;
use crate::proto::{ctl, word};
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::sched::{Attr, FLAG_UTIL_CLAMP, MAX_NICE, MIN_NICE};
use linuxabi::structs as st;

/// SCHED_ATTR_SIZE_VER0 (without the utilisation clamps) and Linux's
/// own size (with them).
const SIZE_VER0: u64 = 48;
const SIZE: u64 = 56;

impl Sup {
    pub(super) fn sched_setattr(&mut self, rid: u64, pid: u64, at: u64, flags: u64) -> Result<u64, i64> {
        if at == 0 || (pid as i32) < 0 || flags as u32 != 0 {
            return Err(errno::EINVAL);
        }
        let size = match self.read_mem(rid, at, 4)? {
            b if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) == 0 => SIZE_VER0,
            b => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
        };
        let b = if (SIZE_VER0..=4096).contains(&size) {
            self.read_mem(rid, at, size as usize)?
        } else {
            Vec::new()
        };
        // Too short or too long, or a longer structure than Linux's with
        // something in its tail: E2BIG, and the size Linux knows written
        // back.
        if b.is_empty() || b.iter().skip(SIZE as usize).any(|&c| c != 0) {
            self.write_u32(rid, at, SIZE as u32)?;
            return Err(errno::E2BIG);
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let a = Attr {
            policy: u32_at(4),
            flags: st::u64_at(&b, 8),
            nice: (u32_at(16) as i32).clamp(MIN_NICE, MAX_NICE),
            priority: u32_at(20),
            dl: [st::u64_at(&b, 24), st::u64_at(&b, 32), st::u64_at(&b, 40)],
        };
        if a.flags & FLAG_UTIL_CLAMP != 0 && size < SIZE {
            return Err(errno::EINVAL);
        }
        if (a.policy as i32) < 0 {
            return Err(errno::EINVAL);
        }
        self.ctl1(&[
            ctl::SCHED_ATTR_SET,
            self.pid as u64,
            pid as u32 as u64,
            a.policy as u64,
            a.flags,
            a.nice as i64 as u64,
            a.priority as u64,
            a.dl[0],
            a.dl[1],
            a.dl[2],
        ])
    }

    pub(super) fn sched_getattr(&mut self, rid: u64, pid: u64, at: u64, size: u64, flags: u64) -> Result<u64, i64> {
        let size = size as u32 as u64;
        if at == 0 || (pid as i32) < 0 || !(SIZE_VER0..=4096).contains(&size) || flags as u32 != 0 {
            return Err(errno::EINVAL);
        }
        let r = self.ctl(&[ctl::SCHED_GET, self.pid as u64, pid as u32 as u64]);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        let reset = linuxabi::sched::SCHED_RESET_ON_FORK;
        let s = linuxabi::sched::Sched {
            policy: (word(&r, 0) & !reset) as u32,
            priority: word(&r, 1) as u32,
            nice: word(&r, 2) as i32,
            reset_on_fork: word(&r, 0) & reset != 0,
            affinity: word(&r, 3),
            dl: [word(&r, 4), word(&r, 5), word(&r, 6)],
            ioprio: None,
        }
        .attr();
        let n = size.min(SIZE);
        let mut o = st::Out::with_len(SIZE as usize);
        o.u32(n as u32)
            .u32(s.policy)
            .u64(s.flags)
            .u32(s.nice as u32)
            .u32(s.priority);
        o.u64(s.dl[0]).u64(s.dl[1]).u64(s.dl[2]);
        // No utilisation clamps (a kernel option): 0 and 0.
        o.u32(0).u32(0);
        self.write_mem(rid, at, &o.0[..n as usize])?;
        Ok(0)
    }
}
