//! The typed user-memory access layer. Every pointer and length a process
//! passes to the kernel goes through here: the range must lie in user space
//! (no overflow, nothing of the kernel half), and the copy itself catches
//! page faults, so a bad pointer is an `Error::Fault`, never a kernel fault.
//! Pages not yet present in a demand-paged region are faulted in on the way.

use crate::arch::x86_64::fallible_copy;
use crate::vm::USER_END;
use abi::Error;

/// Largest single copy the kernel accepts from or to a process.
pub const MAX_COPY: usize = abi::MAX_COPY;

/// Inlined: every system call with a buffer checks it, the rendezvous
/// path several times. A range that is not empty at address 0 passes or
/// fails in two comparisons; which error a bad one gets is sorted out
/// apart.
#[inline(always)]
pub fn check_range(addr: u64, len: usize) -> Result<(), Error> {
    const { assert!(MAX_COPY as u64 <= USER_END) };
    // `len` is at most MAX_COPY, below USER_END: no overflow, and this
    // holds exactly when `1 <= addr` and `addr + len <= USER_END`.
    if len <= MAX_COPY && addr.wrapping_sub(1) < USER_END - len as u64 {
        return Ok(());
    }
    check_range_slow(addr, len)
}

#[cold]
#[inline(never)]
fn check_range_slow(addr: u64, len: usize) -> Result<(), Error> {
    if len > MAX_COPY {
        return Err(Error::Invalid);
    }
    // `len` is at most MAX_COPY, below USER_END: no overflow either way,
    // and `addr + len <= USER_END` exactly when this holds.
    if addr > USER_END - len as u64 || (len > 0 && addr == 0) {
        return Err(Error::Fault);
    }
    Ok(())
}

/// A range of user memory that passed `check_range`. Whether a range lies
/// in user space depends on its bounds alone, so what is copied within it
/// needs no second check: a system call checks a buffer once, where it
/// takes it, and later copies (the rendezvous path makes several into one
/// buffer, some from another process) go by the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserRange {
    addr: u64,
    len: usize,
}

impl UserRange {
    /// No bytes (a call without a message, an `endr_acc` that ends none).
    pub const EMPTY: UserRange = UserRange { addr: 0, len: 0 };

    #[inline(always)]
    pub fn new(addr: u64, len: usize) -> Result<UserRange, Error> {
        check_range(addr, len)?;
        Ok(UserRange { addr, len })
    }

    #[inline(always)]
    pub fn addr(self) -> u64 {
        self.addr
    }

    #[inline(always)]
    pub fn len(self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The `len` bytes from `offset` on, if they lie within the range.
    #[inline(always)]
    pub fn part(self, offset: usize, len: usize) -> Result<UserRange, Error> {
        if offset > self.len || len > self.len - offset {
            return Err(Error::Invalid);
        }
        Ok(UserRange {
            addr: self.addr + offset as u64,
            len,
        })
    }

    /// The first `len` bytes of the range (all of it if it is shorter).
    #[inline(always)]
    pub fn prefix(self, len: usize) -> UserRange {
        UserRange {
            addr: self.addr,
            len: self.len.min(len),
        }
    }

    /// Copies `src` to the start of the range (in the current space), which
    /// must be as long at least.
    #[inline(always)]
    pub fn write(self, src: &[u8]) -> Result<(), Error> {
        if src.len() > self.len {
            return Err(Error::Invalid);
        }
        // SAFETY: the destination lies in user space (checked when the
        // range was made); faults are caught.
        unsafe { fallible_copy(self.addr as *mut u8, src.as_ptr(), src.len()) }.map_err(|_| Error::Fault)
    }

    /// Fills `dst` from the start of the range (in the current space).
    #[inline(always)]
    pub fn read(self, dst: &mut [u8]) -> Result<(), Error> {
        if dst.len() > self.len {
            return Err(Error::Invalid);
        }
        // SAFETY: the destination is a kernel buffer we own; faults on the
        // user source are caught.
        unsafe { fallible_copy(dst.as_mut_ptr(), self.addr as *const u8, dst.len()) }.map_err(|_| Error::Fault)
    }

    /// Reads the whole range into `dst`, which need not be initialised.
    ///
    /// # Safety
    /// `dst` must be valid for writes of the range's length.
    #[inline(always)]
    pub unsafe fn read_raw(self, dst: *mut u8) -> Result<(), Error> {
        // SAFETY: the caller vouches for the destination; faults on the
        // user source are caught.
        unsafe { fallible_copy(dst, self.addr as *const u8, self.len) }.map_err(|_| Error::Fault)
    }

    /// Appends the whole range to `buf` (the range's length must fit in
    /// its spare room), without first zeroing the room it lands in.
    #[inline(always)]
    pub fn read_append<const N: usize>(self, buf: &mut arrayvec::ArrayVec<u8, N>) -> Result<(), Error> {
        let at = buf.len();
        if self.len > N - at {
            return Err(Error::Invalid);
        }
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: the destination is the buffer's spare room, which holds
        // `self.len` bytes (checked above); faults on the user source are
        // caught.
        unsafe { fallible_copy(buf.as_mut_ptr().add(at), self.addr as *const u8, self.len) }
            .map_err(|_| Error::Fault)?;
        // SAFETY: the copy initialised those bytes.
        unsafe { buf.set_len(at + self.len) };
        Ok(())
    }

    /// Six words at the start of the range (no copy through memory).
    #[inline(always)]
    pub fn write_words(self, words: [u64; 6]) -> Result<(), Error> {
        if self.len < 6 * 8 {
            return Err(Error::Invalid);
        }
        // SAFETY: the range lies in user space and holds the six words;
        // faults are caught.
        unsafe { crate::arch::x86_64::fallible_store6(self.addr, words) }.map_err(|_| Error::Fault)
    }

    /// One word at the start of the range (a status written back).
    #[inline(always)]
    pub fn store(self, word: u64) -> Result<(), Error> {
        if self.len < 8 {
            return Err(Error::Invalid);
        }
        // SAFETY: the range lies in user space and holds the word; a fault
        // is caught.
        unsafe { crate::arch::x86_64::fallible_store(self.addr, word) }.map_err(|_| Error::Fault)
    }
}

pub fn copy_from_user(dst: &mut [u8], src: u64) -> Result<(), Error> {
    UserRange::new(src, dst.len())?.read(dst)
}

pub fn copy_to_user(dst: u64, src: &[u8]) -> Result<(), Error> {
    UserRange::new(dst, src.len())?.write(src)
}

/// A plain record's bytes (an inline message).
pub fn pod_bytes<T: Pod>(v: &T) -> &[u8] {
    // SAFETY: a Pod value has no padding and every byte initialised; the
    // slice borrows it for as long as it lives.
    unsafe { core::slice::from_raw_parts(v as *const T as *const u8, core::mem::size_of::<T>()) }
}

/// Plain data that may be copied to and from user memory byte for byte.
///
/// # Safety
/// Every bit pattern must be a valid value, and there must be no padding
/// whose content would leak kernel memory.
pub unsafe trait Pod: Copy + Default {}
// SAFETY: integers qualify, and abi's records: `record!` makes them
// repr(C) of integers and byte arrays and fails the build on padding.
unsafe impl Pod for u64 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for abi::SpawnOptions {}
unsafe impl Pod for abi::Clock {}
unsafe impl Pod for abi::PagerSource {}
unsafe impl Pod for abi::PageIn {}
unsafe impl Pod for abi::ProcInfo {}
unsafe impl Pod for abi::SysInfo {}
unsafe impl Pod for abi::ResInfo {}
unsafe impl Pod for abi::SegmentInfo {}
unsafe impl Pod for abi::Received {}
unsafe impl Pod for abi::ContainerStats {}
unsafe impl Pod for abi::AccInfo {}
unsafe impl Pod for abi::BatchEntry {}
unsafe impl Pod for abi::ForwardEntry {}
unsafe impl Pod for abi::ReplyEntry {}
unsafe impl Pod for abi::ReadEntry {}
unsafe impl Pod for [u64; 2] {}
unsafe impl Pod for abi::Control {}
unsafe impl Pod for abi::PoolSettings {}
unsafe impl Pod for abi::PoolRule {}
unsafe impl Pod for abi::PoolRecord {}
unsafe impl Pod for abi::KindCount {}
unsafe impl Pod for abi::ResRecord {}
unsafe impl Pod for abi::TraceRecord {}
unsafe impl Pod for abi::CounterRecord {}
unsafe impl Pod for abi::ServerRecord {}
unsafe impl Pod for abi::IpcTotals {}
unsafe impl Pod for abi::DeviceRecord {}
unsafe impl Pod for abi::NvmRecord {}
unsafe impl Pod for abi::NvmStoreInfo {}
unsafe impl Pod for abi::linux::Regs {}
unsafe impl Pod for abi::linux::LinuxCall {}
unsafe impl Pod for abi::linux::LinuxFault {}
unsafe impl Pod for abi::linux::CallFor {}
unsafe impl Pod for abi::CpuRecord {}
unsafe impl Pod for abi::CpuTimeRecord {}

pub fn read<T: Pod>(addr: u64) -> Result<T, Error> {
    let mut value = T::default();
    // SAFETY: T is Pod, so viewing it as bytes and filling them is sound.
    let bytes = unsafe { core::slice::from_raw_parts_mut(&mut value as *mut T as *mut u8, core::mem::size_of::<T>()) };
    copy_from_user(bytes, addr)?;
    Ok(value)
}

/// Reads the list of values that fills `list` into `buf` in one copy and
/// returns them. `buf` is not cleared first: only the entries the copy
/// wrote are read.
pub fn read_list<T: Pod, const MAX: usize>(
    buf: &mut core::mem::MaybeUninit<[T; MAX]>,
    list: UserRange,
) -> Result<&[T], Error> {
    let n = list.len() / core::mem::size_of::<T>();
    if n > MAX || !list.len().is_multiple_of(core::mem::size_of::<T>()) {
        return Err(Error::Invalid);
    }
    // SAFETY: the buffer has room for MAX values, n at most.
    unsafe { list.read_raw(buf.as_mut_ptr().cast()) }?;
    // SAFETY: the copy wrote the first n values whole, and any bytes make a
    // valid T (it is Pod).
    Ok(unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<T>(), n) })
}

pub fn write<T: Pod>(addr: u64, value: &T) -> Result<(), Error> {
    // SAFETY: T is Pod: all its bytes are initialised.
    let bytes = unsafe { core::slice::from_raw_parts(value as *const T as *const u8, core::mem::size_of::<T>()) };
    copy_to_user(addr, bytes)
}

/// The `len` bytes at `addr`, copied into the kernel; more than `max` is
/// refused before anything is allocated. A process's names, paths and
/// argument lists all come in this way.
pub fn read_bytes(addr: u64, len: u64, max: usize) -> Result<alloc::vec::Vec<u8>, Error> {
    if len > max as u64 {
        return Err(Error::Invalid);
    }
    let mut buf = alloc::vec::Vec::new();
    buf.try_reserve_exact(len as usize).map_err(|_| Error::NoMemory)?;
    buf.resize(len as usize, 0);
    // In pieces a range may have (a program's image is megabytes).
    for (i, piece) in buf.chunks_mut(MAX_COPY).enumerate() {
        let at = addr.checked_add((i * MAX_COPY) as u64).ok_or(Error::Fault)?;
        UserRange::new(at, piece.len())?.read(piece)?;
    }
    if len == 0 {
        UserRange::new(addr, 0)?;
    }
    Ok(buf)
}

/// `read_bytes` for ranges longer than one copy may be (a program's image):
/// read in pieces of MAX_COPY.
pub fn read_long(addr: u64, len: u64, max: usize) -> Result<alloc::vec::Vec<u8>, Error> {
    if len > max as u64 {
        return Err(Error::Invalid);
    }
    let mut buf = alloc::vec::Vec::new();
    buf.try_reserve_exact(len as usize).map_err(|_| Error::NoMemory)?;
    let mut at = 0;
    while at < len {
        let n = (len - at).min(MAX_COPY as u64);
        let from = addr.checked_add(at).ok_or(Error::Fault)?;
        let range = UserRange::new(from, n as usize)?;
        let start = buf.len();
        buf.resize(start + n as usize, 0);
        range.read(&mut buf[start..])?;
        at += n;
    }
    Ok(buf)
}

/// `read_bytes`, which must be UTF-8 (a name, a path, a setting).
pub fn read_str(addr: u64, len: u64, max: usize) -> Result<alloc::string::String, Error> {
    alloc::string::String::from_utf8(read_bytes(addr, len, max)?).map_err(|_| Error::Invalid)
}

/// Writes `values` to user memory at `addr`, one after the other, in one copy.
pub fn write_list<T: Pod>(addr: u64, values: &[T]) -> Result<(), Error> {
    // SAFETY: T is Pod: all the bytes of the slice are initialised.
    let bytes = unsafe { core::slice::from_raw_parts(values.as_ptr().cast::<u8>(), core::mem::size_of_val(values)) };
    copy_to_user(addr, bytes)
}

// ---- the system calls' typed arguments (`abi::args`) ----

use abi::args::{Buffer, Bytes, In, InOpt, List, Out, Str};

impl UserRange {
    /// A buffer argument, checked against user space.
    #[inline(always)]
    pub fn of(b: Buffer) -> Result<UserRange, Error> {
        UserRange::new(b.addr, usize::try_from(b.len).map_err(|_| Error::Invalid)?)
    }

    /// The range of a list argument (its count of `T`s).
    #[inline(always)]
    pub fn of_list<T>(l: List<T>) -> Result<UserRange, Error> {
        UserRange::new(l.addr, l.bytes().ok_or(Error::Invalid)?)
    }

    /// The range a structure argument occupies.
    #[inline(always)]
    pub fn of_out<T>(o: Out<T>) -> Result<UserRange, Error> {
        UserRange::new(o.addr, core::mem::size_of::<T>())
    }
}

/// A structure argument, read.
pub fn read_in<T: Pod>(i: In<T>) -> Result<T, Error> {
    read(i.addr)
}

/// An optional structure argument, read (`default` when none was given).
pub fn read_in_or<T: Pod>(i: InOpt<T>, default: T) -> Result<T, Error> {
    i.0.map_or(Ok(default), read_in)
}

/// A structure argument, filled.
pub fn write_out<T: Pod>(o: Out<T>, value: &T) -> Result<(), Error> {
    write(o.addr, value)
}

/// A text argument, copied in (at most `max` bytes, UTF-8).
pub fn read_text(s: Str, max: usize) -> Result<alloc::string::String, Error> {
    read_str(s.0.addr, s.0.len, max)
}

/// A bytes argument, copied in (at most `max` bytes).
pub fn read_arg_bytes(b: Bytes, max: usize) -> Result<alloc::vec::Vec<u8>, Error> {
    read_bytes(b.0.addr, b.0.len, max)
}
