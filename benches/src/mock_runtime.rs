//! Temporary stub of the announced `runtime` API, only to type-check the runtime contestants
//! (feature `mock-runtime`) before the real crate lands. Every body panics; never run it.

#![allow(dead_code)]

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::ops::Sub;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Stub builder.
pub struct Builder;
/// Stub runtime.
pub struct Runtime;
/// Stub flags.
pub struct RingFlags;
/// Stub join error.
#[derive(Debug)]
pub struct JoinError;
/// Stub join handle.
pub struct JoinHandle<T>(PhantomData<T>);

/// Stub counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// SQEs.
    pub sqes_submitted: u64,
    /// Enters.
    pub enters: u64,
    /// CQEs.
    pub cqes_reaped: u64,
    /// Polls.
    pub tasks_polled: u64,
    /// Remote wakes.
    pub remote_wakes: u64,
}

impl Sub for Stats {
    type Output = Stats;
    fn sub(self, _: Stats) -> Stats {
        unimplemented!()
    }
}

impl fmt::Display for RingFlags {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        unimplemented!()
    }
}

impl Builder {
    /// Stub.
    pub fn new() -> Builder {
        unimplemented!()
    }
    /// Stub.
    pub fn entries(&mut self, _: u32) -> &mut Builder {
        unimplemented!()
    }
    /// Stub.
    pub fn build(&mut self) -> io::Result<Runtime> {
        unimplemented!()
    }
}

impl Runtime {
    /// Stub.
    pub fn block_on<F: Future>(&self, _: F) -> F::Output {
        unimplemented!()
    }
    /// Stub.
    pub fn flags(&self) -> RingFlags {
        unimplemented!()
    }
    /// Stub.
    pub fn stats(&self) -> Stats {
        unimplemented!()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        unimplemented!()
    }
}

/// Stub.
pub fn stats() -> Option<Stats> {
    unimplemented!()
}

/// Stub.
pub fn nop() -> impl Future<Output = io::Result<()>> {
    std::future::pending()
}

/// Stub.
pub fn spawn_local<F: Future + 'static>(_: F) -> JoinHandle<F::Output> {
    unimplemented!()
}
