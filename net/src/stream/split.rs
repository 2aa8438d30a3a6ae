//! The halves of a [`StreamSocket`]: owned ones ([`into_split`](StreamSocket::into_split)),
//! for a reader task and a writer task on one core, and borrowed ones
//! ([`split`](StreamSocket::split)), for both directions in one task.
//!
//! Both halves share the socket's fd (an `Rc`: they are `!Send`, as tasks on one core need
//! not be); it closes when both are dropped. Dropping the write half does not shut the
//! connection down: call [`OwnedWriteHalf::shutdown_socket`] (or `poll_close`) to send end
//! of stream.

use std::error::Error;
use std::fmt;

use runtime::ext::SharedFd;

use super::methods::{addr_methods, read_methods, write_methods};
use super::{Family, StreamSocket};
use crate::io::{ReadState, WriteState};

/// The read half of a [`StreamSocket`], from [`into_split`](StreamSocket::into_split):
/// the stream's read methods and read traits, on the stream's read state.
#[derive(Debug)]
pub struct OwnedReadHalf<F: Family> {
    pub(crate) fd: SharedFd,
    pub(crate) read: ReadState,
    family: std::marker::PhantomData<fn() -> F>,
}

/// The write half of a [`StreamSocket`], from [`into_split`](StreamSocket::into_split):
/// the stream's write methods and `AsyncWrite`, on the stream's write state.
#[derive(Debug)]
pub struct OwnedWriteHalf<F: Family> {
    pub(crate) fd: SharedFd,
    pub(crate) write: WriteState,
    family: std::marker::PhantomData<fn() -> F>,
}

/// The halves given to [`OwnedReadHalf::reunite`] were split from different streams; both
/// are handed back.
#[derive(Debug)]
pub struct ReuniteError<F: Family>(pub OwnedReadHalf<F>, pub OwnedWriteHalf<F>);

impl<F: Family> fmt::Display for ReuniteError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tried to reunite halves of different {} streams",
            F::NAME
        )
    }
}

impl<F: Family> Error for ReuniteError<F> {}

impl<F: Family> OwnedReadHalf<F> {
    pub(crate) fn new(fd: SharedFd, read: ReadState) -> OwnedReadHalf<F> {
        OwnedReadHalf {
            fd,
            read,
            family: std::marker::PhantomData,
        }
    }

    read_methods!();
    addr_methods!();

    /// Puts the halves back together, if they came from one stream.
    // The error hands both halves back, as the stream itself would be: boxing them would
    // cost an allocation for a mistake that is rare.
    #[allow(clippy::result_large_err)]
    pub fn reunite(self, write: OwnedWriteHalf<F>) -> Result<StreamSocket<F>, ReuniteError<F>> {
        if self.fd.same(&write.fd) {
            drop(write.fd);
            Ok(StreamSocket::from_parts(self.fd, self.read, write.write))
        } else {
            Err(ReuniteError(self, write))
        }
    }
}

impl<F: Family> OwnedWriteHalf<F> {
    pub(crate) fn new(fd: SharedFd, write: WriteState) -> OwnedWriteHalf<F> {
        OwnedWriteHalf {
            fd,
            write,
            family: std::marker::PhantomData,
        }
    }

    write_methods!();
    addr_methods!();
}

/// The read half of a [`StreamSocket`] borrowed by [`split`](StreamSocket::split): the
/// futures-io read traits (tokio's under the `tokio-io` feature), on the stream's read
/// state.
#[derive(Debug)]
pub struct ReadHalf<'a, F: Family> {
    pub(crate) fd: &'a SharedFd,
    pub(crate) read: &'a mut ReadState,
    family: std::marker::PhantomData<fn() -> F>,
}

/// The write half of a [`StreamSocket`] borrowed by [`split`](StreamSocket::split): the
/// futures-io `AsyncWrite` (tokio's under the `tokio-io` feature), on the stream's write
/// state.
///
/// `close` (tokio's `shutdown`) shuts the connection's write direction down, as on the
/// stream.
#[derive(Debug)]
pub struct WriteHalf<'a, F: Family> {
    pub(crate) fd: &'a SharedFd,
    pub(crate) write: &'a mut WriteState,
    family: std::marker::PhantomData<fn() -> F>,
}

impl<'a, F: Family> ReadHalf<'a, F> {
    pub(crate) fn new(fd: &'a SharedFd, read: &'a mut ReadState) -> ReadHalf<'a, F> {
        ReadHalf {
            fd,
            read,
            family: std::marker::PhantomData,
        }
    }

    addr_methods!();
}

impl<'a, F: Family> WriteHalf<'a, F> {
    pub(crate) fn new(fd: &'a SharedFd, write: &'a mut WriteState) -> WriteHalf<'a, F> {
        WriteHalf {
            fd,
            write,
            family: std::marker::PhantomData,
        }
    }

    addr_methods!();
}
