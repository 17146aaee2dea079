//! Linux's error numbers, which the protocols the Linux personality passes
//! through (`fs`, `net`) speak.

use core::fmt;
use tessera_rt::abi::Error;

/// An errno value (Linux's numbers).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const EINTR: Errno = Errno(4);
    pub const EIO: Errno = Errno(5);
    pub const ENXIO: Errno = Errno(6);
    pub const E2BIG: Errno = Errno(7);
    pub const EBADF: Errno = Errno(9);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EXDEV: Errno = Errno(18);
    pub const ENODEV: Errno = Errno(19);
    pub const ENOTDIR: Errno = Errno(20);
    pub const EISDIR: Errno = Errno(21);
    pub const EINVAL: Errno = Errno(22);
    pub const ENFILE: Errno = Errno(23);
    pub const EMFILE: Errno = Errno(24);
    pub const ETXTBSY: Errno = Errno(26);
    pub const EFBIG: Errno = Errno(27);
    pub const ENOSPC: Errno = Errno(28);
    pub const EROFS: Errno = Errno(30);
    pub const EMLINK: Errno = Errno(31);
    pub const EPIPE: Errno = Errno(32);
    pub const ERANGE: Errno = Errno(34);
    pub const ENAMETOOLONG: Errno = Errno(36);
    pub const ENOSYS: Errno = Errno(38);
    pub const ENOTEMPTY: Errno = Errno(39);
    pub const ELOOP: Errno = Errno(40);
    pub const ENODATA: Errno = Errno(61);
    pub const ENOTSOCK: Errno = Errno(88);
    pub const EDESTADDRREQ: Errno = Errno(89);
    pub const EMSGSIZE: Errno = Errno(90);
    pub const EPROTOTYPE: Errno = Errno(91);
    pub const ENOPROTOOPT: Errno = Errno(92);
    pub const EPROTONOSUPPORT: Errno = Errno(93);
    pub const ESOCKTNOSUPPORT: Errno = Errno(94);
    pub const EOPNOTSUPP: Errno = Errno(95);
    pub const EAFNOSUPPORT: Errno = Errno(97);
    pub const EADDRINUSE: Errno = Errno(98);
    pub const EADDRNOTAVAIL: Errno = Errno(99);
    pub const ENETDOWN: Errno = Errno(100);
    pub const ENETUNREACH: Errno = Errno(101);
    pub const ECONNABORTED: Errno = Errno(103);
    pub const ECONNRESET: Errno = Errno(104);
    pub const ENOBUFS: Errno = Errno(105);
    pub const EISCONN: Errno = Errno(106);
    pub const ENOTCONN: Errno = Errno(107);
    pub const ETIMEDOUT: Errno = Errno(110);
    pub const ECONNREFUSED: Errno = Errno(111);
    pub const EHOSTUNREACH: Errno = Errno(113);
    pub const EALREADY: Errno = Errno(114);
    pub const EINPROGRESS: Errno = Errno(115);
    pub const ESTALE: Errno = Errno(116);

    /// The errno for a failed system call or rendezvous with the server.
    pub fn of(e: Error) -> Errno {
        match e {
            Error::Fault => Errno::EFAULT,
            Error::NoMemory => Errno::ENOMEM,
            Error::Denied => Errno::EACCES,
            Error::Invalid => Errno::EINVAL,
            Error::NoSys => Errno::ENOSYS,
            _ => Errno::EIO,
        }
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "operation not permitted",
            2 => "no such file or directory",
            4 => "interrupted system call",
            5 => "input/output error",
            9 => "bad file number",
            11 => "try again",
            12 => "out of memory",
            13 => "permission denied",
            14 => "bad address",
            16 => "busy",
            17 => "file exists",
            18 => "cross-device link",
            20 => "not a directory",
            21 => "is a directory",
            22 => "invalid argument",
            23 => "too many open files in the system",
            24 => "too many open files",
            27 => "file too large",
            28 => "no space left on device",
            30 => "read-only file system",
            31 => "too many links",
            32 => "broken pipe",
            36 => "file name too long",
            38 => "not implemented",
            39 => "directory not empty",
            40 => "too many levels of symbolic links",
            88 => "not a socket",
            89 => "destination address required",
            90 => "message too long",
            91 => "wrong protocol type for socket",
            92 => "protocol not available",
            93 => "protocol not supported",
            94 => "socket type not supported",
            95 => "operation not supported",
            97 => "address family not supported",
            98 => "address in use",
            99 => "cannot assign requested address",
            100 => "network is down",
            101 => "network is unreachable",
            103 => "connection aborted",
            104 => "connection reset by peer",
            105 => "no buffer space available",
            106 => "already connected",
            107 => "not connected",
            110 => "connection timed out",
            111 => "connection refused",
            113 => "no route to host",
            114 => "already in progress",
            115 => "in progress",
            116 => "stale file handle",
            _ => "error",
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "errno {} ({})", self.0, self.name())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}
