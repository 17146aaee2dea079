/*
 * Interrupt and exception entry. One 16-byte stub per vector pushes a zero
 * error code where the CPU does not push one, then the vector number, and
 * jumps to trap_common, so every trap reaches Rust with the same TrapFrame.
 * A trap from ring 3 runs swapgs on the way in and out, so that %gs always
 * addresses the per-CPU data while in the kernel.
 */

.section .text
.balign 16
.global trap_stubs
trap_stubs:
.set vec, 0
.rept 256
    .balign 16
    .if (vec == 8) || (vec == 10) || (vec == 11) || (vec == 12) || (vec == 13) || (vec == 14) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    pushq $0
    .endif
    pushq $vec
    jmp trap_common
    .set vec, vec + 1
.endr

trap_common:
    testb $3, 24(%rsp)                      /* saved CS: from user mode? */
    jz 1f
    swapgs
1:  push_call_regs                          /* as syscall_entry (frame.S) */
    push_other_regs
    cld
    movq %rsp, %rdi
    call trap_dispatch
.global trap_return
trap_return:
    pop_other_regs
    pop_call_regs
    testb $3, 24(%rsp)
    jz 2f
    swapgs
2:  addq $16, %rsp                          /* vector and error code */
    iretq
