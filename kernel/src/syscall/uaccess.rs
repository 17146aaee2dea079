//! The typed user-memory access layer. Every pointer and length a process
//! passes to the kernel goes through here: the range must lie in user space
//! (no overflow, nothing of the kernel half), and the copy itself catches
//! page faults, so a bad pointer is an `Error::Fault`, never a kernel fault.
//! Pages not yet present in a demand-paged region are faulted in on the way.

use crate::arch::x86_64::fallible_copy;
use crate::vm::USER_END;
use abi::Error;

/// Largest single copy the kernel accepts from or to a process.
pub const MAX_COPY: usize = 1 << 20;

/// Inlined: every system call with a buffer checks it, the rendezvous
/// path several times.
#[inline(always)]
pub fn check_range(addr: u64, len: usize) -> Result<(), Error> {
    const { assert!(MAX_COPY as u64 <= USER_END) };
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

pub fn copy_from_user(dst: &mut [u8], src: u64) -> Result<(), Error> {
    check_range(src, dst.len())?;
    // SAFETY: the destination is a kernel buffer we own; faults on the user
    // source are caught.
    unsafe { fallible_copy(dst.as_mut_ptr(), src as *const u8, dst.len()) }.map_err(|_| Error::Fault)
}

/// `copy_from_user` into `len` bytes at `dst`, which need not be
/// initialised (a buffer the rendezvous path would otherwise clear first).
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
#[inline(always)]
pub unsafe fn copy_from_user_raw(dst: *mut u8, src: u64, len: usize) -> Result<(), Error> {
    check_range(src, len)?;
    // SAFETY: the caller vouches for the destination; faults on the user
    // source are caught.
    unsafe { fallible_copy(dst, src as *const u8, len) }.map_err(|_| Error::Fault)
}

/// Writes six words to user memory at `dst` (no copy through memory).
#[inline(always)]
pub fn write_words(dst: u64, words: [u64; 6]) -> Result<(), Error> {
    check_range(dst, 6 * 8)?;
    // SAFETY: the destination was checked to be user memory of the current
    // space; faults are caught.
    unsafe { crate::arch::x86_64::fallible_store6(dst, words) }.map_err(|_| Error::Fault)
}

pub fn copy_to_user(dst: u64, src: &[u8]) -> Result<(), Error> {
    check_range(dst, src.len())?;
    // SAFETY: the destination was checked to be user memory of the current
    // space; faults are caught.
    unsafe { fallible_copy(dst as *mut u8, src.as_ptr(), src.len()) }.map_err(|_| Error::Fault)
}

/// Plain data that may be copied to and from user memory byte for byte.
///
/// # Safety
/// Every bit pattern must be a valid value, and there must be no padding
/// whose content would leak kernel memory.
pub unsafe trait Pod: Copy + Default {}
// SAFETY: integers and these repr(C) structs of u64 fields qualify.
unsafe impl Pod for u64 {}
unsafe impl Pod for abi::SpawnOptions {}
unsafe impl Pod for abi::Clock {}
unsafe impl Pod for abi::ProcInfo {}
unsafe impl Pod for abi::SysInfo {}
unsafe impl Pod for abi::ResInfo {}
unsafe impl Pod for abi::SegmentInfo {}
unsafe impl Pod for abi::Received {}
unsafe impl Pod for abi::ContainerStats {}
unsafe impl Pod for abi::AccInfo {}
unsafe impl Pod for abi::BatchEntry {}
unsafe impl Pod for abi::ForwardEntry {}
unsafe impl Pod for [u64; 2] {}

pub fn read<T: Pod>(addr: u64) -> Result<T, Error> {
    let mut value = T::default();
    // SAFETY: T is Pod, so viewing it as bytes and filling them is sound.
    let bytes = unsafe { core::slice::from_raw_parts_mut(&mut value as *mut T as *mut u8, core::mem::size_of::<T>()) };
    copy_from_user(bytes, addr)?;
    Ok(value)
}

/// Reads a list of `n` values at `addr` into `buf` in one copy and returns
/// them. `buf` is not cleared first: only the entries the copy wrote are
/// read.
pub fn read_list<T: Pod, const MAX: usize>(
    buf: &mut core::mem::MaybeUninit<[T; MAX]>,
    addr: u64,
    n: usize,
) -> Result<&[T], Error> {
    if n > MAX {
        return Err(Error::Invalid);
    }
    // SAFETY: the buffer has room for MAX values, n at most.
    unsafe { copy_from_user_raw(buf.as_mut_ptr().cast(), addr, n * core::mem::size_of::<T>()) }?;
    // SAFETY: the copy wrote the first n values whole, and any bytes make a
    // valid T (it is Pod).
    Ok(unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<T>(), n) })
}

pub fn write<T: Pod>(addr: u64, value: &T) -> Result<(), Error> {
    // SAFETY: T is Pod: all its bytes are initialised.
    let bytes = unsafe { core::slice::from_raw_parts(value as *const T as *const u8, core::mem::size_of::<T>()) };
    copy_to_user(addr, bytes)
}
