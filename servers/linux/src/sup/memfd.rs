//! memfd_create and file seals. A memfd is an unnamed file of the
//! system's file server (its `MEMFD` entry: the kind `O_TMPFILE` makes,
//! in the root's file system), so reads, writes, ftruncate, the kernel's
//! pread of its cache, MAP_SHARED mappings shared between processes, fork
//! and reopening through /proc/self/fd all work as for any file; the file
//! server keeps its seals and makes every write and truncate obey them.
//! The supervisor checks what Linux checks above the file (flags, the
//! name) and what needs the process's mappings: a writable shared
//! mapping of a file sealed against writes (EPERM), F_SEAL_WRITE while
//! this process maps it writable and shared (EBUSY).

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd};
use alloc::format;
use linuxabi::errno;
use linuxabi::seals::{self, F_SEAL_WRITE};
use tessera_api::fs as api;

/// The path a memfd's /proc/self/fd link reads, before its name.
pub const PREFIX: &str = "/memfd:";

impl Sup {
    /// memfd_create(name, flags).
    pub(super) fn memfd_create(&mut self, rid: u64, name_at: u64, flags: u64) -> Result<u64, i64> {
        let flags = u32::try_from(flags).map_err(|_| errno::EINVAL)?;
        seals::check_flags(flags)?;
        let name = match self.read_cstr(rid, name_at, seals::MFD_NAME_MAX_LEN) {
            Err(errno::ENAMETOOLONG) => return Err(errno::EINVAL),
            r => r?,
        };
        // No huge pages here: as a Linux built without hugetlbfs.
        if flags & seals::MFD_HUGETLB != 0 {
            return Err(errno::EINVAL);
        }
        let name = alloc::string::String::from_utf8_lossy(&name).into_owned();
        let (fd, cache) = self.fs.memfd_create(seals::initial(flags))?;
        let o = Ofd::new(
            Kind::File { fd, dir: false },
            fdt::O_RDWR,
            format!("{PREFIX}{name} (deleted)"),
        );
        o.borrow_mut().cache = cache;
        let cloexec = if flags & seals::MFD_CLOEXEC != 0 {
            fdt::O_CLOEXEC
        } else {
            0
        };
        self.install(o, cloexec)
    }

    /// fcntl F_GET_SEALS and F_ADD_SEALS of descriptor `fd` (EINVAL for a
    /// file with no seals: not a memfd).
    pub(super) fn file_seals(&mut self, fd: u64, add: Option<u64>) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let (ffd, writable, memfd) = {
            let d = o.borrow();
            match d.kind {
                Kind::File { fd, dir: false } => (fd, d.writable(), d.path.starts_with(PREFIX)),
                _ => return Err(errno::EINVAL),
            }
        };
        let Some(add) = add else {
            return self.fs.seals(ffd, api::MEMFD_GET_SEALS, 0);
        };
        let add = u32::try_from(add).map_err(|_| errno::EINVAL)?;
        // A writable shared mapping forbids F_SEAL_WRITE (Linux's
        // mapping_deny_writable): this process's own are known here.
        if add & F_SEAL_WRITE != 0 && writable && memfd && self.maps_writable(ffd) {
            let now = self.fs.seals(ffd, api::MEMFD_GET_SEALS, 0)? as u32;
            if now & seals::F_SEAL_SEAL == 0 && add & !seals::ALL == 0 && now & F_SEAL_WRITE == 0 {
                return Err(errno::EBUSY);
            }
        }
        self.fs.seals(ffd, api::MEMFD_ADD_SEALS, add).map(|_| 0)
    }

    /// Whether a memfd's seals forbid a writable shared mapping of file
    /// number `ffd` (EPERM).
    pub(super) fn memfd_may_map(&self, ffd: u32, path: &str) -> Result<(), i64> {
        if !path.starts_with(PREFIX) {
            return Ok(());
        }
        match self.fs.seals(ffd, api::MEMFD_GET_SEALS, 0) {
            Ok(s) => seals::may_map_writable(s as u32),
            Err(_) => Ok(()),
        }
    }
}
