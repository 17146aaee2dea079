//! Who may write a file while a program runs from it (Linux's
//! `i_writecount`): per inode, a positive count of descriptions open for
//! writing or a negative count of programs running from it. A program
//! file cannot be opened for writing, nor a file being written run:
//! `ETXTBSY`, as Linux answers, so a running program's text never changes
//! under it (the kernel's plate of a program is its image at exec).

use alloc::collections::BTreeMap;
use tessera_api::fs::Errno;

use crate::clients::OpenFile;

#[derive(Default)]
pub struct WriteAccess(BTreeMap<u32, i32>);

impl WriteAccess {
    /// Counts `f`, just opened or shared: a writer, a running program or
    /// neither.
    pub fn take(&mut self, f: &OpenFile) -> Result<(), Errno> {
        let step = Self::step(f);
        if step == 0 {
            return Ok(());
        }
        let n = self.0.entry(f.handle.ino).or_insert(0);
        if (*n > 0 && step < 0) || (*n < 0 && step > 0) {
            if *n == 0 {
                self.0.remove(&f.handle.ino);
            }
            return Err(Errno::ETXTBSY);
        }
        *n += step;
        Ok(())
    }

    /// `f` closed: what `take` counted is given back.
    pub fn put(&mut self, f: &OpenFile) {
        let step = Self::step(f);
        if step == 0 {
            return;
        }
        if let Some(n) = self.0.get_mut(&f.handle.ino) {
            *n -= step;
            if *n == 0 {
                self.0.remove(&f.handle.ino);
            }
        }
    }

    /// Whether a program runs from inode `ino` (a truncate by name is
    /// refused then).
    pub fn running(&self, ino: u32) -> bool {
        self.0.get(&ino).is_some_and(|&n| n < 0)
    }

    fn step(f: &OpenFile) -> i32 {
        if f.exec {
            -1
        } else if f.writable() && !f.dir && f.access & tessera_api::fs::O_PATH == 0 {
            1
        } else {
            0
        }
    }
}
