/*
 * Tessera boot path: QEMU's PVH entry (Xen ELF note XEN_ELFNOTE_PHYS32_ENTRY).
 *
 * QEMU enters pvh_start32 in 32-bit protected mode, paging off, with %ebx
 * holding the physical address of the hvm_start_info structure. This code
 * builds just enough page tables to reach 64-bit mode in the higher half:
 *   - identity map of the low 4 GiB (to survive the switch to paging),
 *   - the same 4 GiB at the direct-map base (PML4 slot 256),
 *   - the first 1 GiB at KERNEL_VMA (PML4 slot 511, PDPT slot 510),
 * and then calls kmain(start_info_phys). Rust replaces these tables with
 * precise ones (4 KiB pages, W^X, all of RAM) early in boot.
 */

.set KERNEL_VMA, 0xffffffff80000000
.set BOOT_STACK_SIZE, 16384

.section .note.pvh, "a", @note
    .balign 4
    .long 4                 /* name size */
    .long 8                 /* descriptor size */
    .long 18                /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .balign 4
    .quad pvh_start32 - KERNEL_VMA
    .balign 4

.section .text.boot, "ax"
.code32
.global pvh_start32
pvh_start32:
    cli
    cld
    movl %ebx, %edi                         /* start_info: first argument of kmain */
    movl $(boot_stack_top - KERNEL_VMA), %esp

    /* PD entries: 2048 x 2 MiB pages = 4 GiB, present|writable|huge. */
    movl $(boot_pd - KERNEL_VMA), %ebx
    xorl %ecx, %ecx
1:  movl %ecx, %eax
    shll $21, %eax
    orl  $0x83, %eax
    movl %eax, (%ebx,%ecx,8)
    movl %ecx, %eax
    shrl $11, %eax                          /* high dword: bits 32+ of (ecx << 21) */
    movl %eax, 4(%ebx,%ecx,8)
    incl %ecx
    cmpl $2048, %ecx
    jb 1b

    /* Low PDPT: four PDs covering 4 GiB. */
    movl $(boot_pdpt_low - KERNEL_VMA), %ebx
    movl $(boot_pd - KERNEL_VMA + 0x3), %eax
    movl %eax, 0(%ebx)
    addl $0x1000, %eax
    movl %eax, 8(%ebx)
    addl $0x1000, %eax
    movl %eax, 16(%ebx)
    addl $0x1000, %eax
    movl %eax, 24(%ebx)

    /* High PDPT: slot 510 -> the first PD (physical 0..1 GiB). */
    movl $(boot_pdpt_high - KERNEL_VMA), %ebx
    movl $(boot_pd - KERNEL_VMA + 0x3), %eax
    movl %eax, (510*8)(%ebx)

    /* PML4: slot 0 and 256 -> low PDPT, slot 511 -> high PDPT. */
    movl $(boot_pml4 - KERNEL_VMA), %ebx
    movl $(boot_pdpt_low - KERNEL_VMA + 0x3), %eax
    movl %eax, 0(%ebx)
    movl %eax, (256*8)(%ebx)
    movl $(boot_pdpt_high - KERNEL_VMA + 0x3), %eax
    movl %eax, (511*8)(%ebx)

    movl %ebx, %cr3
    long_mode_on                            /* long_mode.S */

    lgdt (boot_gdt_ptr - KERNEL_VMA)
    ljmp $0x10, $(boot_long_mode - KERNEL_VMA)

.code64
boot_long_mode:
    flat_segments
    movabsq $boot_higher_half, %rax
    jmp *%rax

boot_higher_half:
    movabsq $boot_stack_top, %rsp
    xorl %ebp, %ebp                         /* terminates frame-pointer backtraces */
    /* %rdi still holds the start_info physical address (zero-extended). */
    call kmain
2:  cli
    hlt
    jmp 2b

.section .rodata
.balign 8
boot_gdt:
    .quad 0
    .quad 0
    .quad 0x00af9a000000ffff                /* 0x10: kernel code, 64-bit */
    .quad 0x00cf92000000ffff                /* 0x18: kernel data */
boot_gdt_end:
boot_gdt_ptr:
    .word boot_gdt_end - boot_gdt - 1
    .long boot_gdt - KERNEL_VMA

.section .bss
.balign 4096
.global boot_pml4
.global boot_pdpt_low
boot_pml4:      .skip 4096
boot_pdpt_low:  .skip 4096
boot_pdpt_high: .skip 4096
boot_pd:        .skip 4096 * 4
.global boot_stack_bottom
boot_stack_bottom:
    .skip BOOT_STACK_SIZE
.global boot_stack_top
boot_stack_top:
