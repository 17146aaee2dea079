// The RAM disk carries its disk images in its own binary (the initial
// archive holds the binary; no system call reads an archive file from user
// space). xtask names the images in TESSERA_DISK_IMAGES
// (`name=path,name=path`); they are packed sparsely into OUT_DIR/images,
// which the server includes. Without the variable (a build outside xtask,
// e.g. clippy) the pack is empty and the RAM disk serves blank disks only.
use std::path::Path;

// The other servers' script, whose `main` is not this one's.
#[allow(dead_code)]
#[path = "../build.rs"]
mod program;

fn main() {
    program::link_as_program();
    println!("cargo:rerun-if-env-changed=TESSERA_DISK_IMAGES");
    let list = std::env::var("TESSERA_DISK_IMAGES").unwrap_or_default();
    let mut images = Vec::new();
    for item in list.split(',').filter(|s| !s.is_empty()) {
        let (name, path) = item
            .split_once('=')
            .unwrap_or_else(|| panic!("TESSERA_DISK_IMAGES: '{item}' is not name=path"));
        println!("cargo:rerun-if-changed={path}");
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading disk image {path}: {e}"));
        images.push((name.to_string(), data));
    }
    let refs: Vec<(&str, &[u8])> = images.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("images");
    std::fs::write(&out, ramimage::pack(&refs)).expect("writing the packed images");
}
