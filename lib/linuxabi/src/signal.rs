//! Signals: numbers, what each does by default, sets of them, and the
//! kernel's `struct sigaction` as `rt_sigaction` reads and writes it.

pub const SIGHUP: u32 = 1;
pub const SIGINT: u32 = 2;
pub const SIGQUIT: u32 = 3;
pub const SIGILL: u32 = 4;
pub const SIGTRAP: u32 = 5;
pub const SIGABRT: u32 = 6;
pub const SIGBUS: u32 = 7;
pub const SIGFPE: u32 = 8;
pub const SIGKILL: u32 = 9;
pub const SIGUSR1: u32 = 10;
pub const SIGSEGV: u32 = 11;
pub const SIGUSR2: u32 = 12;
pub const SIGPIPE: u32 = 13;
pub const SIGALRM: u32 = 14;
pub const SIGTERM: u32 = 15;
pub const SIGSTKFLT: u32 = 16;
pub const SIGCHLD: u32 = 17;
pub const SIGCONT: u32 = 18;
pub const SIGSTOP: u32 = 19;
pub const SIGTSTP: u32 = 20;
pub const SIGTTIN: u32 = 21;
pub const SIGTTOU: u32 = 22;
pub const SIGURG: u32 = 23;
pub const SIGXCPU: u32 = 24;
pub const SIGXFSZ: u32 = 25;
pub const SIGVTALRM: u32 = 26;
pub const SIGPROF: u32 = 27;
pub const SIGWINCH: u32 = 28;
pub const SIGIO: u32 = 29;
pub const SIGPWR: u32 = 30;
pub const SIGSYS: u32 = 31;
pub const SIGRTMIN: u32 = 32;
/// Signals are 1..=64.
pub const NSIG: u32 = 64;

/// `sa_handler` values.
pub const SIG_DFL: u64 = 0;
pub const SIG_IGN: u64 = 1;

/// `sa_flags`.
pub const SA_NOCLDSTOP: u64 = 1;
pub const SA_NOCLDWAIT: u64 = 2;
pub const SA_SIGINFO: u64 = 4;
pub const SA_RESTORER: u64 = 0x0400_0000;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;

/// `rt_sigprocmask`'s `how`.
pub const SIG_BLOCK: u64 = 0;
pub const SIG_UNBLOCK: u64 = 1;
pub const SIG_SETMASK: u64 = 2;

/// `sigaltstack`'s flags.
pub const SS_ONSTACK: u32 = 1;
pub const SS_DISABLE: u32 = 2;
pub const MINSIGSTKSZ: u64 = 2048;

/// `si_code` values.
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_QUEUE: i32 = -1;
pub const SI_TKILL: i32 = -6;
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_DUMPED: i32 = 3;
pub const CLD_TRAPPED: i32 = 4;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;
pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
pub const BUS_ADRERR: i32 = 2;
pub const ILL_ILLOPN: i32 = 2;
pub const FPE_INTDIV: i32 = 1;
pub const TRAP_BRKPT: i32 = 1;

/// What a signal does when its action is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    Terminate,
    /// Terminate, with a core dump (the status says so; Tessera writes none).
    Core,
    Ignore,
    Stop,
    Continue,
}

pub fn default_action(sig: u32) -> Default {
    match sig {
        SIGCHLD | SIGURG | SIGWINCH => Default::Ignore,
        SIGCONT => Default::Continue,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Default::Stop,
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ | SIGSYS => Default::Core,
        _ => Default::Terminate,
    }
}

/// Whether `sig` is a valid signal number.
pub fn valid(sig: u32) -> bool {
    (1..=NSIG).contains(&sig)
}

/// The bit of `sig` in a set (bit `sig - 1`, as Linux's `sigset_t`).
pub const fn bit(sig: u32) -> u64 {
    1u64 << (sig - 1)
}

/// Signals no process can block, catch or ignore.
pub const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);

/// The stop signals a terminal sends, which an orphaned process group
/// does not get.
pub const TTY_STOPS: u64 = bit(SIGTSTP) | bit(SIGTTIN) | bit(SIGTTOU);

/// The lowest signal of a non-empty set.
pub fn lowest(set: u64) -> Option<u32> {
    (set != 0).then(|| set.trailing_zeros() + 1)
}

/// The name `kill -l` and strsignal use, without "SIG".
pub fn name(sig: u32) -> &'static str {
    const NAMES: [&str; 32] = [
        "0", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM",
        "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF",
        "WINCH", "IO", "PWR", "SYS",
    ];
    NAMES.get(sig as usize).copied().unwrap_or("RT")
}

/// The kernel's `struct sigaction` (x86_64): handler, flags, restorer,
/// mask; 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, core::default::Default)]
pub struct SigAction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

impl SigAction {
    pub const LEN: usize = 32;

    pub fn from_bytes(b: &[u8; 32]) -> SigAction {
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        SigAction {
            handler: w(0),
            flags: w(1),
            restorer: w(2),
            mask: w(3),
        }
    }

    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, v) in [self.handler, self.flags, self.restorer, self.mask].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Whether delivering `sig` with this action would do nothing.
    pub fn ignores(&self, sig: u32) -> bool {
        self.handler == SIG_IGN || (self.handler == SIG_DFL && default_action(sig) == Default::Ignore)
    }
}

/// A wait status (`wait4`'s `*status`) for a process that exited with
/// `code`, was killed by `sig` (with a core dump), or stopped / continued.
pub fn exit_status(code: u32) -> u32 {
    (code & 0xff) << 8
}

pub fn killed_status(sig: u32, core: bool) -> u32 {
    (sig & 0x7f) | if core { 0x80 } else { 0 }
}

pub fn stopped_status(sig: u32) -> u32 {
    ((sig & 0xff) << 8) | 0x7f
}

pub const CONTINUED_STATUS: u32 = 0xffff;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_sets() {
        assert_eq!(default_action(SIGCHLD), Default::Ignore);
        assert_eq!(default_action(SIGSEGV), Default::Core);
        assert_eq!(default_action(SIGTSTP), Default::Stop);
        assert_eq!(default_action(SIGUSR1), Default::Terminate);
        assert_eq!(default_action(40), Default::Terminate);
        assert_eq!(bit(SIGHUP), 1);
        assert_eq!(bit(64), 1 << 63);
        assert_eq!(lowest(bit(SIGTERM) | bit(SIGUSR2)), Some(SIGUSR2));
        assert_eq!(lowest(0), None);
        assert!(valid(64) && !valid(0) && !valid(65));
        assert_eq!(name(SIGSEGV), "SEGV");
    }

    #[test]
    fn statuses_as_linux_encodes_them() {
        assert_eq!(exit_status(3), 0x300);
        assert_eq!(killed_status(SIGKILL, false), 9);
        assert_eq!(killed_status(SIGSEGV, true), 0x8b);
        assert_eq!(stopped_status(SIGTSTP), 0x147f);
    }

    #[test]
    fn sigaction_round_trip() {
        let a = SigAction {
            handler: 0x401000,
            flags: SA_SIGINFO | SA_RESTORER,
            restorer: 0x402000,
            mask: bit(SIGINT),
        };
        assert_eq!(SigAction::from_bytes(&a.to_bytes()), a);
        assert!(SigAction::default().ignores(SIGCHLD));
        assert!(!SigAction::default().ignores(SIGINT));
    }
}
