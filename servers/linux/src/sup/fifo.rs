//! mknod and mknodat: FIFOs, sockets, regular files and (for root)
//! device files made on the file server's file system.

use super::Sup;
use super::files::Target;
use linuxabi::errno;
use linuxabi::structs as st;
use tessera_api::fs as api;

const S_IFMT: u32 = 0o170000;
const S_IFSOCK: u32 = 0o140000;
const S_IFBLK: u32 = 0o060000;
const S_IFDIR: u32 = 0o040000;

impl Sup {
    pub(super) fn mknodat(&mut self, rid: u64, dirfd: u64, path_at: u64, mode: u64, dev: u64) -> Result<u64, i64> {
        let mode = mode as u32;
        let kind = match mode & S_IFMT {
            0 => st::S_IFREG,
            t @ (st::S_IFREG | st::S_IFIFO | S_IFSOCK) => t,
            t @ (st::S_IFCHR | S_IFBLK) if self.cred.euid == 0 => t,
            st::S_IFCHR | S_IFBLK | S_IFDIR => return Err(errno::EPERM),
            _ => return Err(errno::EINVAL),
        };
        let path = self.read_path(rid, path_at)?;
        match self.target(dirfd, &path)? {
            // /dev and /proc take no new names.
            Target::Virt(abs) => Err(if self.vnode(&abs).is_ok() {
                errno::EEXIST
            } else {
                errno::ENOENT
            }),
            Target::Fs(d, rel) => {
                // Linux's dev_t: major in bits 8-19, minor in 0-7 and 20-31.
                let dev = dev as u32;
                let (major, minor) = ((dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00));
                let mut fields = [0u8; 8];
                fields[..4].copy_from_slice(&(kind | (mode & !self.umask & 0o7777)).to_le_bytes());
                fields[4..].copy_from_slice(&((major << 20) | minor).to_le_bytes());
                match self.fs.path_op(api::MKNOD, d, 0, &fields, &[rel.as_bytes()]) {
                    Err(errno::EBUSY) => Err(errno::EEXIST),
                    r => r.map(|_| 0),
                }
            }
        }
    }
}
