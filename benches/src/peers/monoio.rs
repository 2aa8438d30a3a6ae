//! monoio's servers: its io_uring driver (`IoUringDriver`, no mio fallback), the harness's
//! listener as a `monoio::net::TcpListener`, a `monoio::spawn` task per connection, and
//! owned-buffer `read` / `write_all` as in monoio's own `examples/echo.rs`.
//!
//! The ring gets the same size as this runtime's server (monoio's minimum is 256 anyway).

use std::io;
use std::sync::Arc;

use monoio::io::{AsyncReadRent, AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::{IoUringDriver, Runtime, RuntimeBuilder};

use super::{accept_loop, Serve};
use crate::server::{no_stats, Ctl};

/// Builds monoio's io_uring runtime with this runtime's ring size.
fn runtime(entries: u32) -> io::Result<Runtime<IoUringDriver>> {
    RuntimeBuilder::<IoUringDriver>::new()
        .with_entries(entries)
        .build()
}

/// `bench echo`: read into a `Vec` with capacity `msg`, write back what came, until the end.
pub(super) fn echo(serve: Serve, msg: usize) -> io::Result<()> {
    let mut rt = serve.ready.built(runtime(crate::echo::ENTRIES))?;
    let ctl = serve.ctl;
    rt.block_on(async move {
        let listener = TcpListener::from_std(serve.listener)?;
        accept_loop(
            &ctl,
            "bench echo: monoio server",
            || listener.accept(),
            |(stream, _)| {
                monoio::spawn(echo_conn(stream, ctl.clone(), msg));
            },
        )
        .await
    })
}

/// One echo connection; the buffer travels to the kernel and back on every call.
async fn echo_conn(mut stream: TcpStream, ctl: Arc<Ctl>, msg: usize) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(msg);
    // Hot path: one recv and (unless the socket takes a short write) one send per message.
    loop {
        let (res, b) = stream.read(buf).await;
        let n = match res {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (res, mut b) = stream.write_all(b).await;
        if res.is_err() {
            break;
        }
        b.clear();
        buf = b;
        ctl.tick(n as u64, no_stats);
    }
    ctl.tick(0, no_stats);
}

/// `bench accept`: a singleshot `accept` loop, a task per connection that reads the 128 B,
/// writes them back and closes.
pub(super) fn accept(serve: Serve) -> io::Result<()> {
    let mut rt = serve.ready.built(runtime(crate::accept::ENTRIES))?;
    let ctl = serve.ctl;
    rt.block_on(async move {
        let listener = TcpListener::from_std(serve.listener)?;
        let each = |(mut stream, _): (TcpStream, _)| {
            ctl.tick(0, no_stats);
            let ctl = ctl.clone();
            monoio::spawn(async move {
                let buf = vec![0u8; crate::accept::MSG].into_boxed_slice();
                let (res, buf) = stream.read_exact(buf).await;
                let res = match res {
                    Ok(_) => stream.write_all(buf).await.0.map(drop),
                    Err(e) => Err(e),
                };
                if let Err(e) = res {
                    eprintln!("bench accept: monoio connection: {e}");
                }
                drop(stream);
                ctl.conn_done(no_stats);
            });
        };
        let what = "bench accept: monoio server";
        accept_loop(&ctl, what, || listener.accept(), each).await
    })
}
