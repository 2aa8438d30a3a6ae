//! tokio-uring's servers: its runtime (a tokio current-thread runtime and `LocalSet` with an
//! io_uring driver beside the epoll one), the harness's listener as a
//! `tokio_uring::net::TcpListener`, a `tokio_uring::spawn` task per connection, and
//! owned-buffer `read` / `write_all`, as in tokio-uring's own `examples/tcp_listener.rs`.
//!
//! The ring gets the same size as this runtime's server; the rest is tokio-uring's default.

use std::io;
use std::sync::Arc;

use tokio_uring::buf::BoundedBuf;
use tokio_uring::net::{TcpListener, TcpStream};
use tokio_uring::Runtime;

use super::{accept_loop, Serve};
use crate::server::{no_stats, Ctl};

/// Builds tokio-uring's runtime with a ring of `entries`.
fn runtime(entries: u32) -> io::Result<Runtime> {
    Runtime::new(tokio_uring::builder().entries(entries))
}

/// `bench echo`: read into a `msg`-byte buffer, write back what came, until the end.
pub(super) fn echo(serve: Serve, msg: usize) -> io::Result<()> {
    let rt = serve.ready.built(runtime(crate::echo::ENTRIES))?;
    let ctl = serve.ctl;
    rt.block_on(async move {
        let listener = TcpListener::from_std(serve.listener);
        accept_loop(
            &ctl,
            "bench echo: tokio-uring server",
            || listener.accept(),
            |(stream, _)| {
                tokio_uring::spawn(echo_conn(stream, ctl.clone(), msg));
            },
        )
        .await
    })
}

/// One echo connection; the buffer travels to the kernel and back on every call.
async fn echo_conn(stream: TcpStream, ctl: Arc<Ctl>, msg: usize) {
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; msg];
    // Hot path: one recv and (unless the socket takes a short write) one send per message.
    loop {
        let (res, b) = stream.read(buf).await;
        let n = match res {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (res, slice) = stream.write_all(b.slice(..n)).await;
        buf = slice.into_inner();
        if res.is_err() {
            break;
        }
        ctl.tick(n as u64, no_stats);
    }
    ctl.tick(0, no_stats);
}

/// `bench accept`: an `accept` loop, a task per connection that reads the 128 B, writes
/// them back and closes.
pub(super) fn accept(serve: Serve) -> io::Result<()> {
    let rt = serve.ready.built(runtime(crate::accept::ENTRIES))?;
    let ctl = serve.ctl;
    rt.block_on(async move {
        let listener = TcpListener::from_std(serve.listener);
        let each = |(stream, _): (TcpStream, _)| {
            ctl.tick(0, no_stats);
            let ctl = ctl.clone();
            tokio_uring::spawn(async move {
                if let Err(e) = serve_conn(&stream).await {
                    eprintln!("bench accept: tokio-uring connection: {e}");
                }
                drop(stream);
                ctl.conn_done(no_stats);
            });
        };
        let what = "bench accept: tokio-uring server";
        accept_loop(&ctl, what, || listener.accept(), each).await
    })
}

/// Reads the whole message (tokio-uring has no `read_exact`), then writes it back.
async fn serve_conn(stream: &TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; crate::accept::MSG];
    let mut got = 0;
    while got < buf.len() {
        let (res, slice) = stream.read(buf.slice(got..)).await;
        buf = slice.into_inner();
        match res? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => got += n,
        }
    }
    stream.write_all(buf).await.0
}
