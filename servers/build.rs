// Servers are native programs: linked like user/programs (user.ld). One
// script for every server (each Cargo.toml names it as its `build`; the
// RAM disk's own script includes this one).
fn main() {
    link_as_program();
}

/// Links the crate's binaries with the native programs' script.
pub fn link_as_program() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let ld = format!("{dir}/../../user/programs/user.ld");
    println!("cargo:rerun-if-changed={ld}");
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-none") {
        println!("cargo:rustc-link-arg-bins=-T{ld}");
        println!("cargo:rustc-link-arg-bins=--no-pie");
    }
}
