//! The system calls that carry out an SQE on the readiness backend: non-blocking ones on
//! the core ([`try_ready`], [`try_poll`], [`inline`]) and blocking ones on the blocking pool
//! ([`blocking`]).
//!
//! Every function reads the SQE's pointers as the kernel would. They are valid for the
//! call: an op's SQE points only at memory the op owns until its final CQE (the contract
//! of `Op::new`), and the backend posts that CQE only after the call returned.

use std::io;

use io_uring::opcode;

use crate::driver::sqe::{Sqe, IORING_FSYNC_DATASYNC, SPLICE_F_FD_IN_FIXED};

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
pub(crate) unsafe fn try_ready(s: &mut Sqe, state: &mut u32) -> Try {
    // SAFETY: every call below is given the SQE's pointers, valid for the call (this
    // function's contract), and the SQE's lengths, as the op built them.
    unsafe {
        match s.opcode() {
            opcode::Recv::CODE | opcode::Send::CODE | opcode::SendZc::CODE => loop {
                let o = s.send_recv();
                let dontwait = o.msg_flags | libc::MSG_DONTWAIT;
                let r = if s.opcode() == opcode::Recv::CODE {
                    libc::recv(o.fd, ptr(o.buf), o.len as usize, dontwait) as i64
                } else {
                    // A destination (sendto), when the op names one.
                    let (to, to_len) = if o.dest_addr != 0 {
                        (
                            ptr::<libc::sockaddr>(o.dest_addr) as *const _,
                            libc::socklen_t::from(o.addr_len),
                        )
                    } else {
                        (std::ptr::null(), 0)
                    };
                    libc::sendto(o.fd, ptr(o.buf), o.len as usize, dontwait, to, to_len) as i64
                };
                let waitall = o.msg_flags & libc::MSG_WAITALL != 0;
                match attempt(r) {
                    Try::Done(n) if waitall && n > 0 && (n as u32) < o.len => {
                        // Part of it: go on from there, as io_uring's retry does.
                        *state += n as u32;
                        s.advance_buf(n as u32);
                    }
                    Try::Done(n) if n >= 0 => {
                        return Try::Done((*state + n as u32).min(i32::MAX as u32) as i32)
                    }
                    // An error after some bytes: the bytes moved are the result.
                    Try::Done(_) if *state > 0 => return Try::Done(*state as i32),
                    other => return other,
                }
            },
            opcode::RecvMsg::CODE => {
                let m = s.msg();
                let flags = m.msg_flags | libc::MSG_DONTWAIT;
                attempt(libc::recvmsg(m.fd, ptr(m.msghdr), flags) as i64)
            }
            opcode::SendMsg::CODE => {
                let m = s.msg();
                let flags = m.msg_flags | libc::MSG_DONTWAIT;
                attempt(libc::sendmsg(m.fd, ptr(m.msghdr), flags) as i64)
            }
            // Readiness fds are streams: the offset is not used (as io_uring ignores it).
            opcode::Read::CODE => {
                let o = s.rw();
                attempt(libc::read(o.fd, ptr(o.addr), o.len as usize) as i64)
            }
            opcode::Write::CODE => {
                let o = s.rw();
                attempt(libc::write(o.fd, ptr(o.addr), o.len as usize) as i64)
            }
            opcode::Readv::CODE => {
                let o = s.rw();
                attempt(libc::readv(o.fd, ptr(o.addr), o.len as i32) as i64)
            }
            opcode::Writev::CODE => {
                let o = s.rw();
                attempt(libc::writev(o.fd, ptr(o.addr), o.len as i32) as i64)
            }
            opcode::Accept::CODE => {
                let a = s.accept();
                if a.file_index != 0 {
                    // Into the fixed-file table: an io_uring-only feature.
                    return Try::Done(-libc::EINVAL);
                }
                let flags = a.accept_flags | libc::SOCK_NONBLOCK;
                attempt(libc::accept4(a.fd, ptr(a.addr), ptr(a.addrlen), flags) as i64)
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
unsafe fn try_connect(s: &Sqe, connecting: &mut bool) -> Try {
    let c = s.connect();
    if !*connecting {
        // SAFETY: `addr` points at a socket address of `addrlen` bytes (the op's contract).
        let r = unsafe { libc::connect(c.fd, ptr(c.addr), c.addrlen as libc::socklen_t) };
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
            c.fd,
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
            let r = unsafe { libc::getpeername(c.fd, ptr(&mut addr as *mut _ as u64), &mut alen) };
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
/// As [`try_ready`]: `infop` points at the op's `siginfo_t`.
unsafe fn try_waitid(s: &Sqe) -> Try {
    let w = s.waitid();
    let info: *mut libc::siginfo_t = ptr(w.infop);
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
            w.idtype as libc::idtype_t,
            w.id as libc::id_t,
            target,
            w.options | libc::WNOHANG,
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
pub(crate) unsafe fn inline(s: &Sqe) -> i32 {
    match s.opcode() {
        opcode::Nop::CODE => s.nop_result().unwrap_or(0),
        // SAFETY: closes the fd the op names, as the kernel would; its owner gave it up.
        opcode::Close::CODE => res(i64::from(unsafe { libc::close(s.fd()) })),
        opcode::Shutdown::CODE => {
            // SAFETY: no memory.
            res(i64::from(unsafe {
                libc::shutdown(s.fd(), s.shutdown_how())
            }))
        }
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
pub(crate) unsafe fn read_nowait(s: &Sqe) -> Try {
    let o = s.rw();
    let flags = o.rw_flags | libc::RWF_NOWAIT;
    let single = libc::iovec {
        iov_base: ptr(o.addr),
        iov_len: o.len as usize,
    };
    // SAFETY: the SQE's buffer or iovec array, valid for the call (the contract).
    let r = unsafe {
        if s.opcode() == opcode::Read::CODE {
            libc::preadv2(o.fd, &single, 1, pos(o.off), flags)
        } else {
            libc::preadv2(o.fd, ptr(o.addr), o.len as i32, pos(o.off), flags)
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
pub(crate) unsafe fn blocking(s: &Sqe) -> i32 {
    // SAFETY: every call below is given the SQE's pointers, valid for the call (this
    // function's contract), and its lengths, offsets and flags.
    unsafe {
        let r: i64 = match s.opcode() {
            opcode::Read::CODE | opcode::Write::CODE => {
                let o = s.rw();
                let v = libc::iovec {
                    iov_base: ptr(o.addr),
                    iov_len: o.len as usize,
                };
                if s.opcode() == opcode::Read::CODE {
                    libc::preadv2(o.fd, &v, 1, pos(o.off), o.rw_flags) as i64
                } else {
                    libc::pwritev2(o.fd, &v, 1, pos(o.off), o.rw_flags) as i64
                }
            }
            opcode::Readv::CODE => {
                let o = s.rw();
                libc::preadv2(o.fd, ptr(o.addr), o.len as i32, pos(o.off), o.rw_flags) as i64
            }
            opcode::Writev::CODE => {
                let o = s.rw();
                libc::pwritev2(o.fd, ptr(o.addr), o.len as i32, pos(o.off), o.rw_flags) as i64
            }
            opcode::Fsync::CODE => {
                let r = s.file_range();
                if r.flags & IORING_FSYNC_DATASYNC != 0 {
                    i64::from(libc::fdatasync(r.fd))
                } else {
                    i64::from(libc::fsync(r.fd))
                }
            }
            opcode::SyncFileRange::CODE => {
                let r = s.file_range();
                i64::from(libc::sync_file_range(
                    r.fd,
                    r.off as i64,
                    i64::from(r.len),
                    r.flags,
                ))
            }
            opcode::Fallocate::CODE => {
                // `len` is the mode, `off` the offset, `addr` the length.
                let r = s.file_range();
                i64::from(libc::fallocate(
                    r.fd,
                    r.len as i32,
                    r.off as i64,
                    r.addr as i64,
                ))
            }
            // `off` is the new length.
            opcode::Ftruncate::CODE => {
                let r = s.file_range();
                i64::from(libc::ftruncate(r.fd, r.off as i64))
            }
            opcode::OpenAt::CODE | opcode::OpenAt2::CODE if s.open().file_index != 0 => {
                // Into the fixed-file table: an io_uring-only feature.
                return -libc::EINVAL;
            }
            opcode::OpenAt::CODE => {
                let o = s.open();
                i64::from(libc::openat(
                    o.dfd,
                    ptr(o.path),
                    o.open_flags,
                    o.len as libc::c_uint,
                ))
            }
            // `openat2(2)` (5.6): the `open_how` at `addr2`, its size in `len`.
            opcode::OpenAt2::CODE => {
                let o = s.open();
                libc::syscall(
                    libc::SYS_openat2,
                    o.dfd,
                    ptr::<libc::c_char>(o.path),
                    ptr::<libc::c_void>(o.how),
                    o.len as usize,
                )
            }
            opcode::Statx::CODE => {
                let p = s.path_op();
                i64::from(libc::statx(
                    p.dfd,
                    ptr(p.path),
                    p.flags as i32,
                    p.len,
                    ptr(p.path2),
                ))
            }
            opcode::UnlinkAt::CODE => {
                let p = s.path_op();
                i64::from(libc::unlinkat(p.dfd, ptr(p.path), p.flags as i32))
            }
            opcode::RenameAt::CODE => {
                let p = s.path_op();
                libc::syscall(
                    libc::SYS_renameat2,
                    p.dfd,
                    ptr::<libc::c_char>(p.path),
                    p.len as i32,
                    ptr::<libc::c_char>(p.path2),
                    p.flags,
                )
            }
            opcode::MkDirAt::CODE => {
                let p = s.path_op();
                i64::from(libc::mkdirat(p.dfd, ptr(p.path), p.len as libc::mode_t))
            }
            opcode::SymlinkAt::CODE => {
                let p = s.path_op();
                i64::from(libc::symlinkat(ptr(p.path), p.dfd, ptr(p.path2)))
            }
            opcode::LinkAt::CODE => {
                let p = s.path_op();
                i64::from(libc::linkat(
                    p.dfd,
                    ptr(p.path),
                    p.len as i32,
                    ptr(p.path2),
                    p.flags as i32,
                ))
            }
            opcode::Splice::CODE => {
                let o = s.splice();
                if o.splice_flags & SPLICE_F_FD_IN_FIXED != 0 {
                    return -libc::EBADF;
                }
                // `-1` offsets mean "the fd's own position" (none for a pipe).
                let (mut off_in, mut off_out) = (o.off_in, o.off_out);
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
                    o.fd_in,
                    p_in,
                    o.fd_out,
                    p_out,
                    o.len as usize,
                    o.splice_flags,
                ) as i64
            }
            opcode::WaitId::CODE => {
                let w = s.waitid();
                let r = libc::waitid(
                    w.idtype as libc::idtype_t,
                    w.id as libc::id_t,
                    ptr(w.infop),
                    w.options,
                );
                i64::from(r)
            }
            _ => return -libc::EINVAL,
        };
        res(r)
    }
}
