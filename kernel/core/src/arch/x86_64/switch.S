/*
 * switch_context(save: *mut u64, load: u64): saves the callee-saved registers
 * on the current kernel stack, stores the stack pointer in *save, and
 * resumes the computation whose stack pointer is `load`. The caller-saved
 * registers are already saved by the Rust caller, per the ABI.
 */
.section .text
.global switch_context
switch_context:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret

/*
 * First code of a new computation, reached by the `ret` above: finish the
 * switch, then leave for user mode through the trap frame prepared at the
 * top of its kernel stack.
 */
.global computation_start
computation_start:
    call computation_started
    jmp trap_return
