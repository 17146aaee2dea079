//! The scheduling calls (sched_setscheduler and its family, getpriority,
//! setpriority): the arguments checked here as Linux checks them, the
//! attributes kept by the shared server with each process
//! (`shared/sched.rs`), so they are another process's to read too.

use super::Sup;
use crate::proto::{ctl, word};
use core::sync::atomic::{AtomicU64, Ordering};
use linuxabi::errno;
use linuxabi::sched;
use tessera_rt::sys;

impl Sup {
    /// A pid argument of the sched_* calls: negative is EINVAL.
    fn sched_pid(pid: u64) -> Result<u64, i64> {
        if (pid as i32) < 0 {
            return Err(errno::EINVAL);
        }
        Ok(pid as u32 as u64)
    }

    /// `[policy, priority, nice, affinity]` of process (or thread) `pid`.
    fn sched_of(&self, pid: u64) -> Result<[u64; 4], i64> {
        let r = self.ctl(&[ctl::SCHED_GET, self.pid as u64, pid]);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        Ok([word(&r, 0), word(&r, 1), word(&r, 2), word(&r, 3)])
    }

    /// The CPUs there are, as a mask (at most 64). The count is asked
    /// once: CPUs do not come and go, and `sys_info` also sums the pool's
    /// whole memory report, which a sched_getaffinity does not need.
    fn cpus_mask() -> u64 {
        static CPUS: AtomicU64 = AtomicU64::new(0);
        let mut cpus = CPUS.load(Ordering::Relaxed);
        if cpus == 0 {
            cpus = sys::sys_info().map_or(1, |i| i.cpus.clamp(1, 64));
            CPUS.store(cpus, Ordering::Relaxed);
        }
        if cpus >= 64 { u64::MAX } else { (1u64 << cpus) - 1 }
    }

    /// `sched_getaffinity`: the mask's bytes (8: the kernel's cpumask).
    pub(super) fn getaffinity(&self, rid: u64, pid: u64, len: u64, at: u64) -> Result<u64, i64> {
        if len < 8 || !len.is_multiple_of(8) {
            return Err(errno::EINVAL);
        }
        let [.., set] = self.sched_of(pid as u32 as u64)?;
        let all = Self::cpus_mask();
        self.write_u64(rid, at, if set == 0 { all } else { set & all })?;
        Ok(8)
    }

    /// `sched_setaffinity`: a shorter mask than the kernel's is read as
    /// zeros beyond it, a longer one only in its first 8 bytes. Recorded
    /// and reported, not applied (the scheduler places a computation on
    /// any CPU).
    pub(super) fn setaffinity(&self, rid: u64, pid: u64, len: u64, at: u64) -> Result<u64, i64> {
        let mut b = [0u8; 8];
        let n = (len as usize).min(8);
        b[..n].copy_from_slice(&self.read_mem(rid, at, n)?);
        let mask = u64::from_le_bytes(b) & Self::cpus_mask();
        self.ctl1(&[ctl::AFFINITY_SET, self.pid as u64, pid as u32 as u64, mask])
    }

    pub(super) fn sched_getscheduler(&self, pid: u64) -> Result<u64, i64> {
        let [policy, ..] = self.sched_of(Self::sched_pid(pid)?)?;
        Ok(policy)
    }

    pub(super) fn sched_getparam(&self, rid: u64, pid: u64, param: u64) -> Result<u64, i64> {
        let pid = Self::sched_pid(pid)?;
        if param == 0 {
            return Err(errno::EINVAL);
        }
        let [_, priority, ..] = self.sched_of(pid)?;
        self.write_u32(rid, param, priority as u32)?;
        Ok(0)
    }

    /// sched_setscheduler (`policy` Some) and sched_setparam (None).
    pub(super) fn sched_set(&self, rid: u64, pid: u64, policy: Option<u64>, param: u64) -> Result<u64, i64> {
        // A negative policy is refused before anything is looked at.
        if policy.is_some_and(|p| (p as i32) < 0) {
            return Err(errno::EINVAL);
        }
        let pid = Self::sched_pid(pid)?;
        if param == 0 {
            return Err(errno::EINVAL);
        }
        let priority = self.read_mem(rid, param, 4)?;
        let priority = i32::from_le_bytes([priority[0], priority[1], priority[2], priority[3]]);
        // A negative priority is out of every range (EINVAL).
        let policy = policy.map(|p| p as u32 as u64);
        let priority = if priority < 0 { u64::MAX } else { priority as u64 };
        self.ctl1(&[
            ctl::SCHED_SET,
            self.pid as u64,
            pid,
            policy.unwrap_or(u64::MAX),
            priority,
        ])
    }

    /// `sched_rr_get_interval`: the time slice Tessera's scheduler gives
    /// every computation (`SLICE_NS`), 0 for SCHED_FIFO (no slice).
    pub(super) fn rr_interval(&self, rid: u64, pid: u64, at: u64) -> Result<u64, i64> {
        let [policy, ..] = self.sched_of(Self::sched_pid(pid)?)?;
        let fifo = policy & !sched::SCHED_RESET_ON_FORK == sched::SCHED_FIFO as u64;
        let ns = if fifo { 0 } else { sched::SLICE_NS };
        let mut o = linuxabi::structs::Out::with_len(16);
        o.u64(ns / 1_000_000_000).u64(ns % 1_000_000_000);
        self.write_mem(rid, at, &o.0)?;
        Ok(0)
    }

    /// ioprio_get: IOPRIO_WHO_PROCESS (1), _PGRP (2) or _USER (3), as
    /// getpriority's PRIO_* plus one.
    pub(super) fn ioprio_get(&self, which: u64, who: u64) -> Result<u64, i64> {
        let which = (which as u32 as u64).wrapping_sub(1);
        self.ctl1(&[ctl::IOPRIO, self.pid as u64, which, who as u32 as u64, u64::MAX])
    }

    /// ioprio_set: the priority checked first (class and level; the
    /// real-time class needs CAP_SYS_NICE or CAP_SYS_ADMIN), then the
    /// processes named. Kept and inherited; the file server's requests
    /// are not ordered by it.
    pub(super) fn ioprio_set(&self, which: u64, who: u64, prio: u64) -> Result<u64, i64> {
        let privileged = [linuxabi::caps::CAP_SYS_NICE, linuxabi::caps::CAP_SYS_ADMIN]
            .iter()
            .any(|&c| self.cred.caps.has(c));
        let prio = sched::ioprio_check(prio as u32 as u64, privileged)?;
        let which = (which as u32 as u64).wrapping_sub(1);
        self.ctl1(&[ctl::IOPRIO, self.pid as u64, which, who as u32 as u64, prio as u64])
    }

    pub(super) fn getpriority(&self, which: u64, who: u64) -> Result<u64, i64> {
        self.ctl1(&[ctl::PRIO_GET, self.pid as u64, which as u32 as u64, who as u32 as u64])
    }

    pub(super) fn setpriority(&self, which: u64, who: u64, nice: u64) -> Result<u64, i64> {
        let nice = sched::clamp_nice(nice as i32 as i64);
        self.ctl1(&[
            ctl::PRIO_SET,
            self.pid as u64,
            which as u32 as u64,
            who as u32 as u64,
            nice as i64 as u64,
        ])
    }
}
