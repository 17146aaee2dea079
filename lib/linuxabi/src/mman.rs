//! The memory calls' flags (`asm-generic/mman-common.h`, `linux/mman.h`):
//! mmap, mprotect, mremap, madvise, msync, mlock and mlockall. The kernel,
//! which serves most of these calls itself, and the supervisor, which
//! serves the rest, read them from here.

pub const PROT_READ: u64 = 1;
pub const PROT_WRITE: u64 = 2;
pub const PROT_EXEC: u64 = 4;

pub const MAP_SHARED: u64 = 0x01;
pub const MAP_PRIVATE: u64 = 0x02;
pub const MAP_SHARED_VALIDATE: u64 = 0x03;
/// The bits that hold the mapping's type (shared, private, validate).
pub const MAP_TYPE: u64 = 0x0f;
pub const MAP_FIXED: u64 = 0x10;
pub const MAP_ANONYMOUS: u64 = 0x20;
pub const MAP_LOCKED: u64 = 0x2000;
/// At the address exactly, refused (EEXIST) if anything is mapped there.
pub const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
/// The flags MAP_SHARED_VALIDATE accepts on a file without its own (a
/// file of DAX's MAP_SYNC): Linux's LEGACY_MAP_MASK, and the bits above
/// it that name a huge page's size, which Linux lets through too.
pub const LEGACY_MAP_MASK: u64 = 0x1
    | 0x2
    | 0x10
    | 0x20
    | 0x100
    | 0x800
    | 0x1000
    | 0x2000
    | 0x4000
    | 0x8000
    | 0x10000
    | 0x20000
    | 0x40000
    | 0x400_0000
    | !0x3ff_ffff;

pub const MREMAP_MAYMOVE: u64 = 1;
pub const MREMAP_FIXED: u64 = 2;
pub const MREMAP_DONTUNMAP: u64 = 4;

pub const MADV_NORMAL: u64 = 0;
pub const MADV_DONTNEED: u64 = 4;
pub const MADV_FREE: u64 = 8;
pub const MADV_REMOVE: u64 = 9;
pub const MADV_WIPEONFORK: u64 = 18;
pub const MADV_KEEPONFORK: u64 = 19;
pub const MADV_DONTNEED_LOCKED: u64 = 24;

pub const MS_ASYNC: u64 = 1;
pub const MS_INVALIDATE: u64 = 2;
pub const MS_SYNC: u64 = 4;

/// mlock2's flag.
pub const MLOCK_ONFAULT: u64 = 1;
pub const MCL_CURRENT: u64 = 1;
pub const MCL_FUTURE: u64 = 2;
pub const MCL_ONFAULT: u64 = 4;
