//! The legacy 8259 PICs: remapped away from the exception vectors and masked,
//! because the I/O APIC delivers every device interrupt instead.

use x86_64::instructions::port::Port;

pub fn disable(base: u8) {
    // SAFETY: the standard ICW1..ICW4 sequence on ports 0x20/0x21 and 0xa0/0xa1,
    // then a full mask; no other code uses these ports.
    unsafe {
        let mut cmd1 = Port::<u8>::new(0x20);
        let mut data1 = Port::<u8>::new(0x21);
        let mut cmd2 = Port::<u8>::new(0xa0);
        let mut data2 = Port::<u8>::new(0xa1);
        cmd1.write(0x11);
        cmd2.write(0x11);
        data1.write(base);
        data2.write(base + 8);
        data1.write(4);
        data2.write(2);
        data1.write(1);
        data2.write(1);
        data1.write(0xff);
        data2.write(0xff);
    }
}
