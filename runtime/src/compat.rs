//! Old paths of the extension API, kept compiling (and hidden from the docs) while the
//! crates that use them switch to [`runtime::ext`](crate::ext). Delete this file, and the
//! `#[doc(hidden)]` aliases that point here or at `ext`, once nothing uses them.
//!
//! The raw ops that now name their file by [`SharedFd`](crate::ext::SharedFd) keep their
//! old fd-number form here, with their old data types (which hold no fd, so a future
//! awaiting one stays `Send`). Such an op keeps no fd alive: its caller must keep the fd
//! open until the op's final CQE (if the future is dropped, until that CQE is reaped), or
//! the kernel may act on whatever file reuses the number.

use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use io_uring::{opcode, types};

use crate::buf::{IoBuf, IoBufMut};
use crate::ext::{raw, Completable, Cqe, MultiOp, Op};

/// The data of an fd-number read: the buffer the kernel writes into.
#[derive(Debug)]
pub struct Read<B> {
    buf: B,
}

impl<B: IoBufMut> Completable for Read<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        let mut buf = self.buf;
        let res = cqe.result.map(|n| {
            // SAFETY: the kernel wrote `n` bytes at the start of the buffer.
            unsafe { buf.set_init(n as usize) };
            n as usize
        });
        (res, buf)
    }
}

/// Old form of [`ext::raw::read`](crate::ext::raw::read), naming `fd` by number.
pub fn read<B: IoBufMut>(fd: RawFd, mut buf: B, offset: u64) -> Op<Read<B>> {
    let len = buf.bytes_total().min(u32::MAX as usize) as u32;
    let sqe = opcode::Read::new(types::Fd(fd), buf.stable_mut_ptr(), len)
        .offset(offset)
        .build();
    // SAFETY: the SQE points only into `buf`'s stable block, which `Read` owns.
    unsafe { Op::new(Read { buf }, sqe) }
}

/// The data of an fd-number write: the buffer the kernel reads from.
#[derive(Debug)]
pub struct Write<B> {
    buf: B,
}

impl<B: IoBuf> Completable for Write<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

/// Old form of [`ext::raw::write`](crate::ext::raw::write), naming `fd` by number.
pub fn write<B: IoBuf>(fd: RawFd, buf: B, offset: u64) -> Op<Write<B>> {
    let len = buf.bytes_init().min(u32::MAX as usize) as u32;
    let sqe = opcode::Write::new(types::Fd(fd), buf.stable_ptr(), len)
        .offset(offset)
        .build();
    // SAFETY: the SQE points only into `buf`'s stable block, which `Write` owns.
    unsafe { Op::new(Write { buf }, sqe) }
}

/// The data of an fd-number poll request: none.
#[derive(Debug)]
pub struct PollAdd;

impl Completable for PollAdd {
    type Output = io::Result<u32>;

    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// Old form of [`ext::raw::poll_add`](crate::ext::raw::poll_add), naming `fd` by number.
pub fn poll_add(fd: RawFd, events: u32) -> Op<PollAdd> {
    let sqe = opcode::PollAdd::new(types::Fd(fd), events).build();
    // SAFETY: a poll request points at no memory.
    unsafe { Op::new(PollAdd, sqe) }
}

/// The stream the fd-number [`poll_multi`] returns (as
/// [`ext::raw::PollStream`](crate::ext::raw::PollStream)).
pub struct PollStream {
    op: MultiOp<()>,
}

impl std::fmt::Debug for PollStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollStream")
            .field("armed", &self.op.is_armed())
            .finish()
    }
}

/// Old form of [`ext::raw::poll_multi`](crate::ext::raw::poll_multi), naming `fd` by
/// number.
pub fn poll_multi(fd: RawFd, events: u32) -> PollStream {
    let sqe = opcode::PollAdd::new(types::Fd(fd), events)
        .multi(true)
        .build();
    // SAFETY: a poll request points at no memory; POLL_ADD with IORING_POLL_ADD_MULTI is a
    // multishot opcode.
    let op = unsafe { MultiOp::new((), sqe, false) };
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

/// The data of an fd-number splice: none.
#[derive(Debug)]
pub struct Splice;

impl Completable for Splice {
    type Output = io::Result<usize>;

    fn complete(self, cqe: Cqe) -> io::Result<usize> {
        cqe.result.map(|n| n as usize)
    }
}

/// Old form of [`ext::raw::splice`](crate::ext::raw::splice), naming both fds by number.
pub fn splice(
    fd_in: RawFd,
    off_in: Option<u64>,
    fd_out: RawFd,
    off_out: Option<u64>,
    len: u32,
    flags: u32,
) -> Op<Splice> {
    let sqe = opcode::Splice::new(
        types::Fd(fd_in),
        raw::splice_offset(off_in),
        types::Fd(fd_out),
        raw::splice_offset(off_out),
        len,
    )
    .flags(flags)
    .build();
    // SAFETY: a splice request points at no memory.
    unsafe { Op::new(Splice, sqe) }
}

/// The old `runtime::driver::ops` module: now [`ext::raw`](crate::ext::raw), with the
/// fd-number forms above.
pub mod driver_ops {
    pub use super::{
        poll_add, poll_multi, read, splice, write, PollAdd, PollStream, Read, Splice, Write,
    };
    pub use crate::ext::raw::{
        close, nop, readv_at, writev_at, Close, Nop, NopSqe, ReadvAt, WritevAt,
    };
}
