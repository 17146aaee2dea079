//! Structures programs pass to and get from the kernel, byte for byte as
//! Linux x86_64 lays them out. (`struct stat`, `statfs` and
//! `linux_dirent64` come from the file server already in Linux's layout.)

use alloc::vec::Vec;

/// Little-endian fields written one after another.
#[derive(Default)]
pub struct Out(pub Vec<u8>);

impl Out {
    pub fn with_len(len: usize) -> Out {
        Out(Vec::with_capacity(len))
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.u64(v as u64)
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    /// Zeros up to `len` bytes in all.
    pub fn pad_to(&mut self, len: usize) -> &mut Self {
        if self.0.len() < len {
            self.0.resize(len, 0);
        }
        self
    }
}

/// A little-endian word at `at` of `b` (0 past its end).
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

/// The fields of a `struct stat` the personality looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatView {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

pub const STAT_LEN: usize = 144;

pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;

impl StatView {
    pub fn parse(b: &[u8]) -> StatView {
        StatView {
            dev: u64_at(b, 0),
            ino: u64_at(b, 8),
            nlink: u64_at(b, 16),
            mode: u32_at(b, 24),
            uid: u32_at(b, 28),
            gid: u32_at(b, 32),
            rdev: u64_at(b, 40),
            size: u64_at(b, 48) as i64,
            blksize: u64_at(b, 56) as i64,
            blocks: u64_at(b, 64) as i64,
            atime: (u64_at(b, 72) as i64, u64_at(b, 80) as i64),
            mtime: (u64_at(b, 88) as i64, u64_at(b, 96) as i64),
            ctime: (u64_at(b, 104) as i64, u64_at(b, 112) as i64),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut o = Out::with_len(STAT_LEN);
        o.u64(self.dev).u64(self.ino).u64(self.nlink);
        o.u32(self.mode).u32(self.uid).u32(self.gid).u32(0);
        o.u64(self.rdev).i64(self.size).i64(self.blksize).i64(self.blocks);
        for (s, ns) in [self.atime, self.mtime, self.ctime] {
            o.i64(s).i64(ns);
        }
        o.pad_to(STAT_LEN);
        o.0
    }

    pub fn kind(&self) -> u32 {
        self.mode & S_IFMT
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == S_IFDIR
    }

    /// `struct statx` (256 bytes) for the same file, with the basic fields
    /// (`STATX_BASIC_STATS`) filled.
    pub fn to_statx(&self) -> Vec<u8> {
        const STATX_BASIC_STATS: u32 = 0x7ff;
        let mut o = Out::with_len(256);
        o.u32(STATX_BASIC_STATS).u32(self.blksize as u32).u64(0);
        o.u32(self.nlink as u32)
            .u32(self.uid)
            .u32(self.gid)
            .u16(self.mode as u16)
            .u16(0);
        o.u64(self.ino).u64(self.size as u64).u64(self.blocks as u64).u64(0);
        // atime, btime (unknown: zero), ctime, mtime: (sec, nsec, pad).
        for (s, ns) in [self.atime, (0, 0), self.ctime, self.mtime] {
            o.i64(s).u32(ns as u32).u32(0);
        }
        let (rmaj, rmin) = split_dev(self.rdev);
        let (dmaj, dmin) = split_dev(self.dev);
        o.u32(rmaj).u32(rmin).u32(dmaj).u32(dmin);
        o.pad_to(256);
        o.0
    }
}

/// Linux's device number split into major and minor.
pub fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

pub fn makedev(major: u32, minor: u32) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    ((ma & 0xffff_f000) << 32) | ((ma & 0xfff) << 8) | ((mi & 0xffff_ff00) << 12) | (mi & 0xff)
}

/// `struct utsname`: six fields of 65 bytes.
pub fn utsname(fields: [&str; 6]) -> Vec<u8> {
    let mut o = Out::with_len(390);
    for f in fields {
        let b = f.as_bytes();
        let n = b.len().min(64);
        o.bytes(&b[..n]);
        o.pad_to(o.0.len() + 65 - n);
    }
    o.0
}

/// `struct sysinfo` (112 bytes).
pub struct SysInfo {
    pub uptime: u64,
    pub loads: [u64; 3],
    pub total_ram: u64,
    pub free_ram: u64,
    pub procs: u16,
}

impl SysInfo {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut o = Out::with_len(112);
        o.u64(self.uptime);
        for l in self.loads {
            o.u64(l);
        }
        // totalram, freeram, sharedram, bufferram, totalswap, freeswap.
        o.u64(self.total_ram).u64(self.free_ram).u64(0).u64(0).u64(0).u64(0);
        o.u16(self.procs).u16(0).u32(0);
        // totalhigh, freehigh, mem_unit.
        o.u64(0).u64(0).u32(1);
        o.pad_to(112);
        o.0
    }
}

/// `struct rusage` (144 bytes) with user and system time and the minor
/// faults; the rest zero.
pub fn rusage(utime_ns: u64, stime_ns: u64, minflt: u64) -> Vec<u8> {
    let mut o = Out::with_len(144);
    for ns in [utime_ns, stime_ns] {
        o.u64(ns / 1_000_000_000).u64((ns % 1_000_000_000) / 1000);
    }
    // maxrss, ixrss, idrss, isrss, minflt, ...
    o.u64(0).u64(0).u64(0).u64(0).u64(minflt);
    o.pad_to(144);
    o.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_round_trip_and_statx() {
        let s = StatView {
            dev: makedev(8, 1),
            ino: 12,
            nlink: 2,
            mode: S_IFDIR | 0o755,
            uid: 0,
            gid: 0,
            rdev: 0,
            size: 4096,
            blksize: 4096,
            blocks: 8,
            atime: (1, 2),
            mtime: (3, 4),
            ctime: (5, 6),
        };
        let b = s.to_bytes();
        assert_eq!(b.len(), STAT_LEN);
        assert_eq!(StatView::parse(&b), s);
        assert!(s.is_dir());
        let x = s.to_statx();
        assert_eq!(x.len(), 256);
        assert_eq!(u32_at(&x, 28) as u16 as u32, S_IFDIR | 0o755);
        assert_eq!(u64_at(&x, 32), 12);
        assert_eq!(u64_at(&x, 112), 3);
        assert_eq!(u32_at(&x, 136), 8);
        assert_eq!(u32_at(&x, 140), 1);
    }

    #[test]
    fn device_numbers() {
        assert_eq!(split_dev(makedev(1, 3)), (1, 3));
        assert_eq!(split_dev(makedev(300, 70000)), (300, 70000));
        assert_eq!(makedev(1, 3), 0x103);
    }

    #[test]
    fn sizes() {
        assert_eq!(utsname(["Linux", "(none)", "6.1", "#1", "x86_64", "(none)"]).len(), 390);
        let si = SysInfo {
            uptime: 1,
            loads: [0; 3],
            total_ram: 1,
            free_ram: 1,
            procs: 1,
        };
        assert_eq!(si.to_bytes().len(), 112);
        assert_eq!(rusage(1_500_000_000, 0, 7).len(), 144);
        assert_eq!(u64_at(&rusage(1_500_000_000, 0, 7), 8), 500_000);
    }
}
