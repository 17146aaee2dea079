//! adjtimex: the clock's NTP parameters, read by anyone and changed by
//! root (`linuxabi::ntp`); the shared server keeps the one set.

use super::Sup;
use crate::proto::ctl;
use linuxabi::errno;
use linuxabi::ntp::{self, Ntp, Request};
use tessera_rt::sys;

impl Sup {
    pub(super) fn adjtimex(&mut self, rid: u64, at: u64) -> Result<u64, i64> {
        let r = Request::parse(&self.read_mem(rid, at, ntp::TIMEX_LEN)?);
        r.validate(self.cred.euid == 0)?;
        // The clock itself is not set (clock_settime cannot either).
        if r.modes & ntp::ADJ_ADJTIME == 0 && r.modes & ntp::ADJ_SETOFFSET != 0 {
            return Err(errno::EINVAL);
        }
        let mut m = alloc::vec![ctl::NTP];
        if r.modes != 0 {
            m.extend([
                r.modes as u64,
                r.offset as u64,
                r.freq as u64,
                r.maxerror as u64,
                r.esterror as u64,
                r.status as u64,
                r.constant as u64,
                r.tick as u64,
            ]);
        }
        let w = self.ctl(&m);
        if w.len() < 2 + Ntp::WORDS {
            return Err(errno::EIO);
        }
        let told = (w[0] != 0).then_some(w[1] as i64);
        let state = Ntp::from_words(&w[2..]);
        let now = sys::now_ns() + ntp::EPOCH_AT_BOOT * 1_000_000_000;
        self.write_mem(rid, at, &state.timex(r.modes, told, now))?;
        Ok(state.state())
    }
}
