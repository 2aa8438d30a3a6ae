//! The socket operations, one small file per opcode, built on the runtime's public op API.
//!
//! Each op's data owns what its SQE points at (buffers, a boxed `sockaddr`) and a
//! [`SharedFd`](runtime::ext::SharedFd) clone of the socket (see that module's invariant).
//! Grouped by the kernel that first has them:
//! - 5.1: `READV`
//! - 5.3: `SENDMSG`, `RECVMSG` (datagrams with an address: UDP, Unix; `SENDMSG` also for
//!   vectored stream writes, which need `MSG_NOSIGNAL`)
//! - 5.5: `ACCEPT`, `CONNECT`
//! - 5.6: `SEND`, `RECV`
//! - 5.11: `SHUTDOWN`
//! - 5.19: multishot `ACCEPT`; accepts into the fixed-file table (direct descriptors)
//! - 6.0: multishot `RECV` with a provided-buffer ring
//!
//! - 6.0: `SEND_ZC`

/// The most bytes one send or recv is given: the kernel's `MAX_RW_COUNT` (`INT_MAX`
/// rounded down to a page), what `read(2)` and `write(2)` cap a count at. io_uring's
/// `IORING_OP_SEND` and `IORING_OP_RECV` reject a length above `INT_MAX` with `EINVAL`
/// instead of capping it, so a longer buffer is offered in part: the count is short, as a
/// stream transfer's may be.
pub(crate) const MAX_LEN: u32 = 0x7FFF_F000;

mod accept;
mod connect;
mod msghdr;
mod recv;
mod recv_multi;
mod recvmsg;
mod send;
mod send_zc;
mod sendmsg;
mod shutdown;

pub(crate) use accept::{accept, accept_direct, accept_multi, AcceptMulti};
pub(crate) use connect::{connect, connect_to};
pub(crate) use recv::{recv, Recv};
pub(crate) use recv_multi::{recv_multi_limited, RecvMulti};
pub(crate) use recvmsg::recv_msg;
pub(crate) use runtime::ext::raw::readv_at;
pub(crate) use send::{send, send_all};
pub(crate) use send_zc::send_zc;
pub(crate) use sendmsg::{send_msg, send_msg_vectored};
pub(crate) use shutdown::{shutdown, Shutdown};
