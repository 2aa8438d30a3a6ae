//! The SQEs the ops build, read back field by field: the readiness backend carries them out.

use io_uring::{opcode, squeue};

/// `struct io_uring_sqe` (include/uapi/linux/io_uring.h), the fields by the names the
/// readiness backend reads them under (each opcode gives the unions its own meaning: see
/// [`Class::of`] and `exec`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawSqe {
    pub(crate) opcode: u8,
    pub(crate) flags: u8,
    pub(crate) ioprio: u16,
    pub(crate) fd: i32,
    /// `off` / `addr2`.
    pub(crate) off: u64,
    /// `addr` / `splice_off_in`.
    pub(crate) addr: u64,
    pub(crate) len: u32,
    /// `rw_flags`, `msg_flags`, `poll32_events`, `accept_flags`, `open_flags`, ...
    pub(crate) op_flags: u32,
    pub(crate) user_data: u64,
    pub(crate) buf_index: u16,
    pub(crate) personality: u16,
    /// `splice_fd_in` / `file_index` / `addr_len`.
    pub(crate) file_index: u32,
    pub(crate) addr3: u64,
    pub(crate) pad: u64,
}

const _: () = assert!(std::mem::size_of::<RawSqe>() == 64);

impl RawSqe {
    /// The fields of `sqe`.
    pub(crate) fn of(sqe: squeue::Entry) -> RawSqe {
        // SAFETY: `squeue::Entry` is `#[repr(C)]` over the kernel's 64-byte `io_uring_sqe`
        // (sizes checked in sq.rs and above), which `RawSqe` mirrors field for field; every
        // field is a plain integer, valid for any bits.
        unsafe { std::mem::transmute::<squeue::Entry, RawSqe>(sqe) }
    }

    /// `IOSQE_IO_LINK` or `IOSQE_IO_HARDLINK`: the next SQE runs after this one.
    pub(crate) fn links(&self) -> bool {
        self.flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK) != 0
    }

    /// Whether a failure of this op leaves its chain's rest to run (`IOSQE_IO_HARDLINK`).
    pub(crate) fn hard_link(&self) -> bool {
        self.flags & IOSQE_IO_HARDLINK != 0
    }

    /// `IOSQE_CQE_SKIP_SUCCESS`: no CQE unless it fails.
    pub(crate) fn skip_success(&self) -> bool {
        self.flags & IOSQE_CQE_SKIP_SUCCESS != 0
    }
}

pub(crate) const IOSQE_FIXED_FILE: u8 = 1 << 0;
pub(crate) const IOSQE_IO_LINK: u8 = 1 << 2;
pub(crate) const IOSQE_IO_HARDLINK: u8 = 1 << 3;
pub(crate) const IOSQE_BUFFER_SELECT: u8 = 1 << 5;
pub(crate) const IOSQE_CQE_SKIP_SUCCESS: u8 = 1 << 6;

/// `IORING_ACCEPT_MULTISHOT`, in `ioprio`.
pub(crate) const IORING_ACCEPT_MULTISHOT: u16 = 1 << 0;
/// `IORING_RECV_MULTISHOT`, in `ioprio`.
pub(crate) const IORING_RECV_MULTISHOT: u16 = 1 << 1;
/// `IORING_POLL_ADD_MULTI`, in `len`.
pub(crate) const IORING_POLL_ADD_MULTI: u32 = 1 << 0;
/// `IORING_NOP_INJECT_RESULT`, in `op_flags`: the NOP completes with `len`.
pub(crate) const IORING_NOP_INJECT_RESULT: u32 = 1 << 0;
/// `IORING_FSYNC_DATASYNC`.
pub(crate) const IORING_FSYNC_DATASYNC: u32 = 1 << 0;
/// `SPLICE_F_FD_IN_FIXED`.
pub(crate) const SPLICE_F_FD_IN_FIXED: u32 = 1 << 31;
/// `IORING_CQE_F_MORE`: more CQEs follow for this op.
pub(crate) const IORING_CQE_F_MORE: u32 = 1 << 1;

/// Which side of an fd's readiness an op waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
}

/// How the readiness backend carries out an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Done at once on the core: no fd, or a call that never blocks (`NOP`, `CLOSE`,
    /// `SHUTDOWN`, `ASYNC_CANCEL`).
    Inline,
    /// A non-blocking call on an fd that may answer `EAGAIN`: tried, then retried when
    /// epoll says the fd is ready on that side. On a regular file (epoll refuses it) it
    /// goes to the blocking pool instead.
    Ready(Dir),
    /// A poll of the fd's readiness itself (`POLL_ADD`).
    Poll,
    /// A file or path op with no readiness form: the blocking pool.
    Pool,
    /// An io_uring-only op (`MSG_RING`, `FIXED_FD_INSTALL`, `URING_CMD`, multishot reads
    /// from provided buffers, ...): `EINVAL`, as a kernel without it answers.
    Unsupported,
}

impl Class {
    /// How opcode `op` is carried out.
    pub(crate) fn of(op: u8) -> Class {
        use Class::*;
        match op {
            opcode::Nop::CODE | opcode::Close::CODE | opcode::Shutdown::CODE => Inline,
            opcode::AsyncCancel::CODE => Inline,
            opcode::Recv::CODE
            | opcode::RecvMsg::CODE
            | opcode::Read::CODE
            | opcode::Readv::CODE
            | opcode::ReadMulti::CODE
            | opcode::Accept::CODE
            | opcode::WaitId::CODE => Ready(Dir::Read),
            opcode::Send::CODE
            | opcode::SendMsg::CODE
            | opcode::SendZc::CODE
            | opcode::Write::CODE
            | opcode::Writev::CODE
            | opcode::Connect::CODE => Ready(Dir::Write),
            opcode::PollAdd::CODE => Poll,
            opcode::Fsync::CODE
            | opcode::SyncFileRange::CODE
            | opcode::Fallocate::CODE
            | opcode::Ftruncate::CODE
            | opcode::OpenAt::CODE
            | opcode::OpenAt2::CODE
            | opcode::Statx::CODE
            | opcode::UnlinkAt::CODE
            | opcode::RenameAt::CODE
            | opcode::MkDirAt::CODE
            | opcode::SymlinkAt::CODE
            | opcode::LinkAt::CODE
            | opcode::Splice::CODE => Pool,
            _ => Unsupported,
        }
    }
}
