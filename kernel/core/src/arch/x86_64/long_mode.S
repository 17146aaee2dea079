/*
 * The switch to 64-bit mode, the same for the bootstrap processor (boot.S)
 * and the others (trampoline.S): included before each, defined once.
 */
.ifndef .Llong_mode_macros
.set .Llong_mode_macros, 1

/*
 * From 32-bit protected mode with CR3 loaded: CR4.PAE | CR4.PGE,
 * EFER.LME | EFER.NXE, then CR0.PG | CR0.WP | CR0.PE, which enters
 * long mode (compatibility mode until a far jump to 64-bit code).
 */
.macro long_mode_on
    movl %cr4, %eax
    orl $0xa0, %eax
    movl %eax, %cr4
    movl $0xc0000080, %ecx
    rdmsr
    orl $0x900, %eax
    wrmsr
    movl %cr0, %eax
    orl $0x80010001, %eax
    movl %eax, %cr0
.endm

/*
 * First thing in 64-bit code: the data selector (0x18 in both GDTs) in
 * DS, ES and SS; FS and GS null (their bases are set through MSRs).
 */
.macro flat_segments
    movw $0x18, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorw %ax, %ax
    movw %ax, %fs
    movw %ax, %gs
.endm

.endif
