//! The tool on real programs: static and static-PIE musl programs built
//! here, Debian's static busybox, a dynamically linked program and shared
//! libraries of the host. Each converts, and the reverse check passes.
//! Needs musl-tools and busybox-static (tools/setup.sh installs both).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_off2f"))
        .args(args)
        .output()
        .expect("the off2f binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = tool(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "off2f {args:?}: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Refused with a message and status 1 (a panic would be 101).
fn refused(args: &[&str]) -> String {
    let out = tool(args);
    assert_eq!(out.status.code(), Some(1), "off2f {args:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.starts_with("off2f: "), "{err}");
    err
}

/// A scratch folder, removed when the test is done with it.
struct Scratch(PathBuf);

impl Scratch {
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("off2f-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const HELLO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hello.c");

fn musl_gcc(args: &[&str], out: &Path) {
    let status = Command::new("musl-gcc")
        .args(args)
        .arg("-o")
        .arg(out)
        .status()
        .expect("musl-gcc (Debian's musl-tools; tools/setup.sh installs it)");
    assert!(status.success());
}

/// Converts, checks, converts again (the same bytes), and says what it is.
fn convert_and_check(elf: &Path, dir: &Path) -> String {
    let name = elf.file_name().unwrap().to_str().unwrap();
    let off = dir.join(format!("{name}.off"));
    let text = dir.join(format!("{name}.text"));
    ok(&["convert", s(elf), s(&off), s(&text)]);
    let check = ok(&["check", s(elf), s(&off), s(&text)]);
    assert!(check.contains("identical"), "{check}");
    let (first, first_text) = (fs::read(&off).unwrap(), fs::read(&text).unwrap());
    ok(&["convert", s(elf), s(&off), s(&text)]);
    assert_eq!(
        (fs::read(&off).unwrap(), fs::read(&text).unwrap()),
        (first, first_text),
        "idempotent"
    );
    ok(&["info", s(&off)])
}

#[test]
fn static_musl_program() {
    let dir = scratch("static");
    let elf = dir.join("hello-static");
    musl_gcc(&["-static", "-O2", HELLO], &elf);
    let info = convert_and_check(&elf, &dir);
    assert!(info.contains("static executable") && info.contains("TLS"), "{info}");
}

#[test]
fn static_pie_musl_program() {
    let dir = scratch("static-pie");
    let elf = dir.join("hello-static-pie");
    // Debian's musl-gcc links -static-pie dynamically; spell it out.
    let musl = "/usr/lib/x86_64-linux-musl";
    let gcc = String::from_utf8(
        Command::new("musl-gcc")
            .arg("-print-libgcc-file-name")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let gcc = Path::new(gcc.trim()).parent().unwrap().to_str().unwrap().to_string();
    musl_gcc(
        &[
            "-O2",
            "-fPIE",
            "-static-pie",
            "-Wl,--no-dynamic-linker",
            "-Wl,-Bstatic",
            "-nostartfiles",
            &format!("{musl}/rcrt1.o"),
            &format!("{musl}/crti.o"),
            &format!("{gcc}/crtbeginS.o"),
            HELLO,
            &format!("{gcc}/crtendS.o"),
            &format!("{musl}/crtn.o"),
        ],
        &elf,
    );
    let run = Command::new(&elf).arg("x").output().unwrap();
    assert!(String::from_utf8_lossy(&run.stdout).contains("hello from a converted program"));
    let info = convert_and_check(&elf, &dir);
    assert!(
        info.contains("static PIE executable") && !info.contains("interpreter"),
        "{info}"
    );
}

#[test]
fn debian_static_busybox() {
    let busybox = Path::new("/bin/busybox");
    assert!(
        busybox.exists(),
        "/bin/busybox is missing: apt-get install busybox-static (tools/setup.sh)"
    );
    let info = convert_and_check(busybox, &scratch("busybox"));
    assert!(info.contains("executable"), "{info}");
}

#[test]
fn dynamically_linked_program_and_shared_libraries() {
    let dir = scratch("dynamic");
    let info = convert_and_check(Path::new("/bin/ls"), &dir);
    assert!(info.contains("dynamically linked") && info.contains("interpreter   /lib64/ld-linux-x86-64.so.2"));
    for lib in ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"] {
        let info = convert_and_check(Path::new(lib), &dir);
        assert!(info.contains("shared library"), "{lib}: {info}");
    }
}

#[test]
fn bad_inputs_are_refused_without_panic() {
    let dir = scratch("bad");
    let ls = fs::read("/bin/ls").unwrap();
    let (off, text) = (dir.join("ls.off"), dir.join("ls.text"));
    for len in [0, 3, 63, 64, 200, 1000, ls.len() / 2] {
        let cut = dir.join(&format!("ls-{len}"));
        fs::write(&cut, &ls[..len]).unwrap();
        let err = refused(&["convert", s(&cut), s(&off), s(&text)]);
        assert!(err.contains("cannot convert"), "{err}");
    }
    refused(&["convert", HELLO, s(&off), s(&text)]);
    refused(&["convert", "/nonexistent", s(&off), s(&text)]);

    ok(&["convert", "/bin/ls", s(&off), s(&text)]);
    let good = fs::read(&off).unwrap();
    for at in [0, 5, 100, 600, 3000, 5000, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        fs::write(&off, &bad).unwrap();
        refused(&["check", "/bin/ls", s(&off), s(&text)]);
        if at < 4096 {
            refused(&["info", s(&off)]);
        }
    }
    fs::write(&off, &good[..good.len() - 1]).unwrap();
    refused(&["check", "/bin/ls", s(&off), s(&text)]);
    fs::write(&off, &good).unwrap();
    let t = fs::read(&text).unwrap();
    fs::write(&text, &t[..t.len() - 4096]).unwrap();
    refused(&["check", "/bin/ls", s(&off), s(&text)]);
    // Another program's files do not pass for this one.
    ok(&["convert", "/bin/busybox", s(&off), s(&text)]);
    refused(&["check", "/bin/ls", s(&off), s(&text)]);
    let usage = tool(&["convert", "only-one"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn text_files_in_an_nvm_image() {
    let dir = scratch("nvm");
    let img = dir.join("nvm.img");
    let (off, text) = (dir.join("ls.off"), dir.join("ls.text"));
    ok(&["convert", "--text-name", "ls", "/bin/ls", s(&off), s(&text)]);
    assert!(ok(&["info", s(&off)]).contains("\"ls\" in the NVM store"));
    let err = refused(&["nvm-list", s(&img)]);
    assert!(err.contains("No such file"), "{err}");
    assert_eq!(tool(&["nvm-format", s(&img), "3M"]).status.code(), Some(2));
    ok(&["nvm-format", s(&img), "1M"]);
    assert_eq!(fs::metadata(&img).unwrap().len(), 1 << 20);
    let stored = ok(&["nvm-store", s(&img), "ls", s(&text)]);
    assert!(stored.contains("stored ls"), "{stored}");
    assert!(ok(&["nvm-store", s(&img), "ls", s(&text)]).contains("unchanged"));
    refused(&["nvm-store", s(&img), "bad name", s(&text)]);
    let big = dir.join("big");
    fs::write(&big, vec![7u8; 2 << 20]).unwrap();
    assert!(refused(&["nvm-store", s(&img), "big", s(&big)]).contains("no room"));
    let list = ok(&["nvm-list", "--verify", s(&img)]);
    assert!(list.contains("ls ") && list.contains(" ok"), "{list}");
    // The store's checksum of the text is the one in the OFF2F header.
    let crc = format!("{:016x}", off2f::CRC64.checksum(&fs::read(&text).unwrap()));
    assert!(list.contains(&crc) && ok(&["info", s(&off)]).contains(&crc));
    assert!(refused(&["nvm-format", s(&img), "1M"]).contains("--force"));
    ok(&["nvm-delete", s(&img), "ls"]);
    assert!(ok(&["nvm-list", s(&img)]).starts_with("0 of"));
    ok(&["nvm-format", "--force", s(&img), "2M"]);
    // A damaged image is reported, not trusted.
    let mut bytes = fs::read(&img).unwrap();
    bytes[20] ^= 1;
    fs::write(&img, &bytes).unwrap();
    assert!(refused(&["nvm-list", s(&img)]).contains("corrupt"));
}
