//! Per-CPU descriptor tables: the GDT and the TSS.
//!
//! The selector layout copies Linux's (kernel code 0x10, kernel data 0x18,
//! user code32 0x23, user data 0x2b, user code64 0x33). `syscall`/`sysret`
//! derive their selectors from one STAR value, which forces this order, and
//! the PVM hypervisor on our development hosts imposes Linux's user selectors.

use x86_64::PrivilegeLevel;
use x86_64::VirtAddr;
use x86_64::instructions::segmentation::{CS, DS, ES, SS, Segment};
use x86_64::instructions::tables::{lgdt, load_tss};
use x86_64::structures::DescriptorTablePointer;
use x86_64::structures::gdt::SegmentSelector;
use x86_64::structures::tss::TaskStateSegment;

pub const KERNEL_CS: u16 = 0x10;
pub const KERNEL_DS: u16 = 0x18;
/// 32-bit user code: unused, but `sysret` finds the 64-bit selectors relative to it.
pub const USER_CS32: u16 = 0x23;
pub const USER_DS: u16 = 0x2b;
pub const USER_CS: u16 = 0x33;
pub const TSS_SEL: u16 = 0x40;

/// Interrupt stack table slots (1-based in the IDT, 0-based in the TSS).
pub const IST_DOUBLE_FAULT: u8 = 1;
pub const IST_NMI: u8 = 2;

#[repr(C, align(16))]
pub struct CpuTables {
    gdt: [u64; 10],
    pub tss: TaskStateSegment,
}

impl Default for CpuTables {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuTables {
    pub fn new() -> Self {
        CpuTables {
            gdt: [
                0,
                0,
                0x00af_9a00_0000_ffff, // 0x10 kernel code, long mode
                0x00cf_9200_0000_ffff, // 0x18 kernel data
                0x00cf_fa00_0000_ffff, // 0x23 user code, 32-bit
                0x00cf_f200_0000_ffff, // 0x2b user data
                0x00af_fa00_0000_ffff, // 0x33 user code, long mode
                0,
                0, // 0x40 TSS, filled by load()
                0,
            ],
            tss: TaskStateSegment::new(),
        }
    }

    /// Installs the tables on this CPU. `ist` are the tops of the double-fault
    /// and NMI stacks, so that a kernel stack overflow still gets reported.
    pub fn load(&'static mut self, ist: [u64; 2]) {
        const { assert!(USER_CS32 + 16 == USER_CS && USER_CS32 + 8 == USER_DS) };
        self.tss.interrupt_stack_table[(IST_DOUBLE_FAULT - 1) as usize] = VirtAddr::new(ist[0]);
        self.tss.interrupt_stack_table[(IST_NMI - 1) as usize] = VirtAddr::new(ist[1]);
        let base = &self.tss as *const TaskStateSegment as u64;
        let limit = (core::mem::size_of::<TaskStateSegment>() - 1) as u64;
        self.gdt[8] = (limit & 0xffff)
            | ((base & 0xff_ffff) << 16)
            | (0x89 << 40) // present, 64-bit available TSS
            | (((limit >> 16) & 0xf) << 48)
            | (((base >> 24) & 0xff) << 56);
        self.gdt[9] = base >> 32;
        let ptr = DescriptorTablePointer {
            limit: (core::mem::size_of_val(&self.gdt) - 1) as u16,
            base: VirtAddr::new(self.gdt.as_ptr() as u64),
        };
        // SAFETY: the table lives for ever (it is 'static) and its code and
        // data descriptors match the selectors loaded right after.
        unsafe {
            lgdt(&ptr);
            CS::set_reg(SegmentSelector::new(KERNEL_CS >> 3, PrivilegeLevel::Ring0));
            let ds = SegmentSelector::new(KERNEL_DS >> 3, PrivilegeLevel::Ring0);
            DS::set_reg(ds);
            ES::set_reg(ds);
            SS::set_reg(ds);
            load_tss(SegmentSelector::new(TSS_SEL >> 3, PrivilegeLevel::Ring0));
        }
    }
}
