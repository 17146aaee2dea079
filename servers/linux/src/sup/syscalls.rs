//! The system-call table: each Linux call the supervisor serves, by
//! number, and the small ones served right here (the system's identity,
//! limits, usage, random bytes, poll and select, futex, file mappings).
//! A call served nowhere answers ENOSYS (the kernel counts those by
//! number for the inspector).

use super::fdtable::Kind;
use super::files::AT_FDCWD;
use super::{Hold, Out, Sup, ret};
use crate::proto::{ctl, word};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::caps;
use linuxabi::errno;
use linuxabi::nr;
use linuxabi::signal as sig;
use linuxabi::structs::{self as st, SysInfo};
use tessera_api::fs::SetAttr;
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// What `uname` says.
pub const RELEASE: &str = "6.1.0-tessera";
pub const VERSION: &str = "#1 SMP Tessera";

/// A poll the supervisor holds until its registration wakes.
#[derive(Clone, Debug)]
pub struct PollReq {
    /// (fd, events) per entry, as asked.
    pub fds: Vec<(i64, u64)>,
    pub deadline: u64,
    pub kind: PollKind,
}

#[derive(Clone, Debug)]
pub enum PollKind {
    /// poll/ppoll: the pollfd array's address.
    Poll { at: u64 },
    /// select/pselect6: nfds, the three sets' addresses, the timeout's
    /// address and whether it is a timeval (select) or a timespec.
    Select {
        nfds: u64,
        sets: [u64; 3],
        timeout: u64,
        timeval: bool,
    },
}

const POLLIN: u64 = 1;
const POLLPRI: u64 = 2;
const POLLOUT: u64 = 4;

/// The CPU-time limit's index among the resource limits.
pub(super) const RLIMIT_CPU: usize = 0;

impl Sup {
    pub(super) fn dispatch(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        self.in_call = true;
        let o = self.dispatch_inner(rid, n, a);
        self.in_call = false;
        o
    }

    fn dispatch_inner(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        let fd = a[0];
        match n {
            nr::READ => self.read(rid, a, None),
            nr::WRITE => self.write(rid, a, None),
            nr::PREAD64 => self.positioned(rid, a, false),
            nr::PWRITE64 => self.positioned(rid, a, true),
            nr::READV => self.vector_io(rid, a, false, None),
            nr::WRITEV => self.vector_io(rid, a, true, None),
            nr::PREADV | nr::PWRITEV if (a[3] as i64) < 0 => ret(Err(errno::EINVAL)),
            nr::PREADV => self.vector_io(rid, a, false, Some(a[3])),
            nr::PWRITEV => self.vector_io(rid, a, true, Some(a[3])),
            nr::PREADV2 | nr::PWRITEV2 => self.vector_io2(rid, a, n == nr::PWRITEV2),
            nr::OPEN => self.open_call(rid, AT_FDCWD as u64, a[0], a[1], a[2]),
            nr::OPENAT => self.open_call(rid, a[0], a[1], a[2], a[3]),
            nr::CREAT => self.open_call(rid, AT_FDCWD as u64, a[0], 0o1101, a[1]),
            nr::CLOSE => ret(self.close_fd(fd)),
            nr::LSEEK => ret(self.lseek(fd, a[1], a[2])),
            nr::STAT => ret(self.stat_call(rid, AT_FDCWD as u64, a[0], a[1], 0)),
            nr::LSTAT => ret(self.stat_call(rid, AT_FDCWD as u64, a[0], a[1], 0x100)),
            nr::NEWFSTATAT => ret(self.stat_call(rid, a[0], a[1], a[2], a[3])),
            nr::FSTAT => ret(self.fstat(rid, fd, a[1])),
            nr::STATX => ret(self.statx(rid, a)),
            nr::ACCESS => ret(self.access(rid, AT_FDCWD as u64, a[0], a[1], 0)),
            nr::FACCESSAT => ret(self.access(rid, a[0], a[1], a[2], 0)),
            nr::FACCESSAT2 => ret(self.access(rid, a[0], a[1], a[2], a[3])),
            nr::GETDENTS64 => ret(self.getdents64(rid, fd, a[1], a[2])),
            nr::MKDIR => ret(self.mkdirat(rid, AT_FDCWD as u64, a[0], a[1])),
            nr::MKDIRAT => ret(self.mkdirat(rid, a[0], a[1], a[2])),
            nr::RMDIR => ret(self.unlinkat(rid, AT_FDCWD as u64, a[0], 0x200)),
            nr::UNLINK => ret(self.unlinkat(rid, AT_FDCWD as u64, a[0], 0)),
            nr::UNLINKAT => ret(self.unlinkat(rid, a[0], a[1], a[2])),
            nr::RENAME => ret(self.two_paths(rid, [AT_FDCWD as u64, a[0], AT_FDCWD as u64, a[1], 0, 0], false)),
            nr::RENAMEAT => ret(self.two_paths(rid, [a[0], a[1], a[2], a[3], 0, 0], false)),
            nr::RENAMEAT2 => ret(self.two_paths(rid, a, false)),
            nr::LINK => ret(self.two_paths(rid, [AT_FDCWD as u64, a[0], AT_FDCWD as u64, a[1], 0, 0], true)),
            nr::LINKAT => ret(self.two_paths(rid, a, true)),
            nr::MEMFD_CREATE => ret(self.memfd_create(rid, a[0], a[1])),
            nr::NAME_TO_HANDLE_AT => ret(self.name_to_handle_at(rid, a)),
            nr::OPEN_BY_HANDLE_AT => ret(self.open_by_handle_at(rid, a)),
            nr::SYMLINK => ret(self.symlinkat(rid, a[0], AT_FDCWD as u64, a[1])),
            nr::SYMLINKAT => ret(self.symlinkat(rid, a[0], a[1], a[2])),
            nr::READLINK => ret(self.readlinkat(rid, AT_FDCWD as u64, a[0], a[1], a[2])),
            nr::READLINKAT => ret(self.readlinkat(rid, a[0], a[1], a[2], a[3])),
            nr::CHMOD => ret(self.chmod_at(rid, AT_FDCWD as u64, a[0], a[1], 0)),
            nr::FCHMODAT => ret(self.chmod_at(rid, a[0], a[1], a[2], 0)),
            nr::FCHMOD => ret(self.setattr_fd(fd, &mode_attr(a[1]))),
            nr::CHOWN => ret(self.chown_at(rid, AT_FDCWD as u64, a[0], a[1], a[2], 0)),
            nr::LCHOWN => ret(self.chown_at(rid, AT_FDCWD as u64, a[0], a[1], a[2], 0x100)),
            nr::FCHOWNAT => ret(self.chown_at(rid, a[0], a[1], a[2], a[3], a[4])),
            nr::FCHOWN => ret(self.fchown(fd, a[1], a[2])),
            nr::SETXATTR | nr::LSETXATTR | nr::FSETXATTR => {
                let on = xattr_on(n, nr::SETXATTR, a[0]);
                ret(self.setxattr(rid, on, a[1], a[2], a[3], a[4]))
            }
            nr::GETXATTR | nr::LGETXATTR | nr::FGETXATTR => {
                let on = xattr_on(n, nr::GETXATTR, a[0]);
                ret(self.getxattr(rid, on, a[1], a[2], a[3]))
            }
            nr::LISTXATTR | nr::LLISTXATTR | nr::FLISTXATTR => {
                let on = xattr_on(n, nr::LISTXATTR, a[0]);
                ret(self.listxattr(rid, on, a[1], a[2]))
            }
            nr::REMOVEXATTR | nr::LREMOVEXATTR | nr::FREMOVEXATTR => {
                let on = xattr_on(n, nr::REMOVEXATTR, a[0]);
                ret(self.removexattr(rid, on, a[1]))
            }
            nr::UTIMENSAT => ret(self.utimensat(rid, a)),
            nr::FUTIMESAT => ret(self.futimesat(rid, a[0], a[1], a[2])),
            nr::TRUNCATE => ret(self.truncate_path(rid, a[0], a[1])),
            nr::FTRUNCATE => {
                let r = self.ftruncate(fd, a[1]);
                if r.is_ok() {
                    self.fd_resized(rid, fd, true);
                }
                ret(r)
            }
            nr::FALLOCATE => {
                let r = self.fallocate(fd, a[1], a[2], a[3]);
                // Past its end, it grows the file its mappings may map.
                if r.is_ok() && !self.mapped_files.is_empty() {
                    self.fd_resized(rid, fd, false);
                }
                ret(r)
            }
            nr::FSYNC | nr::FDATASYNC => ret(self.fsync(fd)),
            nr::SYNC => {
                let _ = self.fs.sync();
                Out::Ret(0)
            }
            nr::SYNCFS => ret(self.fds.get(fd).map(|_| 0).and_then(|_| self.fs.sync().map(|_| 0))),
            nr::STATFS => ret(self.statfs_path(rid, a[0], a[1])),
            nr::FSTATFS => ret(self.fstatfs(rid, fd, a[1])),
            nr::CHDIR => ret(self
                .read_path(rid, a[0])
                .and_then(|p| self.chdir_to(AT_FDCWD as u64, &p))),
            nr::FCHDIR => ret(self.fchdir(fd)),
            nr::GETCWD => ret(self.getcwd(rid, a[0], a[1])),
            nr::UMASK => {
                let old = self.umask;
                self.umask = a[0] as u32 & 0o777;
                Out::Ret(old as u64)
            }
            nr::DUP => ret(self.fds.ofd(fd).and_then(|o| {
                let l = self.limits[7][0].min(1 << 20) as usize;
                self.fds.insert(o, false, l).map(|n| n as u64)
            })),
            nr::DUP2 => ret(self.dup3(a[0], a[1], 0, true)),
            nr::DUP3 => ret(self.dup3(a[0], a[1], a[2], false)),
            nr::FCNTL if super::locks::is_lock_cmd(a[1]) => self.fcntl_lock(rid, n, a),
            nr::FCNTL => ret(self.fcntl(rid, fd, a[1], a[2])),
            nr::PIPE => ret(self.kpipe2(rid, a[0], 0)),
            nr::PIPE2 => ret(self.kpipe2(rid, a[0], a[1])),
            nr::IOCTL => self.ioctl(rid, fd, a[1], a[2]),
            nr::SENDFILE => self.sendfile_call(rid, a),
            nr::COPY_FILE_RANGE => ret(self.copy_file_range(rid, a)),
            nr::SPLICE => self.splice(rid, a),
            nr::TEE => self.tee(rid, a),
            nr::VMSPLICE => self.vmsplice(rid, a),
            nr::FADVISE64 => ret(self.fadvise(fd, a[3])),
            nr::READAHEAD => ret(self.readahead(fd)),
            nr::SYNC_FILE_RANGE => ret(self.sync_file_range(fd, a[1], a[2], a[3])),
            nr::CLOSE_RANGE => ret(self.close_range(a[0], a[1], a[2])),
            nr::FLOCK => self.flock(rid, n, a),
            nr::POLL => self.poll(rid, a[0], a[1], poll_timeout_ms(a[2]), 0),
            nr::PPOLL => {
                if a[3] != 0 && a[4] != 8 {
                    return ret(Err(errno::EINVAL));
                }
                let t = match self.timespec_deadline(rid, a[2]) {
                    Ok(t) => t,
                    Err(e) => return ret(Err(e)),
                };
                self.poll(rid, a[0], a[1], t, a[3])
            }
            nr::SELECT => self.select(rid, a, true),
            nr::PSELECT6 => self.select(rid, a, false),
            // processes
            // (fork and vfork: clone with SIGCHLD as the exit signal)
            nr::FORK => self.fork(rid, false, 0, sig::SIGCHLD as u64, 0, 0, 0),
            nr::VFORK => self.fork(
                rid,
                true,
                0,
                super::procs::CLONE_VM | super::procs::CLONE_VFORK | sig::SIGCHLD as u64,
                0,
                0,
                0,
            ),
            nr::CLONE => self.clone(rid, a),
            nr::EXECVE => self.execve(rid, a, None),
            nr::EXECVEAT => self.execve(rid, [a[1], a[2], a[3], 0, 0, 0], Some((a[0], a[4]))),
            nr::EXIT => self.exit_thread(rid, a[0]),
            nr::EXIT_GROUP => self.exit_group(rid, a[0]),
            nr::WAIT4 => self.wait4(rid, a),
            nr::WAITID => self.waitid(rid, a),
            nr::GETPPID => ret(self.ctl1(&[ctl::GETPPID, self.pid as u64, self.tpid])),
            nr::GETPGRP => ret(self.ctl1(&[ctl::GETPGID, self.pid as u64, 0])),
            nr::GETPGID => ret(self.ctl1(&[ctl::GETPGID, self.pid as u64, a[0] as u32 as u64])),
            nr::SETPGID => ret(self.setpgid(a[0], a[1])),
            nr::GETSID => ret(self.ctl1(&[ctl::GETSID, self.pid as u64, a[0] as u32 as u64])),
            nr::SETSID => ret(self.ctl1(&[ctl::SETSID, self.pid as u64])),
            nr::SET_ROBUST_LIST => ret(self.set_robust_list(a[0], a[1])),
            nr::GET_ROBUST_LIST => ret(self.get_robust_list(rid, a[0], a[1], a[2])),
            nr::KILL => ret(self.send(a[0] as i32 as i64, a[1], 0, 0)),
            nr::TKILL => ret(self.tkill(a[0] as i32 as i64, a[0] as i32 as i64, a[1])),
            nr::TGKILL => ret(self.tkill(a[0] as i32 as i64, a[1] as i32 as i64, a[2])),
            nr::RT_SIGQUEUEINFO => ret(self.sigqueue(rid, a[0] as i32 as i64, a[1], a[2])),
            nr::RT_TGSIGQUEUEINFO => ret(self.tgsigqueue(rid, a)),
            nr::KCMP => ret(self.kcmp(a)),
            nr::UNSHARE => ret(self.unshare(a[0])),
            nr::PIDFD_OPEN => ret(self.pidfd_open(a[0], a[1])),
            nr::PIDFD_SEND_SIGNAL => ret(self.pidfd_send_signal(rid, a)),
            nr::PIDFD_GETFD => ret(self.pidfd_getfd(a[0], a[1] as u32 as u64, a[2])),
            // signals
            nr::RT_SIGACTION => ret(self.rt_sigaction(rid, a)),
            nr::RT_SIGPROCMASK => ret(self.rt_sigprocmask(rid, a)),
            nr::RT_SIGPENDING => ret(self.rt_sigpending(rid, a)),
            nr::RT_SIGRETURN => self.sigreturn(rid),
            nr::RT_SIGSUSPEND => self.rt_sigsuspend(rid, a),
            nr::RT_SIGTIMEDWAIT => self.sigtimedwait(rid, a),
            nr::PAUSE => self.pause(rid),
            nr::SIGALTSTACK => ret(self.sigaltstack(rid, a)),
            nr::ALARM => ret(self.alarm(a[0])),
            nr::SETITIMER => ret(self.setitimer(rid, a)),
            nr::GETITIMER => ret(self.getitimer(rid, a)),
            // identity
            nr::GETUID => Out::Ret(self.cred.uid as u64),
            nr::GETEUID => Out::Ret(self.cred.euid as u64),
            nr::GETGID => Out::Ret(self.cred.gid as u64),
            nr::GETEGID => Out::Ret(self.cred.egid as u64),
            nr::SETUID => ret(self.setuid(a[0])),
            nr::SETGID => ret(self.setgid(a[0])),
            nr::SETREUID => ret(self.setreuid(a[0], a[1])),
            nr::SETREGID => ret(self.setregid(a[0], a[1])),
            nr::SETRESUID => ret(self.setresuid(a[0], a[1], a[2])),
            nr::SETRESGID => ret(self.setresgid(a[0], a[1], a[2])),
            nr::GETRESUID => ret(self.getres(rid, a, true)),
            nr::GETRESGID => ret(self.getres(rid, a, false)),
            nr::SETFSUID => Out::Ret(self.setfsuid(a[0] as u32) as u64),
            nr::SETFSGID => Out::Ret(self.setfsgid(a[0] as u32) as u64),
            nr::GETGROUPS => ret(self.getgroups(rid, a[0], a[1])),
            nr::SETGROUPS => ret(self.setgroups(rid, a[0], a[1])),
            nr::CAPGET => ret(self.capget(rid, a)),
            nr::CAPSET => ret(self.capset(rid, a)),
            // the system
            nr::UNAME => {
                let (host, domain) = (self.uts_name(0, None), self.uts_name(1, None));
                ret(self
                    .write_mem(
                        rid,
                        a[0],
                        &st::utsname(["Linux", &host, RELEASE, VERSION, "x86_64", &domain]),
                    )
                    .map(|_| 0))
            }
            nr::SYSINFO => ret(self.sysinfo(rid, a[0])),
            nr::SYSFS => ret(self.sysfs(rid, a[0], a[1], a[2])),
            nr::USTAT => ret(self.ustat(rid, a[0], a[1])),
            nr::ADJTIMEX => ret(self.adjtimex(rid, a[0])),
            nr::GETRANDOM => ret(self.getrandom(rid, a[0], a[1], a[2])),
            nr::PRLIMIT64 => ret(self.prlimit(rid, a[0], a[1], a[2], a[3])),
            nr::GETRLIMIT => ret(self.prlimit(rid, 0, a[0], 0, a[1])),
            nr::SETRLIMIT => ret(self.prlimit(rid, 0, a[0], a[1], 0)),
            nr::GETRUSAGE => ret(self.getrusage(rid, a[0], a[1])),
            nr::TIMES => ret(self.times(rid, a[0])),
            nr::SCHED_GETAFFINITY => ret(self.getaffinity(rid, a[0], a[1], a[2])),
            nr::SCHED_SETAFFINITY => ret(self.setaffinity(rid, a[0], a[1], a[2])),
            nr::SCHED_GETSCHEDULER => ret(self.sched_getscheduler(a[0])),
            nr::SCHED_SETSCHEDULER => ret(self.sched_set(rid, a[0], Some(a[1]), a[2])),
            nr::SCHED_SETPARAM => ret(self.sched_set(rid, a[0], None, a[1])),
            nr::SCHED_GETPARAM => ret(self.sched_getparam(rid, a[0], a[1])),
            nr::SCHED_RR_GET_INTERVAL => ret(self.rr_interval(rid, a[0], a[1])),
            nr::SCHED_GET_PRIORITY_MAX => ret(linuxabi::sched::priority_max(a[0] as u32 as u64)),
            nr::SCHED_GET_PRIORITY_MIN => ret(linuxabi::sched::priority_min(a[0] as u32 as u64)),
            nr::SCHED_SETATTR => ret(self.sched_setattr(rid, a[0], a[1], a[2])),
            nr::SCHED_GETATTR => ret(self.sched_getattr(rid, a[0], a[1], a[2], a[3])),
            nr::IOPRIO_GET => ret(self.ioprio_get(a[0], a[1])),
            nr::IOPRIO_SET => ret(self.ioprio_set(a[0], a[1], a[2])),
            nr::MEMBARRIER => ret(self.membarrier(a[0], a[1])),
            nr::GETPRIORITY => ret(self.getpriority(a[0], a[1])),
            nr::SETPRIORITY => ret(self.setpriority(a[0], a[1], a[2])),
            // Processor 0 of node 0: a Linux process's computation is not
            // told which CPU runs it.
            nr::GETCPU => ret((|| {
                for at in [a[0], a[1]].into_iter().filter(|&p| p != 0) {
                    self.write_u32(rid, at, 0)?;
                }
                Ok(0)
            })()),
            nr::PRCTL => ret(self.prctl(rid, a)),
            nr::PERSONALITY => {
                let old = self.persona;
                if a[0] as u32 != u32::MAX {
                    self.persona = a[0] & 0xffff_ffff;
                }
                Out::Ret(old)
            }
            nr::MMAP => match self.mmap_shared(rid, a) {
                Some(out) => out,
                None => ret(self.mmap_file(rid, a)),
            },
            nr::MSYNC => ret(self.msync(rid, a[0], a[1], a[2])),
            nr::MLOCK => ret(self.mlock(a, 0)),
            nr::MLOCK2 => ret(self.mlock(a, a[2])),
            nr::MUNLOCK => ret(self.munlock(a)),
            nr::MLOCKALL => ret(self.mlockall(a[0], a[tessera_rt::abi::linux::MLOCK_MAPPED_ARG])),
            nr::MUNLOCKALL => Out::Ret(self.munlockall()),
            nr::SETHOSTNAME => ret(self.set_uts_name(rid, 0, a[0], a[1])),
            nr::SETDOMAINNAME => ret(self.set_uts_name(rid, 1, a[0], a[1])),
            nr::CLOCK_SETTIME => ret(self.clock_settime(rid, a[0], a[1])),
            nr::SETTIMEOFDAY => ret(self.settimeofday(rid, a[0], a[1])),
            nr::MOUNT => ret(self.mount(rid, a)),
            nr::UMOUNT2 => ret(self.umount(rid, a)),
            nr::REBOOT => ret(self.reboot(a)),
            // I/O ports are the drivers' (Tessera's servers'), never a Linux
            // process's: a request for them is refused as for a process
            // without CAP_SYS_RAWIO, after Linux's checks of the arguments.
            nr::IOPL => ret(match a[0] as u32 {
                l if l > 3 => Err(errno::EINVAL),
                0 => Ok(0),
                _ => Err(errno::EPERM),
            }),
            nr::IOPERM => ret(match a[0].checked_add(a[1]) {
                Some(end) if end > a[0] && end <= 0x10000 && a[2] as u32 == 0 => Ok(0),
                Some(end) if end > a[0] && end <= 0x10000 => Err(errno::EPERM),
                _ => Err(errno::EINVAL),
            }),
            nr::CHROOT => ret(self.chroot(rid, a[0])),
            nr::PIVOT_ROOT | nr::SWAPON | nr::SWAPOFF => ret(Err(errno::EPERM)),
            nr::MKNOD => ret(self.mknodat(rid, AT_FDCWD as u64, a[0], a[1], a[2])),
            nr::MKNODAT => ret(self.mknodat(rid, a[0], a[1], a[2], a[3])),
            n if super::socket::is_socket_call(n) => self.socket_dispatch(rid, n, a),
            n if super::sysv::is_sysv_call(n) => self.sysv_call(rid, n, a),
            n if super::keys::is_key_call(n) => self.key_call(rid, n, a),
            nr::PROCESS_VM_READV | nr::PROCESS_VM_WRITEV => self.vm_rw(rid, n, a),
            nr::EVENTFD => ret(self.eventfd2(a[0], 0)),
            nr::MQ_OPEN => ret(self.mq_open(rid, a)),
            nr::MQ_UNLINK => ret(self.mq_unlink(rid, a[0])),
            nr::MQ_TIMEDSEND => self.mq_transfer(rid, n, a, true),
            nr::MQ_TIMEDRECEIVE => self.mq_transfer(rid, n, a, false),
            nr::MQ_NOTIFY => ret(self.mq_notify(rid, a[0], a[1])),
            nr::MQ_GETSETATTR => ret(self.mq_getsetattr(rid, a[0], a[1], a[2])),
            nr::INOTIFY_INIT => ret(self.inotify_init1(0)),
            nr::INOTIFY_INIT1 => ret(self.inotify_init1(a[0])),
            nr::INOTIFY_ADD_WATCH => ret(self.inotify_add_watch(rid, a[0], a[1], a[2])),
            nr::INOTIFY_RM_WATCH => ret(self.inotify_rm_watch(a[0], a[1])),
            nr::FANOTIFY_INIT => ret(self.fanotify_init(a[0], a[1])),
            nr::FANOTIFY_MARK => ret(self.fanotify_mark(rid, a)),
            nr::TIMER_CREATE => ret(self.timer_create(rid, a[0] as i32 as i64 as u64, a[1], a[2])),
            nr::TIMER_SETTIME => ret(self.timer_settime(rid, a[0], a[1], a[2], a[3])),
            nr::TIMER_GETTIME => ret(self.timer_gettime(rid, a[0], a[1])),
            nr::TIMER_GETOVERRUN => ret(self.timer_op(3, a[0])),
            nr::TIMER_DELETE => ret(self.timer_op(4, a[0])),
            nr::TIMERFD_CREATE => ret(self.timerfd_create(a[0] as i32 as i64 as u64, a[1])),
            nr::TIMERFD_SETTIME => ret(self.timerfd_settime(rid, a[0], a[1], a[2], a[3])),
            nr::TIMERFD_GETTIME => ret(self.timerfd_gettime(rid, a[0], a[1])),
            nr::EVENTFD2 => ret(self.eventfd2(a[0], a[1])),
            nr::SIGNALFD => ret(self.signalfd4(rid, a[0], a[1], a[2], 0)),
            nr::SIGNALFD4 => ret(self.signalfd4(rid, a[0], a[1], a[2], a[3])),
            nr::EPOLL_CREATE if (a[0] as i32) <= 0 => ret(Err(errno::EINVAL)),
            nr::EPOLL_CREATE => ret(self.epoll_create(0)),
            nr::EPOLL_CREATE1 => ret(self.epoll_create(a[0])),
            nr::EPOLL_CTL => ret(self.epoll_ctl(rid, a)),
            nr::EPOLL_WAIT => self.epoll_wait(rid, a, poll_timeout_ms(a[3]), (0, 0)),
            nr::EPOLL_PWAIT => self.epoll_wait(rid, a, poll_timeout_ms(a[3]), (a[4], a[5])),
            nr::EPOLL_PWAIT2 => match self.timespec_deadline(rid, a[3]) {
                Ok(t) => self.epoll_wait(rid, a, t, (a[4], a[5])),
                Err(e) => ret(Err(e)),
            },
            _ => Out::Ret(errno::fail(errno::ENOSYS)),
        }
    }

    /// preadv2 and pwritev2: offset -1 is the file position; flags
    /// (`a[5]`) Tessera does not serve are EOPNOTSUPP, as on a kernel
    /// older than them (RWF_NOWAIT and RWF_APPEND among them).
    fn vector_io2(&mut self, rid: u64, a: [u64; 6], write: bool) -> Out {
        // RWF_HIPRI (a hint), RWF_DSYNC and RWF_SYNC (the file synced
        // after the write, as fdatasync and fsync do it).
        const KNOWN: u64 = 0x1 | 0x2 | 0x4;
        const SYNC: u64 = 0x2 | 0x4;
        let at = match a[3] as i64 {
            -1 => None,
            p if p < 0 => return ret(Err(errno::EINVAL)),
            p => Some(p as u64),
        };
        match self.fds.ofd(a[0]) {
            Err(e) => return ret(Err(e)),
            // A pipe, socket or other stream has no offsets: ESPIPE before
            // the access mode is looked at, as Linux's FMODE_PREAD check.
            Ok(o) if at.is_some() && is_stream(&o.borrow().kind) => return ret(Err(errno::ESPIPE)),
            Ok(_) => {}
        }
        if a[5] & !KNOWN != 0 {
            return ret(Err(errno::EOPNOTSUPP));
        }
        let out = self.vector_io(rid, a, write, at);
        if write
            && a[5] & SYNC != 0
            && let Out::Ret(v) = out
            && errno::of(v).is_none()
            && let Err(e) = self.fsync(a[0])
        {
            return ret(Err(e));
        }
        out
    }

    fn positioned(&mut self, rid: u64, a: [u64; 6], write: bool) -> Out {
        if (a[3] as i64) < 0 {
            return ret(Err(errno::EINVAL));
        }
        if write {
            // pwrite on an O_APPEND descriptor appends, as Linux's does,
            // and leaves the file position where it was.
            self.write(rid, a, Some(a[3]))
        } else {
            self.read(rid, a, Some(a[3]))
        }
    }

    fn setpgid(&mut self, pid: u64, pgid: u64) -> Result<u64, i64> {
        if (pgid as i32) < 0 {
            return Err(errno::EINVAL);
        }
        self.ctl1(&[ctl::SETPGID, self.pid as u64, pid as u32 as u64, pgid as u32 as u64])
    }

    fn tkill(&mut self, tgid: i64, tid: i64, s: u64) -> Result<u64, i64> {
        if tgid <= 0 || tid <= 0 {
            return Err(errno::EINVAL);
        }
        if let Some(r) = self.thread_kill(tgid, tid, s) {
            return r;
        }
        if tgid != tid {
            return Err(errno::ESRCH);
        }
        self.send(tid, s, sig::SI_TKILL as i64, 0)
    }

    pub(super) fn sigqueue(&mut self, rid: u64, pid: i64, s: u64, info_at: u64) -> Result<u64, i64> {
        let b = self.read_mem(rid, info_at, 128)?;
        let info = linuxabi::frame::SigInfo::from_bytes(&b);
        if (info.code >= 0 || info.code == sig::SI_TKILL) && pid != self.pid as i64 {
            return Err(errno::EPERM);
        }
        // One thread group, by its pid: never a group or every process.
        if pid <= 0 {
            return Err(errno::ESRCH);
        }
        self.send(pid, s, info.code as i64, info.value)
    }

    fn alarm(&mut self, secs: u64) -> Result<u64, i64> {
        let r = self.ctl(&[ctl::ALARM, self.pid as u64, secs.saturating_mul(1_000_000_000), 0]);
        let left = word(&r, 1);
        Ok(left.div_ceil(1_000_000_000))
    }

    fn itimer_read(&self, rid: u64, at: u64) -> Result<(u64, u64), i64> {
        let b = self.read_mem(rid, at, 32)?;
        let tv = |o: usize| {
            let s = st::u64_at(&b, o);
            let us = st::u64_at(&b, o + 8);
            if s >> 63 != 0 || us >= 1_000_000 {
                return Err(errno::EINVAL);
            }
            Ok(s.saturating_mul(1_000_000_000).saturating_add(us * 1000))
        };
        Ok((tv(0)?, tv(16)?))
    }

    fn itimer_write(&self, rid: u64, at: u64, interval: u64, value: u64) -> Result<(), i64> {
        let mut o = st::Out::with_len(32);
        for v in [interval, value] {
            o.u64(v / 1_000_000_000).u64((v % 1_000_000_000) / 1000);
        }
        self.write_mem(rid, at, &o.0)
    }

    fn setitimer(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        if a[0] > 2 {
            return Err(errno::EINVAL);
        }
        let (interval, value) = if a[1] != 0 {
            self.itimer_read(rid, a[1])?
        } else {
            (0, 0)
        };
        if a[0] != 0 {
            // Virtual and profiling timers: the shared server's, on the
            // process's CPU clock.
            let r = self.ctl(&[ctl::PTIMER, 5, self.pid as u64, a[0], value, interval]);
            if a[2] != 0 {
                self.itimer_write(rid, a[2], word(&r, 1), word(&r, 0))?;
            }
            return Ok(0);
        }
        let r = self.ctl(&[ctl::ALARM, self.pid as u64, value, interval]);
        if a[2] != 0 {
            self.itimer_write(rid, a[2], word(&r, 1), word(&r, 0))?;
        }
        Ok(0)
    }

    fn getitimer(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        if a[0] > 2 {
            return Err(errno::EINVAL);
        }
        let (left, interval) = if a[0] == 0 {
            let r = self.ctl(&[ctl::ALARM, self.pid as u64, u64::MAX, 0]);
            (word(&r, 0), word(&r, 1))
        } else {
            let r = self.ctl(&[ctl::PTIMER, 6, self.pid as u64, a[0]]);
            (word(&r, 0), word(&r, 1))
        };
        self.itimer_write(rid, a[1], interval, left)?;
        Ok(0)
    }

    fn getres(&mut self, rid: u64, a: [u64; 6], user: bool) -> Result<u64, i64> {
        let c = &self.cred;
        let v = if user {
            [c.uid, c.euid, c.suid]
        } else {
            [c.gid, c.egid, c.sgid]
        };
        for (i, x) in v.iter().enumerate() {
            self.write_u32(rid, a[i], *x)?;
        }
        Ok(0)
    }

    fn getgroups(&mut self, rid: u64, size: u64, at: u64) -> Result<u64, i64> {
        let g = self.cred.groups.clone();
        if size as i32 == 0 {
            return Ok(g.len() as u64);
        }
        if (size as i32) < g.len() as i32 {
            return Err(errno::EINVAL);
        }
        let mut b = Vec::new();
        for x in &g {
            b.extend_from_slice(&x.to_le_bytes());
        }
        self.write_mem(rid, at, &b)?;
        Ok(g.len() as u64)
    }

    /// A name of the system (0: host, 1: domain), replaced by `new`.
    pub(super) fn uts_name(&self, which: u64, new: Option<&[u8]>) -> String {
        let mut m = vec![crate::proto::ctl::UTS, which];
        match new {
            Some(n) => {
                m.push(n.len() as u64);
                m.extend(crate::proto::name_words(n));
            }
            None => m.push(u64::MAX),
        }
        let r = self.ctl(&m);
        let len = (crate::proto::word(&r, 0) as usize).min(64);
        let bytes = crate::proto::bytes(r.get(1..).unwrap_or(&[]));
        String::from_utf8_lossy(bytes.get(..len).unwrap_or(&[])).into_owned()
    }

    /// sethostname / setdomainname: at most 64 bytes, by root.
    fn set_uts_name(&mut self, rid: u64, which: u64, at: u64, len: u64) -> Result<u64, i64> {
        if len > 64 {
            return Err(errno::EINVAL);
        }
        if self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        let name = self.read_mem(rid, at, len as usize)?;
        self.uts_name(which, Some(&name));
        Ok(0)
    }

    /// The file system's user id (the one file access checks): it follows
    /// the effective id until set; returns the old one, changed or not.
    fn setfsuid(&mut self, u: u32) -> u32 {
        let old = self.fs.cred.uid;
        let c = &self.cred;
        if u != u32::MAX && (c.euid == 0 || [c.uid, c.euid, c.suid, old].contains(&u)) {
            self.fs.cred.uid = u;
        }
        old
    }

    fn setfsgid(&mut self, g: u32) -> u32 {
        let old = self.fs.cred.gid;
        let c = &self.cred;
        if g != u32::MAX && (c.euid == 0 || [c.gid, c.egid, c.sgid, old].contains(&g)) {
            self.fs.cred.gid = g;
        }
        old
    }

    fn setgroups(&mut self, rid: u64, size: u64, at: u64) -> Result<u64, i64> {
        if self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        if size > 65536 {
            return Err(errno::EINVAL);
        }
        let b = self.read_mem(rid, at, size as usize * 4)?;
        self.cred.groups = b
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // Linux keeps the list sorted (getgroups shows it so).
        self.cred.groups.sort_unstable();
        Ok(0)
    }

    /// reboot: root's, with Linux's magic numbers. Ctrl-Alt-Del means
    /// nothing on Tessera's console, so both of its settings are taken;
    /// restarting or stopping the machine is not a Linux process's to do
    /// here (EPERM, as for a process without CAP_SYS_BOOT).
    fn reboot(&mut self, a: [u64; 6]) -> Result<u64, i64> {
        const MAGIC1: u32 = 0xfee1_dead;
        const MAGIC2: [u32; 4] = [0x2812_1969, 0x0512_1996, 0x1604_1998, 0x2011_2000];
        const CAD_ON: u32 = 0x89ab_cdef;
        const CAD_OFF: u32 = 0;
        // RESTART, HALT, POWER_OFF, RESTART2, SW_SUSPEND, KEXEC.
        const STOPS: [u32; 6] = [
            0x0123_4567,
            0xcdef_0123,
            0x4321_fedc,
            0xa1b2_c3d4,
            0xd000_fce2,
            0x4558_4543,
        ];
        // Linux checks the capability before the magic numbers.
        if self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        if a[0] as u32 != MAGIC1 || !MAGIC2.contains(&(a[1] as u32)) {
            return Err(errno::EINVAL);
        }
        match a[2] as u32 {
            CAD_ON | CAD_OFF => Ok(0),
            c if STOPS.contains(&c) => Err(errno::EPERM),
            _ => Err(errno::EINVAL),
        }
    }

    /// The header of capget and capset: (records of the data, pid). An
    /// unknown version is answered with Linux's preferred one, EINVAL
    /// (or 0 from a capget with no data: how a program asks for it).
    fn cap_header(&mut self, rid: u64, at: u64, data: u64, get: bool) -> Result<Option<(usize, i64)>, i64> {
        let h = self.read_mem(rid, at, 8)?;
        let version = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let pid = i32::from_le_bytes([h[4], h[5], h[6], h[7]]) as i64;
        let Some(n) = caps::records(version) else {
            self.write_u32(rid, at, caps::V3)?;
            return if get && data == 0 { Ok(None) } else { Err(errno::EINVAL) };
        };
        if pid < 0 {
            return Err(errno::EINVAL);
        }
        Ok(Some((n, pid)))
    }

    fn capget(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let Some((n, pid)) = self.cap_header(rid, a[0], a[1], true)? else {
            return Ok(0);
        };
        let c = if pid == 0 || pid == self.pid as i64 {
            self.cred.caps
        } else {
            // Another process's sets live in its own supervisor: they are
            // given as its user's (a root process's are all of them).
            let r = self.proc_record(pid as u32)?;
            if word(&r, 6) == 0 {
                caps::Caps::default()
            } else {
                caps::Caps::with(0, 0, 0, caps::FULL, [1; 3])
            }
        };
        if a[1] == 0 {
            return Ok(0);
        }
        let mut o = st::Out::with_len(12 * n);
        for i in 0..n {
            let half = |v: u64| (v >> (32 * i)) as u32;
            o.u32(half(c.effective)).u32(half(c.permitted)).u32(half(c.inheritable));
        }
        self.write_mem(rid, a[1], &o.0)?;
        Ok(0)
    }

    /// capset: the caller's own sets only (EPERM for another process).
    fn capset(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (n, pid) = self.cap_header(rid, a[0], a[1], false)?.ok_or(errno::EINVAL)?;
        if pid != 0 && pid != self.pid as i64 {
            return Err(errno::EPERM);
        }
        let d = self.read_mem(rid, a[1], 12 * n)?;
        let mut sets = [0u64; 3];
        for i in 0..n {
            for (k, set) in sets.iter_mut().enumerate() {
                *set |= (st::u32_at(&d, 12 * i + 4 * k) as u64) << (32 * i);
            }
        }
        self.cred.caps.set(sets[0], sets[1], sets[2])?;
        Ok(0)
    }

    fn chmod_at(&mut self, rid: u64, dirfd: u64, path_at: u64, mode: u64, _flags: u64) -> Result<u64, i64> {
        let path = self.read_path(rid, path_at)?;
        self.setattr_at(dirfd, &path, false, &mode_attr(mode))
    }

    fn chown_at(&mut self, rid: u64, dirfd: u64, path_at: u64, uid: u64, gid: u64, flags: u64) -> Result<u64, i64> {
        if flags & !(0x100 | 0x1000) != 0 {
            return Err(errno::EINVAL);
        }
        let a = owner_attr(uid, gid);
        let path = self.read_cstr(rid, path_at, linuxabi::path::PATH_MAX - 1)?;
        let path = String::from_utf8(path).map_err(|_| errno::EINVAL)?;
        if path.is_empty() {
            if flags & 0x1000 != 0 {
                return self.setattr_fd(dirfd, &a);
            }
            return Err(errno::ENOENT);
        }
        self.setattr_at(dirfd, &path, flags & 0x100 != 0, &a)
    }

    fn fchown(&mut self, fd: u64, uid: u64, gid: u64) -> Result<u64, i64> {
        self.setattr_fd(fd, &owner_attr(uid, gid))
    }

    fn truncate_path(&mut self, rid: u64, path_at: u64, len: u64) -> Result<u64, i64> {
        if (len as i64) < 0 {
            return Err(errno::EINVAL);
        }
        let path = self.read_path(rid, path_at)?;
        let s = self.stat_at(AT_FDCWD as u64, &path, 0)?;
        if s.is_dir() {
            return Err(errno::EISDIR);
        }
        self.fsize_grow_ok(s.size as u64, len)?;
        let r = self.setattr_at(
            AT_FDCWD as u64,
            &path,
            false,
            &SetAttr {
                valid: SetAttr::SIZE,
                size: len,
                ..SetAttr::default()
            },
        );
        if r.is_ok()
            && let Ok(now) = self.stat_at(AT_FDCWD as u64, &path, 0)
        {
            self.file_resized_to(rid, &now);
            self.fmap_truncated(&now);
        }
        r
    }

    fn statfs_path(&mut self, rid: u64, path_at: u64, out: u64) -> Result<u64, i64> {
        let path = self.read_path(rid, path_at)?;
        self.stat_at(AT_FDCWD as u64, &path, 0)?;
        self.statfs_at(rid, &path, out)
    }

    fn utimensat(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        if a[3] & !(0x100 | 0x1000) != 0 {
            return Err(errno::EINVAL);
        }
        let times = if a[2] == 0 {
            None
        } else {
            Some(self.read_mem(rid, a[2], 32)?)
        };
        self.utimens_with(rid, a, times.as_deref())
    }

    /// utimensat with its two `struct timespec` read (None: now).
    fn utimens_with(&mut self, rid: u64, a: [u64; 6], times: Option<&[u8]>) -> Result<u64, i64> {
        const UTIME_NOW: u64 = (1 << 30) - 1;
        const UTIME_OMIT: u64 = (1 << 30) - 2;
        let (dirfd, path_at, flags) = (a[0], a[1], a[3]);
        let mut attr = SetAttr::default();
        if let Some(b) = times {
            for (i, (set, now)) in [
                (SetAttr::ATIME, SetAttr::ATIME_NOW),
                (SetAttr::MTIME, SetAttr::MTIME_NOW),
            ]
            .iter()
            .enumerate()
            {
                let s = st::u64_at(b, i * 16);
                let ns = st::u64_at(b, i * 16 + 8);
                match ns {
                    UTIME_OMIT => {}
                    UTIME_NOW => attr.valid |= now,
                    ns if ns < 1_000_000_000 => {
                        attr.valid |= set;
                        if i == 0 {
                            attr.atime = (s as i64, ns as u32);
                        } else {
                            attr.mtime = (s as i64, ns as u32);
                        }
                    }
                    _ => return Err(errno::EINVAL),
                }
            }
            if attr.valid == 0 {
                return Ok(0);
            }
        } else {
            attr.valid = SetAttr::ATIME_NOW | SetAttr::MTIME_NOW;
        }
        // No name: the descriptor itself (Linux's do_utimes_fd), which
        // takes no flags; with AT_FDCWD there is no name to read.
        if path_at == 0 {
            if dirfd as i32 == AT_FDCWD as i32 {
                return Err(errno::EFAULT);
            }
            if flags != 0 {
                return Err(errno::EINVAL);
            }
            return self.setattr_fd(dirfd, &attr);
        }
        let path = self.read_cstr(rid, path_at, linuxabi::path::PATH_MAX - 1)?;
        let path = String::from_utf8(path).map_err(|_| errno::EINVAL)?;
        if path.is_empty() {
            if flags & 0x1000 != 0 {
                return self.setattr_fd(dirfd, &attr);
            }
            return Err(errno::ENOENT);
        }
        self.setattr_at(dirfd, &path, flags & 0x100 != 0, &attr)
    }

    /// futimesat: utimes relative to a directory; each `struct timeval`'s
    /// microseconds must be below a second (else EINVAL).
    fn futimesat(&mut self, rid: u64, dirfd: u64, path: u64, times: u64) -> Result<u64, i64> {
        let a = [dirfd, path, 0, 0, 0, 0];
        if times != 0 {
            let b = self.read_mem(rid, times, 32)?;
            let mut o = st::Out::with_len(32);
            for i in 0..2 {
                let usec = st::u64_at(&b, i * 16 + 8);
                if usec >= 1_000_000 {
                    return Err(errno::EINVAL);
                }
                o.u64(st::u64_at(&b, i * 16)).u64(usec * 1000);
            }
            return self.utimens_with(rid, a, Some(&o.0));
        }
        self.utimens_with(rid, a, None)
    }

    fn sysinfo(&mut self, rid: u64, at: u64) -> Result<u64, i64> {
        let i = sys::sys_info().map_err(|_| errno::EIO)?;
        let si = SysInfo {
            uptime: sys::now_ns() / 1_000_000_000,
            loads: [0; 3],
            total_ram: i.frames_total * 4096,
            free_ram: i.frames_free * 4096,
            procs: self.ctl(&[ctl::PIDS]).len() as u16,
        };
        self.write_mem(rid, at, &si.to_bytes())?;
        Ok(0)
    }

    fn getrandom(&mut self, rid: u64, at: u64, len: u64, flags: u64) -> Result<u64, i64> {
        if flags & !7 != 0 {
            return Err(errno::EINVAL);
        }
        let n = (len as usize).min(33_554_431);
        let mut buf = vec![0u8; n.min(65536)];
        let mut done = 0;
        while done < n {
            let k = (n - done).min(buf.len());
            super::files::random_bytes(&mut buf[..k]);
            self.write_mem(rid, at + done as u64, &buf[..k])?;
            done += k;
        }
        Ok(n as u64)
    }

    fn prlimit(&mut self, rid: u64, pid: u64, res: u64, new: u64, old: u64) -> Result<u64, i64> {
        if pid != 0 && pid as u32 != self.pid {
            return Err(errno::ESRCH);
        }
        let i = usize::try_from(res).ok().filter(|&i| i < 16).ok_or(errno::EINVAL)?;
        let set = if new != 0 {
            let b = self.read_mem(rid, new, 16)?;
            let (soft, hard) = (st::u64_at(&b, 0), st::u64_at(&b, 8));
            if soft > hard {
                return Err(errno::EINVAL);
            }
            if hard > self.limits[i][1] && self.cred.euid != 0 {
                return Err(errno::EPERM);
            }
            if i == 7 && hard > 1 << 20 {
                return Err(errno::EPERM);
            }
            Some([soft, hard])
        } else {
            None
        };
        if old != 0 {
            let mut o = st::Out::with_len(16);
            o.u64(self.limits[i][0]).u64(self.limits[i][1]);
            self.write_mem(rid, old, &o.0)?;
        }
        if let Some(l) = set {
            self.limits[i] = l;
            if i == RLIMIT_CPU {
                self.watch_cpu_limit();
            }
        }
        Ok(0)
    }

    /// RLIMIT_CPU is watched by the shared server, which keeps the clock
    /// (`shared/cpulimit.rs`).
    pub(super) fn watch_cpu_limit(&self) {
        let [soft, hard] = self.limits[RLIMIT_CPU];
        self.ctl(&[ctl::CPU_LIMIT, self.pid as u64, soft, hard]);
    }

    fn prctl(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        match a[0] {
            // PR_SET_PDEATHSIG: the shared server sends it when the
            // parent ends.
            1 => {
                if a[1] > 64 {
                    return Err(errno::EINVAL);
                }
                self.ctl1(&[ctl::PDEATHSIG, self.pid as u64, a[1]])?;
                self.pdeath = a[1] as u32;
                Ok(0)
            }
            2 => self.write_u32(rid, a[1], self.pdeath).map(|_| 0),
            // PR_SET_DUMPABLE: 0 or 1 (SUID_DUMP_ROOT is not for prctl).
            // The shared server keeps it: process_vm_readv's check.
            4 if a[1] > 1 => Err(errno::EINVAL),
            4 => self.ctl1(&[ctl::DUMPABLE, self.pid as u64, a[1]]).map(|_| 0),
            // PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER: the shared
            // server reparents orphans, so it keeps the flag.
            36 => self
                .ctl1(&[ctl::SUBREAPER, self.pid as u64, (a[1] != 0) as u64])
                .map(|_| 0),
            37 => {
                let v = self.ctl1(&[ctl::SUBREAPER, self.pid as u64, u64::MAX])?;
                self.write_u32(rid, a[1], v as u32).map(|_| 0)
            }
            // PR_SET_NO_NEW_PRIVS: only 1, and for good (fork and exec
            // keep it); PR_GET_NO_NEW_PRIVS.
            38 if a[1] != 1 || a[2..5].iter().any(|&v| v != 0) => Err(errno::EINVAL),
            38 => {
                self.prctl_flags |= super::PRCTL_NO_NEW_PRIVS;
                Ok(0)
            }
            39 | 42 if a[1..5].iter().any(|&v| v != 0) => Err(errno::EINVAL),
            39 => Ok((self.prctl_flags & super::PRCTL_NO_NEW_PRIVS != 0) as u64),
            // PR_SET_THP_DISABLE, PR_GET_THP_DISABLE: Tessera maps no huge
            // pages for a Linux process anyway; the flag is kept and
            // reported as Linux's, across fork and exec.
            41 if a[2..5].iter().any(|&v| v != 0) => Err(errno::EINVAL),
            41 => {
                self.prctl_flags &= !super::PRCTL_THP_DISABLE;
                if a[1] != 0 {
                    self.prctl_flags |= super::PRCTL_THP_DISABLE;
                }
                Ok(0)
            }
            42 => Ok((self.prctl_flags & super::PRCTL_THP_DISABLE != 0) as u64),
            // PR_GET_SECUREBITS: none set; PR_SET_SECUREBITS needs
            // CAP_SETPCAP and known bits, and only "none" is kept yet.
            27 => Ok(0),
            28 if a[1] & !0xff != 0 || !self.cred.caps.has(caps::CAP_SETPCAP) => Err(errno::EPERM),
            28 if a[1] != 0 => Err(errno::EINVAL),
            28 => Ok(0),
            // PR_SET_TIMERSLACK (0: back to the default), PR_GET_TIMERSLACK.
            29 => {
                self.timerslack = if a[1] == 0 { self.timerslack_default } else { a[1] };
                Ok(0)
            }
            30 => Ok(self.timerslack.min(i64::MAX as u64)),
            3 => self.ctl1(&[ctl::DUMPABLE, self.pid as u64, u64::MAX]),
            // PR_CAPBSET_READ, PR_CAPBSET_DROP.
            23 => self.cred.caps.bound(a[1]),
            24 => self.cred.caps.drop_bound(a[1]).map(|_| 0),
            // PR_SET_NAME: the first 15 bytes, as Linux keeps them; the
            // shared server holds the name every /proc reader sees.
            15 => {
                let name = self.read_cstr(rid, a[1], 4096)?;
                let mut b = [0u8; 16];
                let n = name.len().min(15);
                b[..n].copy_from_slice(&name[..n]);
                let words = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
                let r = self.ctl(&[ctl::COMM, self.pid as u64, words(0), words(8)]);
                errno::of(word(&r, 0)).map_or(Ok(0), Err)
            }
            // PR_GET_NAME: 16 bytes, the name and its terminating zero.
            16 => {
                let c = self.comm_now()?;
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&c[0].to_le_bytes());
                b[8..].copy_from_slice(&c[1].to_le_bytes());
                self.write_mem(rid, a[1], &b)?;
                Ok(0)
            }
            _ => Err(errno::EINVAL),
        }
    }

    /// A file mapping: anonymous memory mapped into the process, filled
    /// with the file's bytes straight from the cache (a private mapping,
    /// and the shared ones `mmap_shared` leaves: at a fixed address, or
    /// of a device; those are shared with forked children only).
    fn mmap_file(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        use linuxabi::mman::{
            LEGACY_MAP_MASK, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MAP_SHARED_VALIDATE, MAP_TYPE,
        };
        let (addr, len, prot, flags, fd, off) = (a[0], a[1], a[2], a[3], a[4], a[5]);
        // Linux looks at the descriptor before anything else (mmap08: a
        // closed one with a length of 0 is EBADF).
        let o = self.fds.ofd(fd)?;
        if len == 0 || off % 4096 != 0 || flags & (MAP_SHARED | MAP_PRIVATE) == 0 {
            return Err(errno::EINVAL);
        }
        // More than user space holds (a length that wraps when rounded up
        // included).
        const USER_END: u64 = 1 << 47;
        if len > USER_END {
            return Err(errno::ENOMEM);
        }
        if flags & MAP_TYPE == MAP_SHARED_VALIDATE && flags & !LEGACY_MAP_MASK != 0 {
            return Err(errno::EOPNOTSUPP);
        }
        let noreplace = flags & (MAP_FIXED_NOREPLACE | MAP_FIXED) == MAP_FIXED_NOREPLACE;
        if noreplace {
            if addr % 4096 != 0 {
                return Err(errno::EINVAL);
            }
            let end = addr
                .checked_add(len.next_multiple_of(4096))
                .filter(|&e| e <= USER_END)
                .ok_or(errno::ENOMEM)?;
            if self.maps_overlap(addr, end)? {
                return Err(errno::EEXIST);
            }
        }
        let d = o.borrow();
        if !d.readable() {
            return Err(errno::EACCES);
        }
        if flags & MAP_SHARED != 0 && prot & 2 != 0 && !d.writable() {
            return Err(errno::EACCES);
        }
        // /dev/zero maps as anonymous memory, private or shared as asked.
        if matches!(d.kind, Kind::Zero) {
            let anonymous = tessera_rt::abi::linux::MAP_ANONYMOUS;
            let at =
                calls::caller_map(rid, addr, len, prot, flags & (MAP_SHARED | MAP_FIXED) | anonymous).map_err(|e| {
                    match e {
                        tessera_rt::abi::Error::NoMemory | tessera_rt::abi::Error::Limit => errno::ENOMEM,
                        _ => errno::EINVAL,
                    }
                })?;
            // Shared through a read-only description: never writable
            // (mprotect01), as any file's.
            if flags & MAP_SHARED != 0 && !d.writable() {
                let _ = calls::caller_map_file(rid, at, super::fileend::may(false), 0, 0, 0);
            }
            return Ok(at);
        }
        let Kind::File { fd: ffd, .. } = d.kind else {
            return Err(errno::ENODEV);
        };
        // A directory has no bytes to map.
        let stat = self.fs.fstat(ffd).map(|b| st::StatView::parse(&b));
        if stat.as_ref().is_ok_and(|s| s.is_dir()) {
            return Err(errno::ENODEV);
        }
        // Linux's VM_MAYWRITE: a shared mapping whose writes would reach
        // a file it may not write (opened read-only, a memfd sealed
        // against writes) never becomes writable.
        let shared = flags & MAP_SHARED != 0;
        let may_write = !shared || (d.writable() && self.memfd_may_map(ffd, &d.path).is_ok());
        let at =
            calls::caller_map(rid, addr, len, prot | 2, flags & (MAP_SHARED | MAP_FIXED)).map_err(|e| match e {
                tessera_rt::abi::Error::NoMemory | tessera_rt::abi::Error::Limit => errno::ENOMEM,
                _ => errno::EINVAL,
            })?;
        let _ = self.fs.read_to_caller(rid, ffd, off, at, len, 0);
        // Filled; now as it was asked for: read-only, or PROT_NONE (mmap05:
        // a touch is SIGSEGV). Should that fail, the mapping stays
        // writable, as all were before.
        if prot & 2 == 0 {
            let _ = calls::caller_protect(rid, at, len, prot);
        }
        if let Ok(s) = stat {
            self.mark_file_map(rid, at, super::fileend::may(may_write), &s, off);
        }
        Ok(at)
    }

    // ---- poll and select ----

    /// A relative timespec's deadline (ns since boot); u64::MAX for none.
    pub(super) fn timespec_deadline(&self, rid: u64, at: u64) -> Result<u64, i64> {
        if at == 0 {
            return Ok(u64::MAX);
        }
        let b = self.read_mem(rid, at, 16)?;
        let (s, ns) = (st::u64_at(&b, 0), st::u64_at(&b, 8));
        if s >> 63 != 0 || ns >= 1_000_000_000 {
            return Err(errno::EINVAL);
        }
        Ok(sys::now_ns()
            .saturating_add(s.saturating_mul(1_000_000_000))
            .saturating_add(ns))
    }

    /// The events of every entry now: (ready count, revents per entry),
    /// and the shared server's token if it registered a wait (`ready.rs`;
    /// a negative descriptor is skipped).
    fn poll_now(&mut self, fds: &[(i64, u64)], deadline: u64) -> (u64, Vec<u64>, u64) {
        let mut items = Vec::new();
        let mut at = Vec::new();
        for (i, &(fd, ev)) in fds.iter().enumerate() {
            if fd >= 0 {
                items.push((self.fds.ofd(fd as u64).ok(), ev));
                at.push(i);
            }
        }
        let (ready, r, token) = self.readiness(&items, deadline);
        let mut revents = vec![0u64; fds.len()];
        for (k, &i) in at.iter().enumerate() {
            revents[i] = r[k];
        }
        (ready, revents, token)
    }

    fn poll(&mut self, rid: u64, at: u64, n: u64, deadline: u64, sigmask: u64) -> Out {
        if n > self.limits[7][0] {
            return ret(Err(errno::EINVAL));
        }
        let raw = match self.read_mem(rid, at, n as usize * 8) {
            Ok(b) => b,
            Err(e) => return ret(Err(e)),
        };
        let fds: Vec<(i64, u64)> = raw
            .chunks_exact(8)
            .map(|c| {
                let fd = i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64;
                (fd, u16::from_le_bytes([c[4], c[5]]) as u64)
            })
            .collect();
        if sigmask != 0 {
            match self.read_u64(rid, sigmask) {
                Ok(m) => {
                    self.sig.saved_mask = Some(self.sig.mask);
                    self.sig.mask = m & !sig::UNBLOCKABLE;
                }
                Err(e) => return ret(Err(e)),
            }
        }
        let req = PollReq {
            fds,
            deadline,
            kind: PollKind::Poll { at },
        };
        self.poll_go(rid, req)
    }

    /// Answers a poll or select if it can be now, else holds it.
    fn poll_go(&mut self, rid: u64, req: PollReq) -> Out {
        if self.sig.deliverable() != 0 {
            return self.poll_interrupted();
        }
        let now = sys::now_ns();
        let expired = req.deadline <= now;
        let (ready, revents, token) = self.poll_now(&req.fds, if expired { 0 } else { req.deadline });
        if ready > 0 || expired || token == 0 {
            self.restore_poll_mask();
            return self.poll_answer(rid, &req, ready, &revents);
        }
        self.poll_req = Some(req);
        self.held = Some((rid, Hold::Poll { token }));
        Out::Done
    }

    fn poll_interrupted(&mut self) -> Out {
        // The handler's frame saves the mask from before ppoll/pselect.
        Out::Ret(errno::fail(errno::EINTR))
    }

    fn restore_poll_mask(&mut self) {
        if let Some(m) = self.sig.saved_mask.take() {
            self.sig.mask = m;
        }
    }

    fn poll_answer(&mut self, rid: u64, req: &PollReq, ready: u64, revents: &[u64]) -> Out {
        match req.kind {
            PollKind::Poll { at } => {
                for (i, &r) in revents.iter().enumerate() {
                    if self
                        .write_mem(rid, at + i as u64 * 8 + 6, &(r as u16).to_le_bytes())
                        .is_err()
                    {
                        return ret(Err(errno::EFAULT));
                    }
                }
                Out::Ret(ready)
            }
            PollKind::Select {
                nfds,
                sets,
                timeout,
                timeval,
            } => {
                let words = nfds.div_ceil(64) as usize;
                let mut out = [vec![0u64; words], vec![0u64; words], vec![0u64; words]];
                let mut count = 0;
                for (i, &(fd, ev)) in req.fds.iter().enumerate() {
                    let r = revents[i];
                    let (w, b) = (fd as usize / 64, 1u64 << (fd as u64 % 64));
                    if ev & POLLIN != 0 && r & (POLLIN | 0x18) != 0 {
                        out[0][w] |= b;
                        count += 1;
                    }
                    if ev & POLLOUT != 0 && r & (POLLOUT | 0x8) != 0 {
                        out[1][w] |= b;
                        count += 1;
                    }
                    if ev & POLLPRI != 0 && r & POLLPRI != 0 {
                        out[2][w] |= b;
                        count += 1;
                    }
                }
                let bytes = nfds.div_ceil(8) as usize;
                for (k, &at) in sets.iter().enumerate() {
                    if at != 0 {
                        let b = crate::proto::bytes(&out[k]);
                        if self.write_mem(rid, at, &b[..bytes]).is_err() {
                            return ret(Err(errno::EFAULT));
                        }
                    }
                }
                if timeout != 0 && req.deadline != u64::MAX {
                    let left = req.deadline.saturating_sub(sys::now_ns());
                    let sub = if timeval {
                        (left % 1_000_000_000) / 1000
                    } else {
                        left % 1_000_000_000
                    };
                    let mut o = st::Out::with_len(16);
                    o.u64(left / 1_000_000_000).u64(sub);
                    let _ = self.write_mem(rid, timeout, &o.0);
                }
                Out::Ret(count)
            }
        }
    }

    /// A registration's wake: the held poll (or timed wait) looks again.
    pub(super) fn poll_woken(&mut self, token: u64) {
        if self.splice_woken(token) || self.sock_woken(token) || self.epoll_woken(token) || self.fifo_woken(token) {
            return;
        }
        let Some((rid, Hold::Poll { token: t })) = self.held else {
            return;
        };
        // The TCP/IP server's watch wakes a poll over sockets too.
        if t != token && token != self.net.watch_token {
            return;
        }
        self.held = None;
        // A timed signal wait holds no poll request: looked at first, or
        // its end at the deadline was lost and the process waited for
        // ever, past even SIGKILL.
        if let Some((set, info_at, deadline)) = self.waiting_set.take() {
            // A timed signal wait whose time is up (or a spurious wake).
            if sys::now_ns() < deadline {
                let token = self.wait_until(deadline);
                self.waiting_set = Some((set, info_at, deadline));
                self.held = Some((rid, Hold::Poll { token }));
                return;
            }
            self.answer(rid, errno::fail(errno::EAGAIN));
            return;
        }
        let Some(req) = self.poll_req.take() else {
            return;
        };
        match self.poll_go(rid, req) {
            Out::Ret(v) => self.answer(rid, v),
            Out::Done => {}
        }
    }

    fn select(&mut self, rid: u64, a: [u64; 6], timeval: bool) -> Out {
        let nfds = a[0];
        if (nfds as i32) < 0 {
            return ret(Err(errno::EINVAL));
        }
        // Linux's descriptor table has room for 64 at least (one word of
        // bits); descriptors past it are ignored, those inside are checked.
        let nfds = nfds.min(self.fds.slots.len().max(64) as u64);
        let words = nfds.div_ceil(64) as usize;
        let bytes = nfds.div_ceil(8) as usize;
        let mut sets = [vec![0u64; words], vec![0u64; words], vec![0u64; words]];
        for (k, &at) in [a[1], a[2], a[3]].iter().enumerate() {
            if at != 0 && bytes > 0 {
                match self.read_mem(rid, at, bytes) {
                    Ok(mut b) => {
                        b.resize(words * 8, 0);
                        sets[k] = crate::proto::words(&b);
                    }
                    Err(e) => return ret(Err(e)),
                }
            }
        }
        let deadline = if a[4] == 0 {
            u64::MAX
        } else {
            match self.read_mem(rid, a[4], 16) {
                Ok(b) => {
                    let (s, sub) = (st::u64_at(&b, 0), st::u64_at(&b, 8));
                    let limit = if timeval { 1_000_000 } else { 1_000_000_000 };
                    if s >> 63 != 0 || sub >= limit {
                        return ret(Err(errno::EINVAL));
                    }
                    let ns = if timeval { sub * 1000 } else { sub };
                    sys::now_ns()
                        .saturating_add(s.saturating_mul(1_000_000_000))
                        .saturating_add(ns)
                }
                Err(e) => return ret(Err(e)),
            }
        };
        if !timeval && a[5] != 0 {
            // pselect6: {sigset pointer, size}.
            match self.read_mem(rid, a[5], 16) {
                Ok(b) => {
                    let (p, size) = (st::u64_at(&b, 0), st::u64_at(&b, 8));
                    if p != 0 {
                        if size != 8 {
                            return ret(Err(errno::EINVAL));
                        }
                        match self.read_u64(rid, p) {
                            Ok(m) => {
                                self.sig.saved_mask = Some(self.sig.mask);
                                self.sig.mask = m & !sig::UNBLOCKABLE;
                            }
                            Err(e) => return ret(Err(e)),
                        }
                    }
                }
                Err(e) => return ret(Err(e)),
            }
        }
        let mut fds = Vec::new();
        for fd in 0..nfds as usize {
            let bit = |k: usize| sets[k][fd / 64] >> (fd % 64) & 1 != 0;
            let mut ev = 0;
            if bit(0) {
                ev |= POLLIN;
            }
            if bit(1) {
                ev |= POLLOUT;
            }
            if bit(2) {
                ev |= POLLPRI;
            }
            if ev != 0 {
                if self.fds.get(fd as u64).is_err() {
                    return ret(Err(errno::EBADF));
                }
                fds.push((fd as i64, ev));
            }
        }
        let req = PollReq {
            fds,
            deadline,
            kind: PollKind::Select {
                nfds,
                sets: [a[1], a[2], a[3]],
                timeout: a[4],
                timeval,
            },
        };
        self.poll_go(rid, req)
    }
}

fn poll_timeout_ms(ms: u64) -> u64 {
    let ms = ms as i32;
    if ms < 0 {
        u64::MAX
    } else {
        sys::now_ns().saturating_add(ms as u64 * 1_000_000)
    }
}

/// A descriptor kind with no file offsets (pread and pwrite are ESPIPE).
fn is_stream(k: &Kind) -> bool {
    matches!(
        k,
        Kind::Obj { .. }
            | Kind::KPipe { .. }
            | Kind::Socket { .. }
            | Kind::Unix { .. }
            | Kind::UnixSock { .. }
            | Kind::Epoll(_)
            | Kind::SignalFd(_)
    )
}

fn mode_attr(mode: u64) -> SetAttr {
    SetAttr {
        valid: SetAttr::MODE,
        mode: mode as u32 & 0o7777,
        ..SetAttr::default()
    }
}

fn owner_attr(uid: u64, gid: u64) -> SetAttr {
    let mut a = SetAttr::default();
    if uid as u32 != u32::MAX {
        a.valid |= SetAttr::UID;
        a.uid = uid as u32;
    }
    if gid as u32 != u32::MAX {
        a.valid |= SetAttr::GID;
        a.gid = gid as u32;
    }
    a
}

/// Which file an xattr call names: Linux numbers each family path, `l*`
/// path, `f*` descriptor, from `first`.
fn xattr_on(n: u64, first: u64, arg: u64) -> super::xattr::On {
    use super::xattr::On;
    match n - first {
        0 => On::Path { at: arg, follow: true },
        1 => On::Path { at: arg, follow: false },
        _ => On::Fd(arg),
    }
}
