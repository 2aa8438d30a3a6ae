//! `Incoming`: accepted connections as a `Stream`, from one multishot `IORING_OP_ACCEPT`.
//!
//! One SQE yields a CQE per connection (`io_uring_prep_multishot_accept(3)`, Linux 5.19). The
//! kernel ends a multishot accept by posting a CQE without `IORING_CQE_F_MORE`, on an error
//! or when it cannot go on; the stream then arms a new one on its next poll. Errors:
//! - `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM` (out of fds or memory): yielded, then the stream
//!   waits 10 ms before it accepts again, so a full fd table is not a busy loop; the
//!   connection waits in the backlog meanwhile.
//! - `EBADF`, `EINVAL`, `ENOTSOCK`, `EOPNOTSUPP`, `ECANCELED` (the listener cannot accept):
//!   yielded, then the stream ends.
//! - anything else (`ECONNABORTED`, `EPERM` from a firewall, ...): yielded, and it goes on.
//!
//! Dropping the stream cancels the SQE; fds of connections accepted meanwhile are closed by
//! the driver.

use std::future::Future;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures::stream::{FusedStream, Stream};
use runtime::driver::MultiOp;
use runtime::time::{sleep, Sleep};

use crate::fd::SharedFd;
use crate::ops::{self, AcceptMulti};
use crate::tcp::TcpStream;

/// How long the stream waits after running out of fds or memory.
const BACKOFF: Duration = Duration::from_millis(10);

/// A stream of connections accepted by one multishot accept; made by
/// [`TcpListener::incoming`](crate::TcpListener::incoming).
///
/// It never ends while the listener can accept (see the module documentation for errors).
/// Peers' addresses are not given (the multishot accept has none); use
/// [`TcpStream::peer_addr`].
#[must_use = "streams do nothing unless polled"]
pub struct Incoming {
    listener: SharedFd,
    /// The armed multishot accept; `None` before the first poll and after a final CQE.
    op: Option<MultiOp<AcceptMulti>>,
    /// The back-off after `EMFILE` and kin.
    backoff: Option<Sleep>,
    /// A fatal error was yielded.
    done: bool,
}

impl Incoming {
    pub(crate) fn new(listener: SharedFd) -> Incoming {
        Incoming {
            listener,
            op: None,
            backoff: None,
            done: false,
        }
    }
}

impl std::fmt::Debug for Incoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming")
            .field("listener", &self.listener)
            .field("armed", &self.op.as_ref().is_some_and(MultiOp::is_armed))
            .field("backing_off", &self.backoff.is_some())
            .field("done", &self.done)
            .finish()
    }
}

impl Stream for Incoming {
    type Item = io::Result<TcpStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(backoff) = this.backoff.as_mut() {
                ready!(Pin::new(backoff).poll(cx));
                this.backoff = None;
            }
            let op = this
                .op
                .get_or_insert_with(|| ops::accept_multi(&this.listener));
            let Some(cqe) = ready!(op.poll_next_cqe(cx)) else {
                // The final CQE was yielded before: arm a new accept.
                this.op = None;
                continue;
            };
            if !cqe.more() {
                this.op = None;
            }
            let err = match cqe.result {
                Ok(fd) => {
                    // SAFETY: a successful accept's result is a new fd that nothing else owns
                    // (the driver closes only those of a dropped op).
                    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
                    return Poll::Ready(Some(Ok(TcpStream::from_fd(fd))));
                }
                Err(e) => e,
            };
            match err.raw_os_error() {
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                    this.backoff = Some(sleep(BACKOFF));
                }
                Some(
                    libc::EBADF
                    | libc::EINVAL
                    | libc::ENOTSOCK
                    | libc::EOPNOTSUPP
                    | libc::ECANCELED,
                ) => {
                    this.done = true;
                    this.op = None;
                }
                _ => {}
            }
            return Poll::Ready(Some(Err(err)));
        }
    }
}

impl FusedStream for Incoming {
    fn is_terminated(&self) -> bool {
        self.done
    }
}
