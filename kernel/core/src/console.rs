//! The serial console: formatted output for every CPU, and line input fed by
//! the UART interrupt.

use crate::arch::x86_64::serial;
use crate::sync::IrqMutex;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};

struct Serial;

impl Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                serial::write_byte(b'\r');
            }
            serial::write_byte(b);
        }
        Ok(())
    }
}

/// Serialises whole `print!` calls so lines from different CPUs do not mix.
static OUTPUT: IrqMutex<()> = IrqMutex::new(());
/// Set by the panic handler: from then on output no longer waits for the lock
/// (its holder may be the CPU that panicked, or one that will never run again).
static PANICKING: AtomicBool = AtomicBool::new(false);

pub fn print_fmt(args: fmt::Arguments) {
    if PANICKING.load(Ordering::Relaxed) {
        let _ = Serial.write_fmt(args);
        return;
    }
    let _guard = OUTPUT.lock();
    let _ = Serial.write_fmt(args);
}

pub fn enter_panic_mode() {
    PANICKING.store(true, Ordering::SeqCst);
}

/// Writes raw bytes from a process (no formatting; `\n` becomes `\r\n`).
pub fn write_bytes(bytes: &[u8]) {
    let _guard = OUTPUT.lock();
    for &b in bytes {
        if b == b'\n' {
            serial::write_byte(b'\r');
        }
        serial::write_byte(b);
    }
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::print_fmt(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::console::print_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Bytes received but not yet read: a small ring filled by the interrupt.
struct InputRing {
    buf: [u8; 256],
    head: usize,
    len: usize,
}

static INPUT: IrqMutex<InputRing> = IrqMutex::new(InputRing {
    buf: [0; 256],
    head: 0,
    len: 0,
});

/// UART receive interrupt: move every waiting byte into the ring. When the
/// ring is full the newest bytes are dropped (typing faster than the reader).
pub fn on_input_interrupt() {
    let hooks = crate::hooks::get();
    let mut ring = INPUT.lock();
    while let Some(b) = serial::read_byte() {
        // Ctrl-C interrupts the foreground program; with none, the reader
        // (the shell) gets it and drops its line.
        if b == 0x03 && (hooks.interrupt_key)() {
            continue;
        }
        if ring.len < ring.buf.len() {
            let at = (ring.head + ring.len) % ring.buf.len();
            ring.buf[at] = b;
            ring.len += 1;
        }
    }
    drop(ring);
    (hooks.input_ready)();
}

/// Takes what is buffered, up to `buf.len()` bytes, without waiting.
pub fn take_buffered(buf: &mut [u8]) -> usize {
    let mut ring = INPUT.lock();
    let mut n = 0;
    while n < buf.len() && ring.len > 0 {
        buf[n] = ring.buf[ring.head];
        ring.head = (ring.head + 1) % ring.buf.len();
        ring.len -= 1;
        n += 1;
    }
    n
}

/// The next input byte, waiting (halted) until one arrives.
pub fn read_byte() -> u8 {
    loop {
        {
            let mut ring = INPUT.lock();
            if ring.len > 0 {
                let b = ring.buf[ring.head];
                ring.head = (ring.head + 1) % ring.buf.len();
                ring.len -= 1;
                return b;
            }
        }
        // Check again with interrupts off: wait_for_interrupt enables them
        // atomically with hlt, so a byte arriving after the check still wakes us.
        x86_64::instructions::interrupts::disable();
        if INPUT.lock().len == 0 {
            crate::arch::x86_64::wait_for_interrupt();
        }
        x86_64::instructions::interrupts::enable();
    }
}

/// Reads one line with echo and basic editing (backspace, Ctrl-U, Ctrl-C).
/// Returns the number of bytes stored in `buf`.
pub fn read_line(buf: &mut [u8]) -> usize {
    let mut len = 0;
    loop {
        match read_byte() {
            b'\r' | b'\n' => {
                println!();
                return len;
            }
            0x7f | 0x08 if len > 0 => {
                len -= 1;
                print!("\x08 \x08");
            }
            0x15 | 0x03 => {
                // Ctrl-U / Ctrl-C: drop the line.
                println!("^C");
                return 0;
            }
            b if (0x20..0x7f).contains(&b) && len < buf.len() => {
                buf[len] = b;
                len += 1;
                print!("{}", b as char);
            }
            _ => {}
        }
    }
}
