//! The socket operations, one small file per opcode, built on the runtime's public op API.
//!
//! Each op's data owns what its SQE points at (buffers, a boxed `sockaddr`) and a
//! [`SharedFd`](crate::fd::SharedFd) clone of the socket (see that module's invariant).
//! Grouped by the kernel that first has them:
//! - 5.5: `ACCEPT`, `CONNECT`
//! - 5.6: `SEND`, `RECV`
//! - 5.11: `SHUTDOWN`
//! - 5.19: multishot `ACCEPT`
//!
//! Still to come here: `RECV` multishot with a provided-buffer ring (6.0), `SEND_ZC` (6.0),
//! `SENDMSG`/`RECVMSG` for UDP and Unix sockets (5.3).

mod accept;
mod connect;
mod recv;
mod send;
mod shutdown;

pub(crate) use accept::{accept, accept_multi, AcceptMulti};
pub(crate) use connect::connect;
pub(crate) use recv::{recv, Recv};
pub(crate) use send::{send, Send};
pub(crate) use shutdown::{shutdown, Shutdown};
