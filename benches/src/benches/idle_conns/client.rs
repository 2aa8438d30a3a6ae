//! The hidden `bench idle-client`.

use std::io::{self, BufRead as _, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

use socket2::SockRef;

use super::ClientArgs;

/// Bytes each echo connection sends and reads back before it goes idle.
const MSG: usize = 64;
/// Connections the client opens before it reads their echoes back.
const BATCH: usize = 128;
/// Bound on one connect, one read and one write in the client.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// The request each HTTP connection sends.
const HTTP_GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
/// The most header bytes the HTTP client accepts in a response.
const MAX_HEAD: usize = 16 * 1024;

/// `bench idle-client --addr A --conns N [--http]`: opens N/2 connections.
pub fn client_main(args: ClientArgs) -> ExitCode {
    match client(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench idle-client: {e}");
            ExitCode::FAILURE
        }
    }
}

fn client(args: ClientArgs) -> io::Result<()> {
    let ctx =
        |what: &'static str| move |e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    sysutil::raise_nofile().map_err(ctx("raising the fd soft limit"))?;
    let say = |line: String| {
        writeln!(io::stdout(), "{line}")
            .and_then(|()| io::stdout().flush())
            .map_err(ctx("stdout"))
    };
    let (half, mut conns) = (args.conns / 2, Vec::with_capacity(args.conns));
    open(&mut conns, args.addr, half, args.http)?;
    say(format!("half {half}"))?;
    let mut stdin = io::stdin().lock();
    if stdin.read_line(&mut String::new()).unwrap_or(0) == 0 {
        // The parent gave up: nothing more to do.
        return Ok(());
    }
    open(&mut conns, args.addr, args.conns, args.http)?;
    say(format!("idle {}", conns.len()))?;
    let _ = stdin.read_to_end(&mut Vec::new());
    for s in &conns {
        // An RST on close: no TIME_WAIT left on this side for the next contender's ports.
        let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
    }
    Ok(())
}

/// Opens connections to `addr` until `conns` holds `n`, in batches of [`BATCH`].
fn open(conns: &mut Vec<TcpStream>, addr: SocketAddr, n: usize, http: bool) -> io::Result<()> {
    while conns.len() < n {
        let first = conns.len();
        let end = (first + BATCH).min(n);
        for i in first..end {
            let ctx = |what: &str, e: io::Error| {
                io::Error::new(e.kind(), format!("connection {i} to {addr}: {what}: {e}"))
            };
            let mut s =
                TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| ctx("connect", e))?;
            s.set_nodelay(true).map_err(|e| ctx("TCP_NODELAY", e))?;
            s.set_read_timeout(Some(IO_TIMEOUT))
                .map_err(|e| ctx("SO_RCVTIMEO", e))?;
            s.set_write_timeout(Some(IO_TIMEOUT))
                .map_err(|e| ctx("SO_SNDTIMEO", e))?;
            let out = if http { HTTP_GET.to_vec() } else { echo_msg(i) };
            s.write_all(&out).map_err(|e| ctx("write", e))?;
            conns.push(s);
        }
        for (i, s) in conns.iter_mut().enumerate().skip(first) {
            let res = if http {
                read_http_response(s)
            } else {
                read_echo(s, &echo_msg(i))
            };
            res.map_err(|e| io::Error::new(e.kind(), format!("connection {i} to {addr}: {e}")))?;
        }
    }
    Ok(())
}

/// Connection `i`'s message: its index (8 bytes, little-endian), then a filler.
fn echo_msg(i: usize) -> Vec<u8> {
    let mut m = vec![0x5a; MSG];
    m[..8].copy_from_slice(&(i as u64).to_le_bytes());
    m
}

fn read_echo(s: &mut TcpStream, sent: &[u8]) -> io::Result<()> {
    let mut back = vec![0u8; sent.len()];
    s.read_exact(&mut back)
        .map_err(|e| io::Error::new(e.kind(), format!("reading the echo: {e}")))?;
    let differs = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sent {sent:?}, got back {back:?}"),
        )
    };
    (back == sent).then_some(()).ok_or_else(differs)
}

/// Reads one HTTP/1.1 response: status 200, a `Content-Length` body, nothing after it.
fn read_http_response(s: &mut impl io::Read) -> io::Result<()> {
    let bad = |msg: String| io::Error::new(io::ErrorKind::InvalidData, msg);
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(bad(format!(
                "the server closed after {} bytes of response",
                buf.len()
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad(format!("no end of headers in {MAX_HEAD} bytes")));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head.lines().next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 200") {
        return Err(bad(format!("status line {status:?}")));
    }
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| bad(format!("no Content-Length in {head:?}")))?;
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(bad("the server closed inside the body".to_string()));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if buf.len() > head_end + len {
        return Err(bad(format!(
            "{} bytes after the response",
            buf.len() - head_end - len
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_http_responses() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\nHello, World!";
        read_http_response(&mut &ok[..]).unwrap();
        for bad in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\nHello",
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nHello",
        ] {
            assert!(read_http_response(&mut &bad[..]).is_err());
        }
    }

    /// Each of idle-conns' echo servers answers the client's connections and keeps them.
    #[test]
    fn every_echo_server_serves_the_client() {
        use super::super::{round::serve, Kind};
        for kind in [Kind::Runtime, Kind::Tokio, Kind::Raw] {
            let server =
                crate::harness::server::Server::spawn("t", 0, move |l, c| serve(kind, l, c))
                    .unwrap();
            let mut conns = Vec::new();
            open(&mut conns, server.addr, 300, false).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            server.stop().unwrap();
        }
    }
}
