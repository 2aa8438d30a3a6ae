//! The `arena` binary as it ships, started for a test: every listener on a port the kernel
//! picks (read back from its startup lines), the crate's own data, the environment's
//! backend (`RUNTIME_BACKEND` passes through).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `arena`, stopped (SIGTERM, then waited for) when dropped.
pub struct Arena {
    child: Child,
    /// HTTP/1.1 and h2c.
    pub http: SocketAddr,
    /// h2c only.
    pub h2c: SocketAddr,
    /// TLS, ALPN http/1.1.
    pub tls_http1: SocketAddr,
    /// TLS, ALPN h2 and http/1.1.
    pub tls_h2: SocketAddr,
}

impl Arena {
    /// Starts `arena --cores 2` with `env` added to the crate's data paths.
    pub fn start(env: &[(&str, String)]) -> Arena {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arena"));
        cmd.args(["--cores", "2", "--host", "127.0.0.1"])
            .args([
                "--port",
                "0",
                "--tls-port",
                "0",
                "--h2c-port",
                "0",
                "--h2-port",
                "0",
            ])
            .env("DATASET_PATH", here.join("data/dataset.json"))
            .env("STATIC_DIR", here.join("data/static"))
            .env("TLS_CERT", here.join("certs/server.crt"))
            .env("TLS_KEY", here.join("certs/server.key"))
            .env_remove("DATABASE_URL")
            .env_remove("REDIS_URL")
            .stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("arena starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut addrs = std::collections::HashMap::new();
        for line in lines.by_ref() {
            let line = line.expect("arena's stdout");
            if line.contains("Ctrl-C") {
                break;
            }
            if let Some((what, addr)) = line
                .strip_prefix("arena: ")
                .and_then(|l| l.rsplit_once(" on "))
            {
                addrs.insert(what.to_owned(), addr.parse::<SocketAddr>().expect(&line));
            }
        }
        // Keep reading its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let get = |what: &str| {
            *addrs
                .get(what)
                .unwrap_or_else(|| panic!("no {what} listener: {addrs:?}"))
        };
        Arena {
            http: get("http/1.1 + h2c"),
            h2c: get("h2c only"),
            tls_http1: get("TLS http/1.1"),
            tls_h2: get("TLS h2 + http/1.1"),
            child,
        }
    }

    /// `GET path` on the HTTP/1.1 port: the status and the body.
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        parse(&exchange(
            self.http,
            req.as_bytes(),
            Duration::from_secs(10),
        ))
    }

    /// Asserts the server still answers a plain request (the others were not disturbed).
    pub fn still_serves(&self) {
        let (status, body) = self.get("/baseline11?a=40&b=2");
        assert_eq!(
            (status, &body[..]),
            (200, &b"42"[..]),
            "the server stopped serving"
        );
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SIGTERM: the graceful stop; then wait (a kill if it hangs).
        // SAFETY: kill(2) on our own child's pid, which has not been waited for yet.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `send`, half-closes nothing, and reads until EOF or `read_for` passes.
pub fn exchange(addr: SocketAddr, send: &[u8], read_for: Duration) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(read_for)).unwrap();
    // The server may answer (and close) before taking every byte: a failed write is fine.
    let _ = s.write_all(send);
    read_all(&mut s)
}

/// Everything `s` sends until EOF, a reset or its read timeout.
pub fn read_all(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            // A signal to this test process (a runtime of its own may have set handlers).
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// The status and the body of one HTTP/1.1 response (Content-Length or chunked); 0 and
/// the bytes for anything else.
pub fn parse(raw: &[u8]) -> (u16, Vec<u8>) {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (0, raw.to_vec());
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = &raw[end + 4..];
    if head.contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut rest = body;
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap_or("0").trim(), 16)
                    .unwrap_or(0);
            if size == 0 || rest.len() < eol + 2 + size {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest = &rest[eol + 2 + size + 2..];
        }
        return (status, out);
    }
    (status, body.to_vec())
}
