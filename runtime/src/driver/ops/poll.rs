//! `IORING_OP_POLL_ADD`: wait until an fd is ready, the io_uring way of `poll(2)`.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types};

use crate::driver::{Completable, Cqe, Op};

/// The data of a poll request: none (the fd and the event mask are in the SQE).
#[derive(Debug)]
pub struct PollAdd;

impl Completable for PollAdd {
    type Output = io::Result<u32>;

    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// Waits until `fd` has one of `events` (`libc::POLLIN`, `POLLOUT`, ...) and resolves to
/// the events that are set (`revents`), a one-shot `IORING_OP_POLL_ADD`.
///
/// A bad or closed fd gives `EBADF` as an `io::Error`. As with [`read`](crate::read), the
/// op names `fd` by number: keep it open until the op's final CQE.
///
/// ```
/// use std::os::fd::AsRawFd;
///
/// let rt = runtime::Runtime::new().unwrap();
/// let (reader, mut writer) = std::io::pipe().unwrap();
/// rt.block_on(async {
///     std::io::Write::write_all(&mut writer, b"x").unwrap();
///     let revents = runtime::poll_add(reader.as_raw_fd(), libc::POLLIN as u32).await.unwrap();
///     assert_ne!(revents & libc::POLLIN as u32, 0);
/// });
/// ```
pub fn poll_add(fd: RawFd, events: u32) -> Op<PollAdd> {
    let sqe = opcode::PollAdd::new(types::Fd(fd), events).build();
    // SAFETY: a poll request points at no memory.
    unsafe { Op::new(PollAdd, sqe) }
}
