//! The extension API: for crates that build their own ops on this runtime. `corering-net`
//! and `corering-fs` are its users; an application does not need it (it uses those crates,
//! and the runtime's root: `spawn`, `time`, `sync`, `buf`, ...).
//!
//! Everything a crate author reaches for is here, and only here:
//!
//! - **The op API**, the one seam between the ring and everything built on it: an op's
//!   data implements [`Completable`] (it owns what the kernel reads or writes, and turns
//!   the CQE into the output), and [`Op::new`] (one SQE, one CQE), [`MultiOp::new`]
//!   (multishot: CQEs until one comes without `IORING_CQE_F_MORE`) or [`Link::new`] (ops
//!   chained with `IOSQE_IO_LINK`) make it a future. SQEs are built with the
//!   [`io_uring`] crate (re-exported, so the version matches the runtime's), plus
//!   [`sqe_with_optlen`] and [`sqe_with_ioprio_bits`] for the fields its builders lack.
//!   The op lifecycle keeps the safety rule: memory the kernel may touch is never freed or
//!   moved before the op's final CQE, even if the future is dropped (ARCHITECTURE.md, "The
//!   op lifecycle").
//! - **Files**: [`SharedFd`], the fd an op keeps a clone of in its data so the file is
//!   closed only after the op's final CQE (a regular fd or a direct descriptor), and
//!   [`fd_sqe!`] to build an SQE for either kind.
//! - **Provided-buffer rings**: [`grow_core_ring`] and [`BufRingExt`], what a reader of the
//!   core's receive ring ([`buf::core_ring`](crate::buf::core_ring)) reports and waits on.
//! - **The I/O core** ([`io`]): read-ahead and write-behind over owned-buffer ops, and
//!   [`impl_async_io!`] for the futures-io and tokio traits.
//! - **Raw ops** ([`raw`]): one opcode each (read, write, close, nop, poll, splice,
//!   vectored), built on the op API like any other crate's.
//! - **Errors**: [`error_context`] for setup and path errors.
//!
//! # Custom ops on the epoll backend
//!
//! Where io_uring is refused (a container's seccomp profile, `kernel.io_uring_disabled`, a
//! kernel before 5.19) or [`Backend::Epoll`](crate::Backend) / `RUNTIME_BACKEND=epoll` asks
//! for it, a core runs the readiness backend, which has no kernel ring: it reads each SQE
//! back and carries it out itself, with the system call the opcode stands for, by the
//! fields the opcode's kernel `*_prep` function reads. So an op built here runs unchanged
//! on both backends if its opcode is one of these, built as the io-uring crate's builder
//! builds it (ARCHITECTURE.md, "The readiness backend", says how each is carried out):
//!
//! | how | opcodes |
//! |---|---|
//! | at once on the core | `NOP` (with `IORING_NOP_INJECT_RESULT`), `CLOSE`, `SHUTDOWN`, `ASYNC_CANCEL` |
//! | non-blocking, then on epoll readiness (in order per fd and side) | `RECV` (multishot, provided buffers, `optlen` limit), `SEND`, `SEND_ZC` (as a plain send), `RECVMSG`, `SENDMSG`, `READ`, `WRITE`, `READV`, `WRITEV`, `READ_MULTISHOT` (provided buffers), `ACCEPT` (multishot), `CONNECT`, `WAITID` on a pidfd |
//! | `poll(2)`, then readiness | `POLL_ADD` (multishot) |
//! | the blocking pool | regular files' reads and writes, `FSYNC`, `SYNC_FILE_RANGE`, `FALLOCATE`, `FTRUNCATE`, `OPENAT`, `OPENAT2`, `STATX`, `UNLINKAT`, `RENAMEAT`, `MKDIRAT`, `SYMLINKAT`, `LINKAT`, `SPLICE`, `WAITID` on another id type |
//!
//! Linked chains ([`Link`]), `IOSQE_CQE_SKIP_SUCCESS` and cancellation behave as the
//! kernel's. Every other opcode (`MSG_RING`, `URING_CMD`, `FIXED_FD_INSTALL`, `SOCKET`,
//! `TIMEOUT`, `READ_FIXED`, futexes, xattrs, ...) is refused: its CQE says `EINVAL` (as a
//! kernel without the op answers; a chain behind it is cancelled), and the op's
//! [`Cqe::result`] is an [`Unsupported`](std::io::ErrorKind::Unsupported) error that names
//! it: "opcode 40 (MSG_RING) is not carried out by the readiness (epoll) backend ...". Some
//! forms of the opcodes above are refused too, with the kernel's own errno: a direct
//! descriptor (`IOSQE_FIXED_FILE`, `EBADF`), an accept or open into the fixed-file table,
//! a provided buffer for an op other than a receive or read (`EINVAL`). Check
//! [`Features::backend`](crate::Features::backend) (from
//! [`Runtime::features`](crate::Runtime::features)) to take another path there.
//!
//! # Examples
//!
//! A new op: `IORING_OP_FSYNC` on a [`SharedFd`], awaited like any other.
//!
//! ```
//! use std::io;
//! use runtime::ext::io_uring::opcode;
//! use runtime::ext::{fd_sqe, Completable, Cqe, Op, SharedFd};
//!
//! /// The op's data: the file, kept open until the final CQE.
//! struct Fsync {
//!     _fd: SharedFd,
//! }
//!
//! impl Completable for Fsync {
//!     type Output = io::Result<()>;
//!
//!     fn complete(self, cqe: Cqe) -> io::Result<()> {
//!         cqe.result.map(|_| ())
//!     }
//! }
//!
//! fn fsync(fd: &SharedFd) -> Op<Fsync> {
//!     let sqe = fd_sqe!(fd, |t| opcode::Fsync::new(t).build());
//!     // SAFETY: an fsync points at no memory; the data holds the file.
//!     unsafe { Op::new(Fsync { _fd: fd.clone() }, sqe) }
//! }
//!
//! let rt = runtime::Runtime::new()?;
//! let file = std::fs::File::create(std::env::temp_dir().join("ext-fsync-doc"))?;
//! let fd = SharedFd::new(file.into());
//! rt.block_on(fsync(&fd))?;
//! # Ok::<(), io::Error>(())
//! ```

pub mod io;
pub mod raw;
#[doc(hidden)]
pub mod testing;

/// The io-uring crate (0.7) whose SQE builders ([`io_uring::opcode`]) and entries
/// ([`io_uring::squeue::Entry`]) the op API takes: use this one, so the versions match.
pub use io_uring;

pub use crate::driver::bufring::{grow_core_ring, BufRingExt};
pub use crate::driver::op::{
    sqe_with_ioprio_bits, sqe_with_optlen, Completable, Cqe, Link, MultiOp, Op, Prep, Release,
};
pub use crate::error::context as error_context;
pub use crate::executor::{cpu_contention, cpu_demand, CoreOwner};
pub use crate::fd::{FdTarget, SharedFd};
#[doc(inline)]
pub use crate::{fd_sqe, impl_async_io};
