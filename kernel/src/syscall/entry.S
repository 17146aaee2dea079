/*
 * System-call entry (the `syscall` instruction). The CPU has put the user
 * RIP in %rcx and RFLAGS in %r11 and cleared IF (FMASK). Switch to this
 * CPU's kernel stack, build the same TrapFrame an interrupt from user mode
 * would (vector 0x100 marks a system call), and leave through trap_return,
 * so every way into and out of the kernel shares one frame and one exit.
 * %gs:8 is PerCpu::kernel_rsp, %gs:16 PerCpu::user_rsp.
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
    pushq %r9                               /* same order as trap_common */
    pushq %r8
    pushq %r10
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rax
    pushq %rcx
    pushq %rbx
    pushq %rbp
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, %rdi                         /* (FMASK already cleared DF) */
    call syscall_dispatch
    jmp trap_return
