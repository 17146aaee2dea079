//! The loop devices' keeper (`ctl::LOOP`): Linux's loop driver lives in
//! the shared server because a device outlives the process that bound it
//! and every process sees the same ones. The table is
//! `linuxabi::loopdev`'s; the backing file is the shared server's own
//! open file of the file server (a supervisor SHAREs its file here at
//! LOOP_SET_FD), and a supervisor reading or writing the device gets a
//! share of it for the call (`ATTACH`), so the device's data goes between
//! the file server's cache and the program's buffer with one copy, never
//! through this server.
//!
//! Operations (word 1; the message's other words follow it):
//! - `GET_FREE` → [n]; `ADD` [n] → [n]; `REMOVE` [n] → [0];
//!   `LIST` → the device numbers;
//! - `OPEN` [n], `CLOSE` [n]: descriptions of the device;
//! - `BIND` [n, file, file size, status…]: the file is this server's
//!   number (closed here if the bind fails);
//! - `CLEAR` [n]; `STATUS` [n] → [0, size, status…];
//! - `SET_STATUS` [n, file size, offset, sizelimit, flags, encrypt type,
//!   key size, file name (8 words), crypt name (8)];
//! - `CAPACITY` [n, file size]; `BLOCK_SIZE` [n, size]; `DIRECT_IO` [n, on];
//! - `CHANGE_FD` [n, file, file size, status…];
//! - `ATTACH` [n] → [file, offset, size, flags]: the caller's own number
//!   for the backing file (it closes it after its call); the flags
//!   have LO_FLAGS_READ_ONLY when BLKROSET refuses writes too;
//! - `SETTINGS` [n] → [read-ahead, read-only]; `READ_AHEAD` [n, sectors];
//!   `READ_ONLY` [n, on]: the block device's own settings.
//!
//! A status travels as [device, inode, offset, sizelimit, flags,
//! block size, file name (8 words), crypt name (8), path length, path].

use super::{End, Shared, result};
use crate::proto::{self, word};
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::loopdev::{NAME_LEN, Status, StatusRequest};
use tessera_api::fs as api;
use tessera_api::wire::Writer;
use tessera_rt::sys;

pub const GET_FREE: u64 = 1;
pub const ADD: u64 = 2;
pub const REMOVE: u64 = 3;
pub const LIST: u64 = 4;
pub const OPEN: u64 = 5;
pub const CLOSE: u64 = 6;
pub const BIND: u64 = 7;
pub const CLEAR: u64 = 8;
pub const STATUS: u64 = 9;
pub const SET_STATUS: u64 = 10;
pub const CAPACITY: u64 = 11;
pub const BLOCK_SIZE: u64 = 12;
pub const DIRECT_IO: u64 = 13;
pub const CHANGE_FD: u64 = 14;
pub const ATTACH: u64 = 15;
pub const SETTINGS: u64 = 16;
pub const READ_AHEAD: u64 = 17;
pub const READ_ONLY: u64 = 18;

fn name_from(w: &[u64]) -> [u8; NAME_LEN] {
    let mut n = [0u8; NAME_LEN];
    let b = proto::bytes(w);
    let k = b.len().min(NAME_LEN);
    n[..k].copy_from_slice(&b[..k]);
    n[NAME_LEN - 1] = 0;
    n
}

/// A status as message words.
pub fn status_words(s: &Status) -> Vec<u64> {
    let mut w = alloc::vec![
        s.device,
        s.inode,
        s.offset,
        s.sizelimit,
        s.flags as u64,
        s.block_size as u64
    ];
    w.extend(proto::name_words(&s.file_name));
    w.extend(proto::name_words(&s.crypt_name));
    let path = &s.backing_path[..s.backing_path.len().min(PATH_MAX)];
    w.push(path.len() as u64);
    w.extend(proto::name_words(path));
    w
}

/// The longest backing path kept (a reply must hold it).
const PATH_MAX: usize = 256;

/// A status from message words (missing words are zeros).
pub fn status_from(w: &[u64]) -> Status {
    let at = |i: usize| word(w, i);
    let names = |i: usize| name_from(w.get(i..(i + NAME_LEN / 8).min(w.len())).unwrap_or(&[]));
    Status {
        device: at(0),
        inode: at(1),
        offset: at(2),
        sizelimit: at(3),
        flags: at(4) as u32,
        block_size: at(5) as u32,
        file_name: names(6),
        crypt_name: names(6 + NAME_LEN / 8),
        backing_path: {
            let at = 6 + 2 * NAME_LEN / 8;
            let len = (word(w, at) as usize).min(PATH_MAX);
            let b = proto::bytes(w.get(at + 1..).unwrap_or(&[]));
            b[..len.min(b.len())].to_vec()
        },
    }
}

/// A status request as message words.
pub fn request_words(r: &StatusRequest) -> Vec<u64> {
    let mut w = alloc::vec![
        r.offset,
        r.sizelimit,
        r.flags as u64,
        r.encrypt_type as u64,
        r.encrypt_key_size as u64
    ];
    w.extend(proto::name_words(&r.file_name));
    w.extend(proto::name_words(&r.crypt_name));
    w
}

fn request_from(w: &[u64]) -> StatusRequest {
    let names = |i: usize| name_from(w.get(i..(i + NAME_LEN / 8).min(w.len())).unwrap_or(&[]));
    StatusRequest {
        offset: word(w, 0),
        sizelimit: word(w, 1),
        flags: word(w, 2) as u32,
        encrypt_type: word(w, 3) as u32,
        encrypt_key_size: word(w, 4) as u32,
        file_name: names(5),
        crypt_name: names(5 + NAME_LEN / 8),
    }
}

fn fs_server() -> Result<u64, i64> {
    sys::name_lookup(api::NAME).map_err(|_| errno::EIO)
}

/// Closes this server's file `file` of the file server.
pub fn close_backing(file: u32) {
    let Ok(fs) = fs_server() else { return };
    let mut msg = [0u8; 8];
    Writer::new(&mut msg).u32(file).u32(0);
    let mut r = [0u8; 8];
    let _ = sys::call(fs, api::CLOSE, &msg, &mut r);
}

/// This server's file `file`, opened for process `pid` too: its number
/// there.
fn share_file(file: u32, pid: u64) -> Result<u32, i64> {
    let fs = fs_server()?;
    let mut msg = [0u8; 16];
    Writer::new(&mut msg).u32(file).u32(0).u64(pid);
    let mut r = [0u8; 8];
    match sys::call(fs, api::SHARE, &msg, &mut r) {
        Ok(8) => {
            let v = i64::from_le_bytes(r);
            if v < 0 { Err(-v) } else { Ok(v as u32) }
        }
        _ => Err(errno::EIO),
    }
}

fn status_result(r: Result<(), i64>) -> End {
    result(r.map_or_else(|e| -e, |_| 0))
}

fn closing(r: Result<Option<u32>, i64>) -> End {
    match r {
        Ok(released) => {
            if let Some(f) = released {
                close_backing(f);
            }
            result(0)
        }
        Err(e) => result(-e),
    }
}

impl Shared {
    /// `ctl::LOOP` from supervisor `caller`.
    pub(super) fn loop_ctl(&mut self, w: &[u64], caller: u64) -> End {
        let n = word(w, 2) as u32;
        let args = w.get(3..).unwrap_or(&[]);
        let t = &mut self.loops;
        match word(w, 1) {
            GET_FREE => result(t.get_free().map_or_else(|e| -e, |n| n as i64)),
            ADD => result(t.add(word(w, 2) as i64).map_or_else(|e| -e, |n| n as i64)),
            REMOVE => result(t.remove(word(w, 2) as i64).map_or_else(|e| -e, |n| n as i64)),
            LIST => End::Reply(t.numbers().iter().map(|&n| n as u64).collect()),
            OPEN => status_result(t.open(n)),
            CLOSE => closing(Ok(t.close(n))),
            BIND => {
                let file = word(args, 0) as u32;
                let r = t.bind(n, file, status_from(args.get(2..).unwrap_or(&[])), word(args, 1));
                if r.is_err() {
                    close_backing(file);
                }
                status_result(r)
            }
            CLEAR => closing(t.clear(n)),
            STATUS => match t.status(n) {
                Ok((_, s, size)) => {
                    let mut out = alloc::vec![0, size];
                    out.extend(status_words(s));
                    End::Reply(out)
                }
                Err(e) => result(-e),
            },
            SET_STATUS => status_result(t.set_status(n, &request_from(args.get(1..).unwrap_or(&[])), word(args, 0))),
            CAPACITY => status_result(t.set_capacity(n, word(args, 0))),
            BLOCK_SIZE => status_result(t.set_block_size(n, word(args, 0))),
            DIRECT_IO => status_result(t.set_direct_io(n, word(args, 0) != 0)),
            CHANGE_FD => {
                let file = word(args, 0) as u32;
                let r = t.change_fd(n, file, status_from(args.get(2..).unwrap_or(&[])), word(args, 1));
                if r.is_err() {
                    close_backing(file);
                }
                closing(r)
            }
            ATTACH => match t.status(n) {
                Ok((file, s, size)) => {
                    let mut flags = s.flags as u64;
                    if t.writes_refused(n) {
                        flags |= linuxabi::loopdev::LO_FLAGS_READ_ONLY as u64;
                    }
                    let offset = s.offset;
                    match share_file(file, caller) {
                        Ok(h) => End::Reply(alloc::vec![h as u64, offset, size, flags]),
                        Err(e) => result(-e),
                    }
                }
                Err(e) => result(-e),
            },
            SETTINGS => match t.get(n) {
                Some(d) => End::Reply(alloc::vec![d.read_ahead, d.read_only as u64]),
                None => result(-errno::ENXIO),
            },
            READ_AHEAD => status_result(t.set_read_ahead(n, word(args, 0))),
            READ_ONLY => status_result(t.set_read_only(n, word(args, 0) != 0)),
            _ => result(-errno::EINVAL),
        }
    }
}
