//! The raw-ring echo server, the bar for `bench echo` (`harness/raw.rs`'s ring).

use std::cell::Cell;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use io_uring::{cqueue, opcode, squeue, types::Fd, IoUring};

use crate::harness::raw::RawRing;
use crate::harness::server::Ctl;

/// SQ size (the CQ is twice that): far more than the connections of a run.
const ENTRIES: u32 = 256;
/// `user_data` of the multishot accept.
const ACCEPT: u64 = u64::MAX;
/// `user_data` of close ops, whose CQEs are ignored.
const CLOSE: u64 = u64::MAX - 1;
/// Low bit of a connection op's `user_data` (the slot index is above it).
const SEND: u64 = 1;

/// One connection's state: its fd, its buffer, and the message being sent back.
struct Conn {
    fd: RawFd,
    buf: Box<[u8]>,
    /// Bytes the last recv brought.
    len: usize,
    /// Of those, bytes sent back so far.
    sent: usize,
}

/// Serves echo connections on `listener` until `ctl` says stop; `msg` is the buffer size.
pub fn echo(listener: TcpListener, ctl: Arc<Ctl>, msg: usize) -> io::Result<()> {
    let mut raw = RawRing::new(ENTRIES)?;
    let ring = raw.ring();
    let enters = Cell::new(0u64);
    let stats = || {
        let mut m = runtime::CoreMetrics::default();
        m.enters = enters.get();
        Some(m)
    };
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut cqes: Vec<(u64, i32, u32)> = Vec::with_capacity(2 * ENTRIES as usize);
    let accept = opcode::AcceptMulti::new(Fd(listener.as_raw_fd()))
        .build()
        .user_data(ACCEPT);
    push(ring, &accept)?;
    // Hot path: one enter per batch; every CQE of the batch queues its next SQE.
    loop {
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
        enters.set(enters.get() + 1);
        cqes.extend(
            ring.completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for (ud, res, flags) in cqes.drain(..) {
            match ud {
                ACCEPT => {
                    if !cqueue::more(flags) {
                        push(ring, &accept)?;
                    }
                    if res < 0 {
                        continue;
                    }
                    if ctl.stopping() {
                        // SAFETY: `res` is a new fd from accept that nothing else owns.
                        unsafe { libc::close(res) };
                        shut_down(conns);
                        return Ok(());
                    }
                    set_nodelay(res);
                    ctl.tick(0, stats);
                    let conn = Conn {
                        fd: res,
                        buf: vec![0u8; msg].into_boxed_slice(),
                        len: 0,
                        sent: 0,
                    };
                    let idx = match free.pop() {
                        Some(i) => {
                            conns[i] = Some(conn);
                            i
                        }
                        None => {
                            conns.push(Some(conn));
                            conns.len() - 1
                        }
                    };
                    push_recv(ring, idx, conns[idx].as_mut().expect("just stored"))?;
                }
                CLOSE => {}
                _ => {
                    let idx = (ud >> 1) as usize;
                    let conn = conns[idx].as_mut().expect("a CQE for a live connection");
                    let ended = if ud & SEND == 0 {
                        if res > 0 {
                            conn.len = res as usize;
                            conn.sent = 0;
                            push_send(ring, idx, conn)?;
                            false
                        } else {
                            true
                        }
                    } else if res > 0 {
                        conn.sent += res as usize;
                        if conn.sent < conn.len {
                            push_send(ring, idx, conn)?;
                        } else {
                            ctl.tick(conn.len as u64, stats);
                            push_recv(ring, idx, conn)?;
                        }
                        false
                    } else {
                        true
                    };
                    if ended {
                        let close = opcode::Close::new(Fd(conn.fd)).build().user_data(CLOSE);
                        push(ring, &close)?;
                        conns[idx] = None;
                        free.push(idx);
                        ctl.tick(0, stats);
                    }
                }
            }
        }
    }
}

fn push_recv(ring: &mut IoUring, idx: usize, conn: &mut Conn) -> io::Result<()> {
    let len = conn.buf.len() as u32;
    let e = opcode::Recv::new(Fd(conn.fd), conn.buf.as_mut_ptr(), len)
        .build()
        .user_data((idx as u64) << 1);
    push(ring, &e)
}

fn push_send(ring: &mut IoUring, idx: usize, conn: &mut Conn) -> io::Result<()> {
    let rest = &conn.buf[conn.sent..conn.len];
    let e = opcode::Send::new(Fd(conn.fd), rest.as_ptr(), rest.len() as u32)
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data((idx as u64) << 1 | SEND);
    push(ring, &e)
}

/// Pushes one SQE, submitting first if the SQ is full.
fn push(ring: &mut IoUring, e: &squeue::Entry) -> io::Result<()> {
    loop {
        // SAFETY: every buffer an SQE points to lives in a connection slot that stays allocated until the op's CQE
        // (the module invariant); close and accept point to none.
        if unsafe { ring.submission().push(e) }.is_ok() {
            return Ok(());
        }
        ring.submit()?;
    }
}

fn set_nodelay(fd: RawFd) {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a valid c_int of the size passed; a bad fd only makes the call fail.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// Leaks the connection slots if any is still live (an op of it in flight), else drops them.
fn shut_down(conns: Vec<Option<Conn>>) {
    if conns.iter().all(Option::is_none) {
        return;
    }
    // Every live connection has a recv or a send in flight that writes or reads its buffer.
    std::mem::forget(conns);
}
