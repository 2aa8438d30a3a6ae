//! The system calls that carry out an SQE on the readiness backend: non-blocking ones on
//! the core ([`try_ready`], [`try_poll`], [`inline`]) and blocking ones on the blocking pool
//! ([`blocking`]).
//!
//! Every function reads the SQE's pointers as the kernel would. They are valid for the
//! call: an op's SQE points only at memory the op owns until its final CQE (the contract
//! of `Op::new`), and the backend posts that CQE only after the call returned.

use std::io;

use io_uring::opcode;

use super::sqe::{RawSqe, IORING_FSYNC_DATASYNC, IORING_NOP_INJECT_RESULT, SPLICE_F_FD_IN_FIXED};

/// What a non-blocking attempt came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Try {
    /// The op's result, as its CQE carries it (a count or fd, or `-errno`).
    Done(i32),
    /// `EAGAIN`: not ready; retried when epoll says the fd is.
    Again,
}

/// `-errno` of the call that just failed.
fn neg_errno() -> i32 {
    -io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A system call's return value as a CQE result: `-errno` on failure; counts are bounded
/// by the SQE's 32-bit length.
fn res(r: i64) -> i32 {
    if r < 0 {
        neg_errno()
    } else {
        r.min(i64::from(i32::MAX)) as i32
    }
}

/// A result as an attempt: `EAGAIN` (and `EWOULDBLOCK`, the same on Linux) waits.
fn attempt(r: i64) -> Try {
    match res(r) {
        r if r == -libc::EAGAIN => Try::Again,
        r => Try::Done(r),
    }
}

/// Pointer field `v` of an SQE, null when 0.
fn ptr<T>(v: u64) -> *mut T {
    v as usize as *mut T
}

/// Tries readiness op `s` (a receive, send, read, write, accept, connect or pidfd wait)
/// once without blocking. `state` is the op's progress across attempts: the bytes a
/// `MSG_WAITALL` send or receive moved so far (its SQE's buffer advanced past them, as
/// io_uring retries such an op until it is whole), or for a connect, 1 once it answered
/// `EINPROGRESS` (it is finished by reading `SO_ERROR`, not by connecting again).
///
/// # Safety
/// Every pointer in `s` is valid for the call (see the module documentation).
pub(crate) unsafe fn try_ready(s: &mut RawSqe, state: &mut u32) -> Try {
    let fd = s.fd;
    let dontwait = s.op_flags as i32 | libc::MSG_DONTWAIT;
    // SAFETY: every call below is given the SQE's pointers, valid for the call (this
    // function's contract), and the SQE's lengths, as the op built them.
    unsafe {
        match s.opcode {
            opcode::Recv::CODE | opcode::Send::CODE | opcode::SendZc::CODE => loop {
                let r = if s.opcode == opcode::Recv::CODE {
                    libc::recv(fd, ptr(s.addr), s.len as usize, dontwait) as i64
                } else {
                    // `addr2`/`addr_len`: a destination (sendto), when the op names one.
                    let (to, to_len) = if s.off != 0 {
                        (
                            ptr::<libc::sockaddr>(s.off) as *const _,
                            (s.file_index & 0xffff) as libc::socklen_t,
                        )
                    } else {
                        (std::ptr::null(), 0)
                    };
                    libc::sendto(fd, ptr(s.addr), s.len as usize, dontwait, to, to_len) as i64
                };
                let waitall = s.op_flags as i32 & libc::MSG_WAITALL != 0;
                match attempt(r) {
                    Try::Done(n) if waitall && n > 0 && (n as u32) < s.len => {
                        // Part of it: go on from there, as io_uring's retry does.
                        *state += n as u32;
                        s.addr += n as u64;
                        s.len -= n as u32;
                    }
                    Try::Done(n) if n >= 0 => {
                        return Try::Done((*state + n as u32).min(i32::MAX as u32) as i32)
                    }
                    // An error after some bytes: the bytes moved are the result.
                    Try::Done(e) if *state > 0 => {
                        let _ = e;
                        return Try::Done(*state as i32);
                    }
                    other => return other,
                }
            },
            opcode::RecvMsg::CODE => attempt(libc::recvmsg(fd, ptr(s.addr), dontwait) as i64),
            opcode::SendMsg::CODE => attempt(libc::sendmsg(fd, ptr(s.addr), dontwait) as i64),
            // Readiness fds are streams: the offset is not used (as io_uring ignores it).
            opcode::Read::CODE => attempt(libc::read(fd, ptr(s.addr), s.len as usize) as i64),
            opcode::Write::CODE => attempt(libc::write(fd, ptr(s.addr), s.len as usize) as i64),
            opcode::Readv::CODE => attempt(libc::readv(fd, ptr(s.addr), s.len as i32) as i64),
            opcode::Writev::CODE => attempt(libc::writev(fd, ptr(s.addr), s.len as i32) as i64),
            opcode::Accept::CODE => {
                if s.file_index != 0 {
                    // Into the fixed-file table: an io_uring-only feature.
                    return Try::Done(-libc::EINVAL);
                }
                let flags = s.op_flags as i32 | libc::SOCK_NONBLOCK;
                attempt(libc::accept4(fd, ptr(s.addr), ptr(s.off), flags) as i64)
            }
            opcode::Connect::CODE => {
                let mut connecting = *state != 0;
                let r = try_connect(s, &mut connecting);
                *state = u32::from(connecting);
                r
            }
            opcode::WaitId::CODE => try_waitid(s),
            _ => Try::Done(-libc::EINVAL),
        }
    }
}

/// A non-blocking connect: started once, then finished by `SO_ERROR` once the socket is
/// writable.
///
/// # Safety
/// As [`try_ready`].
unsafe fn try_connect(s: &RawSqe, connecting: &mut bool) -> Try {
    if !*connecting {
        // SAFETY: `addr` points at a socket address of `off` bytes (the op's contract).
        let r = unsafe { libc::connect(s.fd, ptr(s.addr), s.off as libc::socklen_t) };
        if r == 0 {
            return Try::Done(0);
        }
        let e = neg_errno();
        return match -e {
            libc::EINPROGRESS => {
                *connecting = true;
                Try::Again
            }
            // A Unix socket whose listener's backlog is full: connect again once writable.
            libc::EAGAIN => Try::Again,
            _ => Try::Done(e),
        };
    }
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are live locals of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            s.fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Try::Done(neg_errno());
    }
    match err {
        0 => {
            // Writable with no error: connected, unless the wake was early.
            let mut addr: libc::sockaddr_storage =
                // SAFETY: plain bytes; all-zero is a valid `sockaddr_storage`.
                unsafe { std::mem::zeroed() };
            let mut alen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            // SAFETY: `addr` and `alen` are live locals of the sizes given.
            let r = unsafe { libc::getpeername(s.fd, ptr(&mut addr as *mut _ as u64), &mut alen) };
            if r == 0 {
                Try::Done(0)
            } else {
                Try::Again
            }
        }
        e => Try::Done(-e),
    }
}

/// `waitid(2)` with `WNOHANG` on a pidfd: done once the child has exited (and is reaped).
///
/// # Safety
/// As [`try_ready`]: `addr2` points at the op's `siginfo_t`.
unsafe fn try_waitid(s: &RawSqe) -> Try {
    let info: *mut libc::siginfo_t = ptr(s.off);
    if !info.is_null() {
        // SAFETY: the op's siginfo; zeroed so an unexited child reads as pid 0.
        unsafe { info.write_bytes(0, 1) };
    }
    let mut local: libc::siginfo_t =
        // SAFETY: plain bytes; all-zero is a valid `siginfo_t`.
        unsafe { std::mem::zeroed() };
    let target = if info.is_null() {
        &mut local as *mut _
    } else {
        info
    };
    // SAFETY: `target` is a valid `siginfo_t`; the id type and options are the SQE's.
    let r = unsafe {
        libc::waitid(
            s.len as libc::idtype_t,
            s.fd as libc::id_t,
            target,
            s.file_index as i32 | libc::WNOHANG,
        )
    };
    if r < 0 {
        return Try::Done(neg_errno());
    }
    // SAFETY: `target` was filled (or left zeroed) by waitid.
    if unsafe { (*target).si_pid() } == 0 {
        Try::Again
    } else {
        Try::Done(0)
    }
}

/// A `POLL_ADD`'s events that are ready now, or `Again`.
pub(crate) fn try_poll(fd: i32, events: u32) -> Try {
    let mut p = libc::pollfd {
        fd,
        events: events as i16,
        revents: 0,
    };
    // SAFETY: one live `pollfd`, no wait.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    if r < 0 {
        return Try::Done(neg_errno());
    }
    if r == 0 || p.revents == 0 {
        return Try::Again;
    }
    Try::Done(i32::from(p.revents as u16))
}

/// Ops that never block: `NOP`, `CLOSE`, `SHUTDOWN`, and readiness ops on a regular file
/// that have no file form (a receive on a file: `ENOTSOCK`, as the kernel answers).
///
/// # Safety
/// As [`try_ready`].
pub(crate) unsafe fn inline(s: &RawSqe) -> i32 {
    match s.opcode {
        opcode::Nop::CODE if s.op_flags & IORING_NOP_INJECT_RESULT != 0 => s.len as i32,
        opcode::Nop::CODE => 0,
        // SAFETY: closes the fd the op names, as the kernel would; its owner gave it up.
        opcode::Close::CODE => res(i64::from(unsafe { libc::close(s.fd) })),
        // SAFETY: no memory.
        opcode::Shutdown::CODE => res(i64::from(unsafe { libc::shutdown(s.fd, s.len as i32) })),
        _ => {
            let mut state = 0;
            let mut s = *s;
            // SAFETY: forwarded from the caller.
            match unsafe { try_ready(&mut s, &mut state) } {
                Try::Done(r) => r,
                Try::Again => -libc::EAGAIN,
            }
        }
    }
}

/// A regular file's read, tried on the core without blocking (`RWF_NOWAIT`): the page
/// cache answers it, or `Again` sends it to the blocking pool. A file system without
/// `RWF_NOWAIT` (`EOPNOTSUPP`) goes to the pool too.
///
/// # Safety
/// As [`try_ready`].
pub(crate) unsafe fn read_nowait(s: &RawSqe) -> Try {
    let flags = s.op_flags as i32 | libc::RWF_NOWAIT;
    let single = libc::iovec {
        iov_base: ptr(s.addr),
        iov_len: s.len as usize,
    };
    // SAFETY: the SQE's buffer or iovec array, valid for the call (the contract).
    let r = unsafe {
        if s.opcode == opcode::Read::CODE {
            libc::preadv2(s.fd, &single, 1, pos(s.off), flags)
        } else {
            libc::preadv2(s.fd, ptr(s.addr), s.len as i32, pos(s.off), flags)
        }
    };
    match res(r as i64) {
        r if r == -libc::EAGAIN || r == -libc::EOPNOTSUPP => Try::Again,
        r => Try::Done(r),
    }
}

/// An offset field as the `-1`-means-current-position offset of `preadv2(2)`.
fn pos(off: u64) -> i64 {
    off as i64
}

/// Carries out a file or path op with its blocking system call, on a blocking-pool thread.
///
/// # Safety
/// As [`try_ready`]: the pointers stay valid until the op's CQE, which is posted only
/// after this returns.
pub(crate) unsafe fn blocking(s: &RawSqe) -> i32 {
    let fd = s.fd;
    // SAFETY: every call below is given the SQE's pointers, valid for the call (this
    // function's contract), and its lengths, offsets and flags.
    unsafe {
        let iov = |addr: u64, len: u32| libc::iovec {
            iov_base: ptr(addr),
            iov_len: len as usize,
        };
        let r: i64 = match s.opcode {
            opcode::Read::CODE => {
                let v = iov(s.addr, s.len);
                libc::preadv2(fd, &v, 1, pos(s.off), s.op_flags as i32) as i64
            }
            opcode::Write::CODE => {
                let v = iov(s.addr, s.len);
                libc::pwritev2(fd, &v, 1, pos(s.off), s.op_flags as i32) as i64
            }
            opcode::Readv::CODE => {
                libc::preadv2(fd, ptr(s.addr), s.len as i32, pos(s.off), s.op_flags as i32) as i64
            }
            opcode::Writev::CODE => {
                libc::pwritev2(fd, ptr(s.addr), s.len as i32, pos(s.off), s.op_flags as i32) as i64
            }
            opcode::Fsync::CODE if s.op_flags & IORING_FSYNC_DATASYNC != 0 => {
                i64::from(libc::fdatasync(fd))
            }
            opcode::Fsync::CODE => i64::from(libc::fsync(fd)),
            opcode::SyncFileRange::CODE => i64::from(libc::sync_file_range(
                fd,
                s.off as i64,
                i64::from(s.len),
                s.op_flags,
            )),
            opcode::Fallocate::CODE => i64::from(libc::fallocate(
                fd,
                s.len as i32,
                s.off as i64,
                s.addr as i64,
            )),
            opcode::Ftruncate::CODE => i64::from(libc::ftruncate(fd, s.off as i64)),
            opcode::OpenAt::CODE if s.file_index != 0 => return -libc::EINVAL,
            opcode::OpenAt::CODE => i64::from(libc::openat(
                fd,
                ptr(s.addr),
                s.op_flags as i32,
                s.len as libc::c_uint,
            )),
            opcode::OpenAt2::CODE if s.file_index != 0 => return -libc::EINVAL,
            // `openat2(2)` (5.6): the `open_how` at `addr2`, its size in `len`.
            opcode::OpenAt2::CODE => libc::syscall(
                libc::SYS_openat2,
                fd,
                ptr::<libc::c_char>(s.addr),
                ptr::<libc::c_void>(s.off),
                s.len as usize,
            ),
            opcode::Statx::CODE => i64::from(libc::statx(
                fd,
                ptr(s.addr),
                s.op_flags as i32,
                s.len,
                ptr(s.off),
            )),
            opcode::UnlinkAt::CODE => i64::from(libc::unlinkat(fd, ptr(s.addr), s.op_flags as i32)),
            opcode::RenameAt::CODE => libc::syscall(
                libc::SYS_renameat2,
                fd,
                ptr::<libc::c_char>(s.addr),
                s.len as i32,
                ptr::<libc::c_char>(s.off),
                s.op_flags,
            ),
            opcode::MkDirAt::CODE => {
                i64::from(libc::mkdirat(fd, ptr(s.addr), s.len as libc::mode_t))
            }
            opcode::SymlinkAt::CODE => i64::from(libc::symlinkat(ptr(s.addr), fd, ptr(s.off))),
            opcode::LinkAt::CODE => i64::from(libc::linkat(
                fd,
                ptr(s.addr),
                s.len as i32,
                ptr(s.off),
                s.op_flags as i32,
            )),
            opcode::Splice::CODE if s.op_flags & SPLICE_F_FD_IN_FIXED != 0 => return -libc::EBADF,
            opcode::Splice::CODE => {
                // `-1` offsets mean "the fd's own position" (none for a pipe).
                let mut off_in = s.addr as i64;
                let mut off_out = s.off as i64;
                let p_in = if off_in == -1 {
                    std::ptr::null_mut()
                } else {
                    &mut off_in as *mut i64
                };
                let p_out = if off_out == -1 {
                    std::ptr::null_mut()
                } else {
                    &mut off_out as *mut i64
                };
                libc::splice(
                    s.file_index as i32,
                    p_in,
                    fd,
                    p_out,
                    s.len as usize,
                    s.op_flags,
                ) as i64
            }
            opcode::WaitId::CODE => {
                let r = libc::waitid(
                    s.len as libc::idtype_t,
                    fd as libc::id_t,
                    ptr(s.off),
                    s.file_index as i32,
                );
                i64::from(r)
            }
            _ => return -libc::EINVAL,
        };
        res(r)
    }
}
