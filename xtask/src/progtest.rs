//! Tests that are user programs: a boot of the test kernel runs
//! `run=<program> args=<a,b>` and passes if the program exits 0 (the kernel
//! then prints `RUN-EXIT <program> 0` and powers off with success). They
//! join the in-QEMU tier beside the kernel's own tests, one boot each per
//! CPU count, so storage tests need no kernel code.

use crate::protocol::{self, EXIT_SUCCESS, Ending};

pub struct ProgTest {
    pub name: &'static str,
    pub program: &'static str,
    /// The program's arguments, separated by commas.
    pub args: &'static str,
}

pub const TESTS: &[ProgTest] = &[
    ProgTest {
        name: "fs_files_read_back_on_4k_blocks",
        program: "fstest",
        args: "rw,root",
    },
    ProgTest {
        name: "fs_files_read_back_on_1k_blocks",
        program: "fstest",
        args: "rw,small",
    },
    ProgTest {
        name: "fs_full_disk_gives_enospc_and_loses_nothing",
        program: "fstest",
        args: "full",
    },
    ProgTest {
        name: "fs_cache_flushes_and_reads_ahead",
        program: "fstest",
        args: "cache",
    },
    ProgTest {
        name: "fs_servers_leak_nothing",
        program: "fstest",
        args: "leak",
    },
    ProgTest {
        name: "fs_1200_bad_images_crash_no_server",
        program: "fstest",
        args: "bad,1200",
    },
    ProgTest {
        name: "off2f_convert_check_and_run_from_the_file_system",
        program: "offtest",
        args: "",
    },
];

impl ProgTest {
    /// The boot's command line: the program, and none of the boot file's
    /// servers (a test starts the ones it tests).
    pub fn cmdline(&self) -> String {
        format!("servers=off run={} args={}", self.program, self.args)
    }
}

/// Pass if the program exited 0; otherwise the program's own account of
/// what failed (its lines that say FAILED), or how the boot ended.
pub fn verdict(test: &ProgTest, ending: Ending, lines: &[String]) -> Result<String, String> {
    let done = format!("RUN-EXIT {} 0", test.program);
    if ending == Ending::Code(EXIT_SUCCESS) && lines.iter().any(|l| protocol::has_marker(l, &done)) {
        return Ok(String::new());
    }
    let told: Vec<&str> = lines
        .iter()
        .map(|l| protocol::clean(l))
        .filter(|l| l.contains("FAILED") || l.contains("KERNEL PANIC"))
        .take(3)
        .collect();
    Err(if told.is_empty() {
        ending.to_string()
    } else {
        format!("{} ({ending})", told.join("; "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn passes_only_on_exit_zero_and_success() {
        let t = &TESTS[0];
        assert!(verdict(t, Ending::Code(EXIT_SUCCESS), &lines(&["RUN-EXIT fstest 0"])).is_ok());
        assert!(verdict(t, Ending::Code(EXIT_SUCCESS), &lines(&["RUN-EXIT fstest 01"])).is_err());
        assert!(verdict(t, Ending::Code(35), &lines(&["RUN-EXIT fstest 1"])).is_err());
        let why = verdict(t, Ending::Code(35), &lines(&["fstest: FAILED x", "RUN-EXIT fstest 1"])).unwrap_err();
        assert!(why.contains("FAILED x"), "{why}");
        assert!(verdict(t, Ending::TimedOut, &[]).is_err());
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in TESTS.iter().enumerate() {
            assert!(TESTS[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
            assert!(!a.args.contains(' '), "{}: arguments are comma-separated", a.name);
        }
    }
}
