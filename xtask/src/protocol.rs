//! The text protocols xtask reads: libtest's summary lines, the kernel's
//! `KTEST-*` lines, panic backtraces and the `BOOT-DONE` line.
//!
//! Everything here is pure so that the host tier of `cargo xtask test` checks
//! the harness's own judgement before the harness judges the kernel.

use std::fmt;

/// QEMU's isa-debug-exit turns a guest write of `v` into exit status
/// `(v << 1) | 1`, so no guest write can be confused with QEMU's own 0 or 1.
pub const EXIT_SUCCESS: i32 = 33; // guest wrote 0x10
pub const EXIT_FAILURE: i32 = 35; // guest wrote 0x11

/// How a supervised process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Code(i32),
    Signal(i32),
    /// Killed by the harness because its time ran out.
    TimedOut,
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Code(EXIT_SUCCESS) => write!(f, "exit status 33 (success)"),
            Ending::Code(EXIT_FAILURE) => write!(f, "exit status 35 (failure)"),
            Ending::Code(c) => write!(f, "QEMU exit status {c} (not a guest exit)"),
            Ending::Signal(s) => write!(f, "QEMU killed by signal {s}"),
            Ending::TimedOut => write!(f, "timed out"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub should_fail: bool,
    pub should_hang: bool,
    pub smp_only: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KTest {
    pub name: String,
    pub flags: Flags,
}

/// Serial lines may carry the `\r` of a terminal-minded kernel.
pub fn clean(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

/// Parses `KTEST-LIST <name> <flags>`. `None` means "not a list line"; an
/// unknown flag is an error rather than ignored, because silently ignoring
/// e.g. a future `should_hang` would turn an intended hang into a failure
/// nobody can explain.
pub fn parse_list_line(line: &str) -> Option<Result<KTest, String>> {
    let rest = clean(line).trim_start().strip_prefix("KTEST-LIST ")?;
    let mut words = rest.split_whitespace();
    let Some(name) = words.next() else {
        return Some(Err(format!("KTEST-LIST line without a name: {line:?}")));
    };
    let mut flags = Flags::default();
    let list = words.next().unwrap_or("-");
    for flag in list.split(',').filter(|f| !f.is_empty() && *f != "-") {
        match flag {
            "should_fail" => flags.should_fail = true,
            "should_hang" => flags.should_hang = true,
            "smp_only" => flags.smp_only = true,
            other => return Some(Err(format!("test {name}: unknown flag {other:?}"))),
        }
    }
    if let Some(extra) = words.next() {
        return Some(Err(format!("test {name}: unexpected text {extra:?} after the flags")));
    }
    if flags.should_fail && flags.should_hang {
        return Some(Err(format!(
            "test {name}: should_fail and should_hang exclude each other"
        )));
    }
    Some(Ok(KTest {
        name: name.to_string(),
        flags,
    }))
}

/// Parses libtest's `test result: ok. 9 passed; 0 failed; ...` into
/// (passed, failed).
pub fn parse_test_result(line: &str) -> Option<(u64, u64)> {
    let rest = clean(line).trim().strip_prefix("test result: ")?;
    let (mut passed, mut failed) = (None, None);
    for part in rest.split(';') {
        let words: Vec<&str> = part.split_whitespace().collect();
        if let [.., count, what] = words.as_slice() {
            match *what {
                "passed" => passed = count.parse().ok(),
                "failed" => failed = count.parse().ok(),
                _ => {}
            }
        }
    }
    Some((passed?, failed?))
}

/// True if `line` contains `marker` as whole words, so that the PASS line of
/// test `foo` is not mistaken for that of `foo_bar`. Searching within the line
/// (rather than requiring it at the start) tolerates another CPU's output
/// interleaved on the same serial line.
pub fn has_marker(line: &str, marker: &str) -> bool {
    let line = clean(line);
    line.match_indices(marker).any(|(at, _)| {
        let before_ok = line[..at].chars().next_back().is_none_or(|c| c.is_whitespace());
        let after_ok = line[at + marker.len()..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || c == ':');
        before_ok && after_ok
    })
}

/// Why an expected-failure test's output is unconvincing, if it is: every
/// `EXPECT: <text>` line must be followed (later in the output) by a line
/// containing `<text>`, and at least one must exist.
pub fn check_expectations(lines: &[String]) -> Result<usize, String> {
    let mut count = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(text) = clean(line).strip_prefix("EXPECT: ") else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            return Err("an `EXPECT: ` line with no text".to_string());
        }
        if !lines[i + 1..].iter().any(|l| l.contains(text)) {
            return Err(format!("expected text never appeared: {text:?}"));
        }
        count += 1;
    }
    if count == 0 {
        return Err("no `EXPECT: ` line in the output".to_string());
    }
    Ok(count)
}

/// The harness's judgement of one test boot: `Ok(note)` for a pass, with a
/// note for tests whose pass is a failure or hang; `Err(reason)` otherwise.
pub fn verdict(test: &KTest, ending: Ending, lines: &[String]) -> Result<String, String> {
    let name = &test.name;
    if test.flags.should_hang {
        return match ending {
            Ending::TimedOut => Ok("hung as it must; killed by the timeout".to_string()),
            other => Err(format!("must hang, but ended with {other}")),
        };
    }
    if test.flags.should_fail {
        return match ending {
            Ending::Code(EXIT_SUCCESS) => Err("must fail, but exited with success".to_string()),
            Ending::TimedOut => Err("must fail, but hung until the timeout".to_string()),
            _ => check_expectations(lines).map(|n| format!("failed as it must; {n} EXPECT line(s) met")),
        };
    }
    let pass_seen = lines.iter().any(|l| has_marker(l, &format!("KTEST-PASS {name}")));
    if ending == Ending::Code(EXIT_SUCCESS) && pass_seen {
        return Ok(String::new());
    }
    // Prefer the kernel's own account of the failure to the bare status.
    let fail_line = format!("KTEST-FAIL {name}");
    let told = lines.iter().find_map(|l| {
        let l = clean(l);
        if has_marker(l, &fail_line) {
            l.find(&fail_line).map(|at| l[at..].to_string())
        } else {
            l.find("KERNEL PANIC").map(|at| l[at..].to_string())
        }
    });
    Err(match (ending, told) {
        (Ending::Code(EXIT_SUCCESS), _) => {
            format!("exited with success but printed no KTEST-PASS {name}")
        }
        (ending, Some(told)) => format!("{told} ({ending})"),
        (ending, None) => ending.to_string(),
    })
}

/// The `#<i> 0x<addr>` frames that follow each `backtrace:` line.
pub fn backtrace_frames(lines: &[String]) -> Vec<(u32, u64)> {
    let mut frames = Vec::new();
    let mut inside = false;
    for line in lines {
        let line = clean(line);
        if line.contains("backtrace:") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        match parse_frame(line) {
            Some(frame) => frames.push(frame),
            None => inside = false,
        }
    }
    frames
}

fn parse_frame(line: &str) -> Option<(u32, u64)> {
    let mut words = line.split_whitespace();
    let index = words.next()?.strip_prefix('#')?.parse().ok()?;
    let hex = words.next()?.strip_prefix("0x")?;
    let addr = u64::from_str_radix(hex, 16).ok()?;
    Some((index, addr))
}

/// The kernel's own boot-time figures from `BOOT-DONE tsc_cycles=<c> ns=<n>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootDone {
    pub tsc_cycles: u64,
    pub ns: u64,
}

pub fn parse_boot_done(line: &str) -> Option<BootDone> {
    let line = clean(line);
    let rest = &line[line.find("BOOT-DONE")? + "BOOT-DONE".len()..];
    let (mut tsc_cycles, mut ns) = (None, None);
    for word in rest.split_whitespace() {
        if let Some(v) = word.strip_prefix("tsc_cycles=") {
            tsc_cycles = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("ns=") {
            ns = v.parse().ok();
        }
    }
    Some(BootDone {
        tsc_cycles: tsc_cycles?,
        ns: ns?,
    })
}

/// Parses `--smp 1,4` into distinct CPU counts, keeping the given order.
pub fn parse_smp_list(text: &str) -> Result<Vec<u32>, String> {
    let mut list = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n: u32 = item
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("bad CPU count {item:?} in --smp {text:?}"))?;
        if !list.contains(&n) {
            list.push(n);
        }
    }
    if list.is_empty() {
        return Err(format!("--smp {text:?} names no CPU count"));
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    fn test(name: &str, flags: Flags) -> KTest {
        KTest {
            name: name.to_string(),
            flags,
        }
    }

    #[test]
    fn libtest_result_lines() {
        assert_eq!(
            parse_test_result(
                "test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
            ),
            Some((9, 0))
        );
        assert_eq!(
            parse_test_result(
                "test result: FAILED. 3 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\r"
            ),
            Some((3, 2))
        );
        assert_eq!(parse_test_result("running 9 tests"), None);
        assert_eq!(parse_test_result("test result: garbage"), None);
    }

    #[test]
    fn list_lines() {
        assert_eq!(
            parse_list_line("KTEST-LIST frames_alloc -"),
            Some(Ok(test("frames_alloc", Flags::default())))
        );
        assert_eq!(
            parse_list_line("KTEST-LIST panic_backtrace should_fail,smp_only\r"),
            Some(Ok(test(
                "panic_backtrace",
                Flags {
                    should_fail: true,
                    smp_only: true,
                    ..Flags::default()
                }
            )))
        );
        assert_eq!(
            parse_list_line("KTEST-LIST bare"),
            Some(Ok(test("bare", Flags::default())))
        );
        assert!(matches!(parse_list_line("KTEST-LIST x flaky"), Some(Err(_))));
        assert!(matches!(
            parse_list_line("KTEST-LIST x should_fail,should_hang"),
            Some(Err(_))
        ));
        assert!(matches!(parse_list_line("KTEST-LIST "), Some(Err(_))));
        assert_eq!(parse_list_line("KTEST-BEGIN x"), None);
    }

    #[test]
    fn markers_match_whole_names_only() {
        assert!(has_marker("KTEST-PASS foo", "KTEST-PASS foo"));
        assert!(has_marker("KTEST-PASS foo\r", "KTEST-PASS foo"));
        assert!(has_marker("cpu1 hi KTEST-PASS foo", "KTEST-PASS foo"));
        assert!(!has_marker("KTEST-PASS foo_bar", "KTEST-PASS foo"));
        assert!(!has_marker("XKTEST-PASS foo", "KTEST-PASS foo"));
        assert!(has_marker("KTEST-FAIL foo: boom", "KTEST-FAIL foo"));
    }

    #[test]
    fn normal_test_needs_success_status_and_pass_line() {
        let t = test("alloc", Flags::default());
        let good = lines("KTEST-BEGIN alloc\nKTEST-PASS alloc");
        assert!(verdict(&t, Ending::Code(33), &good).is_ok());
        assert!(verdict(&t, Ending::Code(35), &good).is_err());
        assert!(verdict(&t, Ending::TimedOut, &good).is_err());
        let silent = lines("KTEST-BEGIN alloc");
        assert!(verdict(&t, Ending::Code(33), &silent).is_err());
        let other = lines("KTEST-PASS alloc_big");
        assert!(verdict(&t, Ending::Code(33), &other).is_err());
        let failed = lines("KTEST-BEGIN alloc\nKTEST-FAIL alloc: out of frames");
        let why = verdict(&t, Ending::Code(35), &failed).unwrap_err();
        assert!(why.contains("out of frames"), "{why}");
        let panicked = lines("KERNEL PANIC at x.rs:1: oops\nbacktrace:\n  #0 0x1000");
        let why = verdict(&t, Ending::Code(35), &panicked).unwrap_err();
        assert!(why.contains("oops"), "{why}");
        assert!(verdict(&t, Ending::Code(0), &good).is_err());
        assert!(verdict(&t, Ending::Signal(6), &good).is_err());
    }

    #[test]
    fn should_fail_needs_failure_and_expected_text() {
        let t = test(
            "panic",
            Flags {
                should_fail: true,
                ..Flags::default()
            },
        );
        let good = lines("EXPECT: backtrace:\nKERNEL PANIC: deliberate\nbacktrace:\n  #0 0x1");
        assert!(verdict(&t, Ending::Code(35), &good).is_ok());
        assert!(verdict(&t, Ending::Code(33), &good).is_err());
        assert!(verdict(&t, Ending::TimedOut, &good).is_err());
        // The text on the EXPECT line itself must not satisfy it.
        let missing = lines("KERNEL PANIC: deliberate\nEXPECT: backtrace:");
        assert!(verdict(&t, Ending::Code(35), &missing).is_err());
        assert!(verdict(&t, Ending::Code(35), &lines("KERNEL PANIC")).is_err());
        assert!(verdict(&t, Ending::Code(35), &lines("EXPECT: \nx")).is_err());
        let two = lines("EXPECT: a\nEXPECT: b\nb a");
        assert!(verdict(&t, Ending::Code(35), &two).is_ok());
    }

    #[test]
    fn should_hang_needs_timeout() {
        let t = test(
            "hang",
            Flags {
                should_hang: true,
                ..Flags::default()
            },
        );
        assert!(verdict(&t, Ending::TimedOut, &[]).is_ok());
        assert!(verdict(&t, Ending::Code(33), &[]).is_err());
        assert!(verdict(&t, Ending::Code(35), &[]).is_err());
    }

    #[test]
    fn backtraces() {
        let out = lines(
            "KERNEL PANIC\nbacktrace:\n  #0 0x0000000000101234\n  #1 0x1a2b\r\nKTEST-FAIL x\nbacktrace:\n  #0 0x5",
        );
        assert_eq!(backtrace_frames(&out), vec![(0, 0x101234), (1, 0x1a2b), (0, 0x5)]);
        assert!(backtrace_frames(&lines("  #0 0x1000")).is_empty());
    }

    #[test]
    fn boot_done() {
        assert_eq!(
            parse_boot_done("BOOT-DONE tsc_cycles=123456 ns=789\r"),
            Some(BootDone {
                tsc_cycles: 123456,
                ns: 789
            })
        );
        assert_eq!(parse_boot_done("BOOT-DONE ns=1"), None);
        assert_eq!(parse_boot_done("tessera> "), None);
    }

    #[test]
    fn smp_lists() {
        assert_eq!(parse_smp_list("1,4"), Ok(vec![1, 4]));
        assert_eq!(parse_smp_list(" 2 , 2,1"), Ok(vec![2, 1]));
        assert!(parse_smp_list("0").is_err());
        assert!(parse_smp_list("x").is_err());
        assert!(parse_smp_list(",").is_err());
    }
}
