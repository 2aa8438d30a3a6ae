//! Large reads straight into the caller's memory (`ring_read/direct.rs`): a read of 16 KiB
//! or more with nothing buffered stops the ring's receive, reads what it took, then
//! receives with `recv(2)` into the caller's buffer (waiting with `POLL_ADD`). Every byte
//! is checked while readers switch at random between small reads (the ring's path), large
//! reads and `read_chunk`, on hundreds of connections fed in bursts of up to megabytes;
//! then end of stream and a reset met by a large read, and a reader dropped while it
//! waits. (The serve path's large reads, a request body read by hyper, are checked in
//! `net_hyper_serve`; tokio's `poll_read` in `net_tokio_io`.)

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr};
use std::thread;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream};
use futures::io::AsyncReadExt;
use runtime::time::timeout;
use runtime::Builder;

const LIMIT: Duration = Duration::from_secs(120);

/// A small xorshift generator: the tests are random but repeatable.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Connection `conn`'s byte at offset `i`: every offset of every connection differs.
fn byte_at(conn: u64, i: u64) -> u8 {
    let x = (conn << 40) ^ i.wrapping_mul(0x2545_F491_4F6C_DD1D);
    (x ^ (x >> 29) ^ (x >> 47)) as u8
}

/// A std client on its own thread: its index (8 bytes), then `total` bytes of connection
/// `conn` in bursts of 1 B to 2 MiB, sometimes pausing (so readers find the socket empty
/// and wait), then the end of stream.
fn feed(addr: SocketAddr, conn: u64, total: u64) -> thread::JoinHandle<io::Result<()>> {
    thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr)?;
        s.write_all(&conn.to_le_bytes())?;
        let mut rng = Rng::new(conn + 1000);
        let mut sent = 0;
        while sent < total {
            let burst = (1 + rng.below(2 << 20)).min(total - sent);
            let bytes: Vec<u8> = (sent..sent + burst).map(|i| byte_at(conn, i)).collect();
            s.write_all(&bytes)?;
            sent += burst;
            if rng.below(4) == 0 {
                thread::sleep(Duration::from_millis(rng.below(5)));
            }
        }
        s.shutdown(Shutdown::Write)
    })
}

/// Reads the feeder's index, then the stream to its end with reads of random sizes (a
/// quarter under 16 KiB, a quarter `read_chunk`, half from 16 KiB to 1 MiB), checking each
/// byte; returns the index and the count.
async fn read_all_checked(mut stream: TcpStream) -> io::Result<(u64, u64)> {
    let mut id = [0u8; 8];
    stream.read_exact(&mut id).await?;
    let conn = u64::from_le_bytes(id);
    let mut rng = Rng::new(conn);
    let mut at = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let got: Vec<u8> = match rng.below(4) {
            0 => {
                let n = 1 + rng.below(16 * 1024 - 1) as usize;
                let k = stream.read(&mut buf[..n]).await?;
                buf[..k].to_vec()
            }
            1 => stream.read_chunk().await?.to_vec(),
            _ => {
                let n = 16 * 1024 + rng.below((1 << 20) - 16 * 1024) as usize;
                let k = stream.read(&mut buf[..n]).await?;
                buf[..k].to_vec()
            }
        };
        if got.is_empty() {
            return Ok((conn, at));
        }
        for (j, b) in got.iter().enumerate() {
            let i = at + j as u64;
            if *b != byte_at(conn, i) {
                return Err(io::Error::other(format!(
                    "connection {conn}: byte {i} is {b:#04x}, not {:#04x}",
                    byte_at(conn, i)
                )));
            }
        }
        at += got.len() as u64;
    }
}

/// `conns` connections of `total` bytes each through a runtime from `builder`, every byte
/// checked.
fn every_byte_in_order(builder: Builder, conns: u64, total: u64) {
    let rt = builder.build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let feeders: Vec<_> = (0..conns).map(|c| feed(addr, c, total)).collect();
        let mut readers = Vec::new();
        for _ in 0..conns {
            let (stream, _) = listener.accept().await.unwrap();
            readers.push(runtime::spawn_local(read_all_checked(stream)));
        }
        let mut seen = vec![false; conns as usize];
        for r in readers {
            let (conn, n) = timeout(LIMIT, r)
                .await
                .expect("a reader stalled")
                .unwrap()
                .unwrap();
            assert_eq!(n, total, "connection {conn}");
            assert!(!std::mem::replace(&mut seen[conn as usize], true));
        }
        for f in feeders {
            f.join().unwrap().unwrap();
        }
    });
}

#[test]
fn large_and_small_reads_and_chunks_keep_every_byte_in_order() {
    // 200 connections of 1.5 MiB each, on the default runtime (the ring, bundles, direct
    // descriptors), then with the ring's features off one by one.
    every_byte_in_order(Builder::new(), 200, 3 << 19);
    every_byte_in_order(Builder::new().recv_bundle(false), 50, 1 << 20);
    every_byte_in_order(Builder::new().recv_incremental(false), 50, 1 << 20);
    every_byte_in_order(Builder::new().direct_descriptors(false), 50, 1 << 20);
    every_byte_in_order(Builder::new().recv_multishot(false), 50, 1 << 20);
}

/// A server reading with large buffers only, and a client that sends `bytes`, then either
/// closes or resets; returns what the reads gave: the bytes, then the end or the error.
fn large_reads_until(bytes: usize, reset: bool) -> (Vec<u8>, io::Result<()>) {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = thread::spawn(move || {
            let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
            s.connect(&addr.into())?;
            let mut s: std::net::TcpStream = s.into();
            let data: Vec<u8> = (0..bytes as u64).map(|i| byte_at(7, i)).collect();
            s.write_all(&data)?;
            // Let the server's large read take them and wait for more.
            thread::sleep(Duration::from_millis(100));
            if reset {
                socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO))?;
            }
            drop(s);
            io::Result::Ok(())
        });
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 256 * 1024];
        let end = loop {
            match timeout(LIMIT, stream.read(&mut buf))
                .await
                .expect("stalled")
            {
                Ok(0) => break Ok(()),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => break Err(e),
            }
        };
        client.join().unwrap().unwrap();
        (got, end)
    })
}

#[test]
fn a_large_read_meets_the_end_of_stream_and_a_reset() {
    let want: Vec<u8> = (0..300_000u64).map(|i| byte_at(7, i)).collect();
    let (got, end) = large_reads_until(want.len(), false);
    assert!(got == want, "{} bytes read of {}", got.len(), want.len());
    end.unwrap();
    // A reset while the read waits: the bytes before it, then ECONNRESET.
    let (got, end) = large_reads_until(want.len(), true);
    assert!(got == want[..got.len()], "a prefix of what was sent");
    assert_eq!(
        end.expect_err("a reset is an error").kind(),
        io::ErrorKind::ConnectionReset
    );
}

#[test]
fn a_large_read_dropped_while_it_waits_closes_the_socket_once() {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        for round in 0..50u64 {
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            let (mut stream, _) = listener.accept().await.unwrap();
            client.write_all(&[1u8; 40_000]).unwrap();
            let mut buf = vec![0u8; 128 * 1024];
            // The first large read takes what is there; the second waits on readiness and
            // is given up, mid-wait, with the socket.
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0);
            let waited = timeout(Duration::from_millis(5), stream.read(&mut buf)).await;
            if n == 40_000 {
                assert!(waited.is_err(), "round {round}: nothing more was sent");
            }
            drop(stream);
            // The server's side is closed (on the runtime's next turns, while the client
            // waits on the blocking pool): the client sees the end of stream, or a reset if
            // bytes were left unread.
            let seen = runtime::spawn_blocking(move || {
                client.set_read_timeout(Some(Duration::from_secs(10)))?;
                std::io::Read::read(&mut client, &mut [0u8; 1])
            })
            .await
            .unwrap();
            match seen {
                Ok(0) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
                other => panic!("round {round}: the socket was not closed: {other:?}"),
            }
        }
    });
}
