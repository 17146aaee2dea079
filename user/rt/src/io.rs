//! Console output (`print!`, `println!`) and line input.

use core::fmt::{self, Write};

/// Formats into a small buffer and writes it in as few calls as possible.
pub struct Console {
    buf: [u8; 256],
    len: usize,
}

impl Console {
    pub const fn new() -> Console {
        Console { buf: [0; 256], len: 0 }
    }
    pub fn flush(&mut self) {
        if self.len > 0 {
            let _ = crate::sys::console_write(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl Default for Console {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if self.len == self.buf.len() {
                self.flush();
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

/// Where printing goes while `capture` runs (a server that hands a report
/// to a client instead of the console).
static CAPTURED: spin::Mutex<Option<alloc::string::String>> = spin::Mutex::new(None);

pub fn print_fmt(args: fmt::Arguments) {
    if let Some(text) = CAPTURED.lock().as_mut() {
        let _ = text.write_fmt(args);
        return;
    }
    let mut c = Console::new();
    let _ = c.write_fmt(args);
    c.flush();
}

/// What `f` prints, instead of printing it.
pub fn capture(f: impl FnOnce()) -> alloc::string::String {
    *CAPTURED.lock() = Some(alloc::string::String::new());
    f();
    CAPTURED.lock().take().unwrap_or_default()
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::io::print_fmt(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::io::print_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// What ended a line read.
pub enum Line {
    Text(usize),
    /// Ctrl-C: the line was dropped.
    Interrupted,
    /// No more input (the console read failed).
    End,
}

/// Reads one line with echo and backspace into `buf`.
pub fn read_line(buf: &mut [u8]) -> Line {
    let mut len = 0;
    loop {
        let mut chunk = [0u8; 64];
        let Ok(n) = crate::sys::console_read(&mut chunk) else {
            return Line::End;
        };
        for &b in &chunk[..n] {
            match b {
                b'\r' | b'\n' => {
                    crate::print!("\n");
                    return Line::Text(len);
                }
                0x03 | 0x15 => {
                    crate::print!("^C\n");
                    return Line::Interrupted;
                }
                0x7f | 0x08 if len > 0 => {
                    len -= 1;
                    crate::print!("\x08 \x08");
                }
                b if (0x20..0x7f).contains(&b) && len < buf.len() => {
                    buf[len] = b;
                    len += 1;
                    let _ = crate::sys::console_write(&[b]);
                }
                _ => {}
            }
        }
    }
}
