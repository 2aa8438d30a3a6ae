//! `IORING_OP_SEND_ZC` (Linux 6.0): send without copying the buffer into the kernel.
//!
//! See `io_uring_prep_send_zc(3)`. The op posts two CQEs: the send's result (with
//! `IORING_CQE_F_MORE` when a notification follows), then a notification
//! (`IORING_CQE_F_NOTIF`) once the kernel no longer reads the buffer. The buffer belongs to
//! the op until that second CQE, which is why this is a multishot op to the driver. Always
//! with `MSG_NOSIGNAL`.

use std::future::poll_fn;
use std::io;

use io_uring::opcode;
use runtime::buf::IoBuf;
use runtime::ext::{MultiOp, SharedFd};

use crate::ops::MAX_LEN;

/// The data of a zero-copy send: the socket and the buffer the kernel reads in place.
pub(crate) struct SendZc<B> {
    _fd: SharedFd,
    buf: B,
}

/// Sends `buf`'s initialised bytes on `fd` without copying them; gives the buffer back
/// once the kernel's notification says it is free.
pub(crate) async fn send_zc<B: IoBuf>(fd: &SharedFd, buf: B) -> (io::Result<usize>, B) {
    let len = buf.bytes_init().min(MAX_LEN as usize) as u32;
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::SendZc::new(t, buf.stable_ptr(), len)
        .flags(libc::MSG_NOSIGNAL)
        .build());
    let data = SendZc {
        _fd: fd.clone(),
        buf,
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `SendZc` owns until the
    // final CQE (the notification); SEND_ZC may post two CQEs, as `MultiOp` allows.
    let mut op = unsafe { MultiOp::new(data, sqe, false) };
    let mut result = None;
    while let Some(cqe) = poll_fn(|cx| op.poll_next_cqe(cx)).await {
        if io_uring::cqueue::notif(cqe.flags) {
            continue;
        }
        result = Some(cqe.result.map(|n| n as usize));
    }
    let data = op
        .into_data()
        .expect("the final CQE of the send was yielded");
    let res = result.unwrap_or_else(|| Err(io::Error::other("SEND_ZC posted no result")));
    (res, data.buf)
}
