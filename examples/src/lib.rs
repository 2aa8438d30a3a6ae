//! What the example binaries share: flag parsing ([`args`]), stopping on Ctrl-C
//! ([`until_ctrl_c`]), the RESP2 parser and replies ([`resp`]) and the key-value store with
//! its commands ([`redis`]).
//!
//! The binaries (`src/bin/`): `echo`, `http` (hyper through `net::hyper`), `redis` and `cp`.
//! Each prints its flags with `--help`. `scripts/examples_check.sh` drives them with real
//! clients (wrk, curl, redis-cli, redis-benchmark, cmp).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(
    missing_docs,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

pub mod args;
pub mod redis;
pub mod resp;

use std::future::Future;
use std::io;
use std::pin::pin;

use futures::future::{select, Either};

/// Runs `work` until it ends or the process gets `SIGINT`, whichever comes first: `Ok(())`
/// on Ctrl-C (dropping `work`), else what `work` returned.
///
/// # Errors
/// `work`'s error, or the error of [`runtime::signal::ctrl_c`].
pub async fn until_ctrl_c<F>(work: F) -> io::Result<()>
where
    F: Future<Output = io::Result<()>>,
{
    let ctrl_c = pin!(runtime::signal::ctrl_c());
    let work = pin!(work);
    match select(ctrl_c, work).await {
        Either::Left((res, _)) => res,
        Either::Right((res, _)) => res,
    }
}

/// Builds a runtime of `cores` cores and runs `main` on core 0.
///
/// # Errors
/// If the runtime cannot be built (no io_uring, bad core count), or `main`'s error.
pub fn run<F>(cores: usize, main: F) -> io::Result<()>
where
    F: Future<Output = io::Result<()>>,
{
    if cores == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "--cores must be at least 1",
        ));
    }
    runtime::Builder::new().cores(cores).build()?.block_on(main)
}
