//! `IORING_OP_POLL_ADD`: wait until an fd is ready, the io_uring way of `poll(2)`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use io_uring::opcode;

use crate::ext::{Completable, Cqe, MultiOp, Op, SharedFd};

/// The data of a poll request: the file it waits on (the event mask is in the SQE).
#[derive(Debug)]
pub struct PollAdd {
    /// Keeps the file open until the final CQE.
    _fd: SharedFd,
}

impl Completable for PollAdd {
    type Output = io::Result<u32>;

    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// Waits until `fd` has one of `events` (`libc::POLLIN`, `POLLOUT`, ...) and resolves to
/// the events that are set (`revents`), a one-shot `IORING_OP_POLL_ADD`.
///
/// The op keeps a clone of `fd` until its final CQE.
///
/// ```
/// use runtime::ext::{raw, SharedFd};
///
/// let rt = runtime::Runtime::new()?;
/// let (reader, mut writer) = std::io::pipe()?;
/// let reader = SharedFd::new(reader.into());
/// rt.block_on(async {
///     std::io::Write::write_all(&mut writer, b"x")?;
///     let revents = raw::poll_add(&reader, libc::POLLIN as u32).await?;
///     assert_ne!(revents & libc::POLLIN as u32, 0);
///     Ok::<(), std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn poll_add(fd: &SharedFd, events: u32) -> Op<PollAdd> {
    let sqe = crate::fd_sqe!(fd, |t| opcode::PollAdd::new(t, events).build());
    // SAFETY: a poll request points at no memory; the data holds the file.
    unsafe { Op::new(PollAdd { _fd: fd.clone() }, sqe) }
}

/// The stream [`poll_multi`] returns: one item per readiness event, until the kernel ends
/// the request.
///
/// Dropping it while armed hands the request to the driver, which cancels it and keeps its
/// slot until the final CQE.
pub struct PollStream {
    /// The data keeps the file open until the final CQE.
    op: MultiOp<SharedFd>,
}

impl std::fmt::Debug for PollStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollStream")
            .field("armed", &self.op.is_armed())
            .finish()
    }
}

/// Waits for `fd` to have one of `events`, again and again: one multishot
/// `IORING_OP_POLL_ADD` (`IORING_POLL_ADD_MULTI`, Linux 5.13) armed once, yielding the
/// events set (`revents`) each time the fd's wait queue is woken with one of them.
///
/// Compared with a [`poll_add`] per wait, the request is submitted once, so a loop that
/// waits on the same fd over and over pays one SQE in total, the way an epoll registration
/// does. Drain the fd (read what is there) before the next wait, as with edge-triggered
/// epoll: an event already consumed is not reported again.
///
/// The stream ends (`None`) after [`PollStream::cancel`], or after an item the kernel sent
/// as the last one (an error such as `EBADF`, or the request stopped for lack of CQ room),
/// in which case call `poll_multi` again to re-arm. As with [`poll_add`], the op keeps a
/// clone of `fd` until its final CQE.
///
/// ```
/// use futures::StreamExt;
/// use std::io::{Read, Write};
/// use runtime::ext::{raw, SharedFd};
///
/// let rt = runtime::Runtime::new()?;
/// let (mut reader, mut writer) = std::io::pipe()?;
/// let watched = SharedFd::new(reader.try_clone()?.into());
/// rt.block_on(async {
///     let mut ready = raw::poll_multi(&watched, libc::POLLIN as u32);
///     for _ in 0..3 {
///         writer.write_all(b"x")?;
///         let revents = ready.next().await.unwrap()?;
///         assert_ne!(revents & libc::POLLIN as u32, 0);
///         reader.read_exact(&mut [0u8; 1])?;
///     }
///     Ok::<(), std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn poll_multi(fd: &SharedFd, events: u32) -> PollStream {
    let sqe = crate::fd_sqe!(fd, |t| opcode::PollAdd::new(t, events).multi(true).build());
    // SAFETY: a poll request points at no memory; POLL_ADD with IORING_POLL_ADD_MULTI is a
    // multishot opcode; the data holds the file.
    let op = unsafe { MultiOp::new(fd.clone(), sqe, false) };
    PollStream { op }
}

impl PollStream {
    /// Stops the request: the events already posted are still yielded, then the stream ends.
    pub fn cancel(&mut self) {
        self.op.cancel();
    }
}

impl Stream for PollStream {
    type Item = io::Result<u32>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<u32>>> {
        let Some(cqe) = std::task::ready!(self.get_mut().op.poll_next_cqe(cx)) else {
            return Poll::Ready(None);
        };
        match cqe.result {
            // The final CQE of a cancelled request carries no event: the stream just ends.
            Err(e) if !cqe.more() && e.raw_os_error() == Some(libc::ECANCELED) => Poll::Ready(None),
            result => Poll::Ready(Some(result)),
        }
    }
}
