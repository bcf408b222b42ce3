//! In front of the HTTP server: tiny_http reads a request's line and
//! headers without bound, before anything of ours sees them, so anyone who
//! reaches the port (another user here; with `--listen`, the network), token
//! or not, could fill the memory with one header that never ends. The front
//! reads each connection's headers itself, bounded in size and time, then
//! relays that one request to the server on a socket in a private folder.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The most of a request's line and headers read (a browser sends a few KiB).
pub const HEAD_MAX: usize = 32 << 10;
/// How long a client may take to send them, in all (a byte now and then
/// does not keep a connection).
const HEAD_TIME: Duration = Duration::from_secs(10);
/// Connections relayed at once (pages' event streams among them): more
/// are closed as they come, so threads stay bounded. Whoever holds this
/// many keeps others out, at most `HEAD_TIME` per connection without the
/// token: the price of a bound.
const CONNECTIONS_MAX: usize = 1024;

/// Where the request's line and headers end (after their blank line) in
/// what was read, if they do within `HEAD_MAX`.
pub fn head_end(read: &[u8]) -> Option<usize> {
    read[..read.len().min(HEAD_MAX)]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// The request's head as relayed: its own `Connection` headers replaced
/// by `close`, first (the server reads the first), so the server takes one
/// request per connection and every request passes through `head_end`'s
/// bound.
pub fn one_request(head: &[u8]) -> Vec<u8> {
    let body = &head[..head.len() - 2];
    let mut out = Vec::with_capacity(head.len() + 20);
    for (i, line) in body.split_inclusive(|&b| b == b'\n').enumerate() {
        let name = line.split(|&b| b == b':').next().unwrap_or_default();
        if i > 0 && name.trim_ascii().eq_ignore_ascii_case(b"connection") {
            continue;
        }
        out.extend_from_slice(line);
        if i == 0 {
            out.extend_from_slice(b"Connection: close\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Accept on `listener` for ever, relaying each connection to `back`.
pub fn run(listener: TcpListener, back: PathBuf) {
    let open = Arc::new(AtomicUsize::new(0));
    for client in listener.incoming().flatten() {
        if open.fetch_add(1, Ordering::SeqCst) >= CONNECTIONS_MAX {
            open.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let (counted, back) = (open.clone(), back.clone());
        let started = std::thread::Builder::new().spawn(move || {
            let _ = relay(client, &back);
            counted.fetch_sub(1, Ordering::SeqCst);
        });
        // No thread to be had: this connection is dropped, the next tried.
        if started.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn relay(mut client: TcpStream, back: &Path) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + HEAD_TIME;
    let mut read = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(end) = head_end(&read) {
            break end;
        }
        if read.len() >= HEAD_MAX {
            let said = "refused: the request's headers are too long\n";
            let _ = client.write_all(
                format!(
                    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{said}",
                    said.len()
                )
                .as_bytes(),
            );
            // What the client sent on is read (a little) before closing: a
            // close with unread data resets the connection, and the client
            // may lose the answer.
            let _ = client.shutdown(Shutdown::Write);
            let _ = client.set_read_timeout(Some(Duration::from_secs(1)));
            let _ = (&mut client).take(1 << 20).read_to_end(&mut Vec::new());
            return Ok(());
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        client.set_read_timeout(Some(left))?;
        let k = client.read(&mut buf)?;
        if k == 0 {
            return Ok(());
        }
        read.extend_from_slice(&buf[..k]);
    };
    client.set_read_timeout(None)?;
    let mut server = UnixStream::connect(back)?;
    server.write_all(&one_request(&read[..end]))?;
    server.write_all(&read[end..])?;
    let (mut from, mut to) = (client.try_clone()?, server.try_clone()?);
    // A client that hangs up ends the relay both ways: a page's event
    // stream then fails at its next write and frees its place (a browser
    // never half-closes a request it waits on).
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
    });
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(Shutdown::Both);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_ends_at_its_blank_line_and_only_within_the_bound() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.extend(vec![b'a'; HEAD_MAX]);
        long.extend(b"\r\n\r\n");
        assert_eq!(head_end(&long), None, "past the bound");
    }

    #[test]
    fn a_relayed_request_asks_the_server_to_close_after_it() {
        let head = b"GET / HTTP/1.1\r\nHost: a\r\nconnection: keep-alive\r\nConnection : x\r\nX: 1\r\n\r\n";
        assert_eq!(
            String::from_utf8(one_request(head)).unwrap(),
            "GET / HTTP/1.1\r\nConnection: close\r\nHost: a\r\nX: 1\r\n\r\n"
        );
        assert_eq!(
            String::from_utf8(one_request(b"GET / HTTP/1.0\r\n\r\n")).unwrap(),
            "GET / HTTP/1.0\r\nConnection: close\r\n\r\n"
        );
    }
}
