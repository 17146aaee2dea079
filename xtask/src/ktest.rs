//! `cargo xtask test`: every tier of the test suite, ending with the single
//! line `N passed, N failed` that CI and people read.
//!
//! Tiers: host unit tests, the kernel build, the in-QEMU kernel tests (one
//! QEMU boot per test and CPU count, so a panic or hang takes down only its
//! own test), and the benchmark harness's smoke run.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use crate::builder::{self, Profile, TEST_KERNEL_ELF};
use crate::disktest::{self, DiskTest};
use crate::linuxtest::{self, LinuxTest};
use crate::machine::Machine;
use crate::nvmcrash;
use crate::proc::{self, Output, Stream};
use crate::progtest::{self, ProgTest};
use crate::protocol::{self, EXIT_SUCCESS, Ending, KTest};
use crate::sysimage;
use crate::{Args, which};

const LOG_DIR: &str = "build/test-logs";
const BENCH_SCRIPT: &str = "tools/bench/bench.py";
/// The longest test (60,000 fuzzed system calls, three times) takes ≈ 38 s under
/// TCG on an idle 2-core machine; a loaded one must not turn that into a
/// failure. A real hang still fails, only later.
const DEFAULT_TIMEOUT_S: u64 = 120;
/// should_hang tests exist to prove the harness notices hangs; waiting the
/// full timeout for them would only slow the suite down.
const HANG_TIMEOUT: Duration = Duration::from_secs(5);
const HOST_TIMEOUT: Duration = Duration::from_secs(300);
const BENCH_TIMEOUT: Duration = Duration::from_secs(300);
const TAIL_LINES: usize = 40;

struct Tier {
    name: &'static str,
    passed: u64,
    failed: u64,
    note: String,
    failures: Vec<String>,
}

impl Tier {
    fn new(name: &'static str) -> Tier {
        Tier {
            name,
            passed: 0,
            failed: 0,
            note: String::new(),
            failures: Vec::new(),
        }
    }

    fn fail(&mut self, what: String) {
        self.failed += 1;
        self.failures.push(what);
    }
}

struct Options {
    smps: Vec<u32>,
    filter: Option<String>,
    jobs: usize,
    timeout: Duration,
    no_build: bool,
    machine: Machine,
}

pub fn run(mut args: Args) -> Result<ExitCode, String> {
    let smps = protocol::parse_smp_list(&args.value("--smp")?.unwrap_or_else(|| "1,4".into()))?;
    let filter = args.value("--filter")?;
    let cores = thread::available_parallelism().map_or(2, |n| n.get());
    let jobs = args.number("--jobs")?.unwrap_or(cores).max(1);
    let timeout = Duration::from_secs(args.number("--timeout")?.unwrap_or(DEFAULT_TIMEOUT_S));
    let no_build = args.flag("--no-build");
    // Boots run in parallel and QEMU locks a writable image for one user:
    // a test that needs a disk gets its own copy (disktest.rs).
    let machine = Machine::configure(&mut args)?.with_disk(None);
    args.finish()?;
    let opts = Options {
        smps,
        filter,
        jobs,
        timeout,
        no_build,
        machine,
    };

    let mut tiers = vec![host_tier(opts.filter.as_deref())];
    let build = build_tier(opts.no_build);
    let built = build.failed == 0;
    tiers.push(build);
    if built {
        tiers.push(qemu_tier(&opts));
    }
    if opts.filter.is_none()
        && let Some(tier) = bench_tier()
    {
        tiers.push(tier);
    }

    heading("summary");
    let (mut passed, mut failed) = (0, 0);
    for tier in &tiers {
        passed += tier.passed;
        failed += tier.failed;
        let counts = if tier.passed + tier.failed == 0 && !tier.note.is_empty() {
            String::new()
        } else {
            format!("{} passed, {} failed", tier.passed, tier.failed)
        };
        let sep = if counts.is_empty() || tier.note.is_empty() {
            ""
        } else {
            "  "
        };
        println!("  {:<17} {counts}{sep}{}", tier.name, tier.note);
        for what in &tier.failures {
            println!("      FAILED {what}");
        }
    }
    if !built {
        println!("  in-QEMU tests     not run: the kernel did not build");
    }
    if opts.filter.is_some() {
        println!("  benchmark smoke   not run under --filter");
    } else if !Path::new(BENCH_SCRIPT).exists() {
        println!("  benchmark smoke   not run: {BENCH_SCRIPT} does not exist yet");
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn heading(title: &str) {
    println!("\n==> {title}");
}

/// For processes other than QEMU, whose statuses mean nothing special.
fn plain(ending: Ending) -> String {
    match ending {
        Ending::Code(c) => format!("exit status {c}"),
        Ending::Signal(s) => format!("killed by signal {s}"),
        Ending::TimedOut => "timed out".to_string(),
    }
}

fn host_tier(filter: Option<&str>) -> Tier {
    heading("host unit tests");
    let mut tier = Tier::new("host unit tests");
    let mut cmd = builder::cargo();
    // Every crate but the kernel, which only builds for the bare-metal target.
    cmd.args([
        "test",
        "--workspace",
        "--exclude",
        "tessera-kernel",
        "--exclude",
        "kcore",
        "--exclude",
        "sched",
        "--exclude",
        "resource",
        "--exclude",
        "ipc",
        "--exclude",
        "syscall",
        "--exclude",
        "tessera-rt",
        "--exclude",
        "user-programs",
        "--exclude",
        "tessera-api",
        "--exclude",
        "echo-server",
        "--exclude",
        "relay-server",
        "--exclude",
        "distributor-server",
        "--exclude",
        "ramdisk-server",
        "--exclude",
        "blockcache-server",
        "--exclude",
        "fs-server",
        "--exclude",
        "net-server",
        "--exclude",
        "virtio-net-server",
        "--exclude",
        "virtio-blk-server",
        "--no-fail-fast",
    ]);
    if let Some(f) = filter {
        cmd.args(["--", f]);
    }
    let (mut passed, mut failed, mut names) = (0, 0, Vec::new());
    let result = proc::run_captured(&mut cmd, HOST_TIMEOUT, true, |_, line| {
        println!("{line}");
        if let Some((p, f)) = protocol::parse_test_result(line) {
            passed += p;
            failed += f;
        }
        if let Some(name) = line.strip_prefix("test ").and_then(|l| l.strip_suffix(" ... FAILED")) {
            names.push(name.to_string());
        }
    });
    tier.passed = passed;
    tier.failed = failed;
    tier.failures = names;
    match result {
        // A failed build prints no result line at all; it still must count.
        Ok(out) if out.ending != Ending::Code(0) && failed == 0 => {
            tier.fail(format!("cargo test ({})", plain(out.ending)));
        }
        Ok(_) => {}
        Err(e) => tier.fail(format!("cannot run cargo test: {e}")),
    }
    tier
}

fn build_tier(no_build: bool) -> Tier {
    heading("kernel build");
    let mut tier = Tier::new("kernel build");
    if no_build {
        if Path::new(TEST_KERNEL_ELF).is_file() {
            tier.note = format!("skipped (--no-build), using {TEST_KERNEL_ELF}");
        } else {
            tier.fail(format!("--no-build, but there is no {TEST_KERNEL_ELF}"));
        }
    } else {
        match builder::build(Profile::Release) {
            Ok(()) => tier.note = "ok".to_string(),
            Err(e) => {
                println!("{e}");
                tier.fail(e);
            }
        }
    }
    println!("{}", if tier.failed == 0 { &tier.note } else { "FAILED" });
    tier
}

struct Job {
    test: KTest,
    smp: u32,
    /// A user program's test (see progtest.rs) rather than a kernel test.
    program: Option<&'static ProgTest>,
    /// A test on the real disk, judged by the host too (disktest.rs).
    disk: Option<&'static DiskTest>,
    /// The NVM store's test against a killed QEMU (nvmcrash.rs).
    nvm_crash: bool,
    /// A Linux program's differential test (see linuxtest.rs).
    linux: Option<LinuxTest>,
}

impl Job {
    fn label(&self) -> String {
        format!("{}[smp={}]", self.test.name, self.smp)
    }
}

fn qemu_tier(opts: &Options) -> Tier {
    heading("in-QEMU tests");
    let mut tier = Tier::new("in-QEMU tests");
    // Stale logs of tests that no longer exist would only mislead.
    let _ = fs::remove_dir_all(LOG_DIR);
    if let Err(e) = fs::create_dir_all(LOG_DIR) {
        tier.fail(format!("cannot create {LOG_DIR}/: {e}"));
        return tier;
    }

    let list_log = Path::new(LOG_DIR).join("KTEST-LIST.log");
    let listing = boot(
        &opts.machine.with_smp(1).with_net(None),
        "test=list",
        opts.timeout,
        &list_log,
    );
    let lines = match listing {
        Ok(out) if out.ending == Ending::Code(EXIT_SUCCESS) => out.texts(),
        Ok(out) => {
            println!("FAIL  listing the tests ({})", out.ending);
            print_tail(&list_log);
            tier.fail(format!("test=list ({})", out.ending));
            return tier;
        }
        Err(e) => {
            tier.fail(format!("cannot run {}: {e}", opts.machine.qemu));
            return tier;
        }
    };
    let mut tests = Vec::new();
    for parsed in lines.iter().filter_map(|l| protocol::parse_list_line(l)) {
        match parsed {
            Ok(test) => tests.push(test),
            Err(e) => {
                println!("FAIL  {e}");
                tier.fail(e);
            }
        }
    }
    let mut linux = linuxtest::tests();
    let listed = tests.len() + progtest::TESTS.len() + disktest::TESTS.len() + 1 + linux.len();
    let matches = |name: &str| opts.filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
    tests.retain(|t| matches(&t.name));
    let programs: Vec<&'static ProgTest> = progtest::TESTS.iter().filter(|t| matches(t.name)).collect();
    let disks: Vec<&'static DiskTest> = disktest::TESTS.iter().filter(|t| matches(t.name)).collect();
    linux.retain(|t| t.selected(opts.filter.as_deref()));

    let mut jobs = Vec::new();
    let mut skipped = 0;
    for &smp in &opts.smps {
        for test in &tests {
            if test.flags.smp_only && smp == 1 {
                skipped += 1;
            } else {
                jobs.push(Job {
                    test: test.clone(),
                    smp,
                    program: None,
                    disk: None,
                    nvm_crash: false,
                    linux: None,
                });
            }
        }
        for &p in &programs {
            jobs.push(Job {
                test: KTest {
                    name: p.name.to_string(),
                    flags: Default::default(),
                },
                smp,
                program: Some(p),
                disk: None,
                nvm_crash: false,
                linux: None,
            });
        }
        for &d in &disks {
            jobs.push(Job {
                test: KTest {
                    name: d.name.to_string(),
                    flags: Default::default(),
                },
                smp,
                program: None,
                disk: Some(d),
                nvm_crash: false,
                linux: None,
            });
        }
        if matches(nvmcrash::NAME) {
            jobs.push(Job {
                test: KTest {
                    name: nvmcrash::NAME.to_string(),
                    flags: Default::default(),
                },
                smp,
                program: None,
                disk: None,
                nvm_crash: true,
                linux: None,
            });
        }
        for t in &linux {
            if t.smp_only && smp == 1 {
                skipped += 1;
                continue;
            }
            jobs.push(Job {
                test: KTest {
                    name: t.name.clone(),
                    flags: Default::default(),
                },
                smp,
                program: None,
                disk: None,
                nvm_crash: false,
                linux: Some(t.clone()),
            });
        }
    }
    let m = &opts.machine;
    println!(
        "{listed} tests listed, {} boots to run (machine {}, {}, {} memory; {} at a time)",
        jobs.len(),
        m.machine,
        m.mode.name(),
        m.mem,
        opts.jobs
    );

    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..opts.jobs.min(jobs.len()) {
            s.spawn(|| {
                while let Some(job) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let passed = run_job(opts, job);
                    outcomes.lock().unwrap().push((job.label(), passed));
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort();
    for (label, passed) in outcomes {
        if passed {
            tier.passed += 1;
        } else {
            tier.fail(label);
        }
    }
    let smps: Vec<String> = opts.smps.iter().map(u32::to_string).collect();
    tier.note = format!("(smp {}; {}", smps.join(","), opts.machine.mode.name());
    if skipped > 0 {
        tier.note += &format!("; {skipped} smp_only boot(s) skipped at smp=1");
    }
    tier.note += ")";
    tier
}

fn log_path(name: &str, smp: u32) -> PathBuf {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    Path::new(LOG_DIR).join(format!("{safe}-smp{smp}.log"))
}

/// Boots the kernel once, keeping the whole serial output in `log` (written
/// as it arrives, so the log of a hung boot can be read while it hangs).
/// Each boot gets an NVM image of its own, fresh, so that boots side by side
/// never share one.
fn boot(machine: &Machine, cmdline: &str, timeout: Duration, log: &Path) -> io::Result<Output> {
    boot_watched(machine, cmdline, timeout, log, &mut |_| None)
}

/// Like `boot`; `watch` sees each line of the guest's and may ask for QEMU
/// to be killed that long after it (see `proc::run_watched`).
fn boot_watched(
    machine: &Machine,
    cmdline: &str,
    timeout: Duration,
    log: &Path,
    watch: &mut dyn FnMut(&str) -> Option<Duration>,
) -> io::Result<Output> {
    let mut file = File::create(log)?;
    let image = log.with_extension("nvm.img");
    let _ = fs::remove_file(&image);
    let machine = machine.with_nvm_image(&image).with_test_device();
    machine.prepare_quietly().map_err(io::Error::other)?;
    let out = boot_with(&machine, cmdline, timeout, &mut file, watch);
    let _ = fs::remove_file(&image);
    out
}

fn boot_with(
    machine: &Machine,
    cmdline: &str,
    timeout: Duration,
    file: &mut File,
    watch: &mut dyn FnMut(&str) -> Option<Duration>,
) -> io::Result<Output> {
    let mut cmd = machine.command();
    cmd.args(builder::test_boot_args()).args(["-append", cmdline]);
    writeln!(file, "# xtask: {}", shell_words(&cmd))?;
    let out = proc::run_watched(&mut cmd, timeout, false, |stream, line| {
        let _ = match stream {
            Stream::Out => writeln!(file, "{line}"),
            Stream::Err => writeln!(file, "[qemu stderr] {line}"),
        };
        match stream {
            Stream::Out => watch(line),
            Stream::Err => None,
        }
    })?;
    writeln!(file, "# xtask: {} after {:.1} s", out.ending, out.elapsed.as_secs_f64())?;
    Ok(out)
}

/// The command as it could be pasted into a shell, to reproduce a boot.
fn shell_words(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| {
            let a = a.to_string_lossy();
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_=,.:/+@".contains(c)) {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs one test boot and reports it; true if it passed.
fn run_job(opts: &Options, job: &Job) -> bool {
    let timeout = if job.test.flags.should_hang {
        HANG_TIMEOUT
    } else {
        let slow = job.linux.as_ref().and_then(|t| t.timeout_s).map(Duration::from_secs);
        slow.map_or(opts.timeout, |t| t.max(opts.timeout))
    };
    let cmdline = match (job.program, &job.linux) {
        (Some(p), _) => p.cmdline(),
        (None, Some(t)) => t.cmdline(),
        (None, None) => format!("test={} expect_cpus={}", job.test.name, job.smp),
    };
    let log = log_path(&job.test.name, job.smp);
    let machine = match &job.linux {
        // The Linux programs live on the system disk; each boot writes to
        // a scratch overlay of it, so boots side by side share the image.
        Some(t) => opts
            .machine
            .with_smp(job.smp)
            .with_scratch_disk(sysimage::IMAGE)
            .with_nvm_texts(t.nvm_texts.clone()),
        None => opts.machine.with_smp(job.smp),
    };
    let (verdict, elapsed, lines) = match job.disk {
        _ if job.nvm_crash => run_nvm_crash_job(&machine, timeout, &log),
        Some(d) => run_disk_job(d, &machine, timeout, &log),
        None => run_boot_job(job, &machine, &cmdline, timeout, &log),
    };
    // One lock for the whole report, so that parallel jobs do not interleave.
    let mut out = io::stdout().lock();
    match &verdict {
        Ok(note) if note.is_empty() => {
            let _ = writeln!(out, "PASS  {}  {elapsed:.1} s", job.label());
        }
        Ok(note) => {
            let _ = writeln!(out, "PASS  {}  {elapsed:.1} s  ({note})", job.label());
        }
        Err(why) => {
            let _ = writeln!(out, "FAIL  {}  {elapsed:.1} s: {why}", job.label());
            print_tail_to(&mut out, &log);
            let frames = protocol::backtrace_frames(&lines);
            if !frames.is_empty() {
                symbolize(&mut out, &frames);
            }
        }
    }
    verdict.is_ok()
}

type Outcome = (Result<String, String>, f64, Vec<String>);

/// A kernel test's or a program test's boot, judged by what it printed.
///
/// QEMU's TCG itself segfaults now and then with several vCPUs on some
/// hosts (never seen on the 2-core machines this suite is tuned on, seen
/// in CI): no guest can make a correct emulator crash, so such a boot says
/// nothing about Tessera. It is booted once more, its log kept beside the
/// new one, and the verdict says so; a second crash fails the test.
fn run_boot_job(job: &Job, machine: &Machine, cmdline: &str, timeout: Duration, log: &Path) -> Outcome {
    let (outcome, ending) = boot_job_once(job, machine, cmdline, timeout, log);
    let Some(Ending::Signal(sig)) = ending.filter(|e| is_emulator_crash(*e)) else {
        return outcome;
    };
    let kept = log.with_extension("qemu-crash.log");
    let _ = fs::rename(log, &kept);
    let (outcome, _) = boot_job_once(job, machine, cmdline, timeout, log);
    let said = format!(
        "QEMU crashed (signal {sig}) on a first boot, log {}; booted again",
        kept.display()
    );
    let (verdict, elapsed, lines) = outcome;
    let verdict = match verdict {
        Ok(note) if note.is_empty() => Ok(said),
        Ok(note) => Ok(format!("{note}; {said}")),
        Err(why) => Err(format!("{why} ({said})")),
    };
    (verdict, elapsed, lines)
}

/// A signal the harness never sends: the harness kills only with SIGKILL.
fn is_emulator_crash(ending: Ending) -> bool {
    const SIGKILL: i32 = 9;
    matches!(ending, Ending::Signal(s) if s != SIGKILL)
}

fn boot_job_once(
    job: &Job,
    machine: &Machine,
    cmdline: &str,
    timeout: Duration,
    log: &Path,
) -> (Outcome, Option<Ending>) {
    // Only a test that asks for a NIC has one, and a port of its own: boots
    // side by side must not forward the same host port.
    let http = job.program.is_some_and(|p| p.nic == progtest::Nic::Http);
    let port = if http { progtest::free_port() } else { 0 };
    let machine = machine.with_net(job.program.and_then(|p| p.net(port)));
    let mut client = None;
    let result = boot_watched(&machine, cmdline, timeout, log, &mut |line| {
        if http && client.is_none() && line.contains(progtest::HTTP_READY) {
            client = Some(thread::spawn(move || progtest::http_client(port)));
        }
        None
    });
    let client = match client {
        _ if !http => Ok(()),
        Some(c) => c.join().unwrap_or_else(|_| Err("the host's client panicked".into())),
        None => Err(format!("the guest never printed {:?}", progtest::HTTP_READY)),
    };
    match result {
        Ok(out) => {
            let lines = out.texts();
            let verdict = match (job.program, &job.linux) {
                (Some(p), _) => progtest::verdict(p.program, out.ending, &lines),
                (None, Some(t)) => linuxtest::verdict(t, out.ending, &lines),
                (None, None) => protocol::verdict(&job.test, out.ending, &lines),
            };
            let verdict = verdict.and_then(|note| client.map(|()| note)).map_err(|why| {
                if out.ending == Ending::TimedOut {
                    format!("{why} after {} s", timeout.as_secs())
                } else {
                    why
                }
            });
            ((verdict, out.elapsed.as_secs_f64(), lines), Some(out.ending))
        }
        Err(e) => (
            (Err(format!("cannot run {}: {e}", machine.qemu)), 0.0, Vec::new()),
            None,
        ),
    }
}

/// The NVM crash test: its boots, on one NVM image the test keeps, all
/// in one log, then the host's checks of the image after each.
fn run_nvm_crash_job(machine: &Machine, timeout: Duration, log: &Path) -> Outcome {
    let (mut elapsed, mut lines) = (0.0, Vec::new());
    let _ = fs::remove_file(log);
    let mut boot = |m: &Machine, cmdline: &str, log: &Path, watch: &mut dyn FnMut(&str) -> Option<Duration>| {
        let mut file = fs::OpenOptions::new().create(true).append(true).open(log)?;
        let out = boot_with(&m.with_test_device(), cmdline, timeout, &mut file, watch)?;
        elapsed += out.elapsed.as_secs_f64();
        lines = out.texts();
        Ok(out)
    };
    let verdict = nvmcrash::run(machine, log, &mut boot);
    (verdict, elapsed, lines)
}

/// A disk test: its boot, then the host's checks of the image.
fn run_disk_job(test: &DiskTest, machine: &Machine, timeout: Duration, log: &Path) -> Outcome {
    let (mut elapsed, mut lines) = (0.0, Vec::new());
    let mut boot = |m: &Machine, cmdline: &str, log: &Path, watch: &mut dyn FnMut(&str) -> Option<Duration>| {
        let out = boot_watched(m, cmdline, timeout, log, watch)?;
        (elapsed, lines) = (out.elapsed.as_secs_f64(), out.texts());
        Ok(out)
    };
    let verdict = disktest::run(test, machine, log, &mut boot).map_err(|why| {
        if why.contains("timed out") {
            format!("{why} after {} s", timeout.as_secs())
        } else {
            why
        }
    });
    (verdict, elapsed, lines)
}

fn print_tail(log: &Path) {
    print_tail_to(&mut io::stdout().lock(), log);
}

fn print_tail_to(out: &mut impl Write, log: &Path) {
    let Ok(text) = fs::read(log) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    let _ = writeln!(
        out,
        "      --- {} (last {} lines) ---",
        log.display(),
        lines.len() - from
    );
    for line in &lines[from..] {
        let _ = writeln!(out, "      | {line}");
    }
}

/// Turns backtrace addresses into function names and source lines.
fn symbolize(out: &mut impl Write, frames: &[(u32, u64)]) {
    if which("addr2line").is_none() {
        let _ = writeln!(out, "      (addr2line is missing: run tools/setup.sh)");
        return;
    }
    let root = std::env::current_dir()
        .map(|d| format!("{}/", d.display()))
        .unwrap_or_default();
    let _ = writeln!(out, "      --- backtrace, symbolized ---");
    for &(index, addr) in frames {
        // Frames above #0 are return addresses: they point past the call,
        // possibly into the next source line or the next inlined function.
        let lookup = if index > 0 { addr.saturating_sub(1) } else { addr };
        let output = Command::new("addr2line")
            .args(["-f", "-C", "-i", "-e", TEST_KERNEL_ELF, &format!("{lookup:#x}")])
            .output();
        let text = match output {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(e) => {
                let _ = writeln!(out, "      #{index} {addr:#x}  (addr2line: {e})");
                continue;
            }
        };
        let lines: Vec<&str> = text.lines().collect();
        for (i, pair) in lines.chunks(2).enumerate() {
            let function = pair[0];
            let place = pair.get(1).copied().unwrap_or("??");
            let place = place.strip_prefix(root.as_str()).unwrap_or(place);
            if i == 0 {
                let _ = writeln!(out, "      #{index} {addr:#x}  {function}  at {place}");
            } else {
                let _ = writeln!(out, "           (inlined into) {function}  at {place}");
            }
        }
    }
}

fn bench_tier() -> Option<Tier> {
    if !Path::new(BENCH_SCRIPT).exists() {
        return None;
    }
    heading("benchmark smoke");
    let mut tier = Tier::new("benchmark smoke");
    let mut cmd = Command::new("python3");
    // Unbuffered, so that progress shows while it runs.
    cmd.args([BENCH_SCRIPT, "smoke"]).env("PYTHONUNBUFFERED", "1");
    let (mut passed, mut failures) = (0, Vec::new());
    let result = proc::run_captured(&mut cmd, BENCH_TIMEOUT, true, |_, line| {
        println!("{line}");
        let line = protocol::clean(line).trim();
        if line.starts_with("SMOKE-PASS ") {
            passed += 1;
        } else if let Some(what) = line.strip_prefix("SMOKE-FAIL ") {
            failures.push(what.to_string());
        }
    });
    tier.passed = passed;
    for what in failures {
        tier.fail(what);
    }
    match result {
        Ok(out) if out.ending != Ending::Code(0) && tier.failed == 0 => {
            tier.fail(format!("{BENCH_SCRIPT} smoke ({})", plain(out.ending)));
        }
        Ok(_) => {}
        Err(e) => tier.fail(format!("cannot run {BENCH_SCRIPT}: {e}")),
    }
    Some(tier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names_are_safe_file_names() {
        assert_eq!(
            log_path("frames_alloc", 4),
            Path::new("build/test-logs/frames_alloc-smp4.log")
        );
        assert_eq!(log_path("a/b c", 1), Path::new("build/test-logs/a_b_c-smp1.log"));
    }

    #[test]
    fn reproducible_command_lines() {
        let mut cmd = Command::new("qemu-system-x86_64");
        cmd.args(["-m", "512M", "-append", "test=x expect_cpus=1", "-append", ""]);
        assert_eq!(
            shell_words(&cmd),
            "qemu-system-x86_64 -m 512M -append 'test=x expect_cpus=1' -append ''"
        );
    }
}
