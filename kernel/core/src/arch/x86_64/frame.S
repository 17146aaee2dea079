/*
 * The registers of a TrapFrame that an interrupt (vectors.S) and a system
 * call (entry.S) save alike: the six argument registers, together and in
 * system-call order, then rax and rcx; and the rest (the callee-saved ones
 * and r11), which an interrupt always saves and a system call only for a
 * Linux process. Included before each, defined once.
 */
.ifndef .Lframe_macros
.set .Lframe_macros, 1

.macro push_call_regs
    pushq %r9
    pushq %r8
    pushq %r10
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rax
    pushq %rcx
.endm

.macro pop_call_regs
    popq %rcx
    popq %rax
    popq %rdi
    popq %rsi
    popq %rdx
    popq %r10
    popq %r8
    popq %r9
.endm

.macro push_other_regs
    pushq %rbx
    pushq %rbp
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
.endm

.macro pop_other_regs
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %rbp
    popq %rbx
.endm

.endif
