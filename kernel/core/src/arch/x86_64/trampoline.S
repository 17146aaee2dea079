/*
 * Application-processor start-up code. The BSP copies this blob to physical
 * TRAMPOLINE_PHYS (0x8000) and broadcasts INIT-SIPI-SIPI with vector 0x08, so
 * every AP starts here in real mode with CS = 0x0800, IP = 0. Everything is
 * addressed relative to ap_trampoline_start, because the blob runs at a
 * different address from the one it was linked at.
 *
 * The BSP fills the parameter block at the end of the blob: the boot page
 * tables (below 4 GiB, usable from 32-bit code, identity-mapping low memory),
 * the kernel's final tables (loaded once in 64-bit mode; they identity-map
 * low memory only while APs start), the Rust entry point, and one stack top
 * per AP. Each AP takes the next
 * index with an atomic add, so all APs can start at once.
 */

.set TRAMP, 0x8000
.set MAX_APS, 63

.section .rodata
.global ap_trampoline_start
.global ap_trampoline_end
.balign 16
ap_trampoline_start:
.code16
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    lgdtl (ap_gdt_ptr - ap_trampoline_start)
    movl %cr0, %eax
    orl $1, %eax
    movl %eax, %cr0
    ljmpl $0x08, $(TRAMP + ap_prot - ap_trampoline_start)

.code32
ap_prot:
    movw $0x18, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl (TRAMP + ap_param_cr3 - ap_trampoline_start), %eax
    movl %eax, %cr3
    long_mode_on                            /* long_mode.S */
    ljmp $0x10, $(TRAMP + ap_long - ap_trampoline_start)

.code64
ap_long:
    flat_segments
    movq (TRAMP + ap_param_cr3_final - ap_trampoline_start), %rax
    movq %rax, %cr3                         /* kernel tables: slot 0 maps low memory for now */
    movl $1, %eax
    lock xaddl %eax, (TRAMP + ap_param_next - ap_trampoline_start)
    movl %eax, %edi                         /* AP slot: first argument of the entry */
    movq (TRAMP + ap_param_stacks - ap_trampoline_start)(,%rdi,8), %rsp
    xorl %ebp, %ebp
    movq (TRAMP + ap_param_entry - ap_trampoline_start), %rax
    jmp *%rax

.balign 8
ap_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff                /* 0x08: 32-bit code */
    .quad 0x00af9a000000ffff                /* 0x10: 64-bit code */
    .quad 0x00cf92000000ffff                /* 0x18: data */
ap_gdt_end:
ap_gdt_ptr:
    .word ap_gdt_end - ap_gdt - 1
    .long TRAMP + ap_gdt - ap_trampoline_start

.balign 8
.global ap_param_cr3
ap_param_cr3:    .quad 0
ap_param_cr3_final: .quad 0
ap_param_entry:  .quad 0
ap_param_next:   .quad 0
ap_param_stacks: .skip 8 * MAX_APS
ap_trampoline_end:

/* Offsets of the parameter block, for the Rust side. */
.global AP_PARAM_CR3_OFFSET
.global AP_PARAM_CR3_FINAL_OFFSET
.global AP_PARAM_ENTRY_OFFSET
.global AP_PARAM_NEXT_OFFSET
.global AP_PARAM_STACKS_OFFSET
.balign 8
AP_PARAM_CR3_OFFSET:    .quad ap_param_cr3 - ap_trampoline_start
AP_PARAM_CR3_FINAL_OFFSET: .quad ap_param_cr3_final - ap_trampoline_start
AP_PARAM_ENTRY_OFFSET:  .quad ap_param_entry - ap_trampoline_start
AP_PARAM_NEXT_OFFSET:   .quad ap_param_next - ap_trampoline_start
AP_PARAM_STACKS_OFFSET: .quad ap_param_stacks - ap_trampoline_start
