//! The clock's NTP parameters as `adjtimex` reads and sets them: the
//! validation Linux does before a change, the change itself, and the
//! `struct timex` the call answers with. The parameters are kept and
//! reported; Tessera's clock is not steered by them (its rate is the
//! machine's), and shifting the clock (`ADJ_SETOFFSET`) is refused, as
//! setting it is.

use crate::errno;

pub const ADJ_OFFSET: u32 = 0x0001;
pub const ADJ_FREQUENCY: u32 = 0x0002;
pub const ADJ_MAXERROR: u32 = 0x0004;
pub const ADJ_ESTERROR: u32 = 0x0008;
pub const ADJ_STATUS: u32 = 0x0010;
pub const ADJ_TIMECONST: u32 = 0x0020;
pub const ADJ_TAI: u32 = 0x0080;
pub const ADJ_SETOFFSET: u32 = 0x0100;
pub const ADJ_MICRO: u32 = 0x1000;
pub const ADJ_NANO: u32 = 0x2000;
pub const ADJ_TICK: u32 = 0x4000;
/// The old `adjtime`: with ADJ_OFFSET (`ADJ_OFFSET_SINGLESHOT`), and
/// ADJ_NANO for only reading (`ADJ_OFFSET_SS_READ`).
pub const ADJ_ADJTIME: u32 = 0x8000;

pub const STA_PLL: i64 = 0x0001;
pub const STA_UNSYNC: i64 = 0x0040;
pub const STA_CLOCKERR: i64 = 0x1000;
pub const STA_NANO: i64 = 0x2000;
/// Status bits a caller cannot set (the PPS signal's and the clock's).
const STA_RONLY: i64 = 0xff00;

/// CLOCK_REALTIME at boot, in seconds (the machine has no clock of the
/// date).
pub const EPOCH_AT_BOOT: u64 = crate::ptimer::EPOCH_AT_BOOT;

pub const TIME_OK: u64 = 0;
pub const TIME_ERROR: u64 = 5;

/// USER_HZ: `tick` is microseconds per 1/100 s.
const USER_HZ: i64 = 100;
/// The largest phase error (ns) and frequency error (ppm << 16).
const MAXPHASE: i64 = 500_000_000;
const MAXFREQ_SCALED: i64 = 500 << 16;
/// maxerror and esterror are at most this many microseconds.
const NTP_PHASE_LIMIT: i64 = (MAXPHASE / 1000) << 5;
const MAXTC: i64 = 10;

/// The length of `struct timex`.
pub const TIMEX_LEN: usize = 208;

/// What a caller asks: the fields of its `struct timex` a change reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    pub modes: u32,
    pub offset: i64,
    pub freq: i64,
    pub maxerror: i64,
    pub esterror: i64,
    pub status: i64,
    pub constant: i64,
    pub tick: i64,
    pub time: (i64, i64),
}

impl Request {
    pub fn parse(b: &[u8]) -> Request {
        let q = |o: usize| i64::from_le_bytes(b.get(o..o + 8).and_then(|s| s.try_into().ok()).unwrap_or([0; 8]));
        Request {
            modes: q(0) as u32,
            offset: q(8),
            freq: q(16),
            maxerror: q(24),
            esterror: q(32),
            status: q(40) as i32 as i64,
            constant: q(48),
            time: (q(72), q(80)),
            tick: q(88),
        }
    }

    /// Linux's checks before anything changes: EINVAL for a malformed
    /// request, EPERM for a change by a caller without CAP_SYS_TIME.
    pub fn validate(&self, privileged: bool) -> Result<(), i64> {
        let m = self.modes;
        if m & ADJ_ADJTIME != 0 {
            // The old adjtime: an offset, nothing else.
            if m & ADJ_OFFSET == 0 {
                return Err(errno::EINVAL);
            }
            if m & ADJ_NANO == 0 && !privileged {
                return Err(errno::EPERM);
            }
        } else {
            if m != 0 && !privileged {
                return Err(errno::EPERM);
            }
            if m & ADJ_TICK != 0 && !(900_000 / USER_HZ..=1_100_000 / USER_HZ).contains(&self.tick) {
                return Err(errno::EINVAL);
            }
        }
        if m & ADJ_SETOFFSET != 0 {
            if !privileged {
                return Err(errno::EPERM);
            }
            let limit = if m & ADJ_NANO != 0 { 1_000_000_000 } else { 1_000_000 };
            if !(0..limit).contains(&self.time.1) {
                return Err(errno::EINVAL);
            }
        }
        if m & ADJ_FREQUENCY != 0 && self.freq.checked_mul(1 << 16).is_none() {
            return Err(errno::EINVAL);
        }
        Ok(())
    }
}

/// The system's parameters (one set, kept by the shared server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ntp {
    /// Phase offset in ns (reported in µs unless STA_NANO).
    pub offset: i64,
    /// Frequency offset, ppm << 16.
    pub freq: i64,
    pub maxerror: i64,
    pub esterror: i64,
    pub status: i64,
    pub constant: i64,
    pub tick: i64,
    pub tai: i64,
    /// What is left of an old-style adjtime, in µs.
    pub adjust: i64,
}

impl Default for Ntp {
    /// As Linux boots: unsynchronised, the largest errors.
    fn default() -> Ntp {
        Ntp {
            offset: 0,
            freq: 0,
            maxerror: NTP_PHASE_LIMIT,
            esterror: NTP_PHASE_LIMIT,
            status: STA_UNSYNC,
            constant: 2,
            tick: 1_000_000 / USER_HZ,
            tai: 0,
            adjust: 0,
        }
    }
}

impl Ntp {
    pub const WORDS: usize = 9;

    pub fn to_words(&self) -> [u64; Self::WORDS] {
        [
            self.offset,
            self.freq,
            self.maxerror,
            self.esterror,
            self.status,
            self.constant,
            self.tick,
            self.tai,
            self.adjust,
        ]
        .map(|v| v as u64)
    }

    pub fn from_words(w: &[u64]) -> Ntp {
        let v = |i: usize| w.get(i).copied().unwrap_or(0) as i64;
        Ntp {
            offset: v(0),
            freq: v(1),
            maxerror: v(2),
            esterror: v(3),
            status: v(4),
            constant: v(5),
            tick: v(6),
            tai: v(7),
            adjust: v(8),
        }
    }

    /// A validated request applied. Returns the offset the caller is
    /// told when it is not the phase offset: an old-style adjtime's
    /// remaining adjustment, as it was before the call.
    pub fn apply(&mut self, r: &Request) -> Option<i64> {
        let m = r.modes;
        if m & ADJ_ADJTIME != 0 {
            let old = self.adjust;
            if m & ADJ_NANO == 0 {
                self.adjust = r.offset.clamp(-(MAXPHASE / 1000), MAXPHASE / 1000);
            }
            return Some(old);
        }
        if m & ADJ_STATUS != 0 {
            self.status = (self.status & STA_RONLY) | (r.status & !STA_RONLY);
        }
        if m & ADJ_NANO != 0 {
            self.status |= STA_NANO;
        }
        if m & ADJ_MICRO != 0 {
            self.status &= !STA_NANO;
        }
        if m & ADJ_FREQUENCY != 0 {
            self.freq = r.freq.clamp(-MAXFREQ_SCALED, MAXFREQ_SCALED);
        }
        if m & ADJ_MAXERROR != 0 {
            self.maxerror = r.maxerror.min(NTP_PHASE_LIMIT);
        }
        if m & ADJ_ESTERROR != 0 {
            self.esterror = r.esterror.min(NTP_PHASE_LIMIT);
        }
        if m & ADJ_TIMECONST != 0 {
            let c = if self.status & STA_NANO == 0 {
                r.constant.saturating_add(4)
            } else {
                r.constant
            };
            self.constant = c.clamp(0, MAXTC);
        }
        if m & ADJ_TAI != 0 && r.constant >= 0 {
            self.tai = r.constant;
        }
        if m & ADJ_OFFSET != 0 && self.status & STA_PLL != 0 {
            let ns = if self.status & STA_NANO != 0 {
                r.offset
            } else {
                r.offset.saturating_mul(1000)
            };
            self.offset = ns.clamp(-MAXPHASE, MAXPHASE);
        }
        if m & ADJ_TICK != 0 {
            self.tick = r.tick;
        }
        None
    }

    /// The call's value: the clock's state.
    pub fn state(&self) -> u64 {
        if self.status & (STA_UNSYNC | STA_CLOCKERR) != 0 {
            TIME_ERROR
        } else {
            TIME_OK
        }
    }

    /// The `struct timex` the caller gets back: its modes as given, the
    /// parameters, and the time now (`now_ns` since the epoch).
    pub fn timex(&self, modes: u32, told_offset: Option<i64>, now_ns: u64) -> [u8; TIMEX_LEN] {
        let nano = self.status & STA_NANO != 0;
        let offset = told_offset.unwrap_or(if nano { self.offset } else { self.offset / 1000 });
        let sub = if nano {
            now_ns % 1_000_000_000
        } else {
            now_ns % 1_000_000_000 / 1000
        };
        let mut b = [0u8; TIMEX_LEN];
        let mut put = |o: usize, v: i64| b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        put(0, modes as i64);
        put(8, offset);
        put(16, self.freq);
        put(24, self.maxerror);
        put(32, self.esterror);
        put(40, self.status & 0xffff_ffff);
        put(48, self.constant);
        // precision (µs) and tolerance (ppm << 16)
        put(56, 1);
        put(64, MAXFREQ_SCALED);
        put(72, (now_ns / 1_000_000_000) as i64);
        put(80, sub as i64);
        put(88, self.tick);
        b[160..164].copy_from_slice(&(self.tai as i32).to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(modes: u32) -> Request {
        Request {
            modes,
            tick: 10_000,
            ..Request::default()
        }
    }

    #[test]
    fn reading_needs_no_privilege() {
        assert_eq!(req(0).validate(false), Ok(()));
        assert_eq!(req(ADJ_ADJTIME | ADJ_OFFSET | ADJ_NANO).validate(false), Ok(()));
        assert_eq!(req(ADJ_TICK).validate(false), Err(errno::EPERM));
        assert_eq!(req(ADJ_ADJTIME | ADJ_OFFSET).validate(false), Err(errno::EPERM));
    }

    #[test]
    fn malformed_requests_are_einval() {
        assert_eq!(req(ADJ_ADJTIME).validate(true), Err(errno::EINVAL));
        let mut r = req(ADJ_TICK);
        r.tick = 8_999;
        assert_eq!(r.validate(true), Err(errno::EINVAL));
        r.tick = 11_001;
        assert_eq!(r.validate(true), Err(errno::EINVAL));
        r.tick = 11_000;
        assert_eq!(r.validate(true), Ok(()));
        let mut f = req(ADJ_FREQUENCY);
        f.freq = i64::MAX / 2;
        assert_eq!(f.validate(true), Err(errno::EINVAL));
    }

    #[test]
    fn a_change_is_kept_and_clamped() {
        let mut n = Ntp::default();
        assert_eq!(n.state(), TIME_ERROR);
        let mut r = req(ADJ_STATUS | ADJ_MAXERROR | ADJ_TIMECONST | ADJ_FREQUENCY | ADJ_TICK);
        r.status = STA_PLL | STA_CLOCKERR;
        r.maxerror = i64::MAX;
        r.constant = 3;
        r.freq = 1 << 40;
        r.tick = 10_001;
        assert_eq!(n.apply(&r), None);
        assert_eq!(n.status, STA_PLL, "read-only bits are not set");
        assert_eq!(n.maxerror, NTP_PHASE_LIMIT);
        assert_eq!(n.constant, 7);
        assert_eq!(n.freq, MAXFREQ_SCALED);
        assert_eq!(n.tick, 10_001);
        assert_eq!(n.state(), TIME_OK);
        let b = n.timex(r.modes, None, 1_500_000_000);
        assert_eq!(Ntp::from_words(&n.to_words()), n);
        assert_eq!(i64::from_le_bytes(b[72..80].try_into().unwrap()), 1);
        assert_eq!(i64::from_le_bytes(b[80..88].try_into().unwrap()), 500_000);
    }

    #[test]
    fn singleshot_answers_the_old_adjustment() {
        let mut n = Ntp::default();
        let mut r = req(ADJ_ADJTIME | ADJ_OFFSET);
        r.offset = 1234;
        assert_eq!(n.apply(&r), Some(0));
        r.modes |= ADJ_NANO;
        assert_eq!(n.apply(&r), Some(1234));
        assert_eq!(n.adjust, 1234, "only read");
    }
}
