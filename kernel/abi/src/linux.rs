//! The Linux personality's part of the kernel interface (seed 003's
//! process network): a Linux process's system call is a rendezvous the
//! kernel makes on its behalf with the process's supervisor (監督プロセス),
//! which serves it, or calls the servers that do, while the process waits
//! with its registers in its frame. What the supervisor may then do to the
//! waiting process (read and write its memory and registers, map memory
//! into it, end the call with a return value, fork it) is here.
//!
//! A few calls touch only the caller's own kernel state (its identity, its
//! clock, its address space, its thread pointer): the kernel serves those
//! itself, without a rendezvous ([`KERNEL_SERVED`]).

/// Entries of a supervisor's port on which the kernel delivers.
pub mod entry {
    /// A system call: the message is a [`super::LinuxCall`].
    pub const SYSCALL: u64 = 0;
    /// An exception the process cannot go on from by itself (a fault that is
    /// not demand paging, an invalid instruction, a division by zero...):
    /// the message is a [`super::LinuxFault`]. The supervisor delivers a
    /// signal (changing the registers) and returns, or ends the process.
    pub const FAULT: u64 = 1;
    /// The process stopped on its way back to user mode because its
    /// supervisor asked (`linux_attention`): signals may be delivered now.
    /// The message is a [`super::LinuxCall`] with `nr` = [`super::NO_CALL`];
    /// `args[0]`, if it has [`super::RESTART_MARK`], is the number of a
    /// call the kernel served and gave up for this stop with ERESTARTSYS
    /// in rax (a pipe's wait): the supervisor restarts it (under
    /// SA_RESTART, or without a handler) or fails it with EINTR.
    pub const ATTENTION: u64 = 2;
    pub const ALL: u64 = (1 << SYSCALL) | (1 << FAULT) | (1 << ATTENTION);
}

/// `LinuxCall::nr` of an attention stop: no system call.
pub const NO_CALL: u64 = u64::MAX;

/// The largest Linux pid (Linux's PID_MAX_LIMIT).
pub const PID_MAX: u64 = 4 * 1024 * 1024;

/// Marks a call number in an attention stop's `args[0]`.
pub const RESTART_MARK: u64 = 1 << 63;

record! {
    /// A Linux system call as the supervisor receives it (the first 64 bytes of
    /// the message, delivered inline by `acc`).
    #[derive(PartialEq, Eq)]
    pub struct LinuxCall {
        pub nr: u64,
        pub args: [u64; 6],
        /// The process's Linux pid (as its supervisor set it).
        pub pid: u64,
    }
}

record! {
    /// An exception of a Linux process.
    #[derive(PartialEq, Eq)]
    pub struct LinuxFault {
        /// The x86 exception vector (14: page fault, 6: invalid opcode, ...).
        pub vector: u64,
        pub error_code: u64,
        /// CR2 for a page fault.
        pub address: u64,
        pub rip: u64,
        pub pid: u64,
    }
}

record! {
    /// The general registers, in the order the kernel's trap frame keeps them
    /// (lowest address first; the system-call arguments `rdi .. r9`
    /// contiguous and in order).
    #[derive(PartialEq, Eq)]
    pub struct GeneralRegs {
        pub r15: u64,
        pub r14: u64,
        pub r13: u64,
        pub r12: u64,
        pub r11: u64,
        pub rbp: u64,
        pub rbx: u64,
        pub rcx: u64,
        pub rax: u64,
        pub rdi: u64,
        pub rsi: u64,
        pub rdx: u64,
        pub r10: u64,
        pub r8: u64,
        pub r9: u64,
    }
}

record! {
    /// A waiting Linux process's user registers (`caller_regs`,
    /// `caller_set_regs`): the general ones (reached as if they were its own
    /// fields: `regs.rax`), then these.
    #[derive(PartialEq, Eq)]
    pub struct Regs {
        pub general: GeneralRegs,
        pub rip: u64,
        pub rflags: u64,
        pub rsp: u64,
        /// The thread pointer (`arch_prctl(ARCH_SET_FS)`).
        pub fs_base: u64,
    }
}

impl core::ops::Deref for Regs {
    type Target = GeneralRegs;
    fn deref(&self) -> &GeneralRegs {
        &self.general
    }
}

impl core::ops::DerefMut for Regs {
    fn deref_mut(&mut self) -> &mut GeneralRegs {
        &mut self.general
    }
}

record! {
    /// A nested call on behalf of a waiting Linux process (`call_for`): the
    /// message or the reply buffer (or both) lies in the process's memory, so
    /// the server that serves it copies the data once, straight between the
    /// process and its own memory (seed 003: the kernel primitive that writes
    /// into the pending caller's buffer).
    #[derive(PartialEq, Eq)]
    pub struct CallFor {
        /// The supervisor's held call of the waiting process.
        pub rid: u64,
        pub server: u64,
        pub entry: u64,
        pub msg_addr: u64,
        pub msg_len: u64,
        pub reply_addr: u64,
        pub reply_len: u64,
        /// `MSG_IN_CALLER`, `REPLY_IN_CALLER`: which range is the process's
        /// (the other is the supervisor's own).
        pub flags: u64,
    }
}

pub const MSG_IN_CALLER: u64 = 1;
pub const REPLY_IN_CALLER: u64 = 2;

/// `caller_map` flags (Linux's values). MAP_SHARED: the memory stays
/// shared with the children the process forks.
pub const MAP_SHARED: u64 = 0x01;
pub const MAP_FIXED: u64 = 0x10;
/// `caller_map` flag (Linux's value): anonymous memory (/dev/zero), not
/// the copy of a file's bytes the supervisor fills in.
pub const MAP_ANONYMOUS: u64 = 0x20;

/// A bit the kernel sets in `LinuxFault::error_code` above the CPU's
/// bits: the page lies wholly past the end of the file the mapping maps
/// (`caller_map_file`), which Linux makes SIGBUS (BUS_ADRERR).
pub const FAULT_PAST_END: u64 = 1 << 32;

/// `caller_map_file`'s limits (Linux's prot bits): the mapping may be
/// made writable, executable, by a later mprotect.
pub const MAY_WRITE: u64 = 2;
/// Bytes one `caller_file_written` carries at most (a supervisor passes
/// a longer write in parts).
pub const FILE_WRITTEN_MAX: usize = 64 * 1024;
pub const MAY_EXEC: u64 = 4;

/// The most bytes one `caller_vm_copy` copies: a long
/// process_vm_readv or process_vm_writev is several calls, so that no
/// call holds the kernel for long.
pub const VM_COPY_MAX: u64 = 256 * 1024;

/// Words of a `proc_maps` record: start, end (exclusive), flags, and how
/// many of its pages are present.
pub const MAPS_WORDS: usize = 4;
/// `proc_maps` flags of a mapping: the process may read, write or
/// execute it; its frames are shared (MAP_SHARED, SysV); it is the copy of
/// a file's bytes; the main thread's stack; a program segment; the
/// program break's memory; locked.
pub const MAPS_READ: u64 = 1;
pub const MAPS_WRITE: u64 = 2;
pub const MAPS_EXEC: u64 = 4;
pub const MAPS_SHARED: u64 = 8;
pub const MAPS_FILE: u64 = 16;
pub const MAPS_STACK: u64 = 32;
pub const MAPS_PROGRAM: u64 = 64;
pub const MAPS_BRK: u64 = 128;
/// Locked (mlock, mlockall, MAP_LOCKED): VmLck and smaps' Locked.
pub const MAPS_LOCKED: u64 = 256;

/// The argument of mlock, munlock and mlock2 (none has a sixth) the kernel
/// sets before it sends them to the supervisor: 1 if every page of the
/// range is mapped, else 0. The supervisor keeps the locking bookkeeping
/// and RLIMIT_MEMLOCK, the kernel knows the mappings; with this the
/// supervisor answers ENOMEM for a hole in Linux's order of checks.
pub const MLOCK_MAPPED_ARG: usize = 5;
/// rt_sigprocmask as the supervisor gets it: the set the process passed,
/// already read from its memory in the kernel (in the caller's own space,
/// no walk of its page tables for the supervisor), in argument
/// `SIGSET_ARG`, when argument `SIGSET_READ_ARG` is `SIGSET_READ`. The
/// kernel writes both (they are no arguments of the Linux call); a set it
/// could not read is left to the supervisor (EFAULT).
pub const SIGSET_ARG: usize = 4;
pub const SIGSET_READ_ARG: usize = 5;
pub const SIGSET_READ: u64 = 1;
/// The bit of a rendezvous's Linux tid (`LinuxCall::pid`,
/// `LinuxFault::pid`) saying that the kernel changed the thread's signal
/// mask (a kernel-served rt_sigprocmask) since the supervisor last read or
/// set it (`linux_sigmask`): the supervisor reads it again before it
/// relies on it. Linux tids stay far below it (`PID_MAX`).
pub const SIGMASK_NEWS: u64 = 1 << 63;

/// Signal masks and pending sets the kernel keeps for the supervisor
/// (`linux_sigmask(op, pid, tid, value)`; `pid` is the Linux process's
/// Tessera pid, which the caller must serve; `tid` a Linux tid of it).
pub mod sigmask {
    /// → thread `tid`'s mask.
    pub const GET: u64 = 1;
    /// Thread `tid`'s mask becomes `value` (never SIGKILL, SIGSTOP) → 0.
    /// Made only while the thread waits in the supervisor: the kernel
    /// changes it only in the thread's own calls.
    pub const SET: u64 = 2;
    /// The process's pending signals are `value` (the process's and its
    /// threads' own, or more) → thread `tid`'s mask read after (0 for tid
    /// 0). A sender publishes first, then reads the mask; a thread's
    /// kernel-served rt_sigprocmask changes the mask first, then reads
    /// the pending set: one of the two sees the other.
    pub const PENDING: u64 = 3;
    /// SIGKILL and SIGSTOP: never blocked.
    pub const UNBLOCKABLE: u64 = (1 << 8) | (1 << 18);
}

/// `caller_share` flag (Linux's shmat value): the segment is attached
/// read-only.
pub const SHM_RDONLY: u64 = 0o10000;

/// Linux x86_64 system-call numbers the kernel serves itself.
pub mod nr {
    pub const NANOSLEEP: u64 = 35;
    pub const TIME: u64 = 201;
    pub const CLOCK_GETRES: u64 = 229;
    pub const CLOCK_NANOSLEEP: u64 = 230;
    pub const MMAP: u64 = 9;
    pub const MPROTECT: u64 = 10;
    pub const MUNMAP: u64 = 11;
    pub const BRK: u64 = 12;
    pub const SCHED_YIELD: u64 = 24;
    pub const GETPID: u64 = 39;
    /// Served by the kernel once the shared server has set the process's
    /// parent (`linux_set_ppid`), sent to the supervisor before.
    pub const GETPPID: u64 = 110;
    pub const GETTIMEOFDAY: u64 = 96;
    pub const ARCH_PRCTL: u64 = 158;
    pub const GETTID: u64 = 186;
    /// Served by the kernel unless it changes whether a pending signal
    /// is blocked; then sent to the supervisor with its set read
    /// (`SIGSET_READ`).
    pub const RT_SIGPROCMASK: u64 = 14;
    pub const FUTEX: u64 = 202;
    pub const SET_TID_ADDRESS: u64 = 218;
    pub const CLOCK_GETTIME: u64 = 228;
    pub const MREMAP: u64 = 25;
    pub const MINCORE: u64 = 27;
    pub const MADVISE: u64 = 28;
    /// Checked by the supervisor (RLIMIT_MEMLOCK, its count of locked
    /// bytes), then marked on the regions by the kernel.
    pub const MLOCK: u64 = 149;
    pub const MUNLOCK: u64 = 150;
    pub const MLOCKALL: u64 = 151;
    pub const MUNLOCKALL: u64 = 152;
    pub const MLOCK2: u64 = 325;
    /// Served by the kernel on a descriptor bound to a kernel pipe
    /// ([`pipe`]), sent to the supervisor otherwise.
    pub const READ: u64 = 0;
    pub const WRITE: u64 = 1;
    pub const READV: u64 = 19;
    pub const WRITEV: u64 = 20;
    /// Served by the kernel on a descriptor bound to a regular file's
    /// kernel cache when the pages are there, sent to the supervisor
    /// otherwise.
    pub const PREAD64: u64 = 17;
    /// Served by the kernel on a descriptor bound to a regular file's
    /// kernel cache with `pipe::FILE_STAT` while the file server has said
    /// the file's attributes there (newfstatat with an empty path and
    /// AT_EMPTY_PATH only), sent to the supervisor otherwise.
    pub const FSTAT: u64 = 5;
    pub const NEWFSTATAT: u64 = 262;
    /// Served by the kernel on a descriptor bound to an AF_UNIX stream
    /// socket's end, with no address and no flags.
    pub const SENDTO: u64 = 44;
    pub const RECVFROM: u64 = 45;
    pub const SENDMSG: u64 = 46;
    pub const RECVMSG: u64 = 47;
}

/// The calls the kernel serves without the supervisor, and why they may be:
/// each touches only the caller's own kernel state. `mmap` only when
/// anonymous (a file mapping needs the file: the supervisor's). `futex`
/// and `set_tid_address` touch only user memory and the waits of the
/// caller's computations. `getppid` reads the parent the personality's
/// shared server keeps in the caller's record (`linux_set_ppid`), itself
/// setting it there, in the same step, whenever it changes the parent; a
/// process whose record holds none yet is answered by its supervisor.
/// `rt_sigprocmask` changes the thread's mask the kernel keeps (the
/// supervisor reads it at its next rendezvous, `SIGMASK_NEWS`) unless it
/// blocks or unblocks a signal the supervisor published as pending
/// (`sigmask::PENDING`): a delivery or a move to another thread, for the
/// supervisor.
pub const KERNEL_SERVED: [u64; 21] = [
    nr::NANOSLEEP,
    nr::TIME,
    nr::CLOCK_GETRES,
    nr::CLOCK_NANOSLEEP,
    nr::MMAP,
    nr::MPROTECT,
    nr::MUNMAP,
    nr::MREMAP,
    nr::MINCORE,
    nr::MADVISE,
    nr::BRK,
    nr::SCHED_YIELD,
    nr::GETPID,
    nr::GETTIMEOFDAY,
    nr::ARCH_PRCTL,
    nr::GETTID,
    nr::CLOCK_GETTIME,
    nr::FUTEX,
    nr::SET_TID_ADDRESS,
    nr::GETPPID,
    nr::RT_SIGPROCMASK,
];

/// Kernel-served calls that neither wait nor stop the process and change
/// no register but rax: their system-call frame may leave out the
/// callee-saved registers, as a native call's does (nobody reads them).
/// Should the supervisor ask the process to stop meanwhile, the stop waits
/// for the interrupt that follows at once (`SHORT_FRAME_CALLS`' users).
pub const SHORT_FRAME: [u64; 6] = [
    nr::GETPID,
    nr::GETTID,
    nr::CLOCK_GETTIME,
    nr::CLOCK_GETRES,
    nr::GETTIMEOFDAY,
    nr::TIME,
];

/// [`SHORT_FRAME`] as a bitmap of call numbers below 512, which the
/// system-call entry tests with one instruction.
pub static SHORT_FRAME_CALLS: [u64; 8] = {
    let mut bits = [0u64; 8];
    let mut i = 0;
    while i < SHORT_FRAME.len() {
        let n = SHORT_FRAME[i];
        assert!(n < 512);
        bits[(n / 64) as usize] |= 1 << (n % 64);
        i += 1;
    }
    bits
};

/// Whether call `n` takes the short frame.
#[inline(always)]
pub fn takes_short_frame(n: u64) -> bool {
    n < 512 && SHORT_FRAME_CALLS[(n / 64) as usize] >> (n % 64) & 1 != 0
}

/// The calls the kernel serves when their descriptor is bound to a kernel
/// pipe in the caller's table of kernel-served descriptors: they touch
/// only the pipe and the caller's memory. Every other call on such a
/// descriptor (close, dup, fcntl, fstat, poll) goes to the supervisor,
/// whose descriptor table stays the truth and which keeps the kernel's
/// bindings in step with it (`linux_pipe`).
pub const KERNEL_SERVED_ON_PIPES: [u64; 4] = [nr::READ, nr::WRITE, nr::READV, nr::WRITEV];

/// The calls the kernel serves when their descriptor is bound to a
/// regular file's kernel cache ([`pipe::op::BIND_FILE`]) and every page
/// they read is present there; anything else (a miss, a hole, a read of
/// more than 64 pages, a negative offset) goes to the supervisor. fstat,
/// and newfstatat of the descriptor itself (an empty path, AT_EMPTY_PATH),
/// when the binding has [`pipe::FILE_STAT`] and the file server keeps the
/// file's `struct stat` in the cache (`file_cache_attr`), which it
/// forgets before answering any change of the file.
pub const KERNEL_SERVED_ON_FILES: [u64; 3] = [nr::PREAD64, nr::FSTAT, nr::NEWFSTATAT];

/// The calls the kernel serves when their descriptor is bound to an end
/// of an AF_UNIX stream socket pair ([`pipe::op::SOCKPAIR`]), which reads
/// one kernel pipe and writes another: those of [`KERNEL_SERVED_ON_PIPES`],
/// and sendto, recvfrom, sendmsg and recvmsg (MSG_DONTWAIT, MSG_NOSIGNAL;
/// ancillary data is not sent). A write with no reader left (its SIGPIPE)
/// and MSG_PEEK or MSG_OOB go to the supervisor.
pub const KERNEL_SERVED_ON_SOCKETS: [u64; 8] = [
    nr::READ,
    nr::WRITE,
    nr::READV,
    nr::WRITEV,
    nr::SENDTO,
    nr::RECVFROM,
    nr::SENDMSG,
    nr::RECVMSG,
];

/// Pipes the kernel serves (`linux_pipe`).
pub mod pipe {
    /// Operations of `linux_pipe(op, pid, a, b, c)`; `pid` is the Linux
    /// process's Tessera pid, which the caller must serve.
    pub mod op {
        /// A new pipe, its read end bound at descriptor `a` and its write
        /// end at `b` (what was there before goes), O_NONBLOCK if `c` has
        /// it, both close-on-exec if `c` has O_CLOEXEC → the pipe's
        /// resource id.
        ///
        /// A close-on-exec descriptor is never bound in the new program of
        /// an exec: it is held, out of the program's reach, until the
        /// supervisor's `CLOSE` of its number (or the process's end).
        pub const CREATE: u64 = 1;
        /// Descriptor `b` leads to what descriptor `a` leads to (the same
        /// open file description: flags shared), close-on-exec if `c` has
        /// O_CLOEXEC → 0.
        pub const DUP: u64 = 2;
        /// Descriptor `a` is no longer bound, nor held after an exec → 0
        /// (NotFound if it was neither).
        pub const CLOSE: u64 = 3;
        /// The description at `a` gets O_NONBLOCK as `b` has it → 0.
        pub const SETFL: u64 = 4;
        /// → the state of descriptor `a`'s pipe ([`super::state`]).
        pub const STATE: u64 = 5;
        /// An event on the caller's port entry `b` at the next change of
        /// descriptor `a`'s pipe (bytes in or out, an end closed) → 0.
        pub const WATCH: u64 = 6;
        /// `F_SETPIPE_SZ`: the capacity of `a`'s pipe becomes `b` bytes
        /// (rounded up to a power of two pages) → the new capacity.
        /// Busy if what it holds would not fit, Denied above the most.
        pub const RESIZE: u64 = 7;
        /// → the resource id of descriptor `a`'s pipe.
        pub const ID: u64 = 8;
        /// Descriptor `a` leads to a regular file whose kernel cache
        /// (`file_cache`) is `b`, granted to the caller (Denied if not;
        /// what was there before goes) → 0. The kernel serves its
        /// pread64 from the pages present (`KERNEL_SERVED_ON_FILES`);
        /// close-on-exec if `c` has O_CLOEXEC; its fstat from the file's
        /// attributes in the cache too if `c` has [`super::FILE_STAT`].
        pub const BIND_FILE: u64 = 9;
        /// Descriptor `a` becomes close-on-exec if `b` has FD_CLOEXEC, and
        /// stops being so if not (F_SETFD) → 0 (NotFound if not bound).
        pub const SETFD: u64 = 10;
        /// An AF_UNIX stream socket pair of two new pipes: one end bound
        /// at descriptor `a`, reading the first pipe and writing the
        /// second, the other at `b`, the reverse; O_NONBLOCK and
        /// O_CLOEXEC if `c` has them → the first pipe's resource id. On a socket's descriptor
        /// STATE tells of the pipe it reads (`b` 0) or writes (`b` 1),
        /// WATCH watches both, SETFL sets both, ID is its first pipe's.
        pub const SOCKPAIR: u64 = 11;
        /// shutdown(`a`, `b`) of a socket's descriptor: `b` 0 (SHUT_RD)
        /// lets go of the pipe it reads, 1 (SHUT_WR) of the one it
        /// writes (the peer reads EOF), 2 both → 0. For every descriptor
        /// and process sharing the description, as Linux's.
        pub const SHUTDOWN: u64 = 12;
        /// splice, tee and vmsplice, served by the supervisor: up to `c`
        /// bytes of descriptor `a`'s pipe (a socket's end: the pipe it
        /// reads) into the caller's own memory at `b`, taken → the bytes
        /// (0: empty and no writer left). Never waits: Busy when empty.
        /// With `b` 0 the bytes are dropped, not copied (a splice takes
        /// what it peeked and its destination accepted).
        pub const TAKE: u64 = 13;
        /// `c` bytes of the caller's memory at `b` into descriptor `a`'s
        /// pipe (a socket's end: the pipe it writes) → the bytes placed:
        /// at most PIPE_BUF go whole or not at all, more as many as fit.
        /// Never waits: Busy when none fit, Deadlock when no reader is
        /// left (the supervisor's EPIPE and SIGPIPE).
        pub const PUT: u64 = 14;
        /// As TAKE, the bytes left in the pipe (tee, and a splice that
        /// takes only what its destination accepted).
        pub const PEEK: u64 = 15;
    }

    /// In `op::BIND_FILE`'s `c`: the attributes the file server keeps in
    /// the cache are what fstat of the descriptor gives, byte for byte
    /// (not so for a mounted file system's file, whose st_dev the
    /// supervisor sets).
    pub const FILE_STAT: u64 = 1 << 32;

    /// The word `op::STATE` returns.
    pub mod state {
        /// Bytes held (the low 32 bits).
        pub const HELD: u64 = 0xffff_ffff;
        /// A read end is still open.
        pub const READERS: u64 = 1 << 32;
        /// A write end is still open.
        pub const WRITERS: u64 = 1 << 33;
        /// The descriptor is the write end.
        pub const WRITE_END: u64 = 1 << 34;
        pub const NONBLOCK: u64 = 1 << 35;
        /// A page of the capacity is free (Linux's POLLOUT).
        pub const ROOM: u64 = 1 << 36;
        /// A socket's side asked of is shut down (no other bit is set).
        pub const SHUT: u64 = 1 << 37;
        /// The capacity in pages, from this bit on.
        pub const PAGES_SHIFT: u32 = 40;
    }

    /// Linux's default capacity and its most for F_SETPIPE_SZ.
    pub const CAPACITY: usize = 65_536;
    pub const MAX_CAPACITY: usize = 1 << 20;
    /// Writes of at most this many bytes are atomic.
    pub const PIPE_BUF: usize = 4096;
}

/// `SpawnOptions::personality`.
pub const NATIVE: u64 = 0;
pub const LINUX: u64 = 1;
