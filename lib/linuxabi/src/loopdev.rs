//! Linux's loop block devices (`drivers/block/loop.c`): `/dev/loopN`, a
//! block device whose bytes are a file's, and `/dev/loop-control`, which
//! hands out free ones. The ioctl numbers, `struct loop_info`,
//! `struct loop_info64` and `struct loop_config` byte for byte, and the
//! table of devices with Linux 6.1's rules: which calls a bound or free
//! device accepts, what a detach does while the device is open elsewhere
//! (it becomes automatic at the last close), how big the device is.
//!
//! The table holds, for a bound device, the number its keeper (the
//! personality's shared server) has for the backing file; opening,
//! reading and writing that file is the keeper's business.

use crate::errno;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// The loop driver's block major and `/dev/loop-control`'s misc minor.
pub const LOOP_MAJOR: u32 = 7;
pub const MISC_MAJOR: u32 = 10;
pub const LOOP_CTRL_MINOR: u32 = 237;
/// Devices made at start (Linux's `CONFIG_BLK_DEV_LOOP_MIN_COUNT`).
pub const BOOT_COUNT: u32 = 8;
/// Devices at most (Linux allows a million minors; a bound keeps the
/// table small).
pub const MAX_DEVICES: u32 = 1024;

pub const LOOP_SET_FD: u64 = 0x4C00;
pub const LOOP_CLR_FD: u64 = 0x4C01;
pub const LOOP_SET_STATUS: u64 = 0x4C02;
pub const LOOP_GET_STATUS: u64 = 0x4C03;
pub const LOOP_SET_STATUS64: u64 = 0x4C04;
pub const LOOP_GET_STATUS64: u64 = 0x4C05;
pub const LOOP_CHANGE_FD: u64 = 0x4C06;
pub const LOOP_SET_CAPACITY: u64 = 0x4C07;
pub const LOOP_SET_DIRECT_IO: u64 = 0x4C08;
pub const LOOP_SET_BLOCK_SIZE: u64 = 0x4C09;
pub const LOOP_CONFIGURE: u64 = 0x4C0A;
pub const LOOP_CTL_ADD: u64 = 0x4C80;
pub const LOOP_CTL_REMOVE: u64 = 0x4C81;
pub const LOOP_CTL_GET_FREE: u64 = 0x4C82;

/// The generic block device ioctls a loop device answers.
pub const BLKROSET: u64 = 0x125d;
pub const BLKRASET: u64 = 0x1262;
pub const BLKRAGET: u64 = 0x1263;
pub const BLKROGET: u64 = 0x125e;
pub const BLKRRPART: u64 = 0x125f;
pub const BLKGETSIZE: u64 = 0x1260;
pub const BLKFLSBUF: u64 = 0x1261;
pub const BLKSSZGET: u64 = 0x1268;
pub const BLKIOMIN: u64 = 0x1278;
pub const BLKIOOPT: u64 = 0x1279;
pub const BLKALIGNOFF: u64 = 0x127a;
pub const BLKPBSZGET: u64 = 0x127b;
pub const BLKBSZGET: u64 = 0x8008_1270;
pub const BLKBSZSET: u64 = 0x4008_1271;
pub const BLKGETSIZE64: u64 = 0x8008_1272;

pub const LO_FLAGS_READ_ONLY: u32 = 1;
pub const LO_FLAGS_AUTOCLEAR: u32 = 4;
pub const LO_FLAGS_PARTSCAN: u32 = 8;
pub const LO_FLAGS_DIRECT_IO: u32 = 16;
/// What LOOP_SET_STATUS may set and clear, and LOOP_CONFIGURE set.
pub const SET_STATUS_SETTABLE: u32 = LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
pub const SET_STATUS_CLEARABLE: u32 = LO_FLAGS_AUTOCLEAR;
pub const CONFIGURE_SETTABLE: u32 = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN | LO_FLAGS_DIRECT_IO;

pub const NAME_LEN: usize = 64;
pub const INFO64_LEN: usize = 232;
pub const INFO_LEN: usize = 168;
pub const CONFIG_LEN: usize = 304;

/// A bound device's state: `struct loop_info64` less what the table
/// knows itself (its number), plus the device's size and the backing
/// file's number with the keeper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The backing file's `st_dev` and `st_ino`.
    pub device: u64,
    pub inode: u64,
    pub offset: u64,
    pub sizelimit: u64,
    pub flags: u32,
    pub file_name: [u8; NAME_LEN],
    pub crypt_name: [u8; NAME_LEN],
    /// The logical block size (LOOP_SET_BLOCK_SIZE).
    pub block_size: u32,
    /// The backing file's path (sysfs's `loop/backing_file`).
    pub backing_path: Vec<u8>,
}

impl Default for Status {
    fn default() -> Status {
        Status {
            device: 0,
            inode: 0,
            offset: 0,
            sizelimit: 0,
            flags: 0,
            file_name: [0; NAME_LEN],
            crypt_name: [0; NAME_LEN],
            block_size: 512,
            backing_path: Vec::new(),
        }
    }
}

impl Status {
    /// `struct loop_info64` of device `number`.
    pub fn to_info64(&self, number: u32) -> [u8; INFO64_LEN] {
        let mut b = [0u8; INFO64_LEN];
        b[0..8].copy_from_slice(&self.device.to_le_bytes());
        b[8..16].copy_from_slice(&self.inode.to_le_bytes());
        b[24..32].copy_from_slice(&self.offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.sizelimit.to_le_bytes());
        b[40..44].copy_from_slice(&number.to_le_bytes());
        b[52..56].copy_from_slice(&self.flags.to_le_bytes());
        b[56..120].copy_from_slice(&self.file_name);
        b[120..184].copy_from_slice(&self.crypt_name);
        b
    }

    /// The old `struct loop_info` (LOOP_GET_STATUS): EOVERFLOW when the
    /// offset does not fit its `int` (its device numbers are `unsigned
    /// long` on x86_64).
    pub fn to_info(&self, number: u32) -> Result<[u8; INFO_LEN], i64> {
        if self.offset > i32::MAX as u64 {
            return Err(errno::EOVERFLOW);
        }
        let mut b = [0u8; INFO_LEN];
        b[0..4].copy_from_slice(&number.to_le_bytes());
        b[8..16].copy_from_slice(&self.device.to_le_bytes());
        b[16..24].copy_from_slice(&self.inode.to_le_bytes());
        b[32..36].copy_from_slice(&(self.offset as u32).to_le_bytes());
        b[44..48].copy_from_slice(&self.flags.to_le_bytes());
        b[48..112].copy_from_slice(&self.file_name);
        Ok(b)
    }
}

/// What LOOP_SET_STATUS(64) asks for: the fields a caller may change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusRequest {
    pub offset: u64,
    pub sizelimit: u64,
    pub flags: u32,
    pub encrypt_type: u32,
    pub encrypt_key_size: u32,
    pub file_name: [u8; NAME_LEN],
    pub crypt_name: [u8; NAME_LEN],
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn name_at(b: &[u8], at: usize) -> [u8; NAME_LEN] {
    let mut n = [0u8; NAME_LEN];
    n.copy_from_slice(&b[at..at + NAME_LEN]);
    // Linux keeps the last byte a terminator.
    n[NAME_LEN - 1] = 0;
    n
}

impl StatusRequest {
    /// From `struct loop_info64`'s bytes.
    pub fn from_info64(b: &[u8; INFO64_LEN]) -> StatusRequest {
        StatusRequest {
            offset: u64_at(b, 24),
            sizelimit: u64_at(b, 32),
            encrypt_type: u32_at(b, 44),
            encrypt_key_size: u32_at(b, 48),
            flags: u32_at(b, 52),
            file_name: name_at(b, 56),
            crypt_name: name_at(b, 120),
        }
    }

    /// From the old `struct loop_info`'s bytes (its offset is a signed
    /// int; it has no size limit and one name).
    pub fn from_info(b: &[u8; INFO_LEN]) -> StatusRequest {
        StatusRequest {
            offset: u32_at(b, 32) as i32 as i64 as u64,
            sizelimit: 0,
            encrypt_type: u32_at(b, 36),
            encrypt_key_size: u32_at(b, 40),
            flags: u32_at(b, 44),
            file_name: name_at(b, 48),
            crypt_name: [0; NAME_LEN],
        }
    }
}

/// LOOP_CONFIGURE's `struct loop_config`: the file's descriptor, the
/// block size (0: 512) and the status to start with.
pub struct Config {
    pub fd: u32,
    pub block_size: u32,
    pub status: StatusRequest,
}

impl Config {
    pub fn parse(b: &[u8; CONFIG_LEN]) -> Result<Config, i64> {
        // The reserved words must be zero (room for later fields).
        if b[240..].iter().any(|&x| x != 0) {
            return Err(errno::EINVAL);
        }
        let mut info = [0u8; INFO64_LEN];
        info.copy_from_slice(&b[8..8 + INFO64_LEN]);
        Ok(Config {
            fd: u32_at(b, 0),
            block_size: u32_at(b, 4),
            status: StatusRequest::from_info64(&info),
        })
    }
}

/// Whether `size` is a logical block size a loop device takes.
pub fn valid_block_size(size: u64) -> bool {
    (512..=4096).contains(&size) && size.is_power_of_two()
}

/// The device's size in bytes: the backing file's from the offset, at
/// most the size limit, in whole 512-byte sectors.
pub fn device_size(file_size: u64, offset: u64, sizelimit: u64) -> u64 {
    let mut n = file_size.saturating_sub(offset);
    if sizelimit != 0 && sizelimit < n {
        n = sizelimit;
    }
    n & !511
}

/// A device's read-ahead at start, in sectors (Linux's 128 KiB).
pub const READ_AHEAD: u64 = 256;

/// One device of the table.
#[derive(Clone, Debug)]
pub struct Device {
    /// Bound: the backing file (the keeper's number for it) and the state.
    pub bound: Option<(u32, Status)>,
    /// Its size in bytes while bound.
    pub size: u64,
    /// Open descriptions of it (Linux's `disk_openers`).
    pub openers: u32,
    /// The block device's own settings (BLKRASET, BLKROSET), which a
    /// bind leaves as they are: the read-ahead in sectors, kept in whole
    /// pages as Linux keeps it (the backing file's cache reads ahead by
    /// its own rule), and read-only.
    pub read_ahead: u64,
    pub read_only: bool,
}

impl Default for Device {
    fn default() -> Device {
        Device {
            bound: None,
            size: 0,
            openers: 0,
            read_ahead: READ_AHEAD,
            read_only: false,
        }
    }
}

/// What a detach left to the keeper: a backing file to close.
pub type Released = Option<u32>;

/// Every loop device, by number.
#[derive(Debug)]
pub struct Table {
    devs: BTreeMap<u32, Device>,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            devs: (0..BOOT_COUNT).map(|n| (n, Device::default())).collect(),
        }
    }
}

impl Table {
    pub fn get(&self, n: u32) -> Option<&Device> {
        self.devs.get(&n)
    }

    /// The numbers of the devices there are (`/dev`'s listing).
    pub fn numbers(&self) -> Vec<u32> {
        self.devs.keys().copied().collect()
    }

    /// LOOP_CTL_GET_FREE: the first unbound device, made if none is.
    pub fn get_free(&mut self) -> Result<u32, i64> {
        if let Some((&n, _)) = self.devs.iter().find(|(_, d)| d.bound.is_none()) {
            return Ok(n);
        }
        let n = (0..MAX_DEVICES)
            .find(|n| !self.devs.contains_key(n))
            .ok_or(errno::ENOSPC)?;
        self.devs.insert(n, Device::default());
        Ok(n)
    }

    /// LOOP_CTL_ADD: device `n`, new (-1: the first free number).
    pub fn add(&mut self, n: i64) -> Result<u32, i64> {
        let n = if n < 0 {
            (0..MAX_DEVICES)
                .find(|n| !self.devs.contains_key(n))
                .ok_or(errno::ENOSPC)?
        } else if n >= MAX_DEVICES as i64 {
            return Err(errno::EINVAL);
        } else {
            n as u32
        };
        if self.devs.contains_key(&n) {
            return Err(errno::EEXIST);
        }
        self.devs.insert(n, Device::default());
        Ok(n)
    }

    /// LOOP_CTL_REMOVE: a device neither bound nor open goes.
    pub fn remove(&mut self, n: i64) -> Result<u32, i64> {
        let key = u32::try_from(n).map_err(|_| errno::EINVAL)?;
        let d = self.devs.get(&key).ok_or(errno::ENODEV)?;
        if d.bound.is_some() || d.openers > 0 {
            return Err(errno::EBUSY);
        }
        self.devs.remove(&key);
        Ok(0)
    }

    pub fn open(&mut self, n: u32) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        d.openers += 1;
        Ok(())
    }

    /// The last close of a device set to clear itself detaches it.
    pub fn close(&mut self, n: u32) -> Released {
        let d = self.devs.get_mut(&n)?;
        d.openers = d.openers.saturating_sub(1);
        let auto = d.bound.as_ref().is_some_and(|(_, s)| s.flags & LO_FLAGS_AUTOCLEAR != 0);
        if d.openers == 0 && auto {
            d.size = 0;
            return d.bound.take().map(|(f, _)| f);
        }
        None
    }

    /// LOOP_SET_FD / LOOP_CONFIGURE: binds device `n` to backing file
    /// `file` (the keeper's number), `file_size` bytes long.
    pub fn bind(&mut self, n: u32, file: u32, status: Status, file_size: u64) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        if d.bound.is_some() {
            return Err(errno::EBUSY);
        }
        d.size = device_size(file_size, status.offset, status.sizelimit);
        d.bound = Some((file, status));
        Ok(())
    }

    /// LOOP_CLR_FD: while another description has the device open, the
    /// detach waits for the last close (Linux sets autoclear).
    pub fn clear(&mut self, n: u32) -> Result<Released, i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        let (_, s) = d.bound.as_mut().ok_or(errno::ENXIO)?;
        if d.openers > 1 {
            s.flags |= LO_FLAGS_AUTOCLEAR;
            return Ok(None);
        }
        d.size = 0;
        Ok(d.bound.take().map(|(f, _)| f))
    }

    pub fn status(&self, n: u32) -> Result<(u32, &Status, u64), i64> {
        let d = self.devs.get(&n).ok_or(errno::ENXIO)?;
        let (f, s) = d.bound.as_ref().ok_or(errno::ENXIO)?;
        Ok((*f, s, d.size))
    }

    /// LOOP_SET_STATUS(64): offset, limit, names and the flags a caller
    /// may change; the size is recomputed from the file's.
    pub fn set_status(&mut self, n: u32, r: &StatusRequest, file_size: u64) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        let (_, s) = d.bound.as_mut().ok_or(errno::ENXIO)?;
        // Only "no cipher" is left in Linux (its cryptoloop is gone).
        if r.encrypt_type != 0 || r.encrypt_key_size != 0 {
            return Err(errno::EINVAL);
        }
        s.offset = r.offset;
        s.sizelimit = r.sizelimit;
        s.file_name = r.file_name;
        s.crypt_name = r.crypt_name;
        s.flags = (s.flags & !SET_STATUS_CLEARABLE) | (r.flags & SET_STATUS_SETTABLE);
        d.size = device_size(file_size, s.offset, s.sizelimit);
        Ok(())
    }

    /// LOOP_SET_CAPACITY: the file's size taken again.
    pub fn set_capacity(&mut self, n: u32, file_size: u64) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        let (_, s) = d.bound.as_ref().ok_or(errno::ENXIO)?;
        d.size = device_size(file_size, s.offset, s.sizelimit);
        Ok(())
    }

    pub fn set_block_size(&mut self, n: u32, size: u64) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        let (_, s) = d.bound.as_mut().ok_or(errno::ENXIO)?;
        if !valid_block_size(size) {
            return Err(errno::EINVAL);
        }
        s.block_size = size as u32;
        Ok(())
    }

    /// BLKRASET (sectors; Linux keeps whole pages) and BLKROSET.
    pub fn set_read_ahead(&mut self, n: u32, sectors: u64) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        d.read_ahead = sectors / 8 * 8;
        Ok(())
    }

    pub fn set_read_only(&mut self, n: u32, ro: bool) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        d.read_only = ro;
        Ok(())
    }

    /// Whether writes are refused: the device's own flag or the bind's.
    pub fn writes_refused(&self, n: u32) -> bool {
        self.devs
            .get(&n)
            .is_some_and(|d| d.read_only || d.bound.as_ref().is_some_and(|(_, s)| s.flags & LO_FLAGS_READ_ONLY != 0))
    }

    /// LOOP_SET_DIRECT_IO: taken (the backing file's reads go through
    /// the file server either way), recorded in the flags.
    pub fn set_direct_io(&mut self, n: u32, on: bool) -> Result<(), i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        let (_, s) = d.bound.as_mut().ok_or(errno::ENXIO)?;
        if on {
            s.flags |= LO_FLAGS_DIRECT_IO;
        } else {
            s.flags &= !LO_FLAGS_DIRECT_IO;
        }
        Ok(())
    }

    /// LOOP_CHANGE_FD: only a read-only device may change its file, and
    /// only for one of the same size (Linux's rule: the contents must
    /// not seem to change under a mounted file system).
    pub fn change_fd(&mut self, n: u32, file: u32, status: Status, file_size: u64) -> Result<Released, i64> {
        let d = self.devs.get_mut(&n).ok_or(errno::ENXIO)?;
        let (old, s) = d.bound.as_ref().ok_or(errno::ENXIO)?;
        if s.flags & LO_FLAGS_READ_ONLY == 0 {
            return Err(errno::EINVAL);
        }
        if device_size(file_size, s.offset, s.sizelimit) != d.size {
            return Err(errno::EINVAL);
        }
        let old = *old;
        let mut s = s.clone();
        s.device = status.device;
        s.inode = status.inode;
        s.file_name = status.file_name;
        s.backing_path = status.backing_path;
        d.bound = Some((file, s));
        Ok(Some(old))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(flags: u32) -> Status {
        Status {
            flags,
            ..Status::default()
        }
    }

    #[test]
    fn free_devices_are_handed_out_and_made_when_all_are_bound() {
        let mut t = Table::default();
        assert_eq!(t.numbers().len(), BOOT_COUNT as usize);
        for n in 0..BOOT_COUNT {
            assert_eq!(t.get_free(), Ok(n));
            t.bind(n, n, st(0), 4096).unwrap();
        }
        assert_eq!(t.get_free(), Ok(BOOT_COUNT));
        assert_eq!(t.add(3), Err(errno::EEXIST));
        assert_eq!(t.add(-1), Ok(BOOT_COUNT + 1));
        assert_eq!(t.add(MAX_DEVICES as i64), Err(errno::EINVAL));
        assert_eq!(t.remove(0), Err(errno::EBUSY));
        assert_eq!(t.remove(5000), Err(errno::ENODEV));
        assert_eq!(t.remove(-1), Err(errno::EINVAL));
        assert_eq!(t.remove(BOOT_COUNT as i64), Ok(0));
        assert_eq!(t.open(BOOT_COUNT), Err(errno::ENXIO));
    }

    #[test]
    fn a_bound_device_is_busy_and_a_free_one_has_no_status() {
        let mut t = Table::default();
        assert_eq!(t.status(0).err(), Some(errno::ENXIO));
        assert_eq!(t.clear(0), Err(errno::ENXIO));
        t.bind(0, 7, st(0), 10 * 1024 * 1024 + 100).unwrap();
        assert_eq!(t.bind(0, 8, st(0), 1), Err(errno::EBUSY));
        let (f, _, size) = t.status(0).unwrap();
        assert_eq!((f, size), (7, 10 * 1024 * 1024));
        assert_eq!(t.clear(0), Ok(Some(7)));
        assert_eq!(t.clear(0), Err(errno::ENXIO));
    }

    #[test]
    fn a_detach_while_open_elsewhere_waits_for_the_last_close() {
        let mut t = Table::default();
        t.bind(1, 9, st(0), 1 << 20).unwrap();
        t.open(1).unwrap();
        t.open(1).unwrap();
        assert_eq!(t.clear(1), Ok(None));
        assert!(t.status(1).unwrap().1.flags & LO_FLAGS_AUTOCLEAR != 0);
        assert_eq!(t.close(1), None);
        assert_eq!(t.close(1), Some(9));
        assert_eq!(t.status(1).err(), Some(errno::ENXIO));
    }

    #[test]
    fn status_changes_only_what_linux_lets_change() {
        let mut t = Table::default();
        t.bind(2, 1, st(LO_FLAGS_READ_ONLY), 1 << 20).unwrap();
        let mut r = StatusRequest {
            offset: 4096,
            sizelimit: 8192 + 100,
            flags: LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO,
            encrypt_type: 0,
            encrypt_key_size: 0,
            file_name: [b'f'; NAME_LEN],
            crypt_name: [0; NAME_LEN],
        };
        t.set_status(2, &r, 1 << 20).unwrap();
        let (_, s, size) = t.status(2).unwrap();
        assert_eq!(s.flags, LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR);
        assert_eq!(size, 8192);
        r.flags = 0;
        t.set_status(2, &r, 1 << 20).unwrap();
        assert_eq!(t.status(2).unwrap().1.flags, LO_FLAGS_READ_ONLY);
        r.encrypt_type = 1;
        assert_eq!(t.set_status(2, &r, 1 << 20), Err(errno::EINVAL));
        assert_eq!(t.set_block_size(2, 1000), Err(errno::EINVAL));
        assert_eq!(t.set_block_size(2, 1024), Ok(()));
        assert_eq!(t.set_block_size(3, 1024), Err(errno::ENXIO));
    }

    #[test]
    fn only_a_read_only_device_changes_its_file_and_only_for_one_as_big() {
        let mut t = Table::default();
        t.bind(0, 1, st(0), 1 << 20).unwrap();
        assert_eq!(t.change_fd(0, 2, st(0), 1 << 20), Err(errno::EINVAL));
        t.bind(1, 3, st(LO_FLAGS_READ_ONLY), 1 << 20).unwrap();
        assert_eq!(t.change_fd(1, 4, st(0), 1 << 19), Err(errno::EINVAL));
        assert_eq!(t.change_fd(1, 4, st(0), 1 << 20), Ok(Some(3)));
        assert_eq!(t.status(1).unwrap().0, 4);
    }

    #[test]
    fn info_structures_are_linux_s_bytes() {
        let s = Status {
            device: crate::structs::makedev(8, 1),
            inode: 12,
            offset: 512,
            sizelimit: 0,
            flags: LO_FLAGS_AUTOCLEAR,
            file_name: name_at(&[b'x'; NAME_LEN], 0),
            ..Status::default()
        };
        let b = s.to_info64(3);
        assert_eq!(u64_at(&b, 8), 12);
        assert_eq!(u32_at(&b, 40), 3);
        assert_eq!(b[56], b'x');
        assert_eq!(b[119], 0);
        let r = StatusRequest::from_info64(&b);
        assert_eq!((r.offset, r.flags), (512, LO_FLAGS_AUTOCLEAR));
        let old = s.to_info(3).unwrap();
        assert_eq!(u64_at(&old, 8), crate::structs::makedev(8, 1));
        assert_eq!(u32_at(&old, 32), 512);
        assert_eq!(StatusRequest::from_info(&old).offset, 512);
        let big = Status {
            offset: 1 << 40,
            ..s.clone()
        };
        assert_eq!(big.to_info(0), Err(errno::EOVERFLOW));
        let mut cfg = [0u8; CONFIG_LEN];
        cfg[0] = 5;
        cfg[8..8 + INFO64_LEN].copy_from_slice(&b);
        assert_eq!(Config::parse(&cfg).unwrap().fd, 5);
        cfg[300] = 1;
        assert!(Config::parse(&cfg).is_err());
    }

    #[test]
    fn block_device_settings_outlive_binds() {
        let mut t = Table::default();
        assert_eq!(t.get(0).unwrap().read_ahead, READ_AHEAD);
        t.set_read_ahead(0, 1001).unwrap();
        assert_eq!(t.get(0).unwrap().read_ahead, 1000);
        assert!(!t.writes_refused(0));
        t.set_read_only(0, true).unwrap();
        assert!(t.writes_refused(0));
        t.set_read_only(0, false).unwrap();
        t.bind(0, 1, st(LO_FLAGS_READ_ONLY), 4096).unwrap();
        assert!(t.writes_refused(0));
        assert_eq!(t.set_read_ahead(99, 8), Err(errno::ENXIO));
    }

    #[test]
    fn sizes_are_whole_sectors_from_the_offset() {
        assert_eq!(device_size(1000, 0, 0), 512);
        assert_eq!(device_size(1000, 2000, 0), 0);
        assert_eq!(device_size(1 << 20, 4096, 1 << 12), 4096);
        assert!(valid_block_size(4096) && !valid_block_size(8192) && !valid_block_size(256));
    }
}
