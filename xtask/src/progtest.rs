//! Tests that are user programs: a boot of the test kernel runs
//! `run=<program> args=<a,b>` and passes if the program exits 0 (the kernel
//! then prints `RUN-EXIT <program> 0` and powers off with success). They
//! join the in-QEMU tier beside the kernel's own tests, one boot each per
//! CPU count, so storage tests need no kernel code. The storage tests on
//! the real device, which the host judges too, are in disktest.rs.

use crate::machine::UserNet;
use crate::protocol::{self, EXIT_SUCCESS, Ending};

pub struct ProgTest {
    pub name: &'static str,
    pub program: &'static str,
    /// The program's arguments, separated by commas.
    pub args: &'static str,
    /// The NIC the boot has on QEMU's user network, if any.
    pub nic: Nic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nic {
    None,
    /// With the echo service at 10.0.2.100:7 (see `machine::UserNet`).
    Echo,
    /// With a host port forwarded to the guest's port 80: the harness
    /// makes `HTTP_REQUESTS` requests through it once the guest prints
    /// `httpd: serving`.
    Http,
}

pub const TESTS: &[ProgTest] = &[
    ProgTest {
        name: "fs_files_read_back_on_4k_blocks",
        program: "fstest",
        args: "rw,root",
        nic: Nic::None,
    },
    ProgTest {
        name: "fs_files_read_back_on_1k_blocks",
        program: "fstest",
        args: "rw,small",
        nic: Nic::None,
    },
    ProgTest {
        name: "fs_full_disk_gives_enospc_and_loses_nothing",
        program: "fstest",
        args: "full",
        nic: Nic::None,
    },
    ProgTest {
        name: "fs_cache_flushes_and_reads_ahead",
        program: "fstest",
        args: "cache",
        nic: Nic::None,
    },
    ProgTest {
        name: "fs_servers_leak_nothing",
        program: "fstest",
        args: "leak",
        nic: Nic::None,
    },
    // The file server killed under a reader of its kernel file cache, the
    // block cache killed while it publishes into one, the file server
    // killed while the block cache publishes for it: the readers end with
    // an error, the rest back to its level.
    ProgTest {
        name: "fs_servers_killed_under_file_caches_end_readers_leak_nothing",
        program: "fstest",
        args: "kill",
        nic: Nic::None,
    },
    ProgTest {
        name: "fs_1200_bad_images_crash_no_server",
        program: "fstest",
        args: "bad,1200",
        nic: Nic::None,
    },
    ProgTest {
        name: "net_loopback_streams_datagrams_hostile_calls_restart",
        program: "nettest",
        args: "loop",
        nic: Nic::None,
    },
    ProgTest {
        name: "net_nic_ping_gateway_tcp_echo_and_restarts",
        program: "nettest",
        args: "nic",
        nic: Nic::Echo,
    },
    ProgTest {
        name: "net_http_from_the_host_through_the_forwarded_port",
        program: "nettest",
        args: "http,4",
        nic: Nic::Http,
    },
    // Seed 002 fig. 12's file transfer (file server to TCP over the
    // loopback, four ways, every byte checked) and SEND_ICA's refusals.
    ProgTest {
        name: "net_send_ica_refuses_bad_icas_and_fig12_transfers_whole",
        program: "xferbench",
        args: "test",
        nic: Nic::None,
    },
    // Every way a container travels to another process (each box mode,
    // push, exchange; with two CPUs also to the other CPU), 4 KiB to 2 MiB,
    // every message checked by its receiver.
    ProgTest {
        name: "container_messages_arrive_whole_in_another_process",
        program: "cttransfer",
        args: "short",
        nic: Nic::None,
    },
    ProgTest {
        name: "off2f_convert_check_and_run_from_the_file_system",
        program: "offtest",
        args: "",
        nic: Nic::None,
    },
];

impl ProgTest {
    /// The boot's command line: the program, and none of the boot file's
    /// servers (a test starts the ones it tests).
    pub fn cmdline(&self) -> String {
        format!("servers=off run={} args={}", self.program, self.args)
    }

    /// The NIC the boot has, if any (`port`: the host port to forward).
    pub fn net(&self, port: u16) -> Option<UserNet> {
        match self.nic {
            Nic::None => None,
            Nic::Echo => Some(UserNet {
                http_port: None,
                echo: true,
            }),
            Nic::Http => Some(UserNet {
                http_port: Some(port),
                echo: false,
            }),
        }
    }
}

/// What the guest prints once its web server listens.
pub const HTTP_READY: &str = "httpd: serving";

/// The requests of an `Nic::Http` test, each with the status line and a
/// piece of the body the answer must have (the root image's files).
const HTTP_REQUESTS: [(&str, &str, &str); 4] = [
    (
        "GET /hello.txt HTTP/1.0\r\n\r\n",
        "HTTP/1.0 200 OK",
        "Hello from the Tessera disk.",
    ),
    ("GET /no/such/file HTTP/1.0\r\n\r\n", "HTTP/1.0 404 Not Found", "404"),
    ("BLAH\r\n\r\n", "HTTP/1.0 400 Bad Request", "400"),
    (
        "GET / HTTP/1.1\r\nHost: tessera\r\n\r\n",
        "HTTP/1.0 200 OK",
        "hello.txt",
    ),
];

/// A free port on the host's loopback (free when asked: QEMU takes it
/// right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(0, |a| a.port())
}

/// The host's side of an `Nic::Http` test: each request through the
/// forwarded port, each answer checked.
pub fn http_client(port: u16) -> Result<(), String> {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    for (request, status, body) in HTTP_REQUESTS {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut answer = String::new();
        // QEMU accepts at once and drops the connection if the guest does
        // not: try again until the guest answers.
        while answer.is_empty() && Instant::now() < deadline {
            let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            if conn.write_all(request.as_bytes()).is_ok() {
                let mut bytes = Vec::new();
                let _ = conn.read_to_end(&mut bytes);
                answer = String::from_utf8_lossy(&bytes).into_owned();
            }
        }
        if !answer.starts_with(status) || !answer.contains(body) {
            let first = answer.lines().next().unwrap_or("nothing");
            return Err(format!("{:?} from the host: {first:?}, not {status:?}", request.trim()));
        }
    }
    Ok(())
}

/// Pass if the program exited 0; otherwise the program's own account of
/// what failed (its lines that say FAILED), or how the boot ended.
pub fn verdict(program: &str, ending: Ending, lines: &[String]) -> Result<String, String> {
    let done = format!("RUN-EXIT {program} 0");
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
        let t = TESTS[0].program;
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
