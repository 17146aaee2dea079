//! A region backed by a host file: the image QEMU maps as the pseudo-NVM
//! (`memory-backend-file`, offset X of the file is byte X of the device's
//! memory). A fence is `fdatasync`, so a host crash is covered as well.

use crate::region::{Region, RegionError, checked_range};
use std::fs::File;
use std::os::unix::fs::FileExt;

pub struct FileRegion {
    file: File,
    size: u64,
    /// The host's own error behind the last `RegionError`, for messages.
    last_error: Option<std::io::Error>,
}

impl FileRegion {
    /// The region is the whole file as it is now.
    pub fn new(file: File) -> std::io::Result<FileRegion> {
        let size = file.metadata()?.len();
        Ok(FileRegion {
            file,
            size,
            last_error: None,
        })
    }

    pub fn last_error(&self) -> Option<&std::io::Error> {
        self.last_error.as_ref()
    }

    fn fail(&mut self, e: std::io::Error, offset: u64, len: u64) -> RegionError {
        self.last_error = Some(e);
        RegionError { offset, len }
    }
}

impl Region for FileRegion {
    fn size(&self) -> u64 {
        self.size
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), RegionError> {
        checked_range(self.size, offset, buf.len() as u64)?;
        self.file.read_exact_at(buf, offset).map_err(|_| RegionError {
            offset,
            len: buf.len() as u64,
        })
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), RegionError> {
        checked_range(self.size, offset, data.len() as u64)?;
        self.file
            .write_all_at(data, offset)
            .map_err(|e| self.fail(e, offset, data.len() as u64))
    }

    fn flush(&mut self, offset: u64, len: u64) -> Result<(), RegionError> {
        // The page cache holds the writes; the fence's fdatasync writes back.
        checked_range(self.size, offset, len).map(|_| ())
    }

    fn fence(&mut self) -> Result<(), RegionError> {
        self.file.sync_data().map_err(|e| self.fail(e, 0, 0))
    }
}

/// An image size as the tools take it: `64M`, `1G`, `4096K` or bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let shift = match unit {
        "" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}
