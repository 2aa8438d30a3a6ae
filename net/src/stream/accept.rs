//! `AcceptStream`: the multishot `IORING_OP_ACCEPT` behind every listener's `incoming()`.
//!
//! One SQE yields a CQE per connection (`io_uring_prep_multishot_accept(3)`, Linux 5.19). The
//! kernel ends a multishot accept by posting a CQE without `IORING_CQE_F_MORE`, on an error
//! or when it cannot go on; the stream then arms a new one on its next poll. Errors:
//! - `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM` (out of fds, table slots or memory): yielded,
//!   then the stream waits 10 ms before it accepts again, so a full fd table is not a busy
//!   loop; the connection waits in the backlog meanwhile (but see direct descriptors).
//! - `EBADF`, `EINVAL`, `ENOTSOCK`, `EOPNOTSUPP`, `ECANCELED` (the listener cannot accept):
//!   yielded, then the stream ends.
//! - anything else (`ECONNABORTED`, `EPERM` from a firewall, ...): yielded, and it goes on.
//!
//! Dropping the stream cancels the SQE; fds of connections accepted meanwhile are closed by
//! the driver. The stream yields bare fds: [`Incoming`](super::Incoming) wraps them in the
//! family's stream type (`TcpStream`, `UnixStream`).
//!
//! # Direct descriptors
//! A stream made with `direct` accepts into the core's fixed-file table
//! (`IORING_FILE_INDEX_ALLOC`) when the core's ring has one and can install regular fds
//! on demand ([`Features::direct_descriptors`](runtime::Features::direct_descriptors) and
//! [`fixed_fd_install`](runtime::Features::fixed_fd_install)), checked each time it arms:
//! each connection is then a direct [`SharedFd`], which no op has to look up in the
//! process's fd table, and which holds no fd. A full table is `ENFILE`, yielded and backed
//! off from as above; unlike `EMFILE` the kernel has already taken that connection off the
//! backlog, and closes it (its peer sees the connection reset). Late CQEs of a dropped
//! stream are closed through the ring.

use std::future::Future;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use runtime::ext::{MultiOp, SharedFd};
use runtime::time::{sleep, Sleep};
use runtime::Features;

use crate::ops::{self, AcceptMulti};

/// How long the stream waits after running out of fds or memory.
const BACKOFF: Duration = Duration::from_millis(10);

/// Accepted connections' fds from one multishot accept (re-armed as needed).
pub(crate) struct AcceptStream {
    listener: SharedFd,
    /// The armed multishot accept; `None` before the first poll and after a final CQE.
    op: Option<MultiOp<AcceptMulti>>,
    /// Accept into the fixed-file table where the core can (see the module documentation).
    want_direct: bool,
    /// Whether `op` accepts into the fixed-file table: its results are indexes.
    direct: bool,
    /// The back-off after `EMFILE` and kin.
    backoff: Option<Sleep>,
    /// A fatal error was yielded.
    done: bool,
}

impl AcceptStream {
    /// A stream accepting on `listener`, into the fixed-file table with `direct` where the
    /// core can (see the module documentation); nothing is submitted until the first poll.
    pub(crate) fn new(listener: SharedFd, direct: bool) -> AcceptStream {
        AcceptStream {
            listener,
            op: None,
            want_direct: direct,
            direct: false,
            backoff: None,
            done: false,
        }
    }

    /// The next accepted connection, or an error (see the module documentation); `None`
    /// once the listener cannot accept.
    pub(crate) fn poll_next_fd(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<SharedFd>>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            if let Some(backoff) = self.backoff.as_mut() {
                ready!(Pin::new(backoff).poll(cx));
                self.backoff = None;
            }
            let op = match &mut self.op {
                Some(op) => op,
                None => {
                    self.direct = self.want_direct && direct_available();
                    self.op
                        .insert(ops::accept_multi(&self.listener, self.direct))
                }
            };
            let Some(cqe) = ready!(op.poll_next_cqe(cx)) else {
                // The final CQE was yielded before: arm a new accept.
                self.op = None;
                continue;
            };
            if !cqe.more() {
                self.op = None;
            }
            let err = match cqe.result {
                Ok(res) if self.direct => {
                    // SAFETY: a successful accept into the table gives a slot of this core's
                    // table (the op is polled on the core that armed it) that nothing else
                    // owns (the driver closes only those of a dropped op).
                    let fd = unsafe { SharedFd::from_fixed(res) };
                    return Poll::Ready(Some(Ok(fd)));
                }
                Ok(res) => {
                    // SAFETY: a successful accept's result is a new fd that nothing else owns
                    // (the driver closes only those of a dropped op).
                    let fd = unsafe { OwnedFd::from_raw_fd(res as i32) };
                    return Poll::Ready(Some(Ok(SharedFd::new(fd))));
                }
                Err(e) => e,
            };
            match err.raw_os_error() {
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                    crate::trace::net_warn!(
                        "accept failed ({err}): backing off {} ms",
                        BACKOFF.as_millis()
                    );
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

    /// Whether the armed accept takes connections into the fixed-file table.
    pub(crate) fn is_direct(&self) -> bool {
        self.op.is_some() && self.direct
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
            .field("direct", &self.is_direct())
            .field("backing_off", &self.backoff.is_some())
            .field("done", &self.done)
            .finish()
    }
}

/// Whether the current core can take connections as direct descriptors: its ring has a
/// fixed-file table and can install a regular fd for one on demand (Linux 6.8).
pub(crate) fn direct_available() -> bool {
    runtime::features().is_some_and(|f: Features| f.direct_descriptors && f.fixed_fd_install)
}
