//! The 8254 PIT, used only as a fixed-frequency reference to calibrate the
//! TSC and the APIC timer at boot. Channel 2 is used because its gate and
//! output can be read through port 0x61 without any interrupt.

use x86_64::instructions::port::Port;

pub const HZ: u64 = 1_193_182;

/// Runs `start()` when a countdown of `ticks` PIT periods begins and returns
/// as soon as it ends; the caller samples its counters around that window.
pub fn window(ticks: u16, start: impl FnOnce()) {
    // SAFETY: ports 0x61, 0x42, 0x43 drive PIT channel 2 and the speaker gate,
    // which nothing else in Tessera uses.
    unsafe {
        let mut gate = Port::<u8>::new(0x61);
        let mut cmd = Port::<u8>::new(0x43);
        let mut ch2 = Port::<u8>::new(0x42);
        let g = gate.read();
        gate.write((g & !0x02) & !0x01); // speaker off, gate low
        cmd.write(0b1011_0000); // channel 2, lo/hi byte, mode 0, binary
        ch2.write(ticks as u8);
        ch2.write((ticks >> 8) as u8);
        let g = gate.read();
        gate.write(g | 0x01); // gate high: counting starts
        start();
        while gate.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        gate.write(g & !0x01);
    }
}
