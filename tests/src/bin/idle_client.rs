//! The client side of `tests/tests/idle_conns.rs`, in a process of its own so that its
//! sockets and the server's do not share one fd limit.
//!
//! `idle_client ADDR N` opens N blocking TCP connections to ADDR (each connect bounded by
//! 10 s) and sends nothing; once all are open it prints `connected N` and leaves them idle
//! for 1 s. Then connection `i` sends its own message, [`message`]`(i)` (16 to 100 bytes:
//! its index, its length and payload bytes that depend on both), and checks that exactly
//! those bytes come back (reads bounded by 10 s), in batches of 256 connections, and no more
//! after them. It prints `verified N`, waits for its stdin to close, closes every connection
//! and exits 0. Any failure is printed and exits 1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::exit;
use std::time::{Duration, Instant};

/// Bound on one connect, read or write.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long every connection stays idle after the last one is open.
const IDLE: Duration = Duration::from_secs(1);
/// Connections that send before their echoes are read back.
const BATCH: usize = 256;

fn fail(msg: String) -> ! {
    eprintln!("idle_client: {msg}");
    exit(1)
}

/// Connection `i`'s message: 16 to 100 bytes, starting with `i` and the length (8 and 1
/// bytes), the rest payload bytes offset by `i`, so that no two connections' messages match.
fn message(i: u64) -> Vec<u8> {
    let len = 16 + (i * 37 % 85) as usize;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&i.to_le_bytes());
    m.push(len as u8);
    m.extend(tests::payload(i * 7, len - m.len()));
    m
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        fail(format!("usage: {} ADDR N", args[0]));
    }
    let addr: SocketAddr = args[1]
        .parse()
        .unwrap_or_else(|e| fail(format!("ADDR {:?}: {e}", args[1])));
    let n: usize = args[2]
        .parse()
        .unwrap_or_else(|e| fail(format!("N {:?}: {e}", args[2])));
    if let Err(e) = sysutil::raise_nofile() {
        fail(format!("raising the soft fd limit to the hard limit: {e}"));
    }

    let start = Instant::now();
    let mut conns = Vec::with_capacity(n);
    for i in 0..n {
        let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
            .unwrap_or_else(|e| fail(format!("connect {i} to {addr}: {e}")));
        s.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| s.set_write_timeout(Some(IO_TIMEOUT)))
            .unwrap_or_else(|e| fail(format!("timeouts on connection {i}: {e}")));
        conns.push(s);
    }
    println!("connected {n} in {:.2?}", start.elapsed());
    std::io::stdout().flush().ok();
    std::thread::sleep(IDLE);

    for first in (0..n).step_by(BATCH) {
        let batch = &mut conns[first..(first + BATCH).min(n)];
        for (k, s) in batch.iter_mut().enumerate() {
            let i = (first + k) as u64;
            s.write_all(&message(i))
                .unwrap_or_else(|e| fail(format!("write on connection {i}: {e}")));
        }
        for (k, s) in batch.iter_mut().enumerate() {
            let i = (first + k) as u64;
            let want = message(i);
            let mut back = vec![0u8; want.len()];
            s.read_exact(&mut back)
                .unwrap_or_else(|e| fail(format!("read on connection {i}: {e}")));
            if back != want {
                fail(format!("connection {i}: sent {want:?}, got back {back:?}"));
            }
        }
    }
    // Nothing more than its own message came back on any connection.
    for (i, s) in conns.iter_mut().enumerate() {
        s.set_nonblocking(true)
            .unwrap_or_else(|e| fail(format!("O_NONBLOCK on connection {i}: {e}")));
        match s.read(&mut [0u8; 1]) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Ok(0) => fail(format!("connection {i}: closed by the server")),
            Ok(_) => fail(format!("connection {i}: more bytes than it sent")),
            Err(e) => fail(format!("connection {i}: {e}")),
        }
    }
    println!("verified {n}");
    std::io::stdout().flush().ok();

    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(conns);
}
