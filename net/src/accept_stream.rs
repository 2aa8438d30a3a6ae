//! `AcceptStream`: the multishot `IORING_OP_ACCEPT` behind every listener's `incoming()`.
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
//! the driver. The stream yields bare fds: each listener's public `Incoming` wraps them in
//! its stream type (`TcpStream`, `UnixStream`).

use std::future::Future;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use runtime::driver::MultiOp;
use runtime::time::{sleep, Sleep};

use crate::fd::SharedFd;
use crate::ops::{self, AcceptMulti};

/// How long the stream waits after running out of fds or memory.
const BACKOFF: Duration = Duration::from_millis(10);

/// Accepted connections' fds from one multishot accept (re-armed as needed).
pub(crate) struct AcceptStream {
    listener: SharedFd,
    /// The armed multishot accept; `None` before the first poll and after a final CQE.
    op: Option<MultiOp<AcceptMulti>>,
    /// The back-off after `EMFILE` and kin.
    backoff: Option<Sleep>,
    /// A fatal error was yielded.
    done: bool,
}

impl AcceptStream {
    /// A stream accepting on `listener`; nothing is submitted until the first poll.
    pub(crate) fn new(listener: SharedFd) -> AcceptStream {
        AcceptStream {
            listener,
            op: None,
            backoff: None,
            done: false,
        }
    }

    /// The next accepted connection, or an error (see the module documentation); `None`
    /// once the listener cannot accept.
    pub(crate) fn poll_next_fd(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<OwnedFd>>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            if let Some(backoff) = self.backoff.as_mut() {
                ready!(Pin::new(backoff).poll(cx));
                self.backoff = None;
            }
            let op = self
                .op
                .get_or_insert_with(|| ops::accept_multi(&self.listener));
            let Some(cqe) = ready!(op.poll_next_cqe(cx)) else {
                // The final CQE was yielded before: arm a new accept.
                self.op = None;
                continue;
            };
            if !cqe.more() {
                self.op = None;
            }
            let err = match cqe.result {
                Ok(fd) => {
                    // SAFETY: a successful accept's result is a new fd that nothing else owns
                    // (the driver closes only those of a dropped op).
                    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
                    return Poll::Ready(Some(Ok(fd)));
                }
                Err(e) => e,
            };
            match err.raw_os_error() {
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                    self.backoff = Some(sleep(BACKOFF));
                }
                Some(
                    libc::EBADF
                    | libc::EINVAL
                    | libc::ENOTSOCK
                    | libc::EOPNOTSUPP
                    | libc::ECANCELED,
                ) => {
                    self.done = true;
                    self.op = None;
                }
                _ => {}
            }
            return Poll::Ready(Some(Err(err)));
        }
    }

    /// Whether a fatal error ended the stream.
    pub(crate) fn is_terminated(&self) -> bool {
        self.done
    }
}

impl std::fmt::Debug for AcceptStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptStream")
            .field("listener", &self.listener)
            .field("armed", &self.op.as_ref().is_some_and(MultiOp::is_armed))
            .field("backing_off", &self.backoff.is_some())
            .field("done", &self.done)
            .finish()
    }
}
