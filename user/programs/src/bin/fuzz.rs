//! Throws random system calls at the kernel: random numbers (valid and
//! not), and arguments drawn from values that break careless kernels
//! (kernel addresses, unmapped and non-canonical pointers, overflowing
//! lengths, valid buffers with wrong sizes). The kernel must answer every
//! call with a result or an error; the test around this program checks that
//! it neither panics nor leaks. Arguments are also drawn from the values
//! earlier calls gave back (identifiers of the fuzzer's own resources,
//! valid until a later random call deletes them, stale after), from the
//! identifiers of other processes' resources, and from small numbers
//! (kinds, modes, flags): random identifiers alone practically never pass
//! the kind and generation check, and reach no logic behind it.
//! Usage: fuzz [calls] [seed]
#![no_std]
#![no_main]
use tessera_rt::abi::{Error, Sys};
use tessera_rt::{println, sys};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

static mut BUF: [u8; 8192] = [0; 8192];

fn main(args: &[&str]) -> i32 {
    let calls: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_9876);
    let mut rng = Rng(seed | 1);
    let buf = (&raw mut BUF) as u64;
    let me = sys::getpid();
    let interesting = [
        0,
        1,
        u64::MAX,
        u64::MAX - 4095,
        0x7fff_ffff_ffff,
        0x8000_0000_0000,
        0xffff_8000_0000_0000,
        0xffff_ffff_8010_0000,
        0xffff_c000_0000_0000,
        0x400000,
        0x1000,
        buf,
        buf + 4096,
        buf + 8190,
        4096,
        1 << 20,
        1 << 40,
        i64::MIN as u64,
    ];
    // Identifiers: the first of other processes' (foreign), then the
    // values calls give back, round the ring.
    let mut ids = [0u64; 64];
    let mut kept = 0usize;
    for kind in 1..=12 {
        if let Ok(records) = sys::inspect_all::<tessera_rt::abi::ResRecord>(kind) {
            for r in records.iter().filter(|r| r.owner != me).take(2) {
                ids[kept % ids.len()] = r.id;
                kept += 1;
            }
        }
    }
    // Numbers are grouped with gaps: cover everything up to the highest.
    let top = Sys::ALL.iter().map(|&s| s as u64).max().unwrap_or(0);
    let mut errors = [0u64; 16];
    let mut ok = 0u64;
    for _ in 0..calls {
        let number = match rng.next() % 4 {
            0 => rng.next(),
            _ => rng.next() % (top + 4),
        };
        let mut a = [0u64; 6];
        for x in a.iter_mut() {
            *x = match rng.next() % 5 {
                0 => interesting[(rng.next() % interesting.len() as u64) as usize],
                1 => rng.next() % 8192,
                2 if kept > 0 => ids[(rng.next() % kept.min(ids.len()) as u64) as usize],
                3 => rng.next() % 16,
                _ => rng.next(),
            };
        }
        // Calls that would end or stall the fuzzer itself are made harmless:
        // exit and console reads are skipped, sleeps shortened, waits and
        // kills never aimed at itself, console output never printed from a
        // valid buffer (it would only flood the log).
        match Sys::from_u64(number) {
            Some(Sys::Exit) | Some(Sys::ConsoleRead) => continue,
            Some(Sys::Sleep) => a[0] %= 10_000,
            Some(Sys::Wait) | Some(Sys::Kill) if a[0] == me => continue,
            Some(Sys::SetAffinity) if a[0] == 0 || a[0] == me => continue,
            // Readable user memory would only be printed: keep the call, drop the bytes.
            Some(Sys::ConsoleWrite) if a[0] != 0 && a[0] < 0x8000_0000_0000 => a[1] = 0,
            Some(Sys::SetPolicy) => continue,
            // A plate stays until a newer version replaces it: the leak test
            // would see the fuzzer's.
            Some(Sys::PlateCreate | Sys::PlatePaged) => continue,
            // Waiting for calls that nobody makes would block for ever, and
            // calling itself would wait for its own answer.
            Some(Sys::Acc) => continue,
            Some(Sys::EndrAcc) | Some(Sys::ForwardAcc) => a[3] |= tessera_rt::abi::ACC_NOWAIT,
            Some(Sys::AccMany) => a[0] |= tessera_rt::abi::ACC_NOWAIT,
            Some(Sys::EndrManyAcc) => a[2] |= tessera_rt::abi::ACC_NOWAIT,
            Some(Sys::Call) | Some(Sys::Request) if a[0] == me => continue,
            // A batch's members are read from whatever the fuzzer's memory
            // holds there, and one may name the fuzzer itself: the batch
            // would wait for its own answer, as a call to itself would.
            Some(Sys::NCallSync) => continue,
            Some(Sys::Fetch) | Some(Sys::RingWait) => a[0] %= 100_000,
            Some(Sys::ContainerReceive) => a[4] %= 100_000,
            _ => {}
        }
        // SAFETY: any result is fine; the kernel must validate everything.
        match Error::decode(unsafe { sys::syscall(number, a) }) {
            Ok(v) => {
                ok += 1;
                // Small results are counts and sizes, drawn anyway.
                if v >= 1 << 16 {
                    ids[kept % ids.len()] = v;
                    kept += 1;
                }
            }
            Err(e) => errors[(e as usize).min(15)] += 1,
        }
    }
    println!(
        "fuzz: {calls} calls, {ok} succeeded, errors by code {:?}",
        &errors[1..10]
    );
    0
}
tessera_rt::entry!(main);
