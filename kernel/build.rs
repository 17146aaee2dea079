// The linker script only applies to the bare-metal kernel; host builds (clippy,
// `cargo check` of the workspace) never see it.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    println!("cargo:rerun-if-changed={dir}/linker.ld");
    println!("cargo:rerun-if-changed={dir}/core/src/arch/x86_64/boot.S");
    println!("cargo:rerun-if-changed={dir}/core/src/arch/x86_64/trampoline.S");
    println!("cargo:rerun-if-changed={dir}/core/src/arch/x86_64/vectors.S");
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-none") {
        println!("cargo:rustc-link-arg-bins=-T{dir}/linker.ld");
        println!("cargo:rustc-link-arg-bins=--no-pie");
    }
}
