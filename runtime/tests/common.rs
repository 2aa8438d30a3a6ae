//! Helpers shared by the runtime's integration tests.
#![allow(dead_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

/// A pipe: (read end, write end).
pub fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both fds are new and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Kernel version as (major, minor): the running kernel's, or the release
/// `RUNTIME_KERNEL` makes the runtime behave as (a kernel profile), if older.
pub fn kernel_version() -> (u32, u32) {
    let parse = |s: &str| {
        let mut it = s.trim().split(['.', '-']);
        let major = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        let minor = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        (major, minor)
    };
    let running = parse(&std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap());
    match std::env::var("RUNTIME_KERNEL") {
        Ok(profile) => running.min(parse(&profile)),
        Err(_) => running,
    }
}

/// A read whose data also holds an `Rc`, so a test can see when the driver frees it.
pub struct TrackedRead {
    _buf: Vec<u8>,
    _token: Rc<()>,
}

impl Completable for TrackedRead {
    type Output = io::Result<u32>;
    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// A 64-byte read of `fd` (at its position) whose data holds `token`.
pub fn tracked_read(fd: &OwnedFd, token: Rc<()>) -> Op<TrackedRead> {
    let mut buf = vec![0u8; 64];
    let sqe = opcode::Read::new(types::Fd(fd.as_raw_fd()), buf.as_mut_ptr(), 64)
        .offset(u64::MAX)
        .build();
    // SAFETY: the SQE points into `buf`'s heap block, owned by the op's data.
    unsafe {
        Op::new(
            TrackedRead {
                _buf: buf,
                _token: token,
            },
            sqe,
        )
    }
}

/// Every basic kind of op on the current core, each checked: a nop, a chain of four linked
/// nops, a pipe written and read through the ring, a sleep, and a timeout that fires.
pub async fn basic_ops() {
    use runtime::ext::{raw, Link, SharedFd};
    raw::nop().await.expect("nop");
    let outs = Link::new((0..4).map(|_| raw::nop()))
        .await
        .expect("linked nops");
    assert_eq!(outs.len(), 4);
    let (r, w) = pipe();
    let (r, w) = (SharedFd::new(r), SharedFd::new(w));
    let (n, _) = raw::write(&w, b"ping".to_vec(), u64::MAX).await;
    assert_eq!(n.expect("pipe write"), 4);
    let (n, buf) = raw::read(&r, vec![0u8; 16], u64::MAX).await;
    assert_eq!(&buf[..n.expect("pipe read")], b"ping");
    runtime::time::sleep(std::time::Duration::from_millis(2)).await;
    let t = runtime::time::timeout(
        std::time::Duration::from_millis(5),
        std::future::pending::<()>(),
    );
    assert!(t.await.is_err(), "the timeout fires");
}
