//! Threads as Rust's standard library makes them (pthreads through musl:
//! clone, futex, set_tid_address, the clear-tid wake-up at exit): spawn
//! and join, scoped threads, Mutex, Condvar, RwLock, Barrier, channels,
//! thread-local storage, names, parking with timeouts. Each line is a
//! check whose value Linux printed; the last line counts them.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex, RwLock};
use std::thread;
use std::time::{Duration, Instant};

struct Checks {
    count: u32,
    failed: u32,
}

impl Checks {
    fn section(&self, name: &str) {
        println!("== {name}");
    }

    fn eq<T: std::fmt::Display + PartialEq>(&mut self, what: &str, got: T, want: T) {
        self.count += 1;
        if got == want {
            println!("{what}: {got}");
        } else {
            self.failed += 1;
            println!("{what}: {got} FAIL want {want}");
        }
    }

    fn yes(&mut self, what: &str, ok: bool) {
        self.eq(what, if ok { "yes" } else { "no" }, "yes");
    }
}

thread_local! {
    static MINE: Cell<u64> = const { Cell::new(7) };
}

fn main() {
    let mut c = Checks { count: 0, failed: 0 };

    c.section("spawn and join");
    let handles: Vec<_> = (0..8u64).map(|i| thread::spawn(move || i * i)).collect();
    let sum: u64 = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    c.eq("sum of squares from 8 threads", sum, 140);
    let pid = std::process::id();
    let other = thread::spawn(std::process::id).join().unwrap_or(0);
    c.yes("a thread's process id is ours", other == pid);
    let named = thread::Builder::new()
        .name("worker-7".into())
        .spawn(|| thread::current().name().map(String::from))
        .map(|h| h.join().ok().flatten());
    c.eq("its name", named.ok().flatten().unwrap_or_default().as_str(), "worker-7");

    c.section("thread-local storage");
    MINE.with(|m| m.set(1));
    let seen = thread::spawn(|| {
        let before = MINE.with(|m| m.get());
        MINE.with(|m| m.set(99));
        before
    })
    .join()
    .unwrap_or(0);
    c.eq("a new thread starts with the initial value", seen, 7);
    c.eq("ours is untouched", MINE.with(|m| m.get()), 1);

    c.section("Mutex");
    let counter = Arc::new(Mutex::new(0u64));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let counter = Arc::clone(&counter);
            thread::spawn(move || {
                for _ in 0..2000 {
                    *counter.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                }
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
    c.eq("8 threads x 2000 increments", *counter.lock().unwrap_or_else(|e| e.into_inner()), 16000);

    c.section("Condvar");
    let queue = Arc::new((Mutex::new(VecDeque::new()), Condvar::new()));
    let consumer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let (lock, ready) = &*queue;
            let mut total = 0u64;
            let mut got = 0;
            while got < 500 {
                let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
                while q.is_empty() {
                    q = ready.wait(q).unwrap_or_else(|e| e.into_inner());
                }
                while let Some(v) = q.pop_front() {
                    total += v;
                    got += 1;
                }
            }
            total
        })
    };
    for v in 1..=500u64 {
        let (lock, ready) = &*queue;
        lock.lock().unwrap_or_else(|e| e.into_inner()).push_back(v);
        ready.notify_one();
    }
    c.eq("a consumer woken by notify_one got 1..=500", consumer.join().unwrap_or(0), 125250);
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let start = Instant::now();
    let (lock, cv) = &*pair;
    let r = cv.wait_timeout(lock.lock().unwrap_or_else(|e| e.into_inner()), Duration::from_millis(30));
    let timed_out = r.map(|(_, t)| t.timed_out()).unwrap_or(false);
    c.yes("wait_timeout of 30 ms timed out", timed_out);
    c.yes("after at least 30 ms", start.elapsed() >= Duration::from_millis(30));

    c.section("RwLock and Barrier");
    let data = Arc::new(RwLock::new(vec![0u32; 4]));
    let barrier = Arc::new(Barrier::new(4));
    let leaders = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..4)
        .map(|i| {
            let (data, barrier, leaders) = (Arc::clone(&data), Arc::clone(&barrier), Arc::clone(&leaders));
            thread::spawn(move || {
                data.write().unwrap_or_else(|e| e.into_inner())[i] = i as u32 + 1;
                if barrier.wait().is_leader() {
                    leaders.fetch_add(1, Ordering::SeqCst);
                }
                // After the barrier every write is there.
                data.read().unwrap_or_else(|e| e.into_inner()).iter().sum::<u32>()
            })
        })
        .collect();
    let sums: Vec<u32> = hs.into_iter().map(|h| h.join().unwrap_or(0)).collect();
    c.yes("every thread saw all four writes after the barrier", sums.iter().all(|&s| s == 10));
    c.eq("one leader", leaders.load(Ordering::SeqCst), 1);

    c.section("channels");
    let (tx, rx) = mpsc::channel::<u64>();
    for p in 0..4u64 {
        let tx = tx.clone();
        thread::spawn(move || {
            for i in 0..250 {
                let _ = tx.send(p * 1000 + i);
            }
        });
    }
    drop(tx);
    let got: Vec<u64> = rx.iter().collect();
    c.eq("messages from 4 senders", got.len(), 1000);
    c.eq("their sum", got.iter().sum::<u64>(), 1_624_500);
    let (stx, srx) = mpsc::sync_channel::<u32>(0);
    let h = thread::spawn(move || (0..100).map(|_| srx.recv().unwrap_or(0)).sum::<u32>());
    for i in 0..100 {
        let _ = stx.send(i);
    }
    c.eq("a rendezvous channel of 100", h.join().unwrap_or(0), 4950);
    let (_keep, lonely) = mpsc::channel::<u8>();
    c.yes("recv_timeout with nothing sent", lonely.recv_timeout(Duration::from_millis(20)).is_err());

    c.section("scoped threads and parking");
    let mut parts = [0u64; 4];
    thread::scope(|s| {
        for (i, p) in parts.iter_mut().enumerate() {
            s.spawn(move || *p = (i as u64 + 1) * 10);
        }
    });
    c.eq("scoped threads wrote their parts", parts.iter().sum::<u64>(), 100);
    let flag = Arc::new(AtomicUsize::new(0));
    let parked = {
        let flag = Arc::clone(&flag);
        thread::spawn(move || {
            while flag.load(Ordering::SeqCst) == 0 {
                thread::park();
            }
            true
        })
    };
    flag.store(1, Ordering::SeqCst);
    parked.thread().unpark();
    c.yes("unpark wakes a parked thread", parked.join().unwrap_or(false));
    let start = Instant::now();
    thread::park_timeout(Duration::from_millis(20));
    c.yes("park_timeout returns", start.elapsed() < Duration::from_secs(5));

    c.section("many threads");
    let live = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..64)
        .map(|_| {
            let (live, most) = (Arc::clone(&live), Arc::clone(&most));
            thread::spawn(move || {
                let n = live.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(5));
                live.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    let joined = hs.into_iter().filter_map(|h| h.join().ok()).count();
    c.eq("64 threads joined", joined, 64);
    c.yes("some ran at the same time", most.load(Ordering::SeqCst) > 1);

    println!("-- {} checks, {} failed", c.count, c.failed);
    std::process::exit(if c.failed == 0 { 0 } else { 1 });
}
