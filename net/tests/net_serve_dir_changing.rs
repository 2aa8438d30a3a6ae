//! `corering_net::hyper::ServeDir` serving a file that changes under its response (issue
//! 39's bad input: "a file truncated while it is being served, a short read from disk").
//!
//! - `a_file_truncated_mid_body_ends_it_with_an_error`: a streamed file (3 MiB, 256 KiB per
//!   read) cut at a point inside the next read's range: that read comes back short (the
//!   bytes the file still has), the one after finds the end of the file, and the body ends
//!   with `UnexpectedEof`: every byte it gave is the file's, none past the cut; the file is
//!   closed. On each backend, at several cut points.
//! - `a_file_grown_mid_body_gives_the_length_it_had`: bytes appended after the response
//!   began are not sent: the body is exactly the length its `Content-Length` promised.
//! - `a_truncated_file_over_a_socket_closes_the_connection`: through `serve`, a client reads
//!   the head (the old length of a 32 MiB file), a prefix of the file's bytes, no byte past
//!   the cut, then the end of the connection: no hang, no wrong byte, and the server goes
//!   on answering.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use corering_net::hyper::{serve, ServeDir, ServeDirBody};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use runtime::ext::testing::open_fds;
use tower::ServiceExt;

use common::backend::on_each_backend;

/// Every test counts the process's fds: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The file's length: larger than `WHOLE_FILE_MAX`, so it is streamed in chunks.
const LEN: usize = 3 << 20;
/// `ServeDir`'s default bytes per read.
const CHUNK: usize = corering_net::hyper::DEFAULT_CHUNK;

/// Byte `i` of the file: position-dependent, so a byte from the wrong offset shows.
fn byte(i: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

fn contents(len: usize) -> Vec<u8> {
    (0..len).map(byte).collect()
}

/// A directory with `big.bin` (`len` bytes), removed on drop.
struct Dir(PathBuf, usize);

impl Dir {
    fn new(name: &str, len: usize) -> Dir {
        let dir =
            std::env::temp_dir().join(format!("net-serve-changing-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("big.bin"), contents(len)).unwrap();
        Dir(dir, len)
    }

    fn file(&self) -> PathBuf {
        self.0.join("big.bin")
    }

    /// Truncates the file to `len` bytes, as another process would while it is served.
    fn cut(&self, len: usize) {
        let file = std::fs::OpenOptions::new().write(true).open(self.file());
        file.unwrap().set_len(len as u64).unwrap();
    }

    fn reset(&self) {
        std::fs::write(self.file(), contents(self.1)).unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn get(root: &Path) -> Response<ServeDirBody> {
    let req = Request::get("/big.bin").body(()).unwrap();
    let res = ServeDir::new(root).oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-length"], LEN.to_string().as_str());
    res
}

/// Waits up to 5 s for the process's fds to come back to `before`.
async fn fds_back_to(before: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while open_fds() != before && Instant::now() < deadline {
        runtime::time::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn a_file_truncated_mid_body_ends_it_with_an_error() {
    let _serial = serial();
    let dir = Dir::new("truncated", LEN);
    // Cut points: inside the second read's range (that read comes back short), at its
    // start (it finds the end at once), one byte into it, and in the last read's range.
    let cuts = [CHUNK + 1000, CHUNK, CHUNK + 1, LEN - 10];
    on_each_backend(|rt| {
        for &cut in &cuts {
            dir.reset();
            let before = open_fds();
            rt.block_on(async {
                let mut body = get(&dir.0).await.into_body();
                // The first read is in flight or done once the first frame is asked for:
                // cut after it, so the cut meets a later read.
                let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
                assert_eq!(first.len(), CHUNK);
                dir.cut(cut);
                let mut got = first.to_vec();
                let err = loop {
                    match body.frame().await {
                        Some(Ok(frame)) => got.extend_from_slice(&frame.into_data().unwrap()),
                        Some(Err(e)) => break e,
                        None => panic!("cut at {cut}: the body ended without an error"),
                    }
                };
                assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof, "{err}");
                assert!(body.frame().await.is_none(), "frames after the error");
                // Every byte the file still had, from the right offsets, none past the cut.
                assert_eq!(got.len(), cut, "cut at {cut}");
                assert!(got == contents(cut), "cut at {cut}: a byte differs");
                drop(body);
                fds_back_to(before).await;
            });
            assert_eq!(open_fds(), before, "cut at {cut}: the file was left open");
        }
    });
}

#[test]
fn a_file_grown_mid_body_gives_the_length_it_had() {
    let _serial = serial();
    let dir = Dir::new("grown", LEN);
    on_each_backend(|rt| {
        dir.reset();
        let before = open_fds();
        rt.block_on(async {
            let mut body = get(&dir.0).await.into_body();
            let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(dir.file())
                .unwrap();
            f.write_all(&[0xee; 100_000]).unwrap();
            drop(f);
            let rest = body.collect().await.unwrap().to_bytes();
            let mut got = first.to_vec();
            got.extend_from_slice(&rest);
            assert_eq!(got.len(), LEN);
            assert!(got == contents(LEN), "a byte differs");
            fds_back_to(before).await;
        });
        assert_eq!(open_fds(), before, "the file was left open");
    });
}

/// `GET /big.bin` over a new connection to `addr` (with `headers`, each ending in CRLF):
/// the connection, the response's `Content-Length` and the body bytes read with the head.
fn get_over(addr: std::net::SocketAddr, headers: &str) -> (std::net::TcpStream, usize, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!("GET /big.bin HTTP/1.1\r\nhost: x\r\n{headers}\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let (len, got) = read_head(&mut s);
    (s, len, got)
}

/// Reads an HTTP/1.1 response head from `s`; the `Content-Length` it gives, and the body
/// bytes read with it.
fn read_head(s: &mut std::net::TcpStream) -> (usize, Vec<u8>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        let n = s.read(&mut tmp).unwrap();
        assert!(n > 0, "the connection ended inside the head");
        buf.extend_from_slice(&tmp[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            assert!(head.starts_with("http/1.1 200"), "{head}");
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .expect("a content-length")
                .trim()
                .parse()
                .unwrap();
            return (len, buf[end + 4..].to_vec());
        }
    }
}

#[test]
fn a_truncated_file_over_a_socket_closes_the_connection() {
    let _serial = serial();
    // Larger than the socket's buffers and hyper's can hold ahead of a client that reads
    // 1,000 bytes, so the server is still reading the file when it is cut.
    let big = 32 << 20;
    let dir = Dir::new("socket", big);
    let cut = big / 2 + 777;
    let root = dir.0.clone();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = futures::channel::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        runtime::Runtime::new().unwrap().block_on(async move {
            let server = serve("127.0.0.1:0", ServeDir::new(&root)).unwrap();
            addr_tx.send(server.local_addr()).unwrap();
            let _ = done_rx.await;
            server.shutdown(Duration::from_secs(2)).await.unwrap();
        })
    });
    let addr = addr_rx.recv().unwrap();
    for round in 0..3 {
        dir.reset();
        let (mut s, len, mut got) = get_over(addr, "");
        assert_eq!(len, big);
        // Read a little of the body (the server is at most a few chunks and the socket's
        // buffers ahead), then cut the file short.
        let mut tmp = vec![0u8; 64 << 10];
        while got.len() < 1000 {
            let n = s.read(&mut tmp).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&tmp[..n]);
        }
        dir.cut(cut);
        loop {
            match s.read(&mut tmp) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&tmp[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("round {round}: {e} after {} bytes", got.len()),
            }
        }
        // The connection ended before the promised length, after no byte past the cut
        // (hyper may drop what it still buffered when the body fails), all of the file's.
        assert!(
            got.len() <= cut,
            "round {round}: {} bytes, cut at {cut}",
            got.len()
        );
        assert!(
            got == contents(got.len()),
            "round {round}: a byte differs in the {} received",
            got.len()
        );
    }
    // The server still answers.
    dir.reset();
    let (mut s, len, mut got) = get_over(addr, "connection: close\r\n");
    s.read_to_end(&mut got).unwrap();
    assert_eq!((len, got.len()), (big, big));
    assert!(got == contents(big));
    done_tx.send(()).unwrap();
    server.join().unwrap();
}
