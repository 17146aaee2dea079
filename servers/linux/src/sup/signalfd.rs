//! signalfd: a descriptor that reads the process's pending signals of a
//! set as `struct signalfd_siginfo` records, instead of their delivery.
//! A read takes the lowest pending signals of the set as sigtimedwait
//! does; with none it fails with EAGAIN (O_NONBLOCK) or waits for one
//! (an unblocked signal's handler interrupts the wait, EINTR). poll and
//! select see it readable while one is pending; a poll that waits is not
//! yet woken by a signal arriving later.

use super::fdtable::{self as fdt, Kind, Ofd};
use super::{Hold, Out, Sup, ret};
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::frame::SigInfo;
use linuxabi::signal as sig;

/// `struct signalfd_siginfo`'s length.
const RECORD: u64 = 128;
const SFD_NONBLOCK: u64 = fdt::O_NONBLOCK as u64;
const SFD_CLOEXEC: u64 = 0o2000000;

/// A record for signal `s` taken with its siginfo.
fn record(s: u32, i: &SigInfo) -> [u8; RECORD as usize] {
    let mut b = [0u8; RECORD as usize];
    let mut put32 = |o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
    put32(0, s);
    put32(4, i.errno as u32);
    put32(8, i.code as u32);
    put32(12, i.pid);
    put32(16, i.uid);
    put32(40, i.status as u32);
    put32(44, i.value as u32);
    b[48..56].copy_from_slice(&i.value.to_le_bytes());
    b[72..80].copy_from_slice(&i.addr.to_le_bytes());
    b
}

impl Sup {
    /// signalfd4(fd, mask, sizemask, flags): a new descriptor (fd -1), or
    /// a new set for an existing one.
    pub(super) fn signalfd4(&mut self, rid: u64, fd: u64, at: u64, size: u64, flags: u64) -> Result<u64, i64> {
        if size != 8 || flags & !(SFD_NONBLOCK | SFD_CLOEXEC) != 0 {
            return Err(errno::EINVAL);
        }
        let mask = self.read_u64(rid, at)? & !sig::UNBLOCKABLE;
        if fd as i32 != -1 {
            let o = self.fds.ofd(fd)?;
            let mut d = o.borrow_mut();
            let Kind::SignalFd(m) = &mut d.kind else {
                return Err(errno::EINVAL);
            };
            *m = mask;
            return Ok(fd as i32 as u64);
        }
        let ofd = Ofd::new(
            Kind::SignalFd(mask),
            fdt::O_RDWR | (flags & SFD_NONBLOCK) as u32,
            String::from("anon_inode:[signalfd]"),
        );
        self.fds
            .insert(ofd, flags & SFD_CLOEXEC != 0, self.limit())
            .map(|n| n as u64)
    }

    /// A read of `len` bytes into `buf` from a signalfd of set `mask`.
    pub(super) fn signalfd_read(&mut self, rid: u64, mask: u64, nonblock: bool, buf: u64, len: u64) -> Out {
        if len < RECORD {
            return ret(Err(errno::EINVAL));
        }
        if self.sig.pending_all() & mask == 0 {
            if nonblock {
                return ret(Err(errno::EAGAIN));
            }
            self.held = Some((rid, Hold::SignalRead { mask, buf, len }));
            return Out::Done;
        }
        ret(self.take_records(rid, mask, buf, len))
    }

    /// The pending signals of `mask` as records, as many as fit; a buffer
    /// that cannot be written is EFAULT and takes none.
    fn take_records(&mut self, rid: u64, mask: u64, buf: u64, len: u64) -> Result<u64, i64> {
        let room = (len / RECORD) as usize;
        let n = (0..64)
            .filter(|i| self.sig.pending_all() & mask & (1u64 << i) != 0)
            .count()
            .min(room)
            .max(1);
        self.write_mem(rid, buf, &alloc::vec![0u8; n * RECORD as usize])?;
        let mut out: Vec<u8> = Vec::new();
        while out.len() < room * RECORD as usize {
            let Some(s) = sig::lowest(self.sig.pending_all() & mask) else {
                break;
            };
            let info = self.sig.take(s);
            out.extend_from_slice(&record(s, &info));
        }
        self.write_mem(rid, buf, &out)?;
        Ok(out.len() as u64)
    }

    /// A signal was posted: a read waiting for it ends (as the thread
    /// that reads: its own signals and the process's).
    pub(super) fn signalfd_posted(&mut self) {
        if matches!(self.held, Some((_, Hold::SignalRead { .. }))) {
            self.as_thread(self.threads.held_by, |me| me.signalfd_ready());
        }
    }

    fn signalfd_ready(&mut self) {
        if let Some((rid, Hold::SignalRead { mask, buf, len })) = self.held
            && self.sig.pending_all() & mask != 0
        {
            self.held = None;
            let r = self.take_records(rid, mask, buf, len);
            self.answer(
                rid,
                match r {
                    Ok(v) => v,
                    Err(e) => errno::fail(e),
                },
            );
        }
    }
}
