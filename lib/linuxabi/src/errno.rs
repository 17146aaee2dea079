//! Linux error numbers (`asm-generic/errno*.h`). A system call returns
//! one negated; `fail` makes that value.

pub const EPERM: i64 = 1;
pub const ENOENT: i64 = 2;
pub const ESRCH: i64 = 3;
pub const EINTR: i64 = 4;
pub const EIO: i64 = 5;
pub const ENXIO: i64 = 6;
pub const E2BIG: i64 = 7;
pub const ENOEXEC: i64 = 8;
pub const EBADF: i64 = 9;
pub const ECHILD: i64 = 10;
pub const EAGAIN: i64 = 11;
pub const ENOMEM: i64 = 12;
pub const EACCES: i64 = 13;
pub const EFAULT: i64 = 14;
pub const ENOTBLK: i64 = 15;
pub const EBUSY: i64 = 16;
pub const EEXIST: i64 = 17;
pub const EXDEV: i64 = 18;
pub const ENODEV: i64 = 19;
pub const ENOTDIR: i64 = 20;
pub const EISDIR: i64 = 21;
pub const EINVAL: i64 = 22;
pub const ENFILE: i64 = 23;
pub const EMFILE: i64 = 24;
pub const ENOTTY: i64 = 25;
pub const ETXTBSY: i64 = 26;
pub const EFBIG: i64 = 27;
pub const ENOSPC: i64 = 28;
pub const ESPIPE: i64 = 29;
pub const EROFS: i64 = 30;
pub const EMLINK: i64 = 31;
pub const EPIPE: i64 = 32;
pub const EDOM: i64 = 33;
pub const ERANGE: i64 = 34;
pub const EDEADLK: i64 = 35;
pub const ENAMETOOLONG: i64 = 36;
pub const ENOLCK: i64 = 37;
pub const ENOSYS: i64 = 38;
pub const ENOTEMPTY: i64 = 39;
pub const ELOOP: i64 = 40;
pub const ENOMSG: i64 = 42;
pub const EIDRM: i64 = 43;
pub const ECHRNG: i64 = 44;
pub const EL2NSYNC: i64 = 45;
pub const EL3HLT: i64 = 46;
pub const EL3RST: i64 = 47;
pub const ELNRNG: i64 = 48;
pub const EUNATCH: i64 = 49;
pub const ENOCSI: i64 = 50;
pub const EL2HLT: i64 = 51;
pub const EBADE: i64 = 52;
pub const EBADR: i64 = 53;
pub const EXFULL: i64 = 54;
pub const ENOANO: i64 = 55;
pub const EBADRQC: i64 = 56;
pub const EBADSLT: i64 = 57;
pub const EBFONT: i64 = 59;
pub const ENOSTR: i64 = 60;
pub const ENODATA: i64 = 61;
pub const ETIME: i64 = 62;
pub const ENOSR: i64 = 63;
pub const ENONET: i64 = 64;
pub const ENOPKG: i64 = 65;
pub const EREMOTE: i64 = 66;
pub const ENOLINK: i64 = 67;
pub const EADV: i64 = 68;
pub const ESRMNT: i64 = 69;
pub const ECOMM: i64 = 70;
pub const EPROTO: i64 = 71;
pub const EMULTIHOP: i64 = 72;
pub const EDOTDOT: i64 = 73;
pub const EBADMSG: i64 = 74;
pub const EOVERFLOW: i64 = 75;
pub const ENOTUNIQ: i64 = 76;
pub const EBADFD: i64 = 77;
pub const EREMCHG: i64 = 78;
pub const ELIBACC: i64 = 79;
pub const ELIBBAD: i64 = 80;
pub const ELIBSCN: i64 = 81;
pub const ELIBMAX: i64 = 82;
pub const ELIBEXEC: i64 = 83;
pub const EILSEQ: i64 = 84;
pub const ERESTART: i64 = 85;
pub const ESTRPIPE: i64 = 86;
pub const EUSERS: i64 = 87;
pub const ENOTSOCK: i64 = 88;
pub const EDESTADDRREQ: i64 = 89;
pub const EMSGSIZE: i64 = 90;
pub const EPROTOTYPE: i64 = 91;
pub const ENOPROTOOPT: i64 = 92;
pub const EPROTONOSUPPORT: i64 = 93;
pub const ESOCKTNOSUPPORT: i64 = 94;
pub const EOPNOTSUPP: i64 = 95;
pub const EPFNOSUPPORT: i64 = 96;
pub const EAFNOSUPPORT: i64 = 97;
pub const EADDRINUSE: i64 = 98;
pub const EADDRNOTAVAIL: i64 = 99;
pub const ENETDOWN: i64 = 100;
pub const ENETUNREACH: i64 = 101;
pub const ENETRESET: i64 = 102;
pub const ECONNABORTED: i64 = 103;
pub const ECONNRESET: i64 = 104;
pub const ENOBUFS: i64 = 105;
pub const EISCONN: i64 = 106;
pub const ENOTCONN: i64 = 107;
pub const ESHUTDOWN: i64 = 108;
pub const ETOOMANYREFS: i64 = 109;
pub const ETIMEDOUT: i64 = 110;
pub const ECONNREFUSED: i64 = 111;
pub const EHOSTDOWN: i64 = 112;
pub const EHOSTUNREACH: i64 = 113;
pub const EALREADY: i64 = 114;
pub const EINPROGRESS: i64 = 115;
pub const ESTALE: i64 = 116;
pub const EUCLEAN: i64 = 117;
pub const ENOTNAM: i64 = 118;
pub const ENAVAIL: i64 = 119;
pub const EISNAM: i64 = 120;
pub const EREMOTEIO: i64 = 121;
pub const EDQUOT: i64 = 122;
pub const ENOMEDIUM: i64 = 123;
pub const EMEDIUMTYPE: i64 = 124;
pub const ECANCELED: i64 = 125;
pub const ENOKEY: i64 = 126;
pub const EKEYEXPIRED: i64 = 127;
pub const EKEYREVOKED: i64 = 128;
pub const EKEYREJECTED: i64 = 129;
pub const EOWNERDEAD: i64 = 130;
pub const ENOTRECOVERABLE: i64 = 131;
pub const ERFKILL: i64 = 132;
pub const EHWPOISON: i64 = 133;

/// A system call's return value for error `e`: -e as the 64 bits of rax.
pub const fn fail(e: i64) -> u64 {
    (-e) as u64
}

/// The error number a return value carries, if it is one (-4095..-1).
pub fn of(ret: u64) -> Option<i64> {
    let v = ret as i64;
    (-4095..0).contains(&v).then_some(-v)
}

/// Returned by a call interrupted by a signal that must be restarted if
/// the handler has `SA_RESTART` (never seen by a program: Linux's
/// ERESTARTSYS).
pub const ERESTARTSYS: i64 = 512;
/// Restarted whatever the handler's flags (ERESTARTNOINTR).
pub const ERESTARTNOINTR: i64 = 513;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_decoding() {
        assert_eq!(ENOENT, 2);
        assert_eq!(ENOSYS, 38);
        assert_eq!(fail(EPERM), u64::MAX);
        assert_eq!(of(fail(EINTR)), Some(EINTR));
        assert_eq!(of(0), None);
        assert_eq!(of(12345), None);
    }
}
