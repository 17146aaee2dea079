//! `off2f`: the host side of OFF2F. Converts ELF files to the two OFF2F
//! files, checks a conversion against its ELF file, describes an OFF2F
//! file, and keeps text files in an NVM image (the file QEMU maps as the
//! pseudo non-volatile memory).

mod check;
mod info;
mod nvm;

use std::fs;
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  off2f convert [--text-name NAME] IN.elf OUT.off OUT.text
                     ELF to OFF2F: file 1 (header, data, relocation information)
                     and the text file; NAME is the text file's name in the NVM
                     store (default: the file name of OUT.text)
  off2f check IN.elf FILE.off FILE.text
                     the two files give back the ELF file and its segments' bytes
  off2f info FILE.off
  off2f nvm-format [--force] [--capacity N] IMAGE SIZE
                     make IMAGE (SIZE a power of two: 64M, 256M, 1G) an empty store
  off2f nvm-store IMAGE NAME FILE
  off2f nvm-delete IMAGE NAME
  off2f nvm-list [--verify] IMAGE
";

/// A failure to report: message, and whether it was the command line's.
pub struct Failure {
    message: String,
    usage: bool,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure {
            message: e.to_string(),
            usage: false,
        }
    }
}

pub fn usage(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        usage: true,
    }
}

pub fn read(path: &str) -> Result<Vec<u8>, Failure> {
    fs::read(path).map_err(|e| format!("{path}: {e}").into())
}

/// Written beside, then renamed: a reader never sees half a file.
pub fn write(path: &str, data: &[u8]) -> Result<(), Failure> {
    let tmp = format!("{path}.tmp");
    fs::write(&tmp, data).map_err(|e| format!("{tmp}: {e}"))?;
    fs::rename(&tmp, path).map_err(|e| format!("{path}: {e}").into())
}

/// Takes `--name VALUE` out of `args`.
pub fn option(args: &mut Vec<String>, name: &str) -> Result<Option<String>, Failure> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    if i + 1 >= args.len() {
        return Err(usage(format!("{name} needs a value")));
    }
    let value = args.remove(i + 1);
    args.remove(i);
    Ok(Some(value))
}

pub fn flag(args: &mut Vec<String>, name: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != name);
    args.len() != before
}

/// Exactly `N` operands, no unknown option.
pub fn operands<const N: usize>(args: Vec<String>) -> Result<[String; N], Failure> {
    if let Some(o) = args.iter().find(|a| a.starts_with("--")) {
        return Err(usage(format!("unknown option {o}")));
    }
    let n = args.len();
    args.try_into()
        .map_err(|_| usage(format!("{n} operand(s) given, {N} expected")))
}

fn convert(mut args: Vec<String>) -> Result<(), Failure> {
    let name = option(&mut args, "--text-name")?;
    let [elf, off, text] = operands(args)?;
    let name = match name {
        Some(n) => n,
        None => Path::new(&text)
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| usage(format!("{text}: no file name to name the text after")))?
            .to_string(),
    };
    let data = read(&elf)?;
    let files = off2f::convert(&data, &name).map_err(|e| format!("{elf}: cannot convert: {e}"))?;
    write(&off, &files.file1)?;
    write(&text, &files.text)?;
    let h = off2f::Header::parse(&files.file1)?;
    println!(
        "{elf}: {}; {off}: {} bytes (header {} bytes), {text}: {} bytes of text as {:?}",
        h.kind().name(),
        files.file1.len(),
        h.len(),
        files.text.len(),
        h.text_name()
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    }
    let command = args.remove(0);
    let result = match command.as_str() {
        "convert" => convert(args),
        "check" => check::run(args),
        "info" => info::run(args),
        "nvm-format" => nvm::format(args),
        "nvm-store" => nvm::store(args),
        "nvm-delete" => nvm::delete(args),
        "nvm-list" => nvm::list(args),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(usage(format!("unknown command {other:?}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if f.usage => {
            eprintln!("off2f: {}\n\n{USAGE}", f.message);
            ExitCode::from(2)
        }
        Err(f) => {
            eprintln!("off2f: {}", f.message);
            ExitCode::FAILURE
        }
    }
}
