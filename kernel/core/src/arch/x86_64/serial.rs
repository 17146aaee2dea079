//! The 16550 UART at COM1: the console. Output is polled (it must work in a
//! panic, with interrupts off); input arrives by interrupt (IRQ 4).

use x86_64::instructions::port::Port;

const COM1: u16 = 0x3f8;
const LSR_DATA_READY: u8 = 1;
const LSR_TX_EMPTY: u8 = 1 << 5;

pub fn init() {
    // SAFETY: COM1 ports belong to the console driver alone.
    unsafe {
        Port::<u8>::new(COM1 + 1).write(0x00); // no interrupts while programming
        Port::<u8>::new(COM1 + 3).write(0x80); // DLAB: set the divisor
        Port::<u8>::new(COM1).write(0x01); // 115200 baud
        Port::<u8>::new(COM1 + 1).write(0x00);
        Port::<u8>::new(COM1 + 3).write(0x03); // 8N1
        Port::<u8>::new(COM1 + 2).write(0xc7); // FIFO on, cleared
        Port::<u8>::new(COM1 + 4).write(0x0b); // DTR, RTS, OUT2 (IRQ line enabled)
        Port::<u8>::new(COM1 + 1).write(0x01); // interrupt on received data
    }
}

pub fn write_byte(b: u8) {
    // SAFETY: reading LSR and writing THR have no effect beyond the UART.
    unsafe {
        let mut lsr = Port::<u8>::new(COM1 + 5);
        while lsr.read() & LSR_TX_EMPTY == 0 {
            core::hint::spin_loop();
        }
        Port::<u8>::new(COM1).write(b);
    }
}

/// A received byte, if one is waiting.
pub fn read_byte() -> Option<u8> {
    // SAFETY: as above; reading RBR consumes the byte, which is the intent.
    unsafe {
        if Port::<u8>::new(COM1 + 5).read() & LSR_DATA_READY != 0 {
            Some(Port::<u8>::new(COM1).read())
        } else {
            None
        }
    }
}

/// Feeds `bytes` to the console's input as if they had been typed: the
/// UART in loopback mode sends them back to its own receiver, which raises
/// the input interrupt (tests of the input path use it).
pub fn loop_back(bytes: &[u8]) {
    let mut mcr = x86_64::instructions::port::Port::<u8>::new(COM1 + 4);
    // SAFETY: loopback is switched on only while these bytes are sent, and
    // the modem control register is restored after.
    let old = unsafe { mcr.read() };
    unsafe { mcr.write(old | 0x10) };
    for &b in bytes {
        write_byte(b);
    }
    // SAFETY: as above.
    unsafe { mcr.write(old) };
}
