//! The signal frame Linux builds on a process's stack to run a handler
//! (`struct rt_sigframe` of x86_64): the return address (the handler's
//! `sa_restorer`, which calls `rt_sigreturn`), the `ucontext` with the
//! interrupted registers, mask and alternate stack, the `siginfo`, then
//! the FPU state (`fxsave` layout) that `uc_mcontext.fpstate` points to.
//! `rt_sigreturn` reads it back from where the stack pointer is then.

/// The registers a frame saves, in the order of `struct sigcontext`'s
/// first 18 words (r8 … r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip,
/// eflags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Context {
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub rdx: u64,
    pub rax: u64,
    pub rcx: u64,
    pub rsp: u64,
    pub rip: u64,
    pub eflags: u64,
}

/// `struct siginfo` (128 bytes): the fields the personality fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SigInfo {
    pub signo: u32,
    pub errno: i32,
    pub code: i32,
    /// Sender (kill, sigqueue, SIGCHLD's child), or 0.
    pub pid: u32,
    pub uid: u32,
    /// SIGCHLD: exit code or signal. sigqueue: the value (64 bits).
    pub status: i32,
    pub value: u64,
    /// Faults: the address.
    pub addr: u64,
}

impl SigInfo {
    pub const LEN: usize = 128;

    pub fn to_bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&self.signo.to_le_bytes());
        b[4..8].copy_from_slice(&self.errno.to_le_bytes());
        b[8..12].copy_from_slice(&self.code.to_le_bytes());
        if self.addr != 0 {
            b[16..24].copy_from_slice(&self.addr.to_le_bytes());
        } else {
            b[16..20].copy_from_slice(&self.pid.to_le_bytes());
            b[20..24].copy_from_slice(&self.uid.to_le_bytes());
            if self.value != 0 {
                b[24..32].copy_from_slice(&self.value.to_le_bytes());
            } else {
                b[24..28].copy_from_slice(&self.status.to_le_bytes());
            }
        }
        b
    }

    /// A siginfo a program passed (`rt_sigqueueinfo`): the fields kept as
    /// they were given (the union as its pid, uid and 64-bit value).
    pub fn from_bytes(b: &[u8]) -> SigInfo {
        let u32_at = |i: usize| {
            b.get(i..i + 4)
                .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
        };
        let u64_at = |i: usize| {
            b.get(i..i + 8)
                .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
        };
        SigInfo {
            signo: u32_at(0),
            errno: u32_at(4) as i32,
            code: u32_at(8) as i32,
            pid: u32_at(16),
            uid: u32_at(20),
            status: 0,
            value: u64_at(24),
            addr: 0,
        }
    }
}

/// The alternate signal stack (`stack_t`: sp, flags, size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AltStack {
    pub sp: u64,
    pub flags: u32,
    pub size: u64,
}

impl AltStack {
    /// No alternate stack: a thread's or a new program's first.
    pub const DISABLED: AltStack = AltStack {
        sp: 0,
        flags: crate::signal::SS_DISABLE,
        size: 0,
    };

    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.sp.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; 24]) -> AltStack {
        AltStack {
            sp: u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8])),
            flags: u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4])),
            size: u64::from_le_bytes(b[16..24].try_into().unwrap_or([0; 8])),
        }
    }

    /// Whether `sp` lies on this stack.
    pub fn contains(&self, sp: u64) -> bool {
        self.flags & crate::signal::SS_DISABLE == 0 && sp > self.sp && sp - self.sp <= self.size
    }
}

/// `uc_flags`: the frame's FPU state is fxsave's (no extended state).
const UC_FLAGS: u64 = 0;
/// Where things are in the frame, from its start (the return address).
const UC: usize = 8;
const UC_STACK: usize = UC + 16;
const MCONTEXT: usize = UC + 40;
const FPSTATE_PTR: usize = MCONTEXT + 26 * 8;
const OLDMASK: usize = MCONTEXT + 24 * 8;
const CR2: usize = MCONTEXT + 25 * 8;
const ERR: usize = MCONTEXT + 22 * 8;
const TRAPNO: usize = MCONTEXT + 23 * 8;
const SIGMASK: usize = MCONTEXT + 256;
const INFO: usize = SIGMASK + 8;
const FPU: usize = INFO + SigInfo::LEN;
/// Bytes of the fxsave area.
pub const FPU_LEN: usize = 512;
/// A frame's size: return address, ucontext, siginfo, FPU state (which
/// must lie 16-aligned: the frame's start is placed so that it does).
pub const LEN: usize = FPU + FPU_LEN;

/// A frame to write at `at` (the new stack pointer, 8 bytes below a
/// 16-aligned address, as after a call instruction).
pub struct Frame {
    pub restorer: u64,
    pub context: Context,
    pub mask: u64,
    pub stack: AltStack,
    pub info: SigInfo,
    pub fpu: [u8; FPU_LEN],
    pub trapno: u64,
    pub err: u64,
    pub cr2: u64,
}

/// Where a frame goes below stack pointer `sp` (the 128-byte red zone
/// left alone), and where its siginfo and ucontext are then.
pub fn place(sp: u64) -> Option<(u64, u64, u64)> {
    let below = sp.checked_sub(128 + LEN as u64)?;
    // The FPU area 16-aligned, so the frame's start is too (FPU is a
    // multiple of 16 from it); then 8 below for the return address slot
    // convention: rsp ≡ 8 (mod 16) at the handler's entry.
    let start = (below & !15) - 8;
    let fpu_misalign = (start + FPU as u64) % 16;
    let start = start - fpu_misalign;
    Some((start, start + INFO as u64, start + UC as u64))
}

impl Frame {
    pub fn to_bytes(&self, at: u64) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        let put = |b: &mut [u8; LEN], off: usize, v: u64| b[off..off + 8].copy_from_slice(&v.to_le_bytes());
        put(&mut b, 0, self.restorer);
        put(&mut b, UC, UC_FLAGS);
        b[UC_STACK..UC_STACK + 24].copy_from_slice(&self.stack.to_bytes());
        let c = &self.context;
        let regs = [
            c.r8, c.r9, c.r10, c.r11, c.r12, c.r13, c.r14, c.r15, c.rdi, c.rsi, c.rbp, c.rbx, c.rdx, c.rax, c.rcx,
            c.rsp, c.rip, c.eflags,
        ];
        for (i, v) in regs.iter().enumerate() {
            put(&mut b, MCONTEXT + i * 8, *v);
        }
        // cs, gs, fs, ss: the user segments (cs 0x33, ss 0x2b).
        put(&mut b, MCONTEXT + 18 * 8, 0x33 | (0x2b << 48));
        put(&mut b, ERR, self.err);
        put(&mut b, TRAPNO, self.trapno);
        put(&mut b, OLDMASK, self.mask);
        put(&mut b, CR2, self.cr2);
        put(&mut b, FPSTATE_PTR, at + FPU as u64);
        put(&mut b, SIGMASK, self.mask);
        b[INFO..INFO + SigInfo::LEN].copy_from_slice(&self.info.to_bytes());
        b[FPU..FPU + FPU_LEN].copy_from_slice(&self.fpu);
        b
    }
}

/// What `rt_sigreturn` takes back from the ucontext at `uc` (the stack
/// pointer then: the return address was popped): the registers, the mask,
/// the alternate stack, and where the FPU state is (0: none).
pub struct Restored {
    pub context: Context,
    pub mask: u64,
    pub stack: AltStack,
    pub fpstate: u64,
}

/// Bytes of the ucontext `rt_sigreturn` reads.
pub const UCONTEXT_LEN: usize = SIGMASK + 8 - UC;

pub fn restore(uc: &[u8; UCONTEXT_LEN]) -> Restored {
    let get = |off: usize| {
        let o = off - UC;
        u64::from_le_bytes(uc[o..o + 8].try_into().unwrap_or([0; 8]))
    };
    let r = |i: usize| get(MCONTEXT + i * 8);
    let mut stack = [0u8; 24];
    stack.copy_from_slice(&uc[UC_STACK - UC..UC_STACK - UC + 24]);
    Restored {
        context: Context {
            r8: r(0),
            r9: r(1),
            r10: r(2),
            r11: r(3),
            r12: r(4),
            r13: r(5),
            r14: r(6),
            r15: r(7),
            rdi: r(8),
            rsi: r(9),
            rbp: r(10),
            rbx: r(11),
            rdx: r(12),
            rax: r(13),
            rcx: r(14),
            rsp: r(15),
            rip: r(16),
            eflags: r(17),
        },
        mask: get(SIGMASK),
        stack: AltStack::from_bytes(&stack),
        fpstate: get(FPSTATE_PTR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_linuxs() {
        // struct sigcontext is 256 bytes; ucontext 304; siginfo after it.
        assert_eq!(SIGMASK - MCONTEXT, 256);
        assert_eq!(SIGMASK + 8 - UC, 304);
        assert_eq!(INFO, 8 + 304);
        assert_eq!(UCONTEXT_LEN, 304);
    }

    #[test]
    fn placed_aligned_below_the_red_zone() {
        let (start, info, uc) = place(0x7fff_fff0).unwrap();
        assert_eq!(start % 16, 8);
        assert_eq!((start + FPU as u64) % 16, 0);
        assert!(start + LEN as u64 + 128 <= 0x7fff_fff0);
        assert_eq!(info, start + INFO as u64);
        assert_eq!(uc, start + 8);
        assert!(place(100).is_none());
    }

    #[test]
    fn a_frame_reads_back() {
        let mut f = Frame {
            restorer: 0x401234,
            context: Context::default(),
            mask: 0x5,
            stack: AltStack {
                sp: 0x1000,
                flags: 2,
                size: 8192,
            },
            info: SigInfo {
                signo: 10,
                code: -6,
                pid: 7,
                ..SigInfo::default()
            },
            fpu: [0; FPU_LEN],
            trapno: 0,
            err: 0,
            cr2: 0,
        };
        f.context.rip = 0x400100;
        f.context.rax = u64::MAX - 3;
        f.context.rsp = 0x7ffe_0000;
        f.fpu[0] = 0x7f;
        let at = 0x7ffd_0008;
        let b = f.to_bytes(at);
        assert_eq!(&b[0..8], &0x401234u64.to_le_bytes());
        let mut uc = [0u8; UCONTEXT_LEN];
        uc.copy_from_slice(&b[8..8 + UCONTEXT_LEN]);
        let r = restore(&uc);
        assert_eq!(r.context, f.context);
        assert_eq!(r.mask, 5);
        assert_eq!(r.stack, f.stack);
        assert_eq!(r.fpstate, at + FPU as u64);
        assert_eq!(b[FPU], 0x7f);
        assert_eq!(&b[INFO..INFO + 4], &10u32.to_le_bytes());
        assert_eq!(&b[INFO + 16..INFO + 20], &7u32.to_le_bytes());
    }

    #[test]
    fn siginfo_of_a_fault_carries_the_address() {
        let i = SigInfo {
            signo: 11,
            code: 1,
            addr: 0xdead000,
            ..SigInfo::default()
        };
        let b = i.to_bytes();
        assert_eq!(&b[16..24], &0xdead000u64.to_le_bytes());
        let q = SigInfo::from_bytes(&b);
        assert_eq!(q.signo, 11);
        assert_eq!(q.code, 1);
    }
}
