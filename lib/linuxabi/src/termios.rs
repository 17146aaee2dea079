//! The terminal: `struct termios` as `TCGETS`/`TCSETS` carry it, and the
//! line discipline that turns the console's bytes into what a program
//! reads (canonical lines with erase and kill, or raw bytes), the echo it
//! writes back, the signals typed keys send (Ctrl-C, Ctrl-\, Ctrl-Z), and
//! the output processing of what programs write (`\n` → `\r\n`).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

// ioctl requests on a terminal.
pub const TCGETS: u64 = 0x5401;
pub const TCSETS: u64 = 0x5402;
pub const TCSETSW: u64 = 0x5403;
pub const TCSETSF: u64 = 0x5404;
pub const TCSBRK: u64 = 0x5409;
pub const TCXONC: u64 = 0x540a;
pub const TCFLSH: u64 = 0x540b;
pub const TIOCSCTTY: u64 = 0x540e;
pub const TIOCGPGRP: u64 = 0x540f;
pub const TIOCSPGRP: u64 = 0x5410;
pub const TIOCOUTQ: u64 = 0x5411;
pub const TIOCGWINSZ: u64 = 0x5413;
pub const TIOCSWINSZ: u64 = 0x5414;
pub const FIONREAD: u64 = 0x541b;
pub const TIOCNOTTY: u64 = 0x5422;
pub const FIONBIO: u64 = 0x5421;
pub const TIOCGSID: u64 = 0x5429;
pub const TIOCGPTN: u64 = 0x8004_5430;

// c_iflag
pub const IGNBRK: u32 = 0o1;
pub const BRKINT: u32 = 0o2;
pub const ISTRIP: u32 = 0o40;
pub const INLCR: u32 = 0o100;
pub const IGNCR: u32 = 0o200;
pub const ICRNL: u32 = 0o400;
pub const IXON: u32 = 0o2000;
pub const IMAXBEL: u32 = 0o20000;
pub const IUTF8: u32 = 0o40000;
// c_oflag
pub const OPOST: u32 = 0o1;
pub const ONLCR: u32 = 0o4;
pub const OCRNL: u32 = 0o10;
// c_cflag
pub const B38400: u32 = 0o17;
pub const CS8: u32 = 0o60;
pub const CREAD: u32 = 0o200;
pub const HUPCL: u32 = 0o2000;
pub const CLOCAL: u32 = 0o4000;
// c_lflag
pub const ISIG: u32 = 0o1;
pub const ICANON: u32 = 0o2;
pub const ECHO: u32 = 0o10;
pub const ECHOE: u32 = 0o20;
pub const ECHOK: u32 = 0o40;
pub const ECHONL: u32 = 0o100;
pub const NOFLSH: u32 = 0o200;
pub const TOSTOP: u32 = 0o400;
pub const ECHOCTL: u32 = 0o1000;
pub const ECHOKE: u32 = 0o4000;
pub const IEXTEN: u32 = 0o100000;
// c_cc indices
pub const VINTR: usize = 0;
pub const VQUIT: usize = 1;
pub const VERASE: usize = 2;
pub const VKILL: usize = 3;
pub const VEOF: usize = 4;
pub const VTIME: usize = 5;
pub const VMIN: usize = 6;
pub const VSTART: usize = 8;
pub const VSTOP: usize = 9;
pub const VSUSP: usize = 10;
pub const VEOL: usize = 11;
pub const VREPRINT: usize = 12;
pub const VWERASE: usize = 14;
pub const VLNEXT: usize = 15;
pub const VEOL2: usize = 16;
pub const NCCS: usize = 19;

/// Longest line canonical mode keeps (Linux's N_TTY_BUF_SIZE - 1).
pub const MAX_LINE: usize = 4095;

/// The kernel's `struct termios` (36 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Termios {
    pub iflag: u32,
    pub oflag: u32,
    pub cflag: u32,
    pub lflag: u32,
    pub line: u8,
    pub cc: [u8; NCCS],
}

impl Termios {
    pub const LEN: usize = 36;

    /// A terminal's settings when it is opened (Linux's `tty_std_termios`).
    pub fn standard() -> Termios {
        Termios {
            iflag: ICRNL | IXON,
            oflag: OPOST | ONLCR,
            cflag: B38400 | CS8 | CREAD | HUPCL,
            lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            line: 0,
            // ^C ^\ DEL ^U ^D, time 0, min 1, -, ^Q ^S ^Z, -, ^R ^O ^W ^V, -
            cc: [3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26, 0, 18, 15, 23, 22, 0, 0, 0],
        }
    }

    pub fn to_bytes(&self) -> [u8; 36] {
        let mut b = [0u8; 36];
        for (i, v) in [self.iflag, self.oflag, self.cflag, self.lflag].iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[16] = self.line;
        b[17..36].copy_from_slice(&self.cc);
        b
    }

    pub fn from_bytes(b: &[u8; 36]) -> Termios {
        let w = |i: usize| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4]));
        let mut cc = [0u8; NCCS];
        cc.copy_from_slice(&b[17..36]);
        Termios {
            iflag: w(0),
            oflag: w(1),
            cflag: w(2),
            lflag: w(3),
            line: b[16],
            cc,
        }
    }

    fn l(&self, f: u32) -> bool {
        self.lflag & f != 0
    }

    fn i(&self, f: u32) -> bool {
        self.iflag & f != 0
    }

    /// Whether `c` is the control character at `index` (a disabled one,
    /// 0, matches nothing: _POSIX_VDISABLE).
    fn is(&self, c: u8, index: usize) -> bool {
        self.cc[index] != 0 && self.cc[index] == c
    }
}

/// What typing a byte made the terminal do besides keeping it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Bytes to write back to the screen.
    pub echo: Vec<u8>,
    /// A signal for the foreground process group.
    pub signal: Option<u32>,
}

/// The line discipline's state: its settings, the line being edited
/// (canonical mode) and what is ready to read.
pub struct Ldisc {
    pub termios: Termios,
    /// The line being typed (canonical mode).
    edit: Vec<u8>,
    /// Completed lines, each with its delimiter (an empty one: end of
    /// file, a Ctrl-D at the start of a line).
    lines: VecDeque<Vec<u8>>,
    /// Bytes ready in non-canonical mode.
    raw: VecDeque<u8>,
    /// The next byte is taken literally (Ctrl-V).
    literal: bool,
}

impl Default for Ldisc {
    fn default() -> Self {
        Ldisc::new()
    }
}

impl Ldisc {
    pub fn new() -> Ldisc {
        Ldisc {
            termios: Termios::standard(),
            edit: Vec::new(),
            lines: VecDeque::new(),
            raw: VecDeque::new(),
            literal: false,
        }
    }

    fn canonical(&self) -> bool {
        self.termios.l(ICANON)
    }

    /// New settings; leaving canonical mode makes what was typed readable
    /// as it is, entering it keeps raw bytes as a line being typed.
    pub fn set(&mut self, t: Termios) {
        let was = self.canonical();
        self.termios = t;
        match (was, self.canonical()) {
            (true, false) => {
                for line in self.lines.drain(..) {
                    self.raw.extend(line);
                }
                self.raw.extend(self.edit.drain(..));
            }
            (false, true) => self.edit.extend(self.raw.drain(..)),
            _ => {}
        }
    }

    /// Forgets the input not yet read (TCFLSH, TCSETSF, a signal key).
    pub fn flush_input(&mut self) {
        self.edit.clear();
        self.lines.clear();
        self.raw.clear();
    }

    /// Echo of `c` as typed: control characters as ^X with ECHOCTL.
    fn echo_char(&self, c: u8, out: &mut Vec<u8>) {
        if !self.termios.l(ECHO) {
            if c == b'\n' && self.termios.l(ECHONL) && self.canonical() {
                out.push(b'\n');
            }
            return;
        }
        if self.termios.l(ECHOCTL) && (c < 32 || c == 127) && c != b'\n' && c != b'\t' {
            out.push(b'^');
            out.push(if c == 127 { b'?' } else { c + 64 });
        } else {
            out.push(c);
        }
    }

    /// Erases the last character of the line being typed, on screen too.
    fn erase(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(c) = self.edit.pop() else { return false };
        if self.termios.l(ECHO) && self.termios.l(ECHOE) {
            let width = if self.termios.l(ECHOCTL) && (c < 32 || c == 127) {
                2
            } else {
                1
            };
            for _ in 0..width {
                out.extend_from_slice(b"\x08 \x08");
            }
        }
        true
    }

    /// One byte typed.
    pub fn input(&mut self, mut c: u8) -> Effects {
        let mut fx = Effects::default();
        let t = self.termios;
        if t.i(ISTRIP) {
            c &= 0x7f;
        }
        if self.literal {
            self.literal = false;
            self.keep(c, &mut fx);
            return fx;
        }
        if c == b'\r' {
            if t.i(IGNCR) {
                return fx;
            }
            if t.i(ICRNL) {
                c = b'\n';
            }
        } else if c == b'\n' && t.i(INLCR) {
            c = b'\r';
        }
        if t.l(ISIG) {
            let sig = if t.is(c, VINTR) {
                Some(crate::signal::SIGINT)
            } else if t.is(c, VQUIT) {
                Some(crate::signal::SIGQUIT)
            } else if t.is(c, VSUSP) {
                Some(crate::signal::SIGTSTP)
            } else {
                None
            };
            if let Some(s) = sig {
                if !t.l(NOFLSH) {
                    self.flush_input();
                }
                self.echo_char(c, &mut fx.echo);
                fx.signal = Some(s);
                return fx;
            }
        }
        if t.i(IXON) && (t.is(c, VSTOP) || t.is(c, VSTART)) {
            return fx;
        }
        if self.canonical() {
            if t.is(c, VERASE) {
                self.erase(&mut fx.echo);
                return fx;
            }
            if t.is(c, VKILL) {
                while self.erase(&mut fx.echo) {}
                return fx;
            }
            if t.l(IEXTEN) && t.is(c, VWERASE) {
                while self.edit.last().is_some_and(|&b| b == b' ' || b == b'\t') {
                    self.erase(&mut fx.echo);
                }
                while self.edit.last().is_some_and(|&b| b != b' ' && b != b'\t') {
                    self.erase(&mut fx.echo);
                }
                return fx;
            }
            if t.l(IEXTEN) && t.is(c, VLNEXT) {
                self.literal = true;
                return fx;
            }
            if t.is(c, VEOF) {
                self.lines.push_back(core::mem::take(&mut self.edit));
                return fx;
            }
            if t.l(IEXTEN) && t.is(c, VREPRINT) {
                self.echo_char(c, &mut fx.echo);
                fx.echo.push(b'\n');
                let line = self.edit.clone();
                for b in line {
                    self.echo_char(b, &mut fx.echo);
                }
                return fx;
            }
        }
        self.keep(c, &mut fx);
        fx
    }

    /// Keeps byte `c` as input (and echoes it).
    fn keep(&mut self, c: u8, fx: &mut Effects) {
        if !self.canonical() {
            self.raw.push_back(c);
            self.echo_char(c, &mut fx.echo);
            return;
        }
        let t = self.termios;
        let ends = c == b'\n' || t.is(c, VEOL) || t.is(c, VEOL2);
        if self.edit.len() >= MAX_LINE && !ends {
            // A full line takes nothing but its end.
            return;
        }
        self.echo_char(c, &mut fx.echo);
        self.edit.push(c);
        if ends {
            self.lines.push_back(core::mem::take(&mut self.edit));
        }
    }

    /// Bytes a read would get now (FIONREAD).
    pub fn available(&self) -> usize {
        if self.canonical() {
            self.lines.iter().map(Vec::len).sum()
        } else {
            self.raw.len()
        }
    }

    /// Whether a read would return now (data, or end of file).
    pub fn readable(&self) -> bool {
        if self.canonical() {
            !self.lines.is_empty()
        } else {
            let min = self.termios.cc[VMIN] as usize;
            !self.raw.is_empty() && self.raw.len() >= min.max(1) || min == 0
        }
    }

    /// A read of at most `max` bytes, if one would return now: canonical
    /// mode gives at most one line (empty: end of file), raw mode what is
    /// there once VMIN bytes are.
    pub fn read(&mut self, max: usize) -> Option<Vec<u8>> {
        if max == 0 {
            return Some(Vec::new());
        }
        if self.canonical() {
            let line = self.lines.front_mut()?;
            if line.len() <= max {
                return self.lines.pop_front();
            }
            let rest = line.split_off(max);
            let head = core::mem::replace(line, rest);
            return Some(head);
        }
        if !self.readable() {
            return None;
        }
        let n = self.raw.len().min(max);
        Some(self.raw.drain(..n).collect())
    }

    /// What a program's write puts on the screen (output processing).
    pub fn output(&self, data: &[u8], out: &mut Vec<u8>) {
        let t = self.termios;
        if t.oflag & OPOST == 0 {
            out.extend_from_slice(data);
            return;
        }
        for &c in data {
            match c {
                b'\n' if t.oflag & ONLCR != 0 => out.extend_from_slice(b"\r\n"),
                b'\r' if t.oflag & OCRNL != 0 => out.push(b'\n'),
                c => out.push(c),
            }
        }
    }
}

/// `struct winsize` (rows, columns, x pixels, y pixels: 8 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WinSize {
    pub rows: u16,
    pub cols: u16,
    pub xpixel: u16,
    pub ypixel: u16,
}

impl WinSize {
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        for (i, v) in [self.rows, self.cols, self.xpixel, self.ypixel].iter().enumerate() {
            b[i * 2..i * 2 + 2].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub fn from_bytes(b: &[u8; 8]) -> WinSize {
        let h = |i: usize| u16::from_le_bytes([b[i * 2], b[i * 2 + 1]]);
        WinSize {
            rows: h(0),
            cols: h(1),
            xpixel: h(2),
            ypixel: h(3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::{SIGINT, SIGTSTP};

    fn typed(l: &mut Ldisc, s: &[u8]) -> Vec<u8> {
        let mut echo = Vec::new();
        for &c in s {
            echo.extend(l.input(c).echo);
        }
        echo
    }

    #[test]
    fn canonical_lines_with_erase_and_kill() {
        let mut l = Ldisc::new();
        assert_eq!(typed(&mut l, b"lx\x7fs\r"), b"lx\x08 \x08s\n");
        assert_eq!(l.read(100), Some(b"ls\n".to_vec()));
        assert_eq!(l.read(100), None);
        typed(&mut l, b"abc\x15de\n");
        assert_eq!(l.read(100), Some(b"de\n".to_vec()));
        typed(&mut l, b"one two\x17x\n");
        assert_eq!(l.read(100), Some(b"one x\n".to_vec()));
    }

    #[test]
    fn end_of_file_and_short_reads() {
        let mut l = Ldisc::new();
        typed(&mut l, b"\x04");
        assert_eq!(l.read(10), Some(vec![]));
        typed(&mut l, b"abcdef\x04");
        assert_eq!(l.read(4), Some(b"abcd".to_vec()));
        assert_eq!(l.read(4), Some(b"ef".to_vec()));
        assert!(!l.readable());
    }

    #[test]
    fn signal_keys_flush_and_echo() {
        let mut l = Ldisc::new();
        typed(&mut l, b"partial");
        let fx = l.input(3);
        assert_eq!(fx.signal, Some(SIGINT));
        assert_eq!(fx.echo, b"^C");
        assert_eq!(l.input(26).signal, Some(SIGTSTP));
        typed(&mut l, b"\n");
        assert_eq!(l.read(100), Some(b"\n".to_vec()));
    }

    #[test]
    fn raw_mode_and_mode_switch() {
        let mut l = Ldisc::new();
        typed(&mut l, b"typed");
        let mut t = l.termios;
        t.lflag &= !(ICANON | ECHO);
        l.set(t);
        assert_eq!(typed(&mut l, b"\x7f"), b"");
        assert_eq!(l.read(100), Some(b"typed\x7f".to_vec()));
        assert!(!l.readable());
        t.cc[VMIN] = 0;
        l.set(t);
        assert!(l.readable());
        assert_eq!(l.read(10), Some(vec![]));
    }

    #[test]
    fn output_processing() {
        let l = Ldisc::new();
        let mut out = Vec::new();
        l.output(b"a\nb", &mut out);
        assert_eq!(out, b"a\r\nb");
    }

    #[test]
    fn termios_round_trip() {
        let t = Termios::standard();
        assert_eq!(Termios::from_bytes(&t.to_bytes()), t);
        let w = WinSize {
            rows: 24,
            cols: 80,
            ..WinSize::default()
        };
        assert_eq!(WinSize::from_bytes(&w.to_bytes()), w);
    }
}
