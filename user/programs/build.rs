// Native programs are static executables linked at 0x400000 by user.ld; only
// the bare-metal target sees the script.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    println!("cargo:rerun-if-changed={dir}/user.ld");
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-none") {
        println!("cargo:rustc-link-arg-bins=-T{dir}/user.ld");
        println!("cargo:rustc-link-arg-bins=--no-pie");
    }
}
