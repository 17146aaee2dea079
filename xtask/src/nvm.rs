//! The pseudo non-volatile memory (seed 001): a host file QEMU maps as the
//! memory BAR of an `ivshmem-plain` device (`memory-backend-file`,
//! `share=on`), so its content survives reboots. It holds the NVM store;
//! xtask makes and formats the file on first use and then leaves it alone.

use nvmstore::file::{FileRegion, parse_size};
use nvmstore::{Error, FormatOptions, Store};
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

pub const DEFAULT_PATH: &str = "build/nvm.img";
pub const DEFAULT_SIZE: u64 = 256 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvm {
    /// Absolute, so that QEMU finds it from any working directory.
    pub path: PathBuf,
    /// Bytes; a power of two (it is a PCI BAR).
    pub size: u64,
}

impl Nvm {
    /// From the settings NVM (a path, or `off`) and NVM_SIZE; without a size,
    /// an existing image keeps its own.
    pub fn configure(path: Option<String>, size: Option<String>) -> Result<Option<Nvm>, String> {
        let path = path.unwrap_or_else(|| DEFAULT_PATH.to_string());
        if path.trim() == "off" {
            return Ok(None);
        }
        let path = std::env::current_dir()
            .map_err(|e| format!("current directory: {e}"))?
            .join(path.trim());
        let size = match size {
            Some(s) => parse_size(&s)
                .filter(|n| n.is_power_of_two() && *n >= 1 << 20)
                .ok_or_else(|| format!("bad NVM size {s:?}: a power of two of at least 1M (e.g. 64M, 256M, 1G)"))?,
            None => fs::metadata(&path)
                .map(|m| m.len())
                .ok()
                .filter(|&n| n > 0)
                .unwrap_or(DEFAULT_SIZE),
        };
        Ok(Some(Nvm { path, size }))
    }

    /// QEMU's arguments for the device.
    pub fn args(&self) -> [String; 4] {
        // QEMU's option syntax doubles a comma inside a value.
        let path = self.path.display().to_string().replace(',', ",,");
        [
            "-object".into(),
            format!("memory-backend-file,id=nvm,mem-path={path},size={},share=on", self.size),
            "-device".into(),
            "ivshmem-plain,memdev=nvm".into(),
        ]
    }

    /// Makes the image if it is missing (or was left empty), formatted as an
    /// empty store; an image that holds a store is kept as it is. One of the
    /// wrong size, or with a damaged store, is refused rather than erased.
    /// True if it made the store.
    pub fn prepare(&self) -> Result<bool, String> {
        let shown = self.path.display();
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)
            .map_err(|e| format!("{shown}: {e}"))?;
        file.try_lock().map_err(|e| format!("{shown}: cannot lock: {e}"))?;
        let len = file.metadata().map_err(|e| format!("{shown}: {e}"))?.len();
        if len != 0 && len != self.size {
            return Err(format!(
                "{shown} is {len} bytes, but the NVM size is {}: set NVM_SIZE={len}, or delete the image",
                self.size
            ));
        }
        if len == 0 {
            file.set_len(self.size).map_err(|e| format!("{shown}: {e}"))?;
        }
        let clone = file.try_clone().map_err(|e| format!("{shown}: {e}"))?;
        let region = FileRegion::new(clone).map_err(|e| format!("{shown}: {e}"))?;
        match Store::mount(region) {
            Ok(_) => Ok(false),
            Err(Error::NotFormatted) => {
                let region = FileRegion::new(file).map_err(|e| format!("{shown}: {e}"))?;
                Store::format(region, FormatOptions::default()).map_err(|e| format!("{shown}: {e}"))?;
                Ok(true)
            }
            Err(e) => Err(format!(
                "{shown}: {e}; see `off2f nvm-list`, or erase it with `off2f nvm-format --force`"
            )),
        }
    }

    /// The same device, backed by another image (a test boot's own).
    pub fn at(&self, path: &Path) -> Nvm {
        Nvm {
            path: path.to_path_buf(),
            size: self.size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("xtask-nvm-{}-{name}", std::process::id()));
        let _ = fs::remove_file(&p);
        p
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1T"), None);
        assert!(Nvm::configure(None, Some("3M".into())).is_err());
        assert!(Nvm::configure(None, Some("512K".into())).is_err());
        assert_eq!(Nvm::configure(Some("off".into()), None), Ok(None));
    }

    #[test]
    fn made_once_kept_after_and_refused_when_it_does_not_fit() {
        let nvm = Nvm {
            path: scratch("img"),
            size: 1 << 20,
        };
        nvm.prepare().unwrap();
        let file = OpenOptions::new().read(true).write(true).open(&nvm.path).unwrap();
        let mut store = Store::mount(FileRegion::new(file).unwrap()).unwrap();
        store.store("kept", b"across boots").unwrap();
        drop(store);
        nvm.prepare().unwrap();
        let file = fs::File::open(&nvm.path).unwrap();
        let store = Store::mount(FileRegion::new(file).unwrap()).unwrap();
        assert!(store.lookup("kept").is_some(), "a second prepare keeps the store");
        let bigger = Nvm {
            size: 2 << 20,
            ..nvm.clone()
        };
        assert!(bigger.prepare().unwrap_err().contains("NVM_SIZE"));
        let mut bytes = fs::read(&nvm.path).unwrap();
        bytes[20] ^= 1;
        fs::write(&nvm.path, &bytes).unwrap();
        assert!(nvm.prepare().unwrap_err().contains("corrupt"));
        fs::remove_file(&nvm.path).unwrap();
    }

    #[test]
    fn commas_in_the_path_are_escaped() {
        let nvm = Nvm {
            path: "/a,b/nvm.img".into(),
            size: 1 << 20,
        };
        assert_eq!(
            nvm.args()[1],
            "memory-backend-file,id=nvm,mem-path=/a,,b/nvm.img,size=1048576,share=on"
        );
    }
}
