//! In-kernel tests, run inside QEMU one test per boot (`test=<name>` on the
//! command line). The protocol, read by `cargo xtask test`:
//! - `test=list` prints `KTEST-LIST <name> <flags>` for each test;
//! - a run prints `KTEST-BEGIN <name>`, then `KTEST-PASS <name>` or
//!   `KTEST-FAIL <name>: <reason>`, and ends QEMU with status 33 (pass) or
//!   35 (fail); a panic also ends with 35.
//!
//! Tests that must fail (`should_fail`) first print `EXPECT: <text>`, the
//! evidence the runner looks for after the failure; `should_hang` tests must
//! be caught by the runner's timeout. Together they prove the harness sees
//! failures, panics and hangs.

use crate::arch::x86_64::qemu_exit;
use crate::println;
use alloc::string::String;

pub type TestResult = Result<(), String>;

#[derive(Clone, Copy)]
pub enum Expect {
    Pass,
    /// The test must fail, and its output must contain this text.
    Fail(&'static str),
    Hang,
}

pub struct KTest {
    pub name: &'static str,
    pub run: fn() -> TestResult,
    pub expect: Expect,
    /// Needs more than one CPU.
    pub smp_only: bool,
}

pub const fn pass(name: &'static str, run: fn() -> TestResult) -> KTest {
    KTest {
        name,
        run,
        expect: Expect::Pass,
        smp_only: false,
    }
}

/// Needs more than one CPU.
pub const fn smp(name: &'static str, run: fn() -> TestResult) -> KTest {
    KTest {
        name,
        run,
        expect: Expect::Pass,
        smp_only: true,
    }
}

/// Must fail, and the output must show `evidence`.
pub const fn must_fail(name: &'static str, run: fn() -> TestResult, evidence: &'static str) -> KTest {
    KTest {
        name,
        run,
        expect: Expect::Fail(evidence),
        smp_only: false,
    }
}

pub const fn must_hang(name: &'static str, run: fn() -> TestResult) -> KTest {
    KTest {
        name,
        run,
        expect: Expect::Hang,
        smp_only: false,
    }
}

/// A list of tests, one a line: how it is run (`pass`, `smp`, `must_fail`,
/// `must_hang`), then its function, whose name is the test's; a
/// `must_fail` test adds its evidence in parentheses.
#[macro_export]
macro_rules! ktests {
    ($($how:ident $module:ident :: $test:ident $(($($more:expr),*))?),* $(,)?) => {
        &[$($crate::ktest::$how(stringify!($test), $module::$test $($(, $more)*)?)),*]
    };
}

/// Fails the test with a formatted reason unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(alloc::format!($($arg)*));
        }
    };
}

/// The tests of every layer: the core's own, then those the kernel binary
/// adds.
pub fn list(layers: &[&[KTest]]) -> ! {
    for t in layers.iter().flat_map(|l| l.iter()) {
        let mut flags = String::new();
        match t.expect {
            Expect::Pass => {}
            Expect::Fail(_) => flags.push_str("should_fail"),
            Expect::Hang => flags.push_str("should_hang"),
        }
        if t.smp_only {
            if !flags.is_empty() {
                flags.push(',');
            }
            flags.push_str("smp_only");
        }
        println!("KTEST-LIST {} {}", t.name, if flags.is_empty() { "-" } else { &flags });
    }
    qemu_exit(true)
}

pub fn run(layers: &[&[KTest]], name: &str) -> ! {
    let Some(t) = layers.iter().flat_map(|l| l.iter()).find(|t| t.name == name) else {
        println!("KTEST-FAIL {name}: no such test");
        qemu_exit(false)
    };
    println!("KTEST-BEGIN {}", t.name);
    if let Expect::Fail(text) = t.expect {
        println!("EXPECT: {text}");
    }
    match (t.run)() {
        Ok(()) => {
            println!("KTEST-PASS {}", t.name);
            qemu_exit(true)
        }
        Err(reason) => {
            println!("KTEST-FAIL {}: {}", t.name, reason);
            qemu_exit(false)
        }
    }
}

/// A place on a path between a check and what relies on it, where a test
/// may act (end a process, reuse its space) to make a race happen every
/// time instead of once in a million runs. Outside test images `window`
/// does nothing and costs nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// `ipc::process`: a copy has found another process's space and not
    /// yet locked it.
    OtherSpace,
}

/// What a test left at a window: where, and what to do there.
#[cfg(feature = "ktest")]
type Act = Option<(Window, fn())>;

#[cfg(feature = "ktest")]
static OPEN: crate::sync::IrqMutex<Act> = crate::sync::IrqMutex::new(None);

/// Runs `act` once, the next time any CPU passes `at`.
#[cfg(feature = "ktest")]
pub fn open_window(at: Window, act: fn()) {
    *OPEN.lock() = Some((at, act));
}

/// Passes window `at`: runs what a test left there (once).
#[inline(always)]
pub fn window(at: Window) {
    #[cfg(feature = "ktest")]
    {
        let act = {
            let mut open = OPEN.lock();
            match *open {
                Some((w, act)) if w == at => {
                    *open = None;
                    Some(act)
                }
                _ => None,
            }
        };
        if let Some(act) = act {
            act();
        }
    }
    #[cfg(not(feature = "ktest"))]
    let _ = at;
}
