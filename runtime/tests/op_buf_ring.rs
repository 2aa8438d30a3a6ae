//! Provided buffer rings: the kernel picks buffers for a multishot receive, each goes back
//! to the ring when its `RingBuf` drops, and `ENOBUFS` once the ring runs dry.

mod common;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::task::Poll;

use io_uring::{opcode, types};
use runtime::buf::BufRing;
use runtime::driver::{Cqe, MultiOp, Release};
use runtime::Runtime;

/// A multishot read of a pipe that selects buffers from `ring`.
struct ReadMulti {
    ring: BufRing,
}

impl Release for ReadMulti {
    fn release(&self, cqe: Cqe) {
        // Taking the buffer and dropping it puts it back in the ring.
        drop(self.ring.take(&cqe));
    }
}

fn read_multi(fd: &OwnedFd, ring: &BufRing) -> MultiOp<ReadMulti> {
    let sqe = opcode::ReadMulti::new(types::Fd(fd.as_raw_fd()), 0, ring.bgid()).build();
    let data = ReadMulti { ring: ring.clone() };
    // SAFETY: the SQE points at no memory of ours; the kernel picks from `ring`, which the
    // op's data keeps alive.
    unsafe { MultiOp::new_releasing(data, sqe) }
}

async fn next(op: &mut MultiOp<ReadMulti>) -> Option<Cqe> {
    std::future::poll_fn(|cx| op.poll_next_cqe(cx)).await
}

fn write_all(fd: &OwnedFd, data: &[u8]) {
    // SAFETY: writes from a live slice.
    let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    assert_eq!(n, data.len() as isize);
}

#[test]
fn kernel_fills_ring_buffers_and_they_come_back() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    rt.block_on(async {
        let ring = BufRing::new(4, 64).unwrap();
        let mut op = read_multi(&r, &ring);
        let mut got = Vec::new();
        for round in 0..12u8 {
            write_all(&w, &[round; 10]);
            let cqe = next(&mut op).await.expect("multishot read ended early");
            assert!(cqe.more(), "{cqe:?}");
            let buf = ring.take(&cqe).expect("a CQE with a buffer");
            assert_eq!(&buf[..], &[round; 10]);
            got.push(buf.bid());
            // Dropping the buffer returns it: 12 reads through 4 buffers.
        }
        assert_eq!(ring.outstanding(), 0);
        assert!(got.iter().all(|b| *b < 4));
    });
}

#[test]
fn empty_ring_ends_the_multishot_with_enobufs() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    rt.block_on(async {
        let ring = BufRing::new(2, 16).unwrap();
        let mut op = read_multi(&r, &ring);
        let mut held = Vec::new();
        let mut saw_enobufs = false;
        for i in 0..3u8 {
            write_all(&w, &[i; 4]);
            let cqe = next(&mut op).await.unwrap();
            match &cqe.result {
                Ok(_) => held.push(ring.take(&cqe).unwrap()),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::ENOBUFS), "{e}");
                    assert!(!cqe.more(), "ENOBUFS ends the multishot");
                    saw_enobufs = true;
                    break;
                }
            }
        }
        assert!(saw_enobufs, "two buffers cannot hold three reads");
        assert_eq!(held.len(), 2);
        assert!(next(&mut op).await.is_none());
        drop(held);
        assert_eq!(ring.outstanding(), 0);
        // Re-armed once buffers are back, the read goes on with the data left in the pipe.
        let mut op = read_multi(&r, &ring);
        let cqe = next(&mut op).await.unwrap();
        let buf = ring.take(&cqe).unwrap();
        assert_eq!(&buf[..], &[2u8; 4]);
    });
}

#[test]
fn buffers_of_cqes_nobody_saw_go_back_to_the_ring() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    rt.block_on(async {
        let ring = BufRing::new(4, 16).unwrap();
        let mut op = read_multi(&r, &ring);
        write_all(&w, b"first");
        let cqe = next(&mut op).await.unwrap();
        drop(ring.take(&cqe));
        // Two more CQEs arrive and are queued, never yielded; then the op is dropped.
        write_all(&w, b"second");
        runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        write_all(&w, b"third");
        runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        drop(op);
        runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        // Every buffer is back: four fresh reads fit.
        let mut op = read_multi(&r, &ring);
        let mut held = Vec::new();
        for i in 0..4u8 {
            write_all(&w, &[i; 3]);
            let cqe = next(&mut op).await.unwrap();
            held.push(ring.take(&cqe).expect("the ring has a buffer"));
        }
        assert_eq!(ring.outstanding(), 4);
    });
}

#[test]
fn dropping_the_op_mid_stream_is_safe() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    rt.block_on(async {
        let ring = BufRing::new(8, 32).unwrap();
        let mut op = read_multi(&r, &ring);
        write_all(&w, b"abc");
        let cqe = next(&mut op).await.unwrap();
        drop(ring.take(&cqe));
        let mut t = tokio_test::task::spawn(next(&mut op));
        assert!(matches!(t.poll(), Poll::Pending));
        drop(t);
        drop(op);
        runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        write_all(&w, b"def");
        runtime::nop().await.unwrap();
    });
}

#[test]
fn bad_ring_sizes_are_invalid_input() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        assert_eq!(
            BufRing::new(3, 64).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            BufRing::new(4, 0).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    });
    assert_eq!(
        BufRing::new(4, 64).unwrap_err().kind(),
        io::ErrorKind::Other
    );
}
