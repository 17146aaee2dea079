//! What `execve` must know of a file before the kernel loads it: whether
//! it is an ELF program for this machine that Tessera can run (static:
//! no interpreter; a fixed-address or position-independent executable),
//! or a `#!` script naming its interpreter.

use alloc::string::String;
use alloc::vec::Vec;

/// Bytes of a file `execve` looks at first (Linux's BINPRM_BUF_SIZE).
pub const HEAD: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A static ELF program (`pie`: ET_DYN, loaded at a base of the
    /// kernel's choosing).
    Elf { pie: bool },
    /// An ELF program that needs a dynamic loader (`PT_INTERP`): not yet.
    Dynamic,
    /// `#!interpreter [argument]`.
    Script {
        interpreter: String,
        argument: Option<String>,
    },
    /// Neither: ENOEXEC.
    Unknown,
}

const PT_INTERP: u32 = 3;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// What the file whose first bytes are `head` is. An ELF file's program
/// headers are looked for in `image` (the whole file, or as much as was
/// read: headers beyond it count as absent).
pub fn classify(head: &[u8], image: &[u8]) -> Kind {
    if head.starts_with(b"#!") {
        return script(head);
    }
    if !head.starts_with(b"\x7fELF") {
        return Kind::Unknown;
    }
    // 64-bit, little-endian, x86_64, executable or shared object.
    let ok = head.get(4) == Some(&2) && head.get(5) == Some(&1) && u16_at(head, 18) == Some(62);
    let kind = u16_at(head, 16);
    if !ok || !matches!(kind, Some(2) | Some(3)) {
        return Kind::Unknown;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(head, 32), u16_at(head, 54), u16_at(head, 56)) else {
        return Kind::Unknown;
    };
    for i in 0..phnum as u64 {
        let at = phoff.saturating_add(i * phentsize as u64) as usize;
        if u32_at(image, at) == Some(PT_INTERP) {
            return Kind::Dynamic;
        }
    }
    Kind::Elf { pie: kind == Some(3) }
}

/// `#!` and the rest of the first line: the interpreter, then at most one
/// argument (the rest of the line, spaces inside kept, as Linux does).
fn script(head: &[u8]) -> Kind {
    let line = &head[2..];
    let end = line.iter().position(|&b| b == b'\n').unwrap_or(line.len());
    let line = String::from_utf8_lossy(&line[..end]);
    let line = line.trim_matches(|c| c == ' ' || c == '\t');
    if line.is_empty() {
        return Kind::Unknown;
    }
    let (interp, arg) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], Some(line[i..].trim_matches(|c| c == ' ' || c == '\t'))),
        None => (line, None),
    };
    Kind::Script {
        interpreter: String::from(interp),
        argument: arg.filter(|a| !a.is_empty()).map(String::from),
    }
}

/// A script's new argument list: interpreter, its argument, the script's
/// path, then the original arguments but the first.
pub fn script_argv(interpreter: &str, argument: Option<&str>, path: &str, argv: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(argv.len() + 2);
    out.push(interpreter.as_bytes().to_vec());
    if let Some(a) = argument {
        out.push(a.as_bytes().to_vec());
    }
    out.push(path.as_bytes().to_vec());
    out.extend(argv.iter().skip(1).cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(kind: u16, interp: bool) -> Vec<u8> {
        let mut b = vec![0u8; 256];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[16..18].copy_from_slice(&kind.to_le_bytes());
        b[18..20].copy_from_slice(&62u16.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&2u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes());
        if interp {
            b[120..124].copy_from_slice(&3u32.to_le_bytes());
        }
        b
    }

    #[test]
    fn elf_kinds() {
        let e = elf(2, false);
        assert_eq!(classify(&e, &e), Kind::Elf { pie: false });
        let p = elf(3, false);
        assert_eq!(classify(&p, &p), Kind::Elf { pie: true });
        let d = elf(3, true);
        assert_eq!(classify(&d, &d), Kind::Dynamic);
        let mut arm = elf(2, false);
        arm[18] = 183;
        assert_eq!(classify(&arm, &arm), Kind::Unknown);
        assert_eq!(classify(b"\x7fELF", b"\x7fELF"), Kind::Unknown);
        assert_eq!(classify(b"hello", b"hello"), Kind::Unknown);
    }

    #[test]
    fn scripts() {
        assert_eq!(
            classify(b"#!/bin/sh\necho", b""),
            Kind::Script {
                interpreter: "/bin/sh".into(),
                argument: None
            }
        );
        assert_eq!(
            classify(b"#! /bin/busybox  sh -e \n", b""),
            Kind::Script {
                interpreter: "/bin/busybox".into(),
                argument: Some("sh -e".into())
            }
        );
        assert_eq!(classify(b"#!\n", b""), Kind::Unknown);
        let argv = script_argv("/bin/sh", Some("-e"), "/s", &[b"s".to_vec(), b"a".to_vec()]);
        assert_eq!(
            argv,
            vec![b"/bin/sh".to_vec(), b"-e".to_vec(), b"/s".to_vec(), b"a".to_vec()]
        );
    }
}
