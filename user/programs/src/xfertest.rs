//! `xferbench test`: fig. 12's transfer in its four ways, each checked
//! byte for byte by the sink, and `SEND_ICA` against hostile calls: no
//! grant, a stale ICA, another process's ICA, ranges past the end or
//! overflowing, a socket not the caller's, a garbled message, and a client
//! killed while the server holds its pages. Each refusal leaves the ICA
//! where it was or gives it back intact; the pages of a killed client
//! return to the free memory.

use super::*;
use tessera_api::errno::Errno;

/// A listener that never reads: a send to it blocks once the buffers fill.
const STALL: u16 = 7621;

/// The outcome of one SEND_ICA: the result, and the id the ICA came back
/// under, if it went to the server.
fn send_ica(net: u64, msg: &[u8]) -> Result<(i64, Option<u64>), String> {
    let mut reply = [0u8; 16];
    let n = sys::call(net, SEND_ICA, msg, &mut reply).map_err(|e| alloc::format!("SEND_ICA call: {e:?}"))?;
    let v = i64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8]));
    let back = (n == 16).then(|| u64::from_le_bytes(reply[8..].try_into().unwrap_or([0; 8])));
    Ok((v, back))
}

fn expect(what: &str, ok: bool, detail: impl core::fmt::Debug) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(alloc::format!("{what}: {detail:?}"))
    }
}

fn net_stat(name: &str) -> u64 {
    let r = client::stats().unwrap_or_default();
    r.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

/// Waits up to five seconds for `cond`.
fn within_5s(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if cond() {
            return true;
        }
        sys::sleep_ns(10_000_000);
    }
    false
}

pub fn test() -> i32 {
    let cpus = sys::sys_info().map_or(1, |i| i.cpus);
    let Some(place) = Placement::of(&[], cpus) else {
        return 1;
    };
    let _ = sys::set_affinity(0, place.client);
    let r = Servers::start(&place, 64 << 10, true).and_then(|sv| {
        let r = checks(&sv);
        sv.stop();
        r
    });
    match r {
        Ok(()) => {
            println!("xferbench: test passed");
            0
        }
        Err(e) => {
            println!("xferbench: FAILED {e}");
            1
        }
    }
}

/// A 2-page ICA of the pattern, lent for one call; the ICA back (under
/// `back`, or its own id if it never left) with its contents checked.
fn lent_call(net: u64, msg: impl Fn(u64, u64) -> Vec<u8>) -> Result<(i64, Option<u64>), String> {
    let mut ica = Ica::create(2).map_err(|e| alloc::format!("ica_create: {e:?}"))?;
    for (i, b) in ica.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(i);
    }
    let home = ica.addr();
    let id = ica.release();
    let (v, back) = send_ica(net, &msg(id, home))?;
    let ica = Ica::adopt(back.unwrap_or(id)).map_err(|e| alloc::format!("the ICA is lost ({v}): {e:?}"))?;
    let intact = ica.as_slice().iter().enumerate().all(|(i, &b)| b == pattern(i));
    expect("the ICA came back changed", intact, v)?;
    Ok((v, back))
}

fn checks(sv: &Servers) -> Result<(), String> {
    let net = sv.net;
    let file = make_file(64 << 10)?;
    let s = connect(net)?;
    let sock = s.id();
    let err = |e: Errno| -(e.0 as i64);
    // Not granted yet: refused, nothing moves.
    let (v, back) = lent_call(net, |id, home| encode_send_ica(sock, 0, id, 0, 4096, home).to_vec())?;
    expect("without a grant", v == err(Errno::EACCES) && back.is_none(), (v, back))?;
    sys::peer_grant(net).map_err(|e| alloc::format!("peer_grant: {e:?}"))?;
    // A stale ICA (deleted) and another process's (the sink's).
    let stale = Ica::create(1).map_err(|e| alloc::format!("ica_create: {e:?}"))?.id();
    let (v, back) = send_ica(net, &encode_send_ica(sock, 0, stale, 0, 16, 0))?;
    expect("a stale ICA", v == err(Errno::EBADF) && back.is_none(), (v, back))?;
    let other = Ica::create(1).map_err(|e| alloc::format!("ica_create: {e:?}"))?;
    let oid = other.id();
    other
        .move_to(sv.sink, 0)
        .map_err(|(_, e)| alloc::format!("move to the sink: {e:?}"))?;
    let (v, back) = send_ica(net, &encode_send_ica(sock, 0, oid, 0, 16, 0))?;
    expect(
        "another process's ICA",
        v == err(Errno::EBADF) && back.is_none(),
        (v, back),
    )?;
    // Still there (not ours to query: refused, not unknown).
    let there = sys::res_query(oid).map(|i| i.owner);
    let kept = there == Err(tessera_rt::abi::Error::Denied) || there == Ok(sv.sink);
    expect("another process's ICA stays there", kept, there)?;
    // Ranges past the end, overflowing; a socket not the caller's; a
    // garbled message: refused, the ICA back intact.
    for (what, off, len) in [("past the end", 4096u32, 8192u32), ("overflowing", u32::MAX, u32::MAX)] {
        let (v, back) = lent_call(net, |id, home| encode_send_ica(sock, 0, id, off, len, home).to_vec())?;
        expect(what, v == err(Errno::EINVAL) && back.is_some(), (v, back))?;
    }
    let (v, back) = lent_call(net, |id, home| {
        encode_send_ica(sock ^ 0x5a5a, 0, id, 0, 16, home).to_vec()
    })?;
    expect(
        "a socket not the caller's",
        v == err(Errno::EBADF) && back.is_some(),
        (v, back),
    )?;
    let (v, back) = lent_call(net, |id, home| encode_send_ica(sock, 0, id, 0, 16, home)[..31].to_vec())?;
    expect("a short message", v == err(Errno::EINVAL) && back.is_none(), (v, back))?;
    // Garbage of every length around the message's: refused, the server
    // alive (a 32-byte one names an ICA that is not the caller's).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for len in [0, 1, 7, 8, 16, 31, 32, 33, 64, 100, 4096] {
        let msg: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let (v, back) = send_ica(net, &msg)?;
        let refused = (v == err(Errno::EINVAL) || v == err(Errno::EBADF)) && back.is_none();
        expect("garbage", refused && sys::alive(net), (len, v, back))?;
    }
    // A good one: the sink gets exactly the range.
    announce(net, 5000)?;
    let (v, back) = lent_call(net, |id, home| encode_send_ica(sock, 0, id, 100, 5000, home).to_vec())?;
    expect("a good SEND_ICA", v == 5000 && back.is_some(), (v, back))?;
    let got = answer(&s)?;
    let mut want = (0, 0);
    sum(&mut want, &(100..5100).map(pattern).collect::<Vec<u8>>());
    expect("the sink's bytes", got == want, (got, want))?;
    stalled(false)?;
    stalled(true)?;
    // Fig. 12's four ways, small.
    for chunk in [1024, 16 << 10] {
        let shape = Shape {
            label: "test",
            chunk,
            n: 3,
        };
        for way in [Way::Callsync, Way::Ncallsync] {
            for data in [Data::Copy, Data::Ica] {
                transfer(sv, &s, &file, shape, way, data)?;
            }
        }
    }
    let _ = s.close();
    let held = net_stat("ica_sends_held");
    expect("SEND_ICAs left held", held == 0, held)
}

/// A client whose SEND_ICA the server holds (the receiver never reads),
/// then killed (`kill`: the call is dropped and the pages freed) or whose
/// connection is reset under the call (its listener closed: the call ends
/// with an error and the pages go back, intact).
fn stalled(kill: bool) -> Result<(), String> {
    let l = Socket::tcp().map_err(|e| alloc::format!("socket: {e:?}"))?;
    l.bind(SockAddr::new([0; 4], STALL))
        .and_then(|_| l.listen(1))
        .map_err(|e| alloc::format!("stall listener: {e:?}"))?;
    // 1 MiB: more than the sender's and the receiver's buffers together.
    let mut ica = Ica::create(256).map_err(|e| alloc::format!("ica_create: {e:?}"))?;
    for (i, b) in ica.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(i);
    }
    let free = || sys::sys_info().map_or(0, |i| i.frames_free);
    let id = ica.id();
    let mut arg = [0u8; 24];
    let victim = sys::spawn_on(
        "xferbench",
        &["victim", sys::fmt_u64(id, &mut arg)],
        tessera_rt::abi::ANY_CPU,
    )
    .map_err(|e| alloc::format!("spawn victim: {e:?}"))?;
    if let Err((_, e)) = ica.move_to(victim, 0) {
        sys::stop(victim);
        return Err(alloc::format!("move to the victim: {e:?}"));
    }
    let held = within_5s(|| net_stat("ica_sends_held") == 1);
    // The free memory with the pages in the server, the connection made.
    let before = free();
    if !held {
        sys::stop(victim);
        return Err(alloc::format!(
            "the victim's SEND_ICA was never held: {}",
            net_stat("ica_sends_held")
        ));
    }
    if !kill {
        let _ = l.close();
        let ended = within_5s(|| !sys::alive(victim));
        if !ended {
            sys::stop(victim);
        }
        let status = sys::wait(victim);
        return expect("a reset under a held SEND_ICA", ended && status == Ok(0), status);
    }
    sys::stop(victim);
    let dropped = within_5s(|| net_stat("ica_sends_held") == 0);
    expect(
        "the killed client's SEND_ICA stays held",
        dropped,
        net_stat("ica_sends_held"),
    )?;
    // Its 256 pages are free again (a little slack for what the server
    // allocates as it cleans up).
    let back = within_5s(|| free() + 16 >= before + 256);
    expect("the killed client's pages did not come back", back, (before, free()))?;
    let _ = l.close();
    Ok(())
}

/// The victim: sends the ICA the test moved here (`id`) to the listener
/// that never reads, and blocks there until killed, or until the call
/// ends: 0 if it failed and the ICA came back intact.
pub fn victim(id: u64) -> i32 {
    let mut ica = None;
    within_5s(|| {
        ica = Ica::adopt(id).ok();
        ica.is_some()
    });
    let Some(ica) = ica else { return 1 };
    let Ok(net) = client::connect_to(NAME) else { return 1 };
    if sys::peer_grant(net).is_err() {
        return 1;
    }
    let Ok(s) = connect_port(net, STALL) else { return 1 };
    let (home, len) = (ica.addr(), ica.len() as u32);
    let id = ica.release();
    let Ok((v, back)) = send_ica(net, &encode_send_ica(s.id(), 0, id, 0, len, home)) else {
        return 2;
    };
    let Some(Ok(ica)) = back.map(Ica::adopt) else { return 3 };
    let intact = ica.as_slice().iter().enumerate().all(|(i, &b)| b == pattern(i));
    if (v < 0 || (v as u32) < len) && intact { 0 } else { 4 }
}
