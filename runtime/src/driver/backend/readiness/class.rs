//! Which opcodes the readiness backend carries out, and how ([`Class`]); the names of all
//! of them, for the error that an op it refuses gets ([`refused`]).

use std::io;

use io_uring::opcode;

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

/// The `IORING_OP_*` names without the prefix, by opcode (include/uapi/linux/io_uring.h,
/// to Linux 6.16).
const NAMES: [&str; 63] = [
    "NOP",
    "READV",
    "WRITEV",
    "FSYNC",
    "READ_FIXED",
    "WRITE_FIXED",
    "POLL_ADD",
    "POLL_REMOVE",
    "SYNC_FILE_RANGE",
    "SENDMSG",
    "RECVMSG",
    "TIMEOUT",
    "TIMEOUT_REMOVE",
    "ACCEPT",
    "ASYNC_CANCEL",
    "LINK_TIMEOUT",
    "CONNECT",
    "FALLOCATE",
    "OPENAT",
    "CLOSE",
    "FILES_UPDATE",
    "STATX",
    "READ",
    "WRITE",
    "FADVISE",
    "MADVISE",
    "SEND",
    "RECV",
    "OPENAT2",
    "EPOLL_CTL",
    "SPLICE",
    "PROVIDE_BUFFERS",
    "REMOVE_BUFFERS",
    "TEE",
    "SHUTDOWN",
    "RENAMEAT",
    "UNLINKAT",
    "MKDIRAT",
    "SYMLINKAT",
    "LINKAT",
    "MSG_RING",
    "FSETXATTR",
    "SETXATTR",
    "FGETXATTR",
    "GETXATTR",
    "SOCKET",
    "URING_CMD",
    "SEND_ZC",
    "SENDMSG_ZC",
    "READ_MULTISHOT",
    "WAITID",
    "FUTEX_WAIT",
    "FUTEX_WAKE",
    "FUTEX_WAITV",
    "FIXED_FD_INSTALL",
    "FTRUNCATE",
    "BIND",
    "LISTEN",
    "RECV_ZC",
    "EPOLL_WAIT",
    "READV_FIXED",
    "WRITEV_FIXED",
    "PIPE",
];

/// `IORING_OP_<name>` of opcode `op`, or `unknown` past the table.
pub(crate) fn name(op: u8) -> &'static str {
    NAMES.get(usize::from(op)).copied().unwrap_or("unknown")
}

/// A CQE flag the kernel does not define (its `IORING_CQE_F_*` are bits 0-5 and 15): the
/// readiness backend sets it, with the opcode in the upper 16 bits (where a buffer id goes
/// with `IORING_CQE_F_BUFFER`, never set with it), on the `-EINVAL` CQE of an op whose
/// opcode it does not carry out, so that the op's error can name the opcode
/// ([`refused_error`]).
pub(crate) const CQE_F_REFUSED: u32 = 1 << 14;

/// The CQE flags of a refused opcode `op` (see [`CQE_F_REFUSED`]).
pub(crate) fn refused_flags(op: u8) -> u32 {
    CQE_F_REFUSED | (u32::from(op) << 16)
}

/// The opcode a CQE's `res` and `flags` say the readiness backend refused, if they say so.
/// Cold: read only for an `EINVAL` result.
#[inline]
pub(crate) fn refused(res: i32, flags: u32) -> Option<u8> {
    const IORING_CQE_F_BUFFER: u32 = 1;
    let mark = CQE_F_REFUSED | IORING_CQE_F_BUFFER;
    (res == -libc::EINVAL && flags & mark == CQE_F_REFUSED).then_some((flags >> 16) as u8)
}

/// The error an op gets whose opcode `op` the readiness backend does not carry out.
#[cold]
pub(crate) fn refused_error(op: u8) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "opcode {op} ({}) is not carried out by the readiness (epoll) backend, which \
             runs where io_uring is refused or RUNTIME_BACKEND=epoll asks for it; its CQE \
             said EINVAL (see runtime::ext, \"Custom ops on the epoll backend\")",
            name(op)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names sit at the io-uring crate's opcode numbers.
    #[test]
    fn names_match_the_opcodes() {
        for (code, want) in [
            (opcode::Nop::CODE, "NOP"),
            (opcode::PollAdd::CODE, "POLL_ADD"),
            (opcode::Accept::CODE, "ACCEPT"),
            (opcode::OpenAt2::CODE, "OPENAT2"),
            (opcode::Splice::CODE, "SPLICE"),
            (opcode::MsgRingData::CODE, "MSG_RING"),
            (opcode::UringCmd16::CODE, "URING_CMD"),
            (opcode::SendZc::CODE, "SEND_ZC"),
            (opcode::WaitId::CODE, "WAITID"),
            (opcode::FixedFdInstall::CODE, "FIXED_FD_INSTALL"),
            (opcode::Ftruncate::CODE, "FTRUNCATE"),
            (opcode::Listen::CODE, "LISTEN"),
        ] {
            assert_eq!(name(code), want);
        }
        assert_eq!(name(200), "unknown");
    }

    #[test]
    fn a_refusal_round_trips_through_the_cqe() {
        let op = opcode::MsgRingData::CODE;
        assert_eq!(Class::of(op), Class::Unsupported);
        assert_eq!(refused(-libc::EINVAL, refused_flags(op)), Some(op));
        assert_eq!(refused(-libc::EBADF, refused_flags(op)), None);
        assert_eq!(refused(-libc::EINVAL, 0), None);
        // A buffer id in the upper bits is not an opcode.
        assert_eq!(refused(-libc::EINVAL, refused_flags(op) | 1), None);
        let e = refused_error(op);
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(
            e.to_string()
                .starts_with("opcode 40 (MSG_RING) is not carried out"),
            "{e}"
        );
    }
}
