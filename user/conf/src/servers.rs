//! `etc/servers.conf`: which OS servers init starts at boot, and on which
//! CPU (AnT, seed 002 §4), holding which rights. A line is
//! `<server> [cpu <n>|any] [rights <right>[,<right>...]] [args...]`, where a
//! right is `device` (a driver: it may claim a device) or `system`; `#`
//! starts a comment. A server holds no right unless its line gives it.

use abi::Error;
use alloc::vec::Vec;

/// One line: the program, its CPU (`abi::ANY_CPU` if none), its rights
/// (`abi::rights`) and its arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct Placement<'a> {
    pub server: &'a str,
    pub cpu: u64,
    pub rights: u64,
    pub args: Vec<&'a str>,
}

/// The rights a comma-separated list names.
fn rights(list: &str) -> Result<u64, Error> {
    list.split(',').try_fold(0, |all, name| match name {
        "device" => Ok(all | abi::rights::DEVICE),
        "system" => Ok(all | abi::rights::SYSTEM),
        "nvm" => Ok(all | abi::rights::NVM),
        "console" => Ok(all | abi::rights::CONSOLE),
        _ => Err(Error::Invalid),
    })
}

/// The placement a line asks for; `None` for a blank or comment line.
pub fn parse(line: &str) -> Result<Option<Placement<'_>>, Error> {
    let line = line.split('#').next().unwrap_or("");
    let mut words = line.split_ascii_whitespace().peekable();
    let Some(server) = words.next() else {
        return Ok(None);
    };
    let mut cpu = abi::ANY_CPU;
    if words.peek() == Some(&"cpu") {
        words.next();
        cpu = match words.next() {
            Some("any") => abi::ANY_CPU,
            Some(n) => n.parse().map_err(|_| Error::Invalid)?,
            None => return Err(Error::Invalid),
        };
    }
    let mut held = 0;
    if words.peek() == Some(&"rights") {
        words.next();
        held = rights(words.next().ok_or(Error::Invalid)?)?;
    }
    Ok(Some(Placement {
        server,
        cpu,
        rights: held,
        args: words.collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_comment_lines_place_nothing() {
        assert_eq!(parse(""), Ok(None));
        assert_eq!(parse("  # nothing"), Ok(None));
    }

    #[test]
    fn a_pinned_server_with_arguments() {
        assert_eq!(
            parse("echo cpu 2 a b  # the second echo"),
            Ok(Some(Placement {
                server: "echo",
                cpu: 2,
                rights: 0,
                args: vec!["a", "b"]
            }))
        );
    }

    #[test]
    fn unpinned_servers() {
        let relay = Placement {
            server: "relay",
            cpu: abi::ANY_CPU,
            rights: 0,
            args: vec![],
        };
        assert_eq!(parse("relay"), Ok(Some(relay)));
        assert_eq!(
            parse("relay cpu any x").map(|p| p.map(|p| (p.cpu, p.args))),
            Ok(Some((abi::ANY_CPU, vec!["x"])))
        );
    }

    #[test]
    fn a_driver_is_given_the_device_right() {
        let p = parse("virtio-blk cpu 0 rights device disk").unwrap().unwrap();
        assert_eq!((p.cpu, p.rights, p.args), (0, abi::rights::DEVICE, vec!["disk"]));
        let p = parse("x rights device,system").unwrap().unwrap();
        assert_eq!(p.rights, abi::rights::DEVICE | abi::rights::SYSTEM);
        assert_eq!(parse("x rights"), Err(Error::Invalid));
        assert_eq!(parse("x rights root"), Err(Error::Invalid));
        assert_eq!(parse("x rights device,"), Err(Error::Invalid));
    }

    #[test]
    fn a_bad_or_missing_cpu_is_invalid() {
        assert_eq!(parse("echo cpu two"), Err(Error::Invalid));
        assert_eq!(parse("echo cpu"), Err(Error::Invalid));
        assert_eq!(parse("echo cpu -1"), Err(Error::Invalid));
    }

    #[test]
    fn cpu_as_an_argument_after_others_is_an_argument() {
        assert_eq!(
            parse("echo x cpu 1").map(|p| p.map(|p| (p.cpu, p.args))),
            Ok(Some((abi::ANY_CPU, vec!["x", "cpu", "1"])))
        );
    }
}
