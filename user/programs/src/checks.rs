//! Checks that count what passed and failed and say what failed: the
//! in-guest test programs' verdicts (`fstest`, `nettest`).

use alloc::format;
use tessera_api::errno::Errno;
use tessera_rt::println;

pub struct Checks {
    /// The program whose failures these are, for its lines.
    program: &'static str,
    pub failed: u32,
    pub passed: u32,
}

impl Checks {
    pub fn new(program: &'static str) -> Checks {
        Checks {
            program,
            failed: 0,
            passed: 0,
        }
    }

    pub fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
            println!("{}: FAILED {what}", self.program);
        }
    }

    /// Checks that `r` is the error `want`.
    pub fn errno<T>(&mut self, r: Result<T, Errno>, want: Errno, what: &str) {
        match r {
            Err(e) if e == want => self.passed += 1,
            Err(e) => self.check(false, &format!("{what}: {e:?}, not {want:?}")),
            Ok(_) => self.check(false, &format!("{what}: succeeded, not {want:?}")),
        }
    }

    /// Checks that `r` succeeded, and gives its value.
    pub fn ok<T>(&mut self, r: Result<T, Errno>, what: &str) -> Option<T> {
        match r {
            Ok(v) => {
                self.passed += 1;
                Some(v)
            }
            Err(e) => {
                self.check(false, &format!("{what}: {e:?}"));
                None
            }
        }
    }
}
