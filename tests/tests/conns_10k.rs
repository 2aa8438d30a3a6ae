//! 10,000 TCP connections open at once to a server on `TcpListener::incoming`: every one
//! echoes a unique message, the server's RSS per open connection is printed, and once all
//! are closed the server's fd count is back where it started.
//!
//! The clients run in a child process (`src/bin/conn_client.rs`): 10,000 client and 10,000
//! server sockets would not fit under one process's fd limit (20,000 here).

use std::cell::Cell;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use corering_net::{TcpListener, TcpStream};
use futures::StreamExt;
use runtime::time::{sleep, timeout};

const CONNS: usize = 10_000;
/// Fds the server needs beside its connections: the ring, the listener, stdio, pipes.
const SPARE_FDS: u64 = 64;
const LIMIT: Duration = Duration::from_secs(120);

/// Echoes the 8-byte message once, counts it, then holds the connection until end of stream.
async fn serve(stream: TcpStream, echoed: Rc<Cell<usize>>) -> std::io::Result<()> {
    let (res, msg) = stream
        .read_exact_owned(vec![0u8; 8].into_boxed_slice())
        .await;
    res?;
    let (res, _) = stream.write_all_owned(msg).await;
    res?;
    echoed.set(echoed.get() + 1);
    let (res, _) = stream.read_owned(vec![0u8; 1]).await;
    match res? {
        0 => Ok(()),
        n => Err(std::io::Error::other(format!("{n} unexpected bytes"))),
    }
}

#[runtime::test]
async fn ten_thousand_connections_open_at_once() {
    let (_, hard) = tests::nofile_limit();
    let need = CONNS as u64 + SPARE_FDS;
    let what = format!("an fd hard limit of {need} (it is {hard})");
    if !runtime::ext::testing::require(&what, hard >= need) {
        return;
    }
    tests::set_nofile_soft(hard).unwrap();
    timeout(LIMIT, run()).await.expect("finished in time");
}

async fn run() {
    let fds_before = tests::fd_count();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let echoed = Rc::new(Cell::new(0));
    let server = {
        let echoed = echoed.clone();
        runtime::spawn_local(async move {
            let mut incoming = listener.incoming();
            let mut conns = Vec::with_capacity(CONNS);
            while conns.len() < CONNS {
                match incoming.next().await.expect("incoming never ends") {
                    Ok(s) => conns.push(runtime::spawn_local(serve(s, echoed.clone()))),
                    Err(e) => panic!("accept {}: {e}", conns.len()),
                }
            }
            conns
        })
    };
    // Let the server task arm its accept before measuring.
    sleep(Duration::from_millis(10)).await;
    let rss_before = tests::rss_kib();

    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_conn_client"))
        .arg(addr.to_string())
        .arg(CONNS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn conn_client");
    // The server runs on this thread: wait without blocking it.
    while echoed.get() < CONNS {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "conn_client exited early ({status}) after {} echoes",
                echoed.get()
            );
        }
        sleep(Duration::from_millis(5)).await;
    }
    let rss_open = tests::rss_kib();
    let opened_in = start.elapsed();
    // Every reply is written; the client checks them and says so.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        format!("verified {CONNS}"),
        "conn_client's report"
    );
    let fds_open = tests::fd_count();
    if runtime::features().is_some_and(|f| f.direct_descriptors && f.fixed_fd_install) {
        // Accepted as direct descriptors: the connections hold no fd of the process.
        assert!(
            fds_open < fds_before + SPARE_FDS as usize,
            "{fds_open} fds open, {fds_before} before, with direct descriptors"
        );
    } else {
        assert!(
            fds_open >= fds_before + CONNS,
            "{fds_open} fds open, {fds_before} before"
        );
    }
    let per_conn = rss_open.saturating_sub(rss_before) as f64 / CONNS as f64;
    println!(
        "{CONNS} connections open and echoed in {opened_in:.2?}: server fds {fds_before} -> \
         {fds_open}, RSS {rss_before} KiB before, {rss_open} KiB with all open, \
         {per_conn:.2} KiB per connection"
    );

    // Close: the client drops every connection, each server task reads end of stream.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"close\n").unwrap();
    drop(stdin);
    let conns = server.await.unwrap();
    assert_eq!(conns.len(), CONNS);
    for (i, c) in conns.into_iter().enumerate() {
        c.await
            .unwrap()
            .unwrap_or_else(|e| panic!("connection {i}: {e}"));
    }
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "closed");
    drop(out);
    let status = child.wait().unwrap();
    assert!(status.success(), "conn_client: {status}");

    // The cancelled multishot accept gives its listener fd back when its CQE is reaped.
    let deadline = Instant::now() + Duration::from_secs(5);
    while tests::fd_count() != fds_before && Instant::now() < deadline {
        sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(tests::fd_count(), fds_before, "every fd closed");
    println!(
        "all closed: RSS {} KiB, fds back to {fds_before}",
        tests::rss_kib()
    );
}
