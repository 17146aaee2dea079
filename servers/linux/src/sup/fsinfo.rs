//! Which file systems there are: `sysfs` (the kinds the system knows, by
//! name and index, as `/proc/filesystems` lists them) and `ustat` (the
//! free blocks and inodes of a mounted file system, by its device).

use super::Sup;
use super::files::AT_FDCWD;
use super::files::Target;
use alloc::vec::Vec;
use linuxabi::errno;

/// The kinds of file system, in `sysfs`'s index order; `true` for one
/// with no device of its own (`nodev` in `/proc/filesystems`).
pub const FILESYSTEMS: &[(&str, bool)] = &[("ext2", false), ("proc", true), ("devtmpfs", true)];

/// `/proc/filesystems`.
pub fn filesystems_text() -> Vec<u8> {
    let mut t = Vec::new();
    for (name, nodev) in FILESYSTEMS {
        if *nodev {
            t.extend_from_slice(b"nodev");
        }
        t.push(b'\t');
        t.extend_from_slice(name.as_bytes());
        t.push(b'\n');
    }
    t
}

/// Where `struct statfs` holds the free blocks and the free inodes.
const STATFS_BFREE: usize = 24;
const STATFS_FFREE: usize = 48;

impl Sup {
    /// sysfs(1, name) → its index; sysfs(2, index, buf) → its name in
    /// `buf`; sysfs(3) → how many there are.
    pub(super) fn sysfs(&mut self, rid: u64, option: u64, a1: u64, a2: u64) -> Result<u64, i64> {
        match option as u32 {
            1 => {
                let name = self.read_cstr(rid, a1, linuxabi::path::PATH_MAX - 1)?;
                FILESYSTEMS
                    .iter()
                    .position(|(n, _)| n.as_bytes() == name.as_slice())
                    .map(|i| i as u64)
                    .ok_or(errno::EINVAL)
            }
            2 => {
                let (name, _) = FILESYSTEMS.get(a1 as u32 as usize).ok_or(errno::EINVAL)?;
                let mut b = name.as_bytes().to_vec();
                b.push(0);
                self.write_mem(rid, a2, &b)?;
                Ok(0)
            }
            3 => Ok(FILESYSTEMS.len() as u64),
            _ => Err(errno::EINVAL),
        }
    }

    /// ustat(dev, buf): the root file system's or a mounted loop
    /// device's; any other device has no file system (EINVAL).
    pub(super) fn ustat(&mut self, rid: u64, dev: u64, out: u64) -> Result<u64, i64> {
        let dev = dev as u32 as u64;
        let mut path = None;
        if self.stat_at(AT_FDCWD as u64, "/", 0)?.dev == dev {
            path = Some(alloc::string::String::from("/"));
        }
        for m in self.fs.mounts.list() {
            if linuxabi::structs::makedev(linuxabi::loopdev::LOOP_MAJOR, m.dev) == dev {
                path = Some(m.path);
            }
        }
        let path = path.ok_or(errno::EINVAL)?;
        let sfs = match self.target(AT_FDCWD as u64, &path)? {
            Target::Fs(d, _) => self.fs.statfs_of(d)?,
            Target::Virt(_) => self.fs.statfs()?,
        };
        let field = |o: usize| u64::from_le_bytes(sfs[o..o + 8].try_into().unwrap_or([0; 8]));
        // struct ustat: f_tfree (an int), f_tinode, and two names Linux
        // leaves empty.
        let mut u = [0u8; 32];
        u[..4].copy_from_slice(&(field(STATFS_BFREE) as u32).to_le_bytes());
        u[8..16].copy_from_slice(&field(STATFS_FFREE).to_le_bytes());
        self.write_mem(rid, out, &u)?;
        Ok(0)
    }
}
