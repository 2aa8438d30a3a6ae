//! An SQE read back in user space, each field under the name the op wrote it by: the kernel
//! profile's gate ([`super::kernel::Gate`]) and the readiness backend
//! ([`super::readiness`]) read SQEs, and nothing else does.
//!
//! `struct io_uring_sqe` (include/uapi/linux/io_uring.h) is 64 bytes of unions: the same
//! bytes are `off` for a read, `addr2` for a send's destination and `infop` for a
//! `WAITID`; `file_index`, `optlen`, `splice_fd_in` and `addr_len` share bytes 44..48.
//! [`Sqe`] keeps the bytes private and hands out one typed view per opcode family
//! ([`Sqe::send_recv`], [`Sqe::waitid`], ...) named after the union members the kernel's
//! `*_prep` function reads for that opcode: no reader takes `file_index` for `optlen`.

use io_uring::squeue;

/// The 64 bytes of `struct io_uring_sqe`, by offset; the union fields carry neutral names,
/// read only through [`Sqe`]'s per-opcode views.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Fields {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    /// Bytes 8..16: `off`, `addr2`, `cmd_op`.
    at8: u64,
    /// Bytes 16..24: `addr`, `splice_off_in`, `level`/`optname`.
    at16: u64,
    len: u32,
    /// Bytes 28..32: the op's flags (`rw_flags`, `msg_flags`, `poll32_events`, ...).
    at28: u32,
    user_data: u64,
    /// Bytes 40..42: `buf_index`, `buf_group`.
    at40: u16,
    personality: u16,
    /// Bytes 44..48: `splice_fd_in`, `file_index`, `optlen`, `addr_len`.
    at44: u32,
    addr3: u64,
    pad: u64,
}

const _: () = assert!(std::mem::size_of::<Fields>() == 64);
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);

/// An SQE as the op built it (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sqe(Fields);

/// `IOSQE_FIXED_FILE`: `fd` is an index in the ring's fixed-file table.
pub(crate) const IOSQE_FIXED_FILE: u8 = 1 << 0;
/// `IOSQE_IO_LINK`: the next SQE runs after this one succeeds.
pub(crate) const IOSQE_IO_LINK: u8 = 1 << 2;
/// `IOSQE_IO_HARDLINK`: the next SQE runs after this one, whatever its result.
pub(crate) const IOSQE_IO_HARDLINK: u8 = 1 << 3;
/// `IOSQE_BUFFER_SELECT`: the op picks its buffer from provided-buffer ring `buf_group`.
pub(crate) const IOSQE_BUFFER_SELECT: u8 = 1 << 5;
/// `IOSQE_CQE_SKIP_SUCCESS`: no CQE unless the op fails.
pub(crate) const IOSQE_CQE_SKIP_SUCCESS: u8 = 1 << 6;

/// `IORING_ACCEPT_MULTISHOT`, in an accept's `ioprio`.
pub(crate) const IORING_ACCEPT_MULTISHOT: u16 = 1 << 0;
/// `IORING_RECV_MULTISHOT`, in a receive's `ioprio`.
pub(crate) const IORING_RECV_MULTISHOT: u16 = 1 << 1;
/// `IORING_RECVSEND_BUNDLE`, in a send's or receive's `ioprio`.
pub(crate) const IORING_RECVSEND_BUNDLE: u16 = 1 << 4;
/// `IORING_POLL_ADD_MULTI`, in a poll's `len`.
pub(crate) const IORING_POLL_ADD_MULTI: u32 = 1 << 0;
/// `IORING_NOP_INJECT_RESULT`, in `nop_flags`: the NOP completes with `len`.
pub(crate) const IORING_NOP_INJECT_RESULT: u32 = 1 << 0;
/// `IORING_FSYNC_DATASYNC`, in `fsync_flags`.
pub(crate) const IORING_FSYNC_DATASYNC: u32 = 1 << 0;
/// `SPLICE_F_FD_IN_FIXED`, in `splice_flags`: `splice_fd_in` is a fixed-file index.
pub(crate) const SPLICE_F_FD_IN_FIXED: u32 = 1 << 31;

/// `IORING_OP_SEND`, `IORING_OP_SEND_ZC` and `IORING_OP_RECV` (`io_sendmsg_prep`,
/// `io_recvmsg_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendRecv {
    pub(crate) fd: i32,
    /// `addr`: the bytes.
    pub(crate) buf: u64,
    pub(crate) len: u32,
    pub(crate) msg_flags: i32,
    /// `ioprio`: `IORING_RECV_MULTISHOT`, `IORING_RECVSEND_BUNDLE`, ...
    pub(crate) ioprio: u16,
    /// `buf_group`: the provided-buffer ring a receive picks from (`IOSQE_BUFFER_SELECT`).
    pub(crate) buf_group: u16,
    /// `optlen`: a multishot receive's byte limit (6.17; 0: none).
    pub(crate) limit: u32,
    /// `addr2`: a send's destination address (`sendto`), 0 for none.
    pub(crate) dest_addr: u64,
    /// `addr_len`: its length.
    pub(crate) addr_len: u16,
}

/// `IORING_OP_SENDMSG`, `IORING_OP_RECVMSG` (`io_sendmsg_prep`, `io_recvmsg_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Msg {
    pub(crate) fd: i32,
    /// `addr`: the `struct msghdr`.
    pub(crate) msghdr: u64,
    pub(crate) msg_flags: i32,
}

/// `IORING_OP_READ`, `WRITE`, `READV`, `WRITEV`, `READ_MULTISHOT` (`io_prep_rw`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rw {
    pub(crate) fd: i32,
    /// `addr`: the buffer, or the `iovec` array of a vectored op.
    pub(crate) addr: u64,
    /// `len`: bytes, or the number of `iovec`s.
    pub(crate) len: u32,
    /// `off`: the file position (`-1`: the fd's own).
    pub(crate) off: u64,
    pub(crate) rw_flags: i32,
    /// `buf_group`: the ring a read picks from (`IOSQE_BUFFER_SELECT`).
    pub(crate) buf_group: u16,
}

/// `IORING_OP_ACCEPT` (`io_accept_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Accept {
    pub(crate) fd: i32,
    /// `addr`: the peer's `sockaddr`, or 0.
    pub(crate) addr: u64,
    /// `addr2`: its `socklen_t`, or 0.
    pub(crate) addrlen: u64,
    pub(crate) accept_flags: i32,
    /// `file_index`: a fixed-file slot to accept into (0: a regular fd).
    pub(crate) file_index: u32,
    /// `ioprio`'s `IORING_ACCEPT_MULTISHOT`.
    pub(crate) multishot: bool,
}

/// `IORING_OP_CONNECT` (`io_connect_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Connect {
    pub(crate) fd: i32,
    /// `addr`: the `sockaddr`.
    pub(crate) addr: u64,
    /// `addr2`: its length (a value, not a pointer).
    pub(crate) addrlen: u32,
}

/// `IORING_OP_WAITID` (`io_waitid_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaitId {
    /// `len`: `P_PID`, `P_PIDFD`, ...
    pub(crate) idtype: u32,
    /// `fd`: the id (a pidfd for `P_PIDFD`).
    pub(crate) id: i32,
    /// `addr2`: the `siginfo_t` to fill, or 0.
    pub(crate) infop: u64,
    /// `file_index`: `WEXITED`, `WNOHANG`, ...
    pub(crate) options: i32,
}

/// `IORING_OP_POLL_ADD` (`io_poll_add_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PollAdd {
    pub(crate) fd: i32,
    pub(crate) poll32_events: u32,
    /// `len`'s `IORING_POLL_ADD_MULTI`.
    pub(crate) multishot: bool,
}

/// `IORING_OP_OPENAT` and `IORING_OP_OPENAT2` (`io_openat_prep`, `io_openat2_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Open {
    pub(crate) dfd: i32,
    /// `addr`: the path.
    pub(crate) path: u64,
    /// `open_flags` (OPENAT).
    pub(crate) open_flags: i32,
    /// `len`: the mode (OPENAT), or the size of the `open_how` (OPENAT2).
    pub(crate) len: u32,
    /// `addr2`: the `struct open_how` (OPENAT2).
    pub(crate) how: u64,
    /// `file_index`: a fixed-file slot to open into (0: a regular fd).
    pub(crate) file_index: u32,
}

/// `IORING_OP_SPLICE` (`io_splice_prep`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Splice {
    /// `splice_fd_in`.
    pub(crate) fd_in: i32,
    /// `splice_off_in` (`-1`: none).
    pub(crate) off_in: i64,
    /// `fd`.
    pub(crate) fd_out: i32,
    /// `off` (`-1`: none).
    pub(crate) off_out: i64,
    pub(crate) len: u32,
    pub(crate) splice_flags: u32,
}

/// The path ops (`UNLINKAT`, `RENAMEAT`, `MKDIRAT`, `SYMLINKAT`, `LINKAT`) and `STATX`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathOp {
    /// `fd`: the (old) directory fd.
    pub(crate) dfd: i32,
    /// `addr`: the (old) path, or a symlink's target.
    pub(crate) path: u64,
    /// `addr2`: the new path, or `STATX`'s `struct statx`.
    pub(crate) path2: u64,
    /// `len`: the new directory fd (rename, link), the mode (mkdir), the mask (statx).
    pub(crate) len: u32,
    /// `unlink_flags`, `rename_flags`, `hardlink_flags`, `statx_flags`.
    pub(crate) flags: u32,
}

/// `IORING_OP_FSYNC`, `SYNC_FILE_RANGE`, `FALLOCATE`, `FTRUNCATE`: a range of a file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileRange {
    pub(crate) fd: i32,
    /// `off`: the start (the length for FTRUNCATE).
    pub(crate) off: u64,
    /// `len`: the length (the mode for FALLOCATE).
    pub(crate) len: u32,
    /// `addr`: FALLOCATE's length.
    pub(crate) addr: u64,
    /// `fsync_flags`, `sync_range_flags`.
    pub(crate) flags: u32,
}

impl Sqe {
    /// The fields of `sqe`.
    #[inline]
    pub(crate) fn of(sqe: squeue::Entry) -> Sqe {
        // SAFETY: `squeue::Entry` is `#[repr(C)]` over the kernel's 64-byte `io_uring_sqe`
        // (sizes checked above), which `Fields` mirrors offset for offset; every field is
        // a plain integer, valid for any bits.
        Sqe(unsafe { std::mem::transmute::<squeue::Entry, Fields>(sqe) })
    }

    /// Back to an entry, with whatever the setters changed.
    pub(crate) fn entry(self) -> squeue::Entry {
        // SAFETY: as in `of`: any bits make a valid `Entry`; the kernel checks the fields.
        unsafe { std::mem::transmute::<Fields, squeue::Entry>(self.0) }
    }

    /// `IORING_OP_*`.
    #[inline]
    pub(crate) fn opcode(&self) -> u8 {
        self.0.opcode
    }

    /// The fd the op names (a fixed-file index with `IOSQE_FIXED_FILE`).
    pub(crate) fn fd(&self) -> i32 {
        self.0.fd
    }

    /// `ioprio`: the per-opcode flags of sends, receives and accepts.
    pub(crate) fn ioprio(&self) -> u16 {
        self.0.ioprio
    }

    /// The op's `user_data` (its slot key).
    pub(crate) fn user_data(&self) -> u64 {
        self.0.user_data
    }

    /// `IOSQE_IO_LINK` or `IOSQE_IO_HARDLINK`: the next SQE runs after this one.
    pub(crate) fn links(&self) -> bool {
        self.0.flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK) != 0
    }

    /// Whether a failure of this op leaves its chain's rest to run (`IOSQE_IO_HARDLINK`).
    pub(crate) fn hard_link(&self) -> bool {
        self.0.flags & IOSQE_IO_HARDLINK != 0
    }

    /// `IOSQE_CQE_SKIP_SUCCESS`: no CQE unless it fails.
    pub(crate) fn skip_success(&self) -> bool {
        self.0.flags & IOSQE_CQE_SKIP_SUCCESS != 0
    }

    /// `IOSQE_BUFFER_SELECT`: the op picks its buffer from a provided-buffer ring.
    pub(crate) fn selects_buffer(&self) -> bool {
        self.0.flags & IOSQE_BUFFER_SELECT != 0
    }

    /// `IOSQE_FIXED_FILE`: the fd is a fixed-file index.
    pub(crate) fn fixed_file(&self) -> bool {
        self.0.flags & IOSQE_FIXED_FILE != 0
    }

    /// A send's or receive's fields.
    pub(crate) fn send_recv(&self) -> SendRecv {
        let f = &self.0;
        SendRecv {
            fd: f.fd,
            buf: f.at16,
            len: f.len,
            msg_flags: f.at28 as i32,
            ioprio: f.ioprio,
            buf_group: f.at40,
            limit: f.at44,
            dest_addr: f.at8,
            addr_len: f.at44 as u16,
        }
    }

    /// Moves a send's or receive's buffer `n` bytes on (`addr += n`, `len -= n`): what is
    /// left of a `MSG_WAITALL` op after a part of it went through.
    pub(crate) fn advance_buf(&mut self, n: u32) {
        self.0.at16 += u64::from(n);
        self.0.len -= n;
    }

    /// A `SENDMSG`'s or `RECVMSG`'s fields.
    pub(crate) fn msg(&self) -> Msg {
        Msg {
            fd: self.0.fd,
            msghdr: self.0.at16,
            msg_flags: self.0.at28 as i32,
        }
    }

    /// A read's or write's fields (plain, vectored or multishot).
    pub(crate) fn rw(&self) -> Rw {
        let f = &self.0;
        Rw {
            fd: f.fd,
            addr: f.at16,
            len: f.len,
            off: f.at8,
            rw_flags: f.at28 as i32,
            buf_group: f.at40,
        }
    }

    /// An `ACCEPT`'s fields.
    pub(crate) fn accept(&self) -> Accept {
        let f = &self.0;
        Accept {
            fd: f.fd,
            addr: f.at16,
            addrlen: f.at8,
            accept_flags: f.at28 as i32,
            file_index: f.at44,
            multishot: f.ioprio & IORING_ACCEPT_MULTISHOT != 0,
        }
    }

    /// A `CONNECT`'s fields.
    pub(crate) fn connect(&self) -> Connect {
        Connect {
            fd: self.0.fd,
            addr: self.0.at16,
            addrlen: self.0.at8 as u32,
        }
    }

    /// A `WAITID`'s fields.
    pub(crate) fn waitid(&self) -> WaitId {
        WaitId {
            idtype: self.0.len,
            id: self.0.fd,
            infop: self.0.at8,
            options: self.0.at44 as i32,
        }
    }

    /// A `POLL_ADD`'s fields.
    pub(crate) fn poll_add(&self) -> PollAdd {
        PollAdd {
            fd: self.0.fd,
            poll32_events: self.0.at28,
            multishot: self.0.len & IORING_POLL_ADD_MULTI != 0,
        }
    }

    /// A `NOP`'s result when it injects one (`IORING_NOP_INJECT_RESULT`: `len`).
    pub(crate) fn nop_result(&self) -> Option<i32> {
        (self.0.at28 & IORING_NOP_INJECT_RESULT != 0).then_some(self.0.len as i32)
    }

    /// A `SHUTDOWN`'s `how` (`len`).
    pub(crate) fn shutdown_how(&self) -> i32 {
        self.0.len as i32
    }

    /// An `ASYNC_CANCEL`'s target: the `user_data` in `addr`.
    pub(crate) fn cancel_target(&self) -> u64 {
        self.0.at16
    }

    /// An `OPENAT`'s or `OPENAT2`'s fields.
    pub(crate) fn open(&self) -> Open {
        let f = &self.0;
        Open {
            dfd: f.fd,
            path: f.at16,
            open_flags: f.at28 as i32,
            len: f.len,
            how: f.at8,
            file_index: f.at44,
        }
    }

    /// A `SPLICE`'s fields.
    pub(crate) fn splice(&self) -> Splice {
        let f = &self.0;
        Splice {
            fd_in: f.at44 as i32,
            off_in: f.at16 as i64,
            fd_out: f.fd,
            off_out: f.at8 as i64,
            len: f.len,
            splice_flags: f.at28,
        }
    }

    /// A path op's or `STATX`'s fields.
    pub(crate) fn path_op(&self) -> PathOp {
        let f = &self.0;
        PathOp {
            dfd: f.fd,
            path: f.at16,
            path2: f.at8,
            len: f.len,
            flags: f.at28,
        }
    }

    /// An `FSYNC`'s, `SYNC_FILE_RANGE`'s, `FALLOCATE`'s or `FTRUNCATE`'s fields.
    pub(crate) fn file_range(&self) -> FileRange {
        let f = &self.0;
        FileRange {
            fd: f.fd,
            off: f.at8,
            len: f.len,
            addr: f.at16,
            flags: f.at28,
        }
    }

    /// Makes the SQE fail as an invalid opcode (`u8::MAX`, which no kernel has):
    /// `io_init_req` answers it `EINVAL`.
    pub(crate) fn refuse(&mut self) {
        self.0.opcode = u8::MAX;
    }

    /// Points the SQE at regular fd `fd` instead of whatever it named.
    pub(crate) fn set_regular_fd(&mut self, fd: i32) {
        self.0.flags &= !IOSQE_FIXED_FILE;
        self.0.fd = fd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};

    /// Each view reads the fields back where the io-uring crate's builders wrote them.
    #[test]
    fn views_read_what_the_builders_wrote() {
        let s = Sqe::of(
            opcode::Recv::new(types::Fd(5), 0x1000 as *mut u8, 64)
                .flags(libc::MSG_PEEK)
                .buf_group(9)
                .build()
                .user_data(77),
        );
        let r = s.send_recv();
        assert_eq!((s.opcode(), s.user_data()), (opcode::Recv::CODE, 77));
        assert_eq!(
            (r.fd, r.buf, r.len, r.msg_flags),
            (5, 0x1000, 64, libc::MSG_PEEK)
        );
        assert_eq!((r.buf_group, r.limit), (9, 0));
        let limited = Sqe::of(crate::driver::op::sqe_with_optlen(
            opcode::RecvMulti::new(types::Fd(5), 3).build(),
            4096,
        ));
        let r = limited.send_recv();
        assert_eq!(
            (r.limit, r.ioprio & IORING_RECV_MULTISHOT),
            (4096, IORING_RECV_MULTISHOT)
        );
        let w = Sqe::of(opcode::WaitId::new(libc::P_PIDFD, 8, libc::WEXITED).build()).waitid();
        assert_eq!(
            (w.idtype, w.id, w.options),
            (libc::P_PIDFD, 8, libc::WEXITED)
        );
        let sp =
            Sqe::of(opcode::Splice::new(types::Fd(3), -1, types::Fd(4), 10, 99).build()).splice();
        assert_eq!((sp.fd_in, sp.off_in, sp.fd_out, sp.off_out), (3, -1, 4, 10));
        assert_eq!(sp.len, 99);
        let a = Sqe::of(opcode::AcceptMulti::new(types::Fd(6)).build()).accept();
        assert!(a.multishot && a.fd == 6 && a.file_index == 0);
        let c = Sqe::of(opcode::Connect::new(types::Fd(6), 0x2000 as *const _, 16).build());
        assert_eq!((c.connect().addr, c.connect().addrlen), (0x2000, 16));
        let mut s = Sqe::of(opcode::Send::new(types::Fd(1), 0x10 as *const u8, 100).build());
        s.advance_buf(40);
        assert_eq!((s.send_recv().buf, s.send_recv().len), (0x10 + 40, 60));
    }
}
