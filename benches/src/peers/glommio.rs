//! glommio's servers: a `LocalExecutor` pinned to the server CPU (`Placement::Fixed`), the
//! harness's listener as a `glommio::net::TcpListener`, a detached `spawn_local` task per
//! connection, and its streams' `AsyncRead` / `AsyncWrite` with a borrowed buffer, as in
//! glommio's own `examples/echo.rs`.
//!
//! The main ring gets the same depth as this runtime's (glommio's default is 128); everything
//! else is glommio's default. Building the executor fails where `RLIMIT_MEMLOCK` is under
//! 512 KiB or the CPU topology cannot be read from sysfs: [`super::spawn`] then skips the row.

use std::io;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::Arc;

use futures::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutor, LocalExecutorBuilder, Placement};

use super::{accept_loop, Serve};
use crate::server::{no_stats, Ctl};

/// Builds an executor pinned to `cpu` with a main ring of `entries`.
fn executor(cpu: usize, entries: u32) -> io::Result<LocalExecutor> {
    LocalExecutorBuilder::new(Placement::Fixed(cpu))
        .name("glommio-server")
        .ring_depth(entries as usize)
        .make()
        .map_err(io::Error::from)
}

/// Wraps the harness's listener; must run inside the executor (glommio binds it to the
/// current reactor).
fn listener(std: std::net::TcpListener) -> TcpListener {
    // SAFETY: `into_raw_fd` hands over a bound, listening socket that nothing else owns.
    unsafe { TcpListener::from_raw_fd(std.into_raw_fd()) }
}

/// `bench echo`: read into a `msg`-byte buffer, write back what came, until the end.
pub(super) fn echo(serve: Serve, msg: usize) -> io::Result<()> {
    let ex = serve
        .ready
        .built(executor(serve.cpu, crate::echo::ENTRIES))?;
    let (std, ctl) = (serve.listener, serve.ctl);
    ex.run(async move {
        let listener = listener(std);
        accept_loop(
            &ctl,
            "bench echo: glommio server",
            || listener.accept(),
            |stream| {
                glommio::spawn_local(echo_conn(stream, ctl.clone(), msg)).detach();
            },
        )
        .await
    })
}

/// One echo connection.
async fn echo_conn(mut stream: TcpStream, ctl: Arc<Ctl>, msg: usize) {
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; msg];
    // Hot path: one recv and (unless the socket takes a short write) one send per message.
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if stream.write_all(&buf[..n]).await.is_err() {
            break;
        }
        ctl.tick(n as u64, no_stats);
    }
    ctl.tick(0, no_stats);
}

/// `bench accept`: an `accept` loop, a task per connection that reads the 128 B, writes
/// them back and closes.
pub(super) fn accept(serve: Serve) -> io::Result<()> {
    let ex = serve
        .ready
        .built(executor(serve.cpu, crate::accept::ENTRIES))?;
    let (std, ctl) = (serve.listener, serve.ctl);
    ex.run(async move {
        let listener = listener(std);
        let each = |mut stream: TcpStream| {
            ctl.tick(0, no_stats);
            let ctl = ctl.clone();
            glommio::spawn_local(async move {
                let mut buf = [0u8; crate::accept::MSG];
                let res = async {
                    stream.read_exact(&mut buf).await?;
                    stream.write_all(&buf).await
                }
                .await;
                if let Err(e) = res {
                    eprintln!("bench accept: glommio connection: {e}");
                }
                drop(stream);
                ctl.conn_done(no_stats);
            })
            .detach();
        };
        let what = "bench accept: glommio server";
        accept_loop(&ctl, what, || listener.accept(), each).await
    })
}
