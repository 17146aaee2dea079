//! Errors, one for one with Linux errno values.
//!
//! The Linux personality returns these unchanged, so every variant is named
//! after its errno and [`Errno::code`] is the Linux (x86_64) number.

use core::fmt;

/// Why an operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Errno {
    /// Not allowed on this object (a hard link to a directory).
    EPERM = 1,
    /// No such file or directory.
    ENOENT = 2,
    /// A structure on disk is corrupt, or the device failed.
    EIO = 5,
    /// A directory on the path that its caller may not search.
    EACCES = 13,
    /// The object is in use as the root and cannot be removed or moved.
    EBUSY = 16,
    /// The name exists already.
    EEXIST = 17,
    /// A path component that must be a directory is not.
    ENOTDIR = 20,
    /// A directory where something else was needed.
    EISDIR = 21,
    /// An invalid argument (a bad name, a directory moved into itself).
    EINVAL = 22,
    /// The file would exceed the largest size the block map can address.
    EFBIG = 27,
    /// No free block or inode left.
    ENOSPC = 28,
    /// Mounted read-only (by request, or because of unknown features or
    /// corrupt group descriptors).
    EROFS = 30,
    /// Too many links to one inode.
    EMLINK = 31,
    /// An extended attribute's name or value too long, or a caller's
    /// buffer too small for one.
    ERANGE = 34,
    /// A name longer than 255 bytes, or a path or link target too long.
    ENAMETOOLONG = 36,
    /// A directory to be removed or replaced still has entries.
    ENOTEMPTY = 39,
    /// Too many symbolic links while resolving a path.
    ELOOP = 40,
    /// No extended attribute of that name.
    ENODATA = 61,
    /// An extended-attribute namespace the file system does not serve.
    EOPNOTSUPP = 95,
    /// A handle names an inode that was deleted (and maybe reused).
    ESTALE = 116,
}

impl Errno {
    /// The Linux errno value.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The variant for a Linux errno value, if the library uses it.
    pub fn from_code(code: i32) -> Option<Errno> {
        use Errno::*;
        [
            EPERM,
            ENOENT,
            EIO,
            EACCES,
            EBUSY,
            EEXIST,
            ENOTDIR,
            EISDIR,
            EINVAL,
            EFBIG,
            ENOSPC,
            EROFS,
            EMLINK,
            ERANGE,
            ENAMETOOLONG,
            ENOTEMPTY,
            ELOOP,
            ENODATA,
            EOPNOTSUPP,
            ESTALE,
        ]
        .into_iter()
        .find(|e| e.code() == code)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:?} ({})", self, self.code())
    }
}

pub type Result<T> = core::result::Result<T, Errno>;
