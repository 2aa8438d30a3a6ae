//! The client side of `tests/tests/conns_10k.rs`, in a process of its own so that its
//! sockets and the server's do not share one fd limit.
//!
//! `conn_client ADDR N` opens N blocking TCP connections to ADDR one after another and keeps
//! them all open; on each it sends its index (8 bytes, little-endian) and checks that the
//! same 8 bytes come back. Then it prints `verified N`, waits for a line (or end of file) on
//! stdin, closes every connection, prints `closed` and exits 0. Any failure is printed and
//! exits 1.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::exit;
use std::time::Duration;

fn fail(msg: String) -> ! {
    eprintln!("conn_client: {msg}");
    exit(1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        fail(format!("usage: {} ADDR N", args[0]));
    }
    let addr = &args[1];
    let n: u64 = args[2]
        .parse()
        .unwrap_or_else(|e| fail(format!("N {:?}: {e}", args[2])));
    if let Err(e) = sysutil::raise_nofile() {
        fail(format!("raising the soft fd limit to the hard limit: {e}"));
    }

    let mut conns = Vec::with_capacity(n as usize);
    for i in 0..n {
        let mut s = TcpStream::connect(addr)
            .unwrap_or_else(|e| fail(format!("connect {i} to {addr}: {e}")));
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap_or_else(|e| fail(format!("set_read_timeout: {e}")));
        let msg = i.to_le_bytes();
        s.write_all(&msg)
            .unwrap_or_else(|e| fail(format!("write on connection {i}: {e}")));
        let mut back = [0u8; 8];
        s.read_exact(&mut back)
            .unwrap_or_else(|e| fail(format!("read on connection {i}: {e}")));
        if back != msg {
            fail(format!("connection {i}: sent {msg:?}, got back {back:?}"));
        }
        conns.push(s);
    }
    println!("verified {}", conns.len());
    std::io::stdout().flush().ok();

    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok();
    drop(conns);
    println!("closed");
}
