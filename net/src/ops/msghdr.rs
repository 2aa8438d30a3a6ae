//! The `msghdr` that `IORING_OP_SENDMSG` and `IORING_OP_RECVMSG` point at. See `sendmsg(2)`.
//!
//! # Invariant
//! A [`MsgHdr`] lives in a `Box` and is never moved out of it while an op holds it: its
//! `msghdr` points at its own `iovec` and address, which keep their addresses only while
//! the box's block does. The `iovec` points into the op's buffer (a stable block the op
//! owns as well). The kernel reads the header, and for a receive writes `msg_namelen`,
//! `msg_flags`, the address and the buffer, until the op's CQE.

use std::mem;
use std::ptr;

use crate::sys::sockaddr::SockAddrBuf;

/// A one-buffer message header, its `iovec` and its address, boxed together.
pub(crate) struct MsgHdr {
    hdr: libc::msghdr,
    iov: libc::iovec,
    addr: SockAddrBuf,
}

impl MsgHdr {
    /// A header for `len` bytes at `base` and the address `addr`: the destination of a send,
    /// or (room from [`SockAddrBuf::empty`]) for the kernel to write the sender's into.
    pub(crate) fn new(base: *mut u8, len: usize, addr: SockAddrBuf) -> Box<MsgHdr> {
        let mut msg = Box::new(MsgHdr {
            // SAFETY: msghdr is plain old data (pointers, lengths, flags); all zeroes is a
            // valid value (no name, no iovecs, no control data).
            hdr: unsafe { mem::zeroed() },
            iov: libc::iovec {
                iov_base: base.cast(),
                iov_len: len,
            },
            addr,
        });
        // The pointers are taken after boxing: they name the box's block (see the invariant).
        msg.hdr.msg_iov = ptr::addr_of_mut!(msg.iov);
        msg.hdr.msg_iovlen = 1;
        msg.hdr.msg_name = msg.addr.as_mut_ptr().cast();
        msg.hdr.msg_namelen = msg.addr.len();
        msg
    }

    /// The header, for the kernel to read (a send).
    pub(crate) fn as_ptr(&self) -> *const libc::msghdr {
        &self.hdr
    }

    /// The header, for the kernel to read and update (a receive).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut libc::msghdr {
        &mut self.hdr
    }

    /// The sender's address after a receive, with the length the kernel reported.
    pub(crate) fn take_addr(self: Box<MsgHdr>) -> SockAddrBuf {
        let MsgHdr { hdr, mut addr, .. } = *self;
        addr.set_len(hdr.msg_namelen);
        addr
    }
}
