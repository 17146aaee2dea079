/*
 * System-call entry (the `syscall` instruction). The CPU has put the user
 * RIP in %rcx and RFLAGS in %r11 and cleared IF (FMASK). Switch to this
 * CPU's kernel stack and build the TrapFrame an interrupt from user mode
 * would (vector 0x100 marks a system call), with one difference: the
 * callee-saved registers (rbx, rbp, r12-r15) and r11 are not stored in
 * it. The hook keeps the callee-saved ones itself, as the C ABI
 * has every function do, so they reach user mode again unchanged; r11 is
 * the RFLAGS slot's. Nothing reads or writes those slots of a system
 * call's frame, and skipping them takes a dozen instructions off every
 * system call (unless the process is a Linux one: `full_frame_entry`).
 * %gs:8 is PerCpu::kernel_rsp, %gs:16 PerCpu::user_rsp, %gs:24
 * PerCpu::full_frame.
 */
.section .text
.global syscall_entry
syscall_entry:
    swapgs
    movq %rsp, %gs:16
    movq %gs:8, %rsp
    pushq $0x2b                             /* user SS */
    pushq %gs:16                            /* user RSP */
    pushq %r11                              /* user RFLAGS */
    pushq $0x33                             /* user CS */
    pushq %rcx                              /* user RIP */
    pushq $0                                /* error code */
    pushq $0x100                            /* "vector": system call */
    push_call_regs                          /* as trap_common */
    cmpq $0, %gs:24                         /* PerCpu::full_frame */
    jne linux_syscall
    subq $56, %rsp                          /* rbx rbp r11 r12 r13 r14 r15 */
    movq %rsp, %rdi                         /* (FMASK already cleared DF) */
    call *syscall_hook(%rip)
/*
 * Back to user mode: the argument registers and the result from the
 * frame, r11 cleared (it would hold a kernel value), the callee-saved
 * ones as the hook left them (the user's).
 */
short_frame_return:
    addq $56, %rsp
    pop_call_regs
    xorl %r11d, %r11d
    addq $16, %rsp                          /* vector and error code */
    swapgs
    iretq
/*
 * A Linux process keeps every register in its frame: its supervisor reads
 * them (fork, signals) and may set them (a signal handler's entry,
 * sigreturn), and they go back to user mode from the frame. A path and a
 * hook of their own, so that a native call pays one compare and branch
 * for them. The calls the kernel answers at once (abi::linux::SHORT_FRAME,
 * a bitmap at PerCpu::full_frame) take a short frame: nobody reads their
 * other registers. (%rcx is free: the user's is in the frame already.)
 */
linux_syscall:
    movq %gs:24, %rcx
    cmpq $511, %rax
    ja full_frame_syscall
    btq %rax, (%rcx)
    jnc full_frame_syscall
    subq $56, %rsp
    movq %rsp, %rdi
    call *full_frame_syscall_hook(%rip)
    jmp short_frame_return
full_frame_syscall:
    push_other_regs
    movq %rsp, %rdi
    call *full_frame_syscall_hook(%rip)
    /*
     * r11 as the frame holds it: the RFLAGS the syscall put there, as
     * Linux returns it, or what the supervisor set (rt_sigreturn puts
     * back the r11 of code a signal interrupted anywhere: cleared, it
     * was lost, and a program died with a pointer it held there zero).
     */
    pop_other_regs
    pop_call_regs
    addq $16, %rsp
    swapgs
    iretq
