//! What the example binaries share: flag parsing ([`args`]), stopping on Ctrl-C
//! ([`until_ctrl_c`]) or on Ctrl-C and SIGTERM ([`shutdown_signal`]), the RESP2 parser and
//! replies ([`resp`]), the key-value store with its commands ([`redis`]), the axum app's
//! handlers ([`axum_app`]) and the TLS set-up ([`tls`]).
//!
//! The binaries (`src/bin/`): `echo`, `http` (hyper through `corering_net::hyper`), `axum` (an axum
//! app through `corering_net::hyper`, HTTP/1.1, h2c and HTTPS), `http-client`, `redis` and `cp`; and
//! `axum-tokio` (the same axum app on tokio, feature `tokio-peer`). Each prints its flags
//! with `--help`. `scripts/examples_check.sh` drives them with real clients (wrk, h2load,
//! curl, redis-cli, redis-benchmark, cmp).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(
    missing_docs,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

pub mod args;
pub mod axum_app;
pub mod redis;
pub mod resp;
pub mod tls;

use std::future::Future;
use std::io;
use std::pin::pin;

use futures::future::{select, Either};

/// Runs `work` until it ends or the process gets `SIGINT` or `SIGTERM`
/// ([`runtime::signal::shutdown`]), whichever comes first: `Ok(())` on the signal (dropping
/// `work`), else what `work` returned.
///
/// # Errors
/// `work`'s error, or the error of [`runtime::signal::shutdown`].
pub async fn until_ctrl_c<F>(work: F) -> io::Result<()>
where
    F: Future<Output = io::Result<()>>,
{
    let stop = runtime::signal::shutdown()?;
    let work = pin!(work);
    match select(stop, work).await {
        Either::Left(((), _)) => Ok(()),
        Either::Right((res, _)) => res,
    }
}

/// A future that completes when the process gets `SIGINT` (Ctrl-C) or `SIGTERM`. Both
/// handlers are installed by this call, so either signal is caught from here on, even
/// before the future is first polled.
///
/// # Errors
/// If either signal cannot be listened for.
pub fn shutdown_signal() -> io::Result<impl Future<Output = ()>> {
    runtime::signal::shutdown()
}

/// Builds a runtime of `cores` cores and runs `main` on core 0.
///
/// # Errors
/// If the runtime cannot be built (no io_uring, bad core count), or `main`'s error.
pub fn run<F, T>(cores: usize, main: F) -> io::Result<T>
where
    F: Future<Output = io::Result<T>>,
{
    if cores == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "--cores must be at least 1",
        ));
    }
    runtime::Builder::new().cores(cores).build()?.block_on(main)
}
