//! The Linux differential tests: each program of `user/linux/abi/` runs
//! unmodified on Tessera's Linux personality, from the system disk
//! (`sysimage.rs`), and passes when it prints exactly the transcript Linux
//! printed (`expected/<name>.out`, made on the Linux reference VM by
//! `make linux-abi`) and exits 0. So does each busybox shell script of
//! `user/linux/sh/`, run by Debian's static busybox (its transcript:
//! `busybox sh <script>` on Linux, `expected/<name>.out` beside it). One
//! boot per test: init starts the storage servers and the personality,
//! then `run=linux` launches the program; the disk's writes are dropped
//! when the boot ends.

use std::fs;
use std::path::{Path, PathBuf};

use crate::protocol::{self, EXIT_SUCCESS, Ending};

/// A folder of the repository, from its root (where xtask runs; its unit
/// tests run in `xtask/`).
fn repo(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir)
}

/// The two kinds: their folder (`user/linux/X` is `/linux/X` on the
/// system disk), what their test names start with (`make test
/// FILTER=linux_abi`), and what runs a file of them.
const KINDS: &[(&str, &str, &str)] = &[
    ("user/linux/abi", "linux_abi_", ""),
    ("user/linux/sh", "linux_sh_", "/bin/sh,"),
];
/// The names of the programs whose transcripts do not match Linux's yet:
/// they run only when a filter names them (`make test
/// FILTER=linux_pending`), so that the suite says what works.
const PENDING_PREFIX: &str = "linux_pending_";
/// The programs whose transcripts differ from Linux's (or that hang):
/// each is work left on the personality, not a test that may fail.
const PENDING: &[&str] = &[
    // At 4 CPUs it ends with Linux's transcript (38 to 42 s). At 1 CPU it
    // is bimodal: alone it ended in 23 to 55 s (four runs of four), but
    // beside other boots it did not end in 400 s, twice; the two senders
    // and the thread they storm share the CPU (not looked into yet).
    "sig_storm",
];
/// The programs that take longer than the suite's timeout allows, with
/// theirs in seconds, under plain TCG on a loaded machine: the web
/// server's 10,000 requests and abuse, 2,400 rounds of fork + execve +
/// pipe, 20,000 random system calls, and signal storms at one CPU, where
/// the senders get as much of the CPU as the thread they storm.
const SLOW: &[(&str, u64)] = &[("web_hostile", 900), ("stress", 900), ("fuzz", 600), ("sig_storm", 400)];
/// The programs that run at 4 CPUs only: a stress whose point is several
/// CPUs at once (and twice its time would double the suite's longest boot).
const SMP_ONLY: &[&str] = &["stress"];
/// The boot file of the servers a Linux test needs (`user/etc/`).
const SERVERS: &str = "servers.linux.conf";
/// The same, the personality loading its programs eagerly.
const EAGER_SERVERS: &str = "servers.linux-eager.conf";
/// The line before the program's transcript: init has started the
/// personality's server, the last of the boot file's servers.
const STARTED: &str = "started 'linux ";
const DONE: &str = "RUN-EXIT linux";

#[derive(Clone, Debug)]
pub struct LinuxTest {
    pub name: String,
    /// The launcher's arguments.
    args: String,
    expected: PathBuf,
    /// Text files the boot's NVM store holds: (name, host file).
    pub nvm_texts: Vec<(String, PathBuf)>,
    /// The boot file of the servers, and more words of the command line.
    servers: &'static str,
    boot: &'static str,
    /// Counters of init's `RUN-REPORT` (the kernel's, over the run) the
    /// test also needs: (name, least, most).
    report: &'static [(&'static str, u64, u64)],
    /// Seconds the boot may take, when more than the suite's timeout.
    pub timeout_s: Option<u64>,
    /// Runs at several CPUs only.
    pub smp_only: bool,
}

/// The launcher's arguments that run `program` as Linux's reference VM
/// runs it: in a fresh folder, with standard input `/dev/null`, standard
/// output a file on the disk (shown when it ends: RLIMIT_FSIZE limits
/// what reaches it) and the environment `PATH=/bin HOME=/ TERM=linux`, as
/// a child the shell waits for, so that it is not the leader of the
/// launcher's session, and in a session without a controlling terminal:
/// like Linux's (a child of its init, whose console is no session's
/// terminal; `,` separates the arguments and `+` is a space on the
/// command line).
fn reference_run(program: &str, name: &str) -> String {
    let dir = format!("/tmp/{name}");
    let out = format!("/out/{name}.out");
    let line = format!(
        "mkdir -p /out {dir} && cd {dir} && {{ env -i PATH=/bin HOME=/ TERM=linux {program} </dev/null >{out} & \
         wait $!; }}; s=$?; cat {out}; exit $s"
    );
    format!("--noctty,/bin/sh,-c,{}", line.replace(' ', "+"))
}

/// One test per expected transcript, in name order.
pub fn tests() -> Vec<LinuxTest> {
    let mut tests = Vec::new();
    for &(dir, prefix, runner) in KINDS {
        let Ok(entries) = fs::read_dir(repo(dir).join("expected")) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Some(stem) = p.file_stem().and_then(|s| s.to_str()).map(String::from) else {
                continue;
            };
            if p.extension().is_none_or(|x| x != "out") {
                continue;
            }
            let prefix = if PENDING.contains(&stem.as_str()) {
                PENDING_PREFIX
            } else {
                prefix
            };
            let on_disk = dir.trim_start_matches("user");
            let args = if runner.is_empty() {
                reference_run(&format!("{on_disk}/{stem}"), &stem)
            } else {
                format!("{runner}{on_disk}/{stem}.sh")
            };
            tests.push(LinuxTest {
                name: format!("{prefix}{stem}"),
                args,
                expected: p,
                nvm_texts: Vec::new(),
                servers: SERVERS,
                boot: "",
                report: &[],
                timeout_s: SLOW.iter().find(|(n, _)| *n == stem).map(|&(_, t)| t),
                smp_only: SMP_ONLY.contains(&stem.as_str()),
            });
        }
    }
    tests.extend(off2f_tests());
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    tests
}

/// Linux programs as OFF2F (seed 001; the system disk holds them,
/// `sysimage::OFF2F_PROGRAMS`): each must print what its ELF file prints
/// on Linux. `ids` is exec'd by busybox's `env` (the personality's
/// `execve`), busybox itself is the launcher's first program and runs a
/// script with a pipeline.
fn off2f_tests() -> Vec<LinuxTest> {
    let texts = |names: &[&str]| {
        names
            .iter()
            .map(|n| {
                let file = repo(crate::sysimage::OFF2F_TEXTS).join(format!("{n}.text"));
                (crate::sysimage::off2f_text_name(n), file)
            })
            .collect()
    };
    // Data read at faults (demand) or at creation (eager), from file 1 by
    // the file server; none refused.
    const PAGED: &[(&str, u64, u64)] = &[("pages_paged_in", 1, u64::MAX), ("page_ins_failed", 0, 0)];
    // ... and, from the pool, spaces whose text is NVM pages taken again
    // with no copy.
    const POOLED: &[(&str, u64, u64)] = &[
        ("pages_paged_in", 1, u64::MAX),
        ("page_ins_failed", 0, 0),
        ("nvm_text_reuses", 1, u64::MAX),
        ("nvm_text_pages_reused", 1, u64::MAX),
    ];
    let ids = |name: &str, servers, boot, report| LinuxTest {
        name: name.into(),
        args: reference_run("/linux/off2f/ids", "ids"),
        expected: repo("user/linux/abi/expected/ids.out"),
        nvm_texts: texts(&["ids"]),
        servers,
        boot,
        report,
        timeout_s: None,
        smp_only: false,
    };
    let pipes = |name: &str, servers, boot, report| LinuxTest {
        name: name.into(),
        args: "/linux/off2f/busybox,sh,/linux/sh/pipes.sh".into(),
        expected: repo("user/linux/sh/expected/pipes.out"),
        nvm_texts: texts(&["busybox"]),
        servers,
        boot,
        report,
        timeout_s: None,
        smp_only: false,
    };
    vec![
        ids("linux_off2f_ids", SERVERS, "report", PAGED),
        pipes("linux_off2f_busybox_sh_pipes", SERVERS, "report", PAGED),
        // Tender's policy: every page at exec, the data read by the file
        // server then.
        ids("linux_off2f_eager_ids", EAGER_SERVERS, "report", PAGED),
        // Eager with the pool's reuse: each exec of busybox after the
        // first takes the space the last one left, its text region still
        // mapping the NVM pages.
        pipes(
            "linux_off2f_eager_pool_busybox_sh_pipes",
            EAGER_SERVERS,
            "pool=pool.linux-reuse.conf report",
            POOLED,
        ),
    ]
}

impl LinuxTest {
    /// Whether the test runs under `filter` (None: the whole suite, which
    /// leaves the pending ones out).
    pub fn selected(&self, filter: Option<&str>) -> bool {
        match filter {
            Some(f) => self.name.contains(f),
            None => !self.name.starts_with(PENDING_PREFIX),
        }
    }

    /// The boot's command line: the storage servers and the personality
    /// (no others, whose messages would mix with the program's output),
    /// then the launcher with the program.
    pub fn cmdline(&self) -> String {
        let boot = if self.boot.is_empty() {
            String::new()
        } else {
            format!("{} ", self.boot)
        };
        format!("servers={} {boot}run=linux args={}", self.servers, self.args)
    }

    fn expected(&self) -> Result<String, String> {
        fs::read_to_string(&self.expected).map_err(|e| format!("{}: {e}", self.expected.display()))
    }
}

/// The program's output: the lines after the personality started, up to
/// the launcher's end (None if either is missing).
fn transcript(lines: &[String]) -> Option<Vec<&str>> {
    let start = lines.iter().rposition(|l| l.contains(STARTED))? + 1;
    let end = start + lines[start..].iter().position(|l| protocol::has_marker(l, DONE))?;
    Some(lines[start..end].iter().map(|l| protocol::clean(l)).collect())
}

/// Pass if the transcript is Linux's, byte for byte, and the program
/// exited 0; otherwise how many lines differ and the first of them.
pub fn verdict(test: &LinuxTest, ending: Ending, lines: &[String]) -> Result<String, String> {
    let want = test.expected()?;
    let want: Vec<&str> = want.lines().collect();
    let Some(got) = transcript(lines) else {
        return Err(format!("no transcript ({ending})"));
    };
    let differ = (0..want.len().max(got.len()))
        .filter(|&i| want.get(i) != got.get(i))
        .collect::<Vec<_>>();
    if let Some(&first) = differ.first() {
        return Err(format!(
            "{} of {} lines differ from Linux's; line {}: want {:?}, got {:?}",
            differ.len(),
            want.len(),
            first + 1,
            want.get(first).copied().unwrap_or("(nothing)"),
            got.get(first).copied().unwrap_or("(nothing)"),
        ));
    }
    let exited = format!("{DONE} 0");
    if ending != Ending::Code(EXIT_SUCCESS) || !lines.iter().any(|l| protocol::has_marker(l, &exited)) {
        return Err(format!(
            "the transcript is Linux's but the program did not exit 0 ({ending})"
        ));
    }
    if test.report.is_empty() {
        return Ok(String::new());
    }
    let report = lines
        .iter()
        .find_map(|l| protocol::clean(l).split_once("RUN-REPORT ").map(|(_, r)| r.to_string()))
        .ok_or("no RUN-REPORT line")?;
    for &(name, least, most) in test.report {
        let value = report
            .split_ascii_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse::<u64>().ok())
            .ok_or_else(|| format!("RUN-REPORT has no {name}: {report}"))?;
        if value < least || value > most {
            return Err(format!("{name} = {value}, not in {least}..={most} ({report})"));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_expected_transcript_is_a_test() {
        let all = tests();
        assert!(all.iter().any(|t| t.name == "linux_abi_ids"), "{all:?}");
        let sh = all.iter().find(|t| t.name == "linux_sh_pipes").unwrap();
        assert_eq!(
            sh.cmdline(),
            "servers=servers.linux.conf run=linux args=/bin/sh,/linux/sh/pipes.sh"
        );
        let ids = all.iter().find(|t| t.name == "linux_abi_ids").unwrap();
        assert!(
            ids.cmdline()
                .contains("/linux/abi/ids+</dev/null+>/out/ids.out+&+wait+$!;+};+s=$?;+cat+/out/ids.out;+exit+$s"),
            "{}",
            ids.cmdline()
        );
        assert!(all.iter().all(|t| t.cmdline().split(' ').count() >= 3));
        for p in PENDING {
            assert!(
                all.iter().any(|t| t.name.ends_with(&format!("_{p}"))),
                "{p} is pending but has no transcript"
            );
        }
    }

    #[test]
    fn pending_programs_run_only_when_named() {
        let all = tests();
        // Whichever program is pending now (the list shrinks as they pass).
        let name = format!("_{}", PENDING[0]);
        let pending = all.iter().find(|t| t.name.ends_with(&name)).unwrap();
        let ready = all.iter().find(|t| t.name.ends_with("_ids")).unwrap();
        assert!(!pending.selected(None) && ready.selected(None));
        assert!(pending.selected(Some("linux_pending")) && !pending.selected(Some("linux_abi")));
        assert!(ready.selected(Some("linux_abi")));
    }

    #[test]
    fn the_transcript_lies_between_the_server_and_the_end() {
        let l = lines(&[
            "x: started 'linux cpu any --server' as pid 5",
            "a\r",
            "b",
            "RUN-EXIT linux 0",
            "c",
        ]);
        assert_eq!(transcript(&l), Some(vec!["a", "b"]));
        assert_eq!(transcript(&l[1..]), None);
        assert_eq!(transcript(&l[..3]), None);
    }

    #[test]
    fn passes_only_on_the_same_lines_and_exit_zero() {
        let t = tests().into_iter().find(|t| t.name.ends_with("_ids")).unwrap();
        let want = t.expected().unwrap();
        let mut l = lines(&["s: started 'linux --server' as pid 5"]);
        l.extend(want.lines().map(String::from));
        l.push("RUN-EXIT linux 0".into());
        assert!(verdict(&t, Ending::Code(EXIT_SUCCESS), &l).is_ok());
        assert!(verdict(&t, Ending::Code(35), &l).is_err());
        let mut changed = l.clone();
        changed[3].push('!');
        let why = verdict(&t, Ending::Code(EXIT_SUCCESS), &changed).unwrap_err();
        assert!(why.contains("line 3"), "{why}");
        let mut short = l.clone();
        short.remove(2);
        assert!(verdict(&t, Ending::Code(EXIT_SUCCESS), &short).is_err());
    }
}
