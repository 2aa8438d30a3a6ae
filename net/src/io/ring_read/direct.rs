//! Large reads straight into the caller's memory: [`RingRead::poll_large`].
//!
//! Through the ring, every byte is copied twice: by the kernel into a provided buffer, then
//! by the read out of it. For a small read that second copy is cheap (a few cache lines of
//! a buffer the kernel just wrote). For a large one it is not: an upload's 16 MiB of
//! buffers cycle through the ring cold, and receives sized by the ring (four buffers, 64
//! KiB) make the kernel acknowledge, and run the sender's transmit path, four times as
//! often as one read of hyper's 400 KiB buffer would. Measured on HttpArena's upload
//! profile, the copy out of the ring was 12 to 27% of the server's CPU and the
//! acknowledgements 37% (tokio: no copy, 17%).
//!
//! So while bytes flow in bulk (the last receive took at least [`DIRECT_MIN`] bytes), a
//! read of at least that many with nothing in hand receives the way tokio does: `recv(2)` with `MSG_DONTWAIT` straight into the caller's slice, and when the
//! socket is empty, a one-shot `POLL_ADD` for `POLLIN` (no memory lent to the kernel: the
//! caller's slice is only borrowed for the call) and `recv(2)` again once it fires.
//!
//! A small receive ends the bulk flow: a request/response conversation read with large
//! buffers stays on the ring, where a message costs no system call (a `recv(2)` that finds
//! the socket empty and a `POLL_ADD` would be two more per message).
//!
//! # Order
//! The multishot receive, if armed, is stopped first and every CQE it posted is read
//! before any `recv(2)`: its bytes came first. Once its final CQE is in, no receive of the
//! ring's path is armed until a read goes back to that path, so no byte can be taken by
//! both. A socket whose file is a direct descriptor gets a regular fd installed for it
//! (`IORING_OP_FIXED_FD_INSTALL`, once); where that is refused it stays on the ring's path.

use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use runtime::ext::{raw, SharedFd};

use super::RingRead;

/// The smallest read that receives straight into the caller's memory: what one bundle
/// receive takes with the default 16 KiB buffers.
pub(crate) const DIRECT_MIN: usize = 16 * 1024;

impl RingRead {
    /// A large read with nothing in hand (see the module documentation): `Some(n)` bytes
    /// received into `out` (0 at end of stream), or `None` when bytes are now in hand (the
    /// stopped receive's last buffers), to be copied out as any read does.
    pub(super) fn poll_large(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<Option<usize>>> {
        // A direct descriptor gets a regular fd installed for `recv(2)` (once, kept with the
        // file: a connection that reads large bodies reads many); where that is refused
        // (an older kernel, off the core) the read stays on the ring's path.
        if !self.bulk || self.eof || !self.core || fd.try_as_fd().is_err() {
            return Poll::Ready(Ok(None));
        }
        // Stop the multishot receive now, even with bytes in hand: while it stays armed it
        // takes what arrives into the ring at every turn of the loop, and a reader that
        // finds bytes in hand at every read would never get to read straight.
        if let Some(op) = &mut self.op {
            if !self.stopping {
                self.stopping = true;
                op.cancel();
            }
        }
        if self.has_bytes() {
            return Poll::Ready(Ok(None));
        }
        loop {
            if let Some(op) = &mut self.op {
                // Bytes the stopped receive took come first: read its CQEs to the last one.
                let cqe = ready!(op.poll_next_cqe(cx));
                match self.take_cqe(cqe) {
                    Some(Ok(Some(buf))) => {
                        self.chunk = Some(buf);
                        return Poll::Ready(Ok(None));
                    }
                    Some(Ok(None)) => {
                        self.eof = true;
                        return Poll::Ready(Ok(Some(0)));
                    }
                    Some(Err(e)) => return Poll::Ready(Err(e)),
                    None => {}
                }
                if self.op.is_none() {
                    self.stopping = false;
                }
                continue;
            }
            // Armed when the socket was last found empty: no `recv(2)` until it fires (a
            // task woken for other reasons would otherwise make a system call per poll).
            if let Some(wait) = &mut self.ready {
                let fired = ready!(Pin::new(&mut **wait).poll(cx));
                self.ready = None;
                fired?;
            }
            match recv_now(fd, out) {
                Ok(n) => {
                    self.eof = n == 0;
                    // A small receive: the flow is no longer bulk (a request/response
                    // rhythm), and the next read goes back to the ring.
                    self.bulk = n >= DIRECT_MIN;
                    return Poll::Ready(Ok(Some(n)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready = Some(Box::new(raw::poll_add(fd, libc::POLLIN as u32)));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// One `recv(2)` of the socket into `out`, without waiting.
fn recv_now(fd: &SharedFd, out: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
    // SAFETY: `out` is valid for writes of `out.len()` bytes for the call, and recv(2)
    // writes only bytes it received (initialising them) into it.
    let n = unsafe {
        libc::recv(
            fd.raw(),
            out.as_mut_ptr().cast(),
            out.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
