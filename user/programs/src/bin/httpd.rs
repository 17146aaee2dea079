//! A small web server on the file system: `httpd [port] [dir] [count]`
//! serves GET and HEAD of the files under `dir` (default `/`) on `port`
//! (default 80), a listing for a directory without `index.html`, and ends
//! after `count` requests (default: never). `make run NET=1` starts it,
//! and the host's `curl http://127.0.0.1:8080/` reaches it.
//!
//! One connection at a time, each closed after its answer (HTTP/1.0): a
//! client gets five seconds to send its request. A file's bytes go from
//! the file server into this program's buffer (one copy) and from it into
//! the connection's buffer at the TCP/IP server (one copy).
#![no_std]
#![no_main]
extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use tessera_api::errno::Errno;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{DT_DIR, O_RDONLY};
use tessera_api::net::client::{Socket, poll};
use tessera_api::net::*;
use tessera_rt::println;

/// Longest request head read.
const MAX_HEAD: usize = 8192;
const REQUEST_NS: u64 = 5_000_000_000;

fn main(args: &[&str]) -> i32 {
    let port = args.get(1).and_then(|p| p.parse().ok()).unwrap_or(80u16);
    let dir = args.get(2).copied().unwrap_or("/").trim_end_matches('/');
    let mut count: Option<u64> = args.get(3).and_then(|c| c.parse().ok());
    let listener = match listen(port) {
        Ok(l) => l,
        Err(e) => {
            println!("httpd: cannot listen on port {port}: {e}");
            return 1;
        }
    };
    println!(
        "httpd: serving {} on port {port}",
        if dir.is_empty() { "/" } else { dir }
    );
    while count != Some(0) {
        let conn = match listener.accept() {
            Ok((c, _)) => c,
            Err(Errno::ENETDOWN) => {
                println!("httpd: the TCP/IP server is gone");
                return 1;
            }
            Err(_) => continue,
        };
        serve(&conn, dir);
        count = count.map(|c| c - 1);
    }
    0
}

fn listen(port: u16) -> Result<Socket, Errno> {
    let l = Socket::tcp()?;
    l.set_option_int(SOL_SOCKET, SO_REUSEADDR, 1)?;
    l.bind(SockAddr::new([0; 4], port))?;
    l.listen(16)?;
    Ok(l)
}

/// The request's head (up to the blank line), or None if the client sent
/// none in time.
fn read_head(conn: &Socket) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tessera_rt::sys::now_ns() + REQUEST_NS;
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let now = tessera_rt::sys::now_ns();
        if now >= deadline || head.len() >= MAX_HEAD {
            return (!head.is_empty()).then_some(head);
        }
        let mut fds = [PollFd {
            socket: conn.id(),
            events: POLLIN,
            revents: 0,
        }];
        if poll(&mut fds, Some(deadline - now)) != Ok(1) {
            continue;
        }
        match conn.recv(&mut buf) {
            Ok(0) | Err(_) => return (!head.is_empty()).then_some(head),
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(head)
}

fn serve(conn: &Socket, dir: &str) {
    let Some(head) = read_head(conn) else { return };
    let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let line = core::str::from_utf8(line).unwrap_or("").trim_end();
    let mut words = line.split(' ');
    let (method, target, version) = (words.next(), words.next(), words.next());
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return status(conn, 400, "Bad Request");
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') || words.next().is_some() {
        return status(conn, 400, "Bad Request");
    }
    if method != "GET" && method != "HEAD" {
        return status(conn, 501, "Not Implemented");
    }
    let path = target.split(['?', '#']).next().unwrap_or("/");
    if path.split('/').any(|p| p == "..") {
        return status(conn, 403, "Forbidden");
    }
    let full = format!("{dir}{path}");
    let body = method == "GET";
    match client::stat(&full) {
        Ok(st) if st.is_dir() => {
            let index = format!("{}/index.html", full.trim_end_matches('/'));
            if client::stat(&index).is_ok() {
                send_file(conn, &index, body);
            } else {
                listing(conn, &full, path, body);
            }
        }
        Ok(_) => send_file(conn, &full, body),
        Err(Errno::ENOENT | Errno::ENOTDIR) => status(conn, 404, "Not Found"),
        Err(Errno::EACCES) => status(conn, 403, "Forbidden"),
        Err(e) => status(conn, 500, &format!("Internal Server Error ({e})")),
    }
}

fn status(conn: &Socket, code: u32, text: &str) {
    let body = format!("{code} {text}\n");
    let head = format!(
        "HTTP/1.0 {code} {text}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.send_all(head.as_bytes());
    let _ = conn.send_all(body.as_bytes());
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html" | "htm") => "text/html",
        Some("txt" | "md") => "text/plain",
        Some("css") => "text/css",
        Some("js") => "application/javascript",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        _ => "application/octet-stream",
    }
}

fn send_file(conn: &Socket, path: &str, body: bool) {
    let mut f = match File::open(path, O_RDONLY, 0) {
        Ok(f) => f,
        Err(_) => return status(conn, 403, "Forbidden"),
    };
    let size = f.stat().map(|s| s.size).unwrap_or(0);
    let head = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: {}\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n",
        content_type(path)
    );
    if conn.send_all(head.as_bytes()).is_err() || !body {
        return;
    }
    let mut buf = vec![0u8; 32 << 10];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.send_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

fn listing(conn: &Socket, full: &str, path: &str, body: bool) {
    let entries = match client::read_dir(full) {
        Ok(e) => e,
        Err(_) => return status(conn, 403, "Forbidden"),
    };
    let base = path.trim_end_matches('/');
    let title = escape(path);
    let mut page =
        format!("<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n<h1>{title}</h1>\n<ul>\n");
    let mut names: Vec<(String, bool)> = entries
        .iter()
        .filter(|e| e.name != b"." && e.name != b"..")
        .map(|e| (String::from_utf8_lossy(&e.name).into_owned(), e.kind == DT_DIR))
        .collect();
    names.sort();
    for (name, is_dir) in names {
        let slash = if is_dir { "/" } else { "" };
        let name = escape(&name);
        page += &format!(
            "<li><a href=\"{}/{name}{slash}\">{name}{slash}</a></li>\n",
            escape(base)
        );
    }
    page += "</ul>\n<p>Tessera httpd</p></body></html>\n";
    let head = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        page.len()
    );
    let _ = conn.send_all(head.as_bytes());
    if body {
        let _ = conn.send_all(page.as_bytes());
    }
}

/// `text` safe inside HTML (a file name is any bytes but `/` and NUL).
fn escape(text: &str) -> String {
    text.chars().fold(String::new(), |mut out, c| {
        match c {
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '&' => out += "&amp;",
            '"' => out += "&quot;",
            c => out.push(c),
        }
        out
    })
}
tessera_rt::entry!(main);
