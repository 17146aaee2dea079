//! Seed 002 fig. 12, the file transfer: a client reads a file from the
//! file server in chunks and sends each chunk over a TCP connection to a
//! sink, through the real servers, with the paper's placement on three
//! CPUs (file server, block cache and disk on CPU 1; TCP/IP server and
//! the sink beside it on CPU 2; the client and the distribution server on
//! CPU 0; modulo the CPUs there are).
//!
//! Four ways per chunk size: one blocking call each, `read, send` × n
//! (**callsync**), against AnT's pipeline through the distribution server,
//! `read, (send + read) × (n−1), send`, each `send + read` one
//! `ncallsync` (**ncallsync**); and each of those **copying** (the chunk
//! lands in the client's buffer, which the client copies into the send's
//! message) or **copy-less** (the chunk lands in an ICA, whose pages move
//! to the TCP/IP server: `SEND_ICA`). Every copy is counted where it is
//! made: the block cache's into the client (`file_read_bytes_copied`), the
//! client's own, and the TCP/IP server's into the socket's buffer
//! (`copied_in`, `ica_copied_in`). The sink counts every byte (and checks
//! each in the test).
//!
//! `BENCH,batch,fig12_<way>_<copy|ica>_<size>,<cpus>,<ns>,ns` (the whole
//! transfer, until the sink has counted the last byte; the median of 7
//! rounds, the four ways taking turns) and
//! `…_copies,<cpus>,<copies per byte>,count`.
//! Usage: `xferbench [short] [files=<cpu>] [net=<cpu>] [client=<cpu>]`
//! (another placement); `xferbench test` (the four ways small,
//! every byte checked, and SEND_ICA's refusals); `xferbench sink <port>
//! [check]` (the receiving side).
#![no_std]
#![no_main]
extern crate alloc;

#[path = "../fsstack.rs"]
mod fsstack;
#[path = "../xfertest.rs"]
mod hostile;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use fsstack::{Stack, value};
use tessera_api::fs::client::File;
use tessera_api::net::client::{self, Socket};
use tessera_api::net::*;
use tessera_api::wire::Writer;
use tessera_api::{distributor, fs};
use tessera_rt::abi::BatchEntry;
use tessera_rt::ica::Ica;
use tessera_rt::{println, sys};

const LOCAL: [u8; 4] = [127, 0, 0, 1];
const PORT: u16 = 7620;
const PATH: &str = "/fig12.dat";
const PAGE: usize = 4096;
/// Bytes of the sink's answer: the bytes it received and their sum.
const ANSWER: usize = 16;

/// Byte `at` of the file: position-dependent, so a chunk sent twice, out
/// of order or from the wrong place changes the sink's sum.
fn pattern(at: usize) -> u8 {
    (at as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8
}

/// The sink's sum of a stream: position-weighted, so order matters.
fn sum(acc: &mut (u64, u64), data: &[u8]) {
    for &b in data {
        acc.1 = acc.1.wrapping_add((b as u64 + 1).wrapping_mul(acc.0 + 1));
        acc.0 += 1;
    }
}

/// Accepts one connection after another; on each, transfer after
/// transfer: a header (the transfer's bytes, u64) then the bytes, answered
/// with how many came and their sum (0 unless `check`: the sum costs
/// instructions per byte, which under icount would add to every transfer
/// alike and hide the differences). One connection serves every round, so
/// the rounds do not leave closed connections behind for the stack to
/// walk.
fn sink(port: u16, check: bool) -> i32 {
    let Ok(l) = Socket::tcp() else { return 1 };
    let _ = l.set_option_int(SOL_SOCKET, SO_REUSEADDR, 1);
    let _ = l.set_option_int(SOL_SOCKET, SO_RCVBUF, 1 << 20);
    if l.bind(SockAddr::new([0; 4], port)).is_err() || l.listen(4).is_err() {
        println!("xferbench: FAILED sink cannot listen on {port}");
        return 1;
    }
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let Ok((c, _)) = l.accept() else { return 1 };
        let mut header = [0u8; 8];
        while recv_exact(&c, &mut header) {
            let total = u64::from_le_bytes(header);
            let mut acc = (0u64, 0u64);
            while acc.0 < total {
                let want = ((total - acc.0) as usize).min(buf.len());
                match c.recv(&mut buf[..want]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) if check => sum(&mut acc, &buf[..n]),
                    Ok(n) => acc.0 += n as u64,
                }
            }
            let mut answer = [0u8; ANSWER];
            answer[..8].copy_from_slice(&acc.0.to_le_bytes());
            answer[8..].copy_from_slice(&acc.1.to_le_bytes());
            if c.send_all(&answer).is_err() {
                break;
            }
        }
        let _ = c.close();
    }
}

/// Fills `buf` from `s`; false at the end of the stream or an error.
fn recv_exact(s: &Socket, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        match s.recv(&mut buf[got..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    true
}

/// Where each group of servers runs.
struct Placement {
    files: u64,
    net: u64,
    client: u64,
}

impl Placement {
    /// The paper's (file servers on CPU 1, network servers on CPU 2, the
    /// client and the distribution server on CPU 0, modulo the CPUs
    /// there are), or as `args` say (`files=<cpu> net=<cpu> client=<cpu>`);
    /// `None` for an argument that is not a CPU of this machine.
    fn of(args: &[&str], cpus: u64) -> Option<Placement> {
        let mut p = Placement {
            files: 1 % cpus,
            net: 2 % cpus,
            client: 0,
        };
        for a in args {
            let Some((key, cpu)) = a.split_once('=') else { continue };
            let cpu: u64 = cpu.parse().ok().filter(|&c| c < cpus)?;
            match key {
                "files" => p.files = cpu,
                "net" => p.net = cpu,
                "client" => p.client = cpu,
                _ => return None,
            }
        }
        Some(p)
    }
}

/// The servers of the experiment.
struct Servers {
    storage: Stack,
    net: u64,
    sink: u64,
    dist: u64,
    /// The sink checks every byte (else it counts them).
    check: bool,
}

impl Servers {
    /// The servers; the sink checks every byte with `check`.
    fn start(place: &Placement, file_bytes: usize, check: bool) -> Result<Servers, String> {
        // Room for the file and the image's metadata, so that every read
        // is served from the cache.
        let pages = (file_bytes / PAGE + 1024) as u32;
        let storage = Stack::start_on("root", "none", pages, 0, false, place.files)?;
        let stop = |storage: Stack, pids: &[u64]| {
            for &p in pids {
                sys::stop(p);
            }
            storage.stop();
        };
        let Ok(net) = sys::spawn_on("net", &[NAME], place.net) else {
            stop(storage, &[]);
            return Err("spawn net".into());
        };
        if sys::wait_for_name(NAME) != net || client::connect_to(NAME).is_err() {
            stop(storage, &[net]);
            return Err("net did not register".into());
        }
        let mut port = [0u8; 24];
        let port = sys::fmt_u64(PORT as u64, &mut port);
        let Ok(sink) = sys::spawn_on(
            "xferbench",
            &["sink", port, if check { "check" } else { "count" }],
            place.net,
        ) else {
            stop(storage, &[net]);
            return Err("spawn sink".into());
        };
        let Ok(dist) = sys::spawn_on("distributor", &[], place.client) else {
            stop(storage, &[net, sink]);
            return Err("spawn distributor".into());
        };
        if sys::wait_for_name(distributor::NAME) != dist {
            stop(storage, &[net, sink, dist]);
            return Err("distributor did not register".into());
        }

        Ok(Servers {
            storage,
            net,
            sink,
            dist,
            check,
        })
    }

    fn stop(self) {
        for p in [self.dist, self.sink, self.net] {
            sys::stop(p);
        }
        self.storage.stop();
    }
}

/// The file: `bytes` of the pattern, written through the file server and
/// read back once (so the transfers find it in the cache).
fn make_file(bytes: usize) -> Result<File, String> {
    let data: Vec<u8> = (0..bytes).map(pattern).collect();
    fsstack::write_file(PATH, &data, 256 << 10).map_err(|e| alloc::format!("write {PATH}: {e:?}"))?;
    let file = File::open(PATH, fs::O_RDONLY, 0).map_err(|e| alloc::format!("open {PATH}: {e:?}"))?;
    let mut back = vec![0u8; 256 << 10];
    for (i, part) in data.chunks(back.len()).enumerate() {
        let n = file
            .read_at((i * back.len()) as u64, &mut back[..part.len()])
            .map_err(|e| alloc::format!("read {PATH}: {e:?}"))?;
        if back[..n] != *part {
            return Err(alloc::format!("{PATH} reads back wrong"));
        }
    }
    Ok(file)
}

/// A connection to the sink, SEND_TO already said (raw SENDs follow).
fn connect(net: u64) -> Result<Socket, String> {
    connect_port(net, PORT)
}

fn connect_port(net: u64, port: u16) -> Result<Socket, String> {
    for _ in 0..300 {
        let s = Socket::tcp().map_err(|e| alloc::format!("socket: {e:?}"))?;
        // Each send goes out at once (no Nagle: the small chunks would
        // wait for the sink's delayed ACK), and a 64 KiB chunk fits the
        // send buffer whole.
        let _ = s.set_option_int(IPPROTO_TCP, TCP_NODELAY, 1);
        let _ = s.set_option_int(SOL_SOCKET, SO_SNDBUF, 256 << 10);
        if s.connect(SockAddr::new(LOCAL, port)).is_ok() {
            let mut msg = [0u8; 16];
            Writer::new(&mut msg).u32(s.id()).u32(0).u32(0).u32(0);
            let mut reply = [0u8; 8];
            return match sys::call(net, SEND_TO, &msg, &mut reply) {
                Ok(8) if reply == [0; 8] => Ok(s),
                r => Err(alloc::format!("SEND_TO: {r:?} {reply:?}")),
            };
        }
        sys::sleep_ns(10_000_000);
    }
    Err("cannot connect to the sink".into())
}

/// Tells the sink a transfer of `bytes` follows (a raw SEND: the
/// connection's SEND_TO is said).
fn announce(net: u64, bytes: u64) -> Result<(), String> {
    let mut reply = [0u8; 8];
    match sys::call(net, SEND, &bytes.to_le_bytes(), &mut reply) {
        Ok(8) if i64::from_le_bytes(reply) == 8 => Ok(()),
        r => Err(alloc::format!("header: {r:?} {}", i64::from_le_bytes(reply))),
    }
}

/// What the sink received of the last transfer: (bytes, sum).
fn answer(s: &Socket) -> Result<(u64, u64), String> {
    let mut answer = [0u8; ANSWER];
    if !recv_exact(s, &mut answer) {
        return Err("the sink did not answer".into());
    }
    let word = |i: usize| u64::from_le_bytes(answer[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    Ok((word(0), word(1)))
}

/// One transfer's shape: `n` chunks of `chunk` bytes.
#[derive(Clone, Copy)]
struct Shape {
    label: &'static str,
    chunk: usize,
    n: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Callsync,
    Ncallsync,
}

#[derive(Clone, Copy, PartialEq)]
enum Data {
    Copy,
    Ica,
}

/// A message through the distribution server: `payload`, then the route.
fn routed(payload: &[u8], target: u64, entry: u64) -> Vec<u8> {
    let mut m = vec![0u8; payload.len() + distributor::ROUTE];
    distributor::message(&mut m, target, entry, payload);
    m
}

fn read_msg(fd: u32, offset: u64, len: usize) -> [u8; 24] {
    let mut m = [0u8; 24];
    Writer::new(&mut m).u32(fd).u32(0).u64(offset).u64(len as u64);
    m
}

fn entry(server: u64, entry: u64, msg: &[u8], reply: *mut u8, cap: usize) -> BatchEntry {
    BatchEntry {
        server,
        entry,
        msg: msg.as_ptr() as u64,
        msg_len: msg.len() as u64,
        reply: reply as u64,
        reply_cap: cap as u64,
        status: 0,
    }
}

/// The client's side of one transfer; counts its own copies.
struct Client<'a> {
    sv: &'a Servers,
    fs: u64,
    fd: u32,
    socket: u32,
    shape: Shape,
    /// Copying: where each chunk lands, and each send's message (two of
    /// each: chunk i and chunk i−1 are in flight together).
    bufs: [Vec<u8>; 2],
    msgs: [Vec<u8>; 2],
    /// Copy-less: two ICAs, by id and address (None while away).
    icas: [Option<Ica>; 2],
    copied: u64,
}

impl Client<'_> {
    fn check(&self, what: &str, i: usize, status: u64, want: usize) -> Result<(), String> {
        if status as usize == want {
            Ok(())
        } else {
            Err(alloc::format!("{what} of chunk {i}: {} (want {want})", status as i64))
        }
    }

    fn check_sent(&self, i: usize, reply: &[u8; 16]) -> Result<(), String> {
        let v = i64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8]));
        if v == self.shape.chunk as i64 {
            Ok(())
        } else {
            Err(alloc::format!("send of chunk {i}: {v}"))
        }
    }

    /// The READ message of chunk i (routed through the distributor when
    /// `via`).
    fn read_of(&self, i: usize, via: bool) -> Vec<u8> {
        let m = read_msg(self.fd, (i * self.shape.chunk) as u64, self.shape.chunk);
        if via { routed(&m, self.fs, fs::READ) } else { m.to_vec() }
    }

    /// Copying: builds the SEND message of the chunk in buffer `slot`
    /// (the client's copy).
    fn fill_send(&mut self, slot: usize, via: bool) -> usize {
        let chunk = self.shape.chunk;
        let msg = &mut self.msgs[slot];
        msg[..chunk].copy_from_slice(&self.bufs[slot][..chunk]);
        self.copied += chunk as u64;
        if via {
            let route = distributor::ROUTE;
            msg[chunk..chunk + route].copy_from_slice(&routed(&[], self.sv.net, SEND));
            chunk + route
        } else {
            chunk
        }
    }

    /// Copy-less: lets go of ICA `slot` for the TCP/IP server to take;
    /// its id and the SEND_ICA message naming it.
    fn lend(&mut self, slot: usize, via: bool) -> Result<(u64, Vec<u8>), String> {
        let ica = self.icas[slot].take().ok_or("ICA away")?;
        let home = ica.addr();
        let id = ica.release();
        let m = encode_send_ica(self.socket, 0, id, 0, self.shape.chunk as u32, home);
        Ok((
            id,
            if via {
                routed(&m, self.sv.net, SEND_ICA)
            } else {
                m.to_vec()
            },
        ))
    }

    /// The ICA lent as `id` back in `slot`: under the id the reply names,
    /// or under its own if the server never took it.
    fn take_back(&mut self, slot: usize, id: u64, reply: &[u8; 16]) -> Result<(), String> {
        let back = u64::from_le_bytes(reply[8..].try_into().unwrap_or([0; 8]));
        let ica = Ica::adopt(back)
            .or_else(|_| Ica::adopt(id))
            .map_err(|e| alloc::format!("ICA did not come back: {e:?}"))?;
        self.icas[slot] = Some(ica);
        Ok(())
    }

    /// Where chunk i lands (slot i mod 2).
    fn landing(&mut self, data: Data, slot: usize) -> Result<*mut u8, String> {
        Ok(match data {
            Data::Copy => self.bufs[slot].as_mut_ptr(),
            Data::Ica => self.icas[slot].as_mut().ok_or("ICA away")?.as_mut_slice().as_mut_ptr(),
        })
    }

    fn callsync(&mut self, data: Data) -> Result<(), String> {
        let chunk = self.shape.chunk;
        for i in 0..self.shape.n {
            let m = self.read_of(i, false);
            let at = self.landing(data, 0)?;
            let mut list = [entry(self.fs, fs::READ, &m, at, chunk)];
            sys::ncallsync(&mut list).map_err(|e| alloc::format!("read {i}: {e:?}"))?;
            self.check("read", i, list[0].status, chunk)?;
            let mut reply = [0u8; 16];
            match data {
                Data::Copy => {
                    let len = self.fill_send(0, false);
                    sys::call(self.sv.net, SEND, &self.msgs[0][..len], &mut reply)
                        .map_err(|e| alloc::format!("send {i}: {e:?}"))?;
                }
                Data::Ica => {
                    let (id, m) = self.lend(0, false)?;
                    let r = sys::call(self.sv.net, SEND_ICA, &m, &mut reply);
                    self.take_back(0, id, &reply)?;
                    r.map_err(|e| alloc::format!("send {i}: {e:?}"))?;
                }
            }
            self.check_sent(i, &reply)?;
        }
        Ok(())
    }

    /// read(0); (send(i−1) + read(i)) for i in 1..n; send(n−1): each
    /// step one batch to the distribution server.
    fn ncallsync(&mut self, data: Data) -> Result<(), String> {
        let (chunk, n, dist) = (self.shape.chunk, self.shape.n, self.sv.dist);
        for i in 0..=n {
            let (cur, prev) = (i % 2, (i + 1) % 2);
            let mut reply = [0u8; 16];
            // The ICA lent (its id) and the message naming it, which must
            // outlive the batch.
            let mut lent: Option<(u64, Vec<u8>)> = None;
            let mut list = [BatchEntry::default(); 2];
            let mut k = 0;
            let sends = i > 0;
            if sends {
                let r = reply.as_mut_ptr();
                list[k] = match data {
                    Data::Copy => {
                        let len = self.fill_send(prev, true);
                        entry(dist, distributor::DISTRIBUTE, &self.msgs[prev][..len], r, 16)
                    }
                    Data::Ica => {
                        let l = lent.insert(self.lend(prev, true)?);
                        entry(dist, distributor::DISTRIBUTE, &l.1, r, 16)
                    }
                };
                k += 1;
            }
            let read = (i < n).then(|| self.read_of(i, true));
            if let Some(m) = &read {
                let at = self.landing(data, cur)?;
                list[k] = entry(dist, distributor::DISTRIBUTE, m, at, chunk);
                k += 1;
            }
            let r = sys::ncallsync(&mut list[..k]);
            if let Some((id, _)) = lent {
                self.take_back(prev, id, &reply)?;
            }
            r.map_err(|e| alloc::format!("batch {i}: {e:?}"))?;
            if sends {
                let status = list[0].status as i64;
                if status < 0 {
                    return Err(alloc::format!("send of chunk {}: {status}", i - 1));
                }
                self.check_sent(i - 1, &reply)?;
            }
            if read.is_some() {
                self.check("read", i, list[k - 1].status, chunk)?;
            }
        }
        Ok(())
    }
}

/// Counters of the copies, from the servers that make them.
fn copies(sv: &Servers) -> [u64; 3] {
    let cache = value(&sv.storage.cache_stats(), "file_read_bytes_copied");
    let net = client::stats().unwrap_or_default();
    let stat = |name: &str| {
        net.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0u64)
    };
    [cache, stat("copied_in"), stat("ica_copied_in")]
}

/// What one transfer measured: its time, the bytes each party copied
/// (block cache, client, TCP/IP server from messages, from ICAs).
struct Measured {
    ns: u64,
    copied: [u64; 4],
}

/// One transfer on connection `s` to the sink, checked by the sink.
fn transfer(sv: &Servers, s: &Socket, file: &File, shape: Shape, way: Way, data: Data) -> Result<Measured, String> {
    let total = shape.chunk * shape.n;
    announce(sv.net, total as u64)?;
    let pages = shape.chunk.div_ceil(PAGE) as u64;
    let ica = || Ica::create(pages).map_err(|e| alloc::format!("ica_create: {e:?}"));
    let mut c = Client {
        sv,
        fs: sys::name_lookup(fs::NAME).map_err(|e| alloc::format!("fs: {e:?}"))?,
        fd: file.fd(),
        socket: s.id(),
        shape,
        bufs: [vec![0u8; shape.chunk], vec![0u8; shape.chunk]],
        msgs: [
            vec![0u8; shape.chunk + distributor::ROUTE],
            vec![0u8; shape.chunk + distributor::ROUTE],
        ],
        icas: [Some(ica()?), Some(ica()?)],
        copied: 0,
    };
    let before = copies(sv);
    let t0 = sys::now_ns();
    match way {
        Way::Callsync => c.callsync(data)?,
        Way::Ncallsync => c.ncallsync(data)?,
    }
    let (bytes, got) = answer(s)?;
    let ns = sys::now_ns() - t0;
    let mut after = copies(sv);
    // The copies of the chunks, not of the sink's answer.
    after[1] -= ANSWER as u64;
    let mut want = (0, 0);
    if sv.check {
        sum(&mut want, &(0..total).map(pattern).collect::<Vec<u8>>());
    }
    if bytes != total as u64 || (sv.check && got != want.1) {
        return Err(alloc::format!(
            "the sink received {bytes} bytes, sum {got:x} (want {total}, {:x})",
            want.1
        ));
    }
    Ok(Measured {
        ns,
        copied: [
            after[0] - before[0],
            c.copied,
            after[1] - before[1],
            after[2] - before[2],
        ],
    })
}

fn bench(args: &[&str]) -> i32 {
    let short = args.contains(&"short");
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let Some(place) = Placement::of(args, cpus) else {
        println!("xferbench: FAILED placement: files=<cpu> net=<cpu> client=<cpu>, each below {cpus}");
        return 1;
    };
    let _ = sys::set_affinity(0, place.client);
    // The paper's case A (1 KB read, 1 KB send, n = 50) and a bulk one
    // (64 KiB chunks, 4 MiB), where the copies weigh.
    let n = |long| if short { 4 } else { long };
    let shapes = [
        Shape {
            label: "1k",
            chunk: 1024,
            n: n(50),
        },
        Shape {
            label: "64k",
            chunk: 64 << 10,
            n: n(64),
        },
    ];
    let file_bytes = shapes.iter().map(|s| s.chunk * s.n).max().unwrap_or(0);
    let sv = match Servers::start(&place, file_bytes, false) {
        Ok(s) => s,
        Err(e) => {
            println!("xferbench: FAILED {e}");
            return 1;
        }
    };
    // SEND_ICA: the TCP/IP server takes the client's ICAs and gives them
    // back.
    let ready = sys::peer_grant(sv.net)
        .map_err(|e| alloc::format!("peer_grant: {e:?}"))
        .and_then(|_| make_file(file_bytes))
        .and_then(|f| Ok((f, connect(sv.net)?)));
    let (file, conn) = match ready {
        Ok(f) => f,
        Err(e) => {
            println!("xferbench: FAILED {e}");
            sv.stop();
            return 1;
        }
    };
    let ways = [
        (Way::Callsync, Data::Copy),
        (Way::Callsync, Data::Ica),
        (Way::Ncallsync, Data::Copy),
        (Way::Ncallsync, Data::Ica),
    ];
    let rounds = if short { 1 } else { ROUNDS };
    let mut ok = true;
    'shapes: for shape in shapes {
        // Every way once untimed (two chunks: every path warm), then
        // `rounds` rounds of the four ways in turn; each way's figure is
        // its median round (in plain TCG a host hiccup then spoils one
        // round, not the figure; under icount the rounds agree).
        let mut times = [[0u64; ROUNDS]; 4];
        for r in 0..=rounds {
            for (k, &(way, data)) in ways.iter().enumerate() {
                let this = if r == 0 { Shape { n: 2, ..shape } } else { shape };
                match transfer(&sv, &conn, &file, this, way, data) {
                    Ok(m) if r > 0 => {
                        times[k][r - 1] = m.ns;
                        if r == rounds {
                            report(shape, way, data, &m, median(&mut times[k][..rounds]), cpus);
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        println!("xferbench: FAILED {}: {e}", shape.label);
                        ok = false;
                        continue 'shapes;
                    }
                }
            }
        }
    }
    let _ = conn.close();
    sv.stop();
    if ok { 0 } else { 1 }
}

/// Rounds of each transfer in the full run.
const ROUNDS: usize = 7;

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The BENCH lines of a way: its median time `ns`, and the copies of its
/// last round `m` (every round copies the same).
fn report(shape: Shape, way: Way, data: Data, m: &Measured, ns: u64, cpus: u64) {
    let w = if way == Way::Callsync { "callsync" } else { "ncallsync" };
    let d = if data == Data::Copy { "copy" } else { "ica" };
    let metric = alloc::format!("fig12_{w}_{d}_{}", shape.label);
    let total = (shape.chunk * shape.n) as u64;
    println!("BENCH,batch,{metric},{cpus},{ns},ns");
    let per = m.copied.iter().sum::<u64>() as f64 / total as f64;
    println!("BENCH,batch,{metric}_copies,{cpus},{per:.2},count");
    let [cache, client, net, ica] = m.copied;
    println!(
        "xferbench: {metric}: bytes copied by the cache {cache}, the client {client}, the TCP/IP server {net} from messages and {ica} from ICAs, of {total} sent"
    );
}

fn main(args: &[&str]) -> i32 {
    match args.get(1).copied() {
        Some("sink") => sink(
            args.get(2).and_then(|p| p.parse().ok()).unwrap_or(PORT),
            args.get(3) == Some(&"check"),
        ),
        Some("test") => hostile::test(),
        Some("victim") => hostile::victim(args.get(2).and_then(|p| p.parse().ok()).unwrap_or(0)),
        _ => bench(&args[1.min(args.len())..]),
    }
}
tessera_rt::entry!(main);
