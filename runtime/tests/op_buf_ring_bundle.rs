//! A bundle receive's buffers are the ones the kernel filled, however late its CQE is
//! taken: the buffers after the first are found by their positions in the ring, which
//! buffers returned meanwhile take over. The driver claims them as it reaps the CQE.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::task::Poll;

use io_uring::{opcode, types};
use runtime::buf::BufRing;
use runtime::ext::{sqe_with_ioprio_bits, Cqe, MultiOp, Release};
use runtime::Runtime;

/// `IORING_RECVSEND_BUNDLE`.
const BUNDLE: u16 = 1 << 4;

struct RecvMulti {
    ring: BufRing,
    _fd: std::rc::Rc<OwnedFd>,
}

impl Release for RecvMulti {
    fn release(&self, mut cqe: Cqe) {
        self.ring.take_each(&mut cqe, drop);
    }
}

fn recv_multi(fd: &std::rc::Rc<OwnedFd>, ring: &BufRing, bundle: bool) -> MultiOp<RecvMulti> {
    let sqe = opcode::RecvMulti::new(types::Fd(fd.as_raw_fd()), ring.bgid()).build();
    let sqe = if bundle {
        sqe_with_ioprio_bits(sqe, BUNDLE)
    } else {
        sqe
    };
    let data = RecvMulti {
        ring: ring.clone(),
        _fd: fd.clone(),
    };
    // SAFETY: the SQE points at no memory of ours; the kernel picks from `ring`, which the
    // op's data keeps alive, and reads the socket the data keeps open.
    unsafe { MultiOp::new_releasing(data, sqe) }.with_buf_ring(ring)
}

async fn next(op: &mut MultiOp<RecvMulti>) -> Cqe {
    std::future::poll_fn(|cx| op.poll_next_cqe(cx))
        .await
        .expect("the receive ended")
}

/// A connected pair of Unix stream sockets: (the end read through the ring, the other).
fn pair() -> (std::rc::Rc<OwnedFd>, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
    // SAFETY: both fds are new and owned by nobody else.
    unsafe {
        (
            std::rc::Rc::new(OwnedFd::from_raw_fd(fds[0])),
            OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

fn write_all(fd: &OwnedFd, data: &[u8]) {
    // SAFETY: writes from a live slice.
    let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    assert_eq!(n, data.len() as isize);
}

#[test]
fn a_bundle_taken_after_other_buffers_came_back_holds_its_own_bytes() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        // Before Linux 6.0 (RUNTIME_KERNEL=5.19) there is no multishot receive to bundle:
        // the kernel refuses the op.
        let multishot = runtime::features().is_some_and(|f| f.recv_multishot);
        if !runtime::ext::testing::require("recv_multishot", multishot) {
            let ring = BufRing::new(4, 64).unwrap();
            let (a, _peer) = pair();
            let mut op = recv_multi(&a, &ring, false);
            let cqe = next(&mut op).await;
            let err = cqe.result.expect_err("no multishot receive before 6.0");
            assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
            return;
        }
        // Without bundles (the kernel, RUNTIME_DISABLE or the epoll backend), the same
        // receives without the flag: one buffer per CQE, every byte delivered.
        let bundle = runtime::ext::testing::require(
            "recv_bundle",
            runtime::features().is_some_and(|f| f.recv_bundle),
        );
        // Four buffers of 64 bytes: a's bundle takes positions 0 and 1, b's receives take
        // 2 and 3 and give their buffers back, which go to positions 4 and 5 (the entries
        // of positions 0 and 1).
        let ring = BufRing::new(4, 64).unwrap();
        let (a, a_peer) = pair();
        let (b, b_peer) = pair();
        write_all(&a_peer, &[b'a'; 128]);
        let mut a_op = recv_multi(&a, &ring, bundle);
        // Submit a's receive without taking its CQE.
        std::future::poll_fn(|cx| {
            assert!(a_op.poll_next_cqe(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        let mut b_op = recv_multi(&b, &ring, false);
        for round in 0..2u8 {
            write_all(&b_peer, &[b'0' + round; 64]);
            let mut cqe = next(&mut b_op).await;
            let buf = ring.take(&mut cqe).expect("b's buffer");
            assert_eq!(&buf[..], &[b'0' + round; 64]);
        }
        // Both of b's buffers are back: positions 4 and 5 hold them now.
        let mut got = Vec::new();
        if bundle {
            let mut cqe = next(&mut a_op).await;
            assert_eq!(cqe.result.as_ref().ok(), Some(&128), "{cqe:?}");
            let n = ring.take_each(&mut cqe, |b| got.extend_from_slice(&b));
            assert_eq!(n, 2, "a bundle of two buffers");
        } else {
            for _ in 0..2 {
                let mut cqe = next(&mut a_op).await;
                assert_eq!(cqe.result.as_ref().ok(), Some(&64), "{cqe:?}");
                let n = ring.take_each(&mut cqe, |b| got.extend_from_slice(&b));
                assert_eq!(n, 1, "no bundle: one buffer per CQE");
            }
        }
        assert_eq!(got, [b'a'; 128], "a's buffers hold a's bytes");
        drop((a_op, b_op));
        assert_eq!(ring.outstanding(), 0);
    });
}
