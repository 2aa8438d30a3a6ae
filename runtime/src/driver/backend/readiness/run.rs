//! Carrying out SQEs on the readiness backend: classifying an fd, trying an op, queueing
//! it until epoll says its fd is ready, and retrying it then (multishot ops post a CQE per
//! success and keep waiting).

use std::io;
use std::os::fd::AsRawFd;

use io_uring::opcode;

use super::class::{self, Class, Dir, IORING_CQE_F_MORE};
use super::exec::{self, Try};
use super::pbuf::IORING_CQE_F_BUFFER;
use super::table::{Kind, Side};
use super::{Readiness, INTEREST};
use crate::driver::sqe::{Sqe, IORING_RECV_MULTISHOT};

/// Whether `s` posts a CQE per success until it ends (a multishot accept or receive).
fn multishot(s: &Sqe) -> bool {
    match s.opcode() {
        opcode::Accept::CODE => s.accept().multishot,
        opcode::Recv::CODE => s.send_recv().ioprio & IORING_RECV_MULTISHOT != 0,
        opcode::ReadMulti::CODE => true,
        _ => false,
    }
}

/// A multishot receive's byte limit (`optlen`, 6.17; 0: none): the CQE that reaches it is
/// the last, as the kernel's.
fn recv_limit(s: &Sqe) -> u32 {
    if s.opcode() == opcode::Recv::CODE {
        s.send_recv().limit
    } else {
        0
    }
}

impl Readiness {
    /// epoll says `fd` is ready (`bits`): retries its waiting ops.
    pub(super) fn ready(&mut self, fd: i32, bits: u32) {
        if self.table.fd(fd).kind != Kind::Ready {
            return;
        }
        let err = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
        let readable = bits & ((libc::EPOLLIN | libc::EPOLLRDHUP) as u32 | err) != 0;
        let writable = bits & (libc::EPOLLOUT as u32 | err) != 0;
        if readable {
            self.table.fd(fd).in_ready = true;
            self.retry(fd, Dir::Read);
        }
        if writable {
            self.table.fd(fd).out_ready = true;
            self.retry(fd, Dir::Write);
        }
        if self.table.fd(fd).has_waiting(Side::Poll) {
            self.retry_polls(fd, bits);
        }
    }

    /// Retries the ops waiting on `fd`'s `dir` side in order, until one would block.
    fn retry(&mut self, fd: i32, dir: Dir) {
        let side = Side::Dir(dir);
        while let Some(w) = self.table.front(fd, side) {
            let (s, state) = (w.sqe, w.state);
            match self.drive(s, state) {
                Some((s, state)) => {
                    if let Some(w) = self.table.front(fd, side) {
                        (w.sqe, w.state) = (s, state);
                    }
                    self.set_ready(fd, dir, false);
                    return;
                }
                None => {
                    self.table.pop(fd, side);
                }
            }
        }
    }

    /// Tries `s` (with its progress `state`) until it would block, posting a CQE per
    /// success of a multishot op, or until it ends (its final CQE posted). `Some`: it waits,
    /// as it now is.
    fn drive(&mut self, mut s: Sqe, mut state: u32) -> Option<(Sqe, u32)> {
        let multi = multishot(&s);
        let limit = recv_limit(&s);
        loop {
            let (t, flags) = self.attempt(&mut s, &mut state);
            match t {
                Try::Again => return Some((s, state)),
                Try::Done(r) if multi && s.opcode() == opcode::Accept::CODE && r >= 0 => {
                    self.post(&s, r, IORING_CQE_F_MORE)
                }
                // A receive's byte limit: the CQE that reaches it is the last.
                Try::Done(r) if multi && r > 0 && (limit == 0 || state < limit) => {
                    self.post(&s, r, flags | IORING_CQE_F_MORE)
                }
                Try::Done(r) => {
                    self.complete_with(s, r, flags);
                    return None;
                }
            }
        }
    }

    /// One try of `s`: a receive into a provided buffer, or any other readiness op
    /// (`exec::try_ready`). Returns the outcome and the CQE's flags (a buffer's id).
    fn attempt(&mut self, s: &mut Sqe, state: &mut u32) -> (Try, u32) {
        if !s.selects_buffer() {
            // SAFETY: a waiting op's memory is its own until its final CQE (module invariant).
            return (unsafe { exec::try_ready(s, state) }, 0);
        }
        // A receive or a read (`start` refuses other ops that select a buffer): the ring,
        // the length and the flags are at the same places in both.
        let (fd, bgid, op_len, op_flags) = if s.opcode() == opcode::Recv::CODE {
            let r = s.send_recv();
            (r.fd, r.buf_group, r.len, r.msg_flags)
        } else {
            let r = s.rw();
            (r.fd, r.buf_group, r.len, r.rw_flags)
        };
        let Some(buf) = self.rings.peek(bgid) else {
            return (Try::Done(-libc::ENOBUFS), 0);
        };
        let mut len = buf.len;
        if multishot(s) {
            let limit = recv_limit(s);
            if limit != 0 {
                len = len.min(limit.saturating_sub(*state));
            }
        } else if op_len != 0 {
            len = len.min(op_len);
        }
        let flags = op_flags | libc::MSG_DONTWAIT;
        // SAFETY: the buffer is the application's, registered in the ring (valid while the
        // ring is registered: `Rings::register`'s contract) and handed to the backend by
        // publishing it; nothing else writes it until a CQE names it.
        let r = unsafe {
            let to = buf.addr as usize as *mut libc::c_void;
            if s.opcode() == opcode::Recv::CODE {
                libc::recv(fd, to, len as usize, flags)
            } else {
                // A read of a pipe or other stream (the fd is non-blocking).
                libc::read(fd, to, len as usize)
            }
        };
        if r > 0 {
            self.rings.consume(bgid);
            *state += r as u32;
            return (
                Try::Done(r as i32),
                IORING_CQE_F_BUFFER | (u32::from(buf.bid) << 16),
            );
        }
        if r == 0 {
            return (Try::Done(0), 0);
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => (Try::Again, 0),
            Some(e) => (Try::Done(-e), 0),
            None => (Try::Done(-libc::EIO), 0),
        }
    }

    /// Completes the polls waiting on `fd` that `bits` satisfy.
    fn retry_polls(&mut self, fd: i32, bits: u32) {
        for ud in self.table.user_data_of(fd, Side::Poll) {
            let Some(w) = self.table.remove(ud) else {
                continue;
            };
            let s = w.sqe;
            let p = s.poll_add();
            let revents = bits & (p.poll32_events | (libc::POLLERR | libc::POLLHUP) as u32);
            if revents == 0 {
                self.table.push(fd, Side::Poll, s, 0);
            } else if p.multishot {
                self.post(&s, revents as i32, IORING_CQE_F_MORE);
                self.table.push(fd, Side::Poll, s, 0);
            } else {
                self.complete(s, revents as i32);
            }
        }
    }

    fn set_ready(&mut self, fd: i32, dir: Dir, on: bool) {
        let e = self.table.fd(fd);
        match dir {
            Dir::Read => e.in_ready = on,
            Dir::Write => e.out_ready = on,
        }
    }

    /// What the backend knows of `fd`, registering it with epoll (and making it
    /// non-blocking) on first use. `Err`: the op's result (`-EBADF`, `-ENOSPC`, ...).
    fn classify(&mut self, fd: i32) -> Result<Kind, i32> {
        if fd < 0 {
            return Err(-libc::EBADF);
        }
        match self.table.fd(fd).kind {
            Kind::Unknown => {}
            known => return Ok(known),
        }
        let mut ev = libc::epoll_event {
            events: INTEREST,
            u64: fd as u64,
        };
        // SAFETY: a live epoll_event; no other memory.
        let r =
            unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        let kind = if r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
            let on: libc::c_int = 1;
            // SAFETY: FIONBIO reads one int; the fd is open (epoll just took it).
            unsafe { libc::ioctl(fd, libc::FIONBIO, &on) };
            Kind::Ready
        } else {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EPERM) => Kind::File,
                Some(e) => return Err(-e),
                None => return Err(-libc::EIO),
            }
        };
        let e = self.table.fd(fd);
        e.kind = kind;
        e.in_ready = true;
        e.out_ready = true;
        Ok(kind)
    }

    /// Starts the chained ops whose turn came.
    pub(super) fn run_starts(&mut self) {
        while let Some(s) = self.starts.pop_front() {
            self.start(s);
        }
    }

    /// Carries out one SQE: now, or once its fd is ready, or on the pool.
    pub(super) fn start(&mut self, s: Sqe) {
        if s.fixed_file() {
            return self.complete(s, -libc::EBADF);
        }
        let picks = matches!(
            s.opcode(),
            opcode::Recv::CODE | opcode::Read::CODE | opcode::ReadMulti::CODE
        );
        let multishot_read_without_ring =
            s.opcode() == opcode::ReadMulti::CODE && !s.selects_buffer();
        if (s.selects_buffer() && !picks) || multishot_read_without_ring {
            // Provided buffers serve receives and reads here (a multishot read needs one);
            // other ops that pick one: io_uring only.
            return self.complete(s, -libc::EINVAL);
        }
        match Class::of(s.opcode()) {
            Class::Inline if s.opcode() == opcode::AsyncCancel::CODE => self.cancel(s),
            Class::Inline => {
                if s.opcode() == opcode::Close::CODE {
                    self.forget_fd(s.fd());
                }
                // SAFETY: the op's memory is its own until its CQE (module invariant).
                let r = unsafe { exec::inline(&s) };
                self.complete(s, r);
            }
            Class::Ready(_)
                if s.opcode() == opcode::WaitId::CODE && s.waitid().idtype != libc::P_PIDFD =>
            {
                self.offload(s)
            }
            Class::Ready(dir) => self.start_ready(s, dir),
            Class::Poll => self.start_poll(s),
            Class::Pool => self.offload(s),
            // An opcode this backend does not carry out: `EINVAL`, as a kernel without it
            // answers, with the opcode in the CQE's flags for the op's error to name.
            Class::Unsupported => {
                let flags = class::refused_flags(s.opcode());
                self.complete_with(s, -libc::EINVAL, flags)
            }
        }
    }

    fn start_ready(&mut self, s: Sqe, dir: Dir) {
        let fd = s.fd();
        match self.classify(fd) {
            Err(r) => self.complete(s, r),
            Ok(Kind::File) => match s.opcode() {
                opcode::Read::CODE | opcode::Readv::CODE => {
                    // SAFETY: as in `start`.
                    match unsafe { exec::read_nowait(&s) } {
                        Try::Done(r) => self.complete(s, r),
                        Try::Again => self.offload(s),
                    }
                }
                opcode::Write::CODE | opcode::Writev::CODE => self.offload(s),
                _ => {
                    // SAFETY: as in `start`.
                    let r = unsafe { exec::inline(&s) };
                    self.complete(s, r);
                }
            },
            Ok(_) => {
                let side = Side::Dir(dir);
                let e = *self.table.fd(fd);
                let ready = match dir {
                    Dir::Read => e.in_ready,
                    Dir::Write => e.out_ready,
                };
                if e.has_waiting(side) || !ready {
                    self.table.push(fd, side, s, 0);
                    return;
                }
                if let Some((s, state)) = self.drive(s, 0) {
                    self.set_ready(fd, dir, false);
                    self.table.push(fd, side, s, state);
                }
            }
        }
    }

    fn start_poll(&mut self, s: Sqe) {
        let p = s.poll_add();
        let fd = p.fd;
        let kind = match self.classify(fd) {
            Err(r) => return self.complete(s, r),
            Ok(k) => k,
        };
        match exec::try_poll(fd, p.poll32_events) {
            Try::Done(r) if r >= 0 && kind == Kind::Ready && p.multishot => {
                self.post(&s, r, IORING_CQE_F_MORE);
                self.table.push(fd, Side::Poll, s, 0);
            }
            Try::Done(r) => self.complete(s, r),
            // A regular file is always ready; `Again` comes only from a readiness fd.
            Try::Again => self.table.push(fd, Side::Poll, s, 0),
        }
    }
}
