//! Provided buffer rings: the kernel picks buffers for a multishot receive, each goes back
//! to the ring when its `RingBuf` drops, and `ENOBUFS` once the ring runs dry.
//!
//! The multishot read is `IORING_OP_READ_MULTISHOT` of a pipe (Linux 6.7); on an older
//! kernel (or kernel profile, `RUNTIME_KERNEL`) a multishot `RECV` of a stream socketpair
//! (6.0); before 6.0 there is none, and the test asserts that the op answers `EINVAL`.

mod common;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::task::Poll;

use io_uring::{opcode, types};
use runtime::buf::BufRing;
use runtime::ext::{BufRingExt, Cqe, MultiOp, Release};
use runtime::Runtime;

/// A multishot read of a pipe that selects buffers from `ring`.
struct ReadMulti {
    ring: BufRing,
}

impl Release for ReadMulti {
    fn release(&self, mut cqe: Cqe) {
        // Taking the buffer and dropping it puts it back in the ring.
        drop(self.ring.take(&mut cqe));
    }
}

fn read_multi(fd: &OwnedFd, ring: &BufRing) -> MultiOp<ReadMulti> {
    let fd = types::Fd(fd.as_raw_fd());
    let sqe = if common::kernel_version() >= (6, 7) {
        opcode::ReadMulti::new(fd, 0, ring.bgid()).build()
    } else {
        opcode::RecvMulti::new(fd, ring.bgid()).build()
    };
    let data = ReadMulti { ring: ring.clone() };
    // SAFETY: the SQE points at no memory of ours; the kernel picks from `ring`, which the
    // op's data keeps alive.
    unsafe { MultiOp::new_releasing(data, sqe) }
}

/// What the multishot read reads: a pipe (READ_MULTISHOT) or a stream socketpair (RECV).
fn pipe() -> (OwnedFd, OwnedFd) {
    if common::kernel_version() >= (6, 7) {
        return common::pipe();
    }
    let (r, w) = std::os::unix::net::UnixStream::pair().unwrap();
    (r.into(), w.into())
}

/// Before Linux 6.0 no multishot read exists: checks that the op answers `EINVAL` (as the
/// kernel answers a flag it does not know) and returns true.
fn no_multishot(rt: &Runtime) -> bool {
    if common::kernel_version() >= (6, 0) {
        return false;
    }
    let (r, _w) = pipe();
    rt.block_on(async {
        let ring = BufRing::new(2, 16).unwrap();
        let mut op = read_multi(&r, &ring);
        let cqe = next(&mut op).await.expect("one CQE");
        let err = cqe.result.as_ref().expect_err("no multishot before 6.0");
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{cqe:?}");
        assert!(!cqe.more() && next(&mut op).await.is_none(), "{cqe:?}");
    });
    eprintln!("checked a kernel without multishot reads: the op answers EINVAL");
    true
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
    if no_multishot(&rt) {
        return;
    }
    let (r, w) = pipe();
    rt.block_on(async {
        let ring = BufRing::new(4, 64).unwrap();
        let mut op = read_multi(&r, &ring);
        let mut got = Vec::new();
        for round in 0..12u8 {
            write_all(&w, &[round; 10]);
            let mut cqe = next(&mut op).await.expect("multishot read ended early");
            assert!(cqe.more(), "{cqe:?}");
            let buf = ring.take(&mut cqe).expect("a CQE with a buffer");
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
    if no_multishot(&rt) {
        return;
    }
    let (r, w) = pipe();
    rt.block_on(async {
        let ring = BufRing::new(2, 16).unwrap();
        let mut op = read_multi(&r, &ring);
        let mut held = Vec::new();
        let mut saw_enobufs = false;
        for i in 0..3u8 {
            write_all(&w, &[i; 4]);
            let mut cqe = next(&mut op).await.unwrap();
            match &cqe.result {
                Ok(_) => held.push(ring.take(&mut cqe).unwrap()),
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
        let mut cqe = next(&mut op).await.unwrap();
        let buf = ring.take(&mut cqe).unwrap();
        assert_eq!(&buf[..], &[2u8; 4]);
    });
}

#[test]
fn buffers_of_cqes_nobody_saw_go_back_to_the_ring() {
    let rt = Runtime::new().unwrap();
    if no_multishot(&rt) {
        return;
    }
    let (r, w) = pipe();
    rt.block_on(async {
        let ring = BufRing::new(4, 16).unwrap();
        let mut op = read_multi(&r, &ring);
        write_all(&w, b"first");
        let mut cqe = next(&mut op).await.unwrap();
        drop(ring.take(&mut cqe));
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
            let mut cqe = next(&mut op).await.unwrap();
            held.push(ring.take(&mut cqe).expect("the ring has a buffer"));
        }
        assert_eq!(ring.outstanding(), 4);
    });
}

#[test]
fn dropping_the_op_mid_stream_is_safe() {
    let rt = Runtime::new().unwrap();
    if no_multishot(&rt) {
        return;
    }
    let (r, w) = pipe();
    rt.block_on(async {
        let ring = BufRing::new(8, 32).unwrap();
        let mut op = read_multi(&r, &ring);
        write_all(&w, b"abc");
        let mut cqe = next(&mut op).await.unwrap();
        drop(ring.take(&mut cqe));
        let mut t = tokio_test::task::spawn(next(&mut op));
        assert!(matches!(t.poll(), Poll::Pending));
        drop(t);
        drop(op);
        runtime::time::sleep(std::time::Duration::from_millis(5)).await;
        write_all(&w, b"def");
        runtime::ext::raw::nop().await.unwrap();
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

/// Whether this kernel and runtime consume buffer rings incrementally (Linux 6.16 here).
/// Where not (`runtime::ext::testing::require`: a failure under
/// `CORERING_REQUIRE_FEATURES=1`), checks the documented fallback instead and returns
/// `false`: the epoll backend refuses an incremental ring (`EINVAL`, as a kernel without
/// it), and so does a kernel older than 6.12; a kernel that has it while the runtime
/// does not take it (switched off, or older than 6.16) may register one.
fn incremental_granted() -> bool {
    let f = runtime::features().expect("inside the runtime");
    if runtime::ext::testing::require("recv_incremental", f.recv_incremental) {
        return true;
    }
    match BufRing::incremental(2, 256) {
        Err(e) => {
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains("IOU_PBUF_RING_INC"), "{e}");
        }
        Ok(ring) => {
            assert_ne!(
                f.backend,
                runtime::Backend::Epoll,
                "epoll plays no incremental ring"
            );
            assert!(ring.is_incremental());
        }
    }
    // Plain rings, the read path's fallback, still work.
    let ring = BufRing::new(2, 256).unwrap();
    assert!(!ring.is_incremental());
    false
}

#[test]
fn an_incremental_ring_packs_small_reads_into_one_buffer() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    rt.block_on(async {
        if !incremental_granted() {
            return;
        }
        let ring = BufRing::incremental(2, 256).unwrap();
        assert!(ring.is_incremental());
        let mut op = read_multi(&r, &ring).with_buf_ring(&ring);
        let mut held = Vec::new();
        // Two 100-byte reads share the first buffer, one after the other.
        for (i, byte) in [b'a', b'b'].into_iter().enumerate() {
            write_all(&w, &[byte; 100]);
            let mut cqe = next(&mut op).await.unwrap();
            assert_eq!(cqe.buf_offset(), Some(100 * i as u32), "{cqe:?}");
            let buf = ring.take(&mut cqe).unwrap();
            assert_eq!(&buf[..], &[byte; 100][..]);
            held.push(buf);
        }
        assert_eq!(
            held[0].bid(),
            held[1].bid(),
            "both reads landed in one buffer"
        );
        // The third read fills the buffer's last 56 bytes; the rest goes to the next one.
        write_all(&w, &[b'c'; 100]);
        let mut rest = Vec::new();
        while rest.len() < 100 {
            let mut cqe = next(&mut op).await.unwrap();
            let buf = ring.take(&mut cqe).unwrap();
            rest.extend_from_slice(&buf);
            held.push(buf);
        }
        assert_eq!(rest, vec![b'c'; 100]);
        assert_eq!(held[2].bid(), held[0].bid());
        assert_eq!(held[2].len(), 56, "the first buffer is filled to its end");
        assert_ne!(held[3].bid(), held[0].bid());
        assert_eq!(ring.outstanding(), 1, "the full buffer is out of the ring");
        // It comes back only when its last chunk goes.
        let returned = ring.returned();
        let last = held.remove(2);
        drop(held);
        assert_eq!(ring.returned(), returned, "a chunk of it is still held");
        assert_eq!(ring.outstanding(), 1);
        drop(last);
        assert_eq!(ring.returned(), returned + 1);
        assert_eq!(ring.outstanding(), 0);
        // The second buffer, partly filled, stays with the kernel: the next read goes on
        // where the last one stopped.
        write_all(&w, b"more");
        let mut cqe = next(&mut op).await.unwrap();
        assert_eq!(cqe.buf_offset(), Some(44));
        assert_eq!(&ring.take(&mut cqe).unwrap()[..], b"more");
        assert_eq!(ring.returned(), returned + 1);
    });
}

#[test]
fn an_incremental_ring_streams_random_sizes_byte_exact() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    rt.block_on(async {
        if !incremental_granted() {
            return;
        }
        // Four 4 KiB buffers carry 1 MiB in reads of 1 to 3,000 bytes: each buffer is
        // filled by many reads, and a read may end one buffer and start the next.
        let ring = BufRing::incremental(4, 4096).unwrap();
        let mut op = read_multi(&r, &ring).with_buf_ring(&ring);
        let mut x = 0x2545_f491_u32;
        let mut sent = Vec::new();
        let mut got = Vec::new();
        let mut held = std::collections::VecDeque::new();
        while sent.len() < 1 << 20 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let len = 1 + (x % 3000) as usize;
            let msg: Vec<u8> = (0..len)
                .map(|i| (sent.len() + i) as u8 ^ (x as u8))
                .collect();
            write_all(&w, &msg);
            sent.extend_from_slice(&msg);
            while got.len() < sent.len() {
                let mut cqe = match next(&mut op).await {
                    Some(cqe) if cqe.result.is_ok() => cqe,
                    // The multishot ended (its final CQE): re-arm.
                    _ => {
                        op = read_multi(&r, &ring).with_buf_ring(&ring);
                        continue;
                    }
                };
                let buf = ring.take(&mut cqe).unwrap();
                got.extend_from_slice(&buf);
                // Hold a few chunks, as a reader working through them would.
                held.push_back(buf);
                if held.len() > 3 {
                    held.pop_front();
                }
            }
        }
        assert!(got == sent, "the bytes read differ from those written");
        drop(held);
        assert_eq!(ring.outstanding(), 0, "every filled buffer is back");
        assert!(ring.returned() > 200, "1 MiB went through 4 KiB buffers");
    });
}

#[test]
fn buf_of_an_incremental_ring_stays_within_its_buffer() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        if !incremental_granted() {
            return;
        }
        // Bookkeeping only (no op picks from the ring): `buf` reports bytes in one buffer,
        // so more than its room is cut to the room, and no other buffer is touched.
        let ring = BufRing::incremental(2, 256).unwrap();
        let a = ring.buf(0, 100);
        let b = ring.buf(0, 200);
        assert_eq!((a.bid(), a.len(), b.bid(), b.len()), (0, 100, 0, 156));
        assert_eq!(ring.outstanding(), 1, "buffer 0 is filled to its end");
        drop((a, b));
        assert_eq!((ring.returned(), ring.outstanding()), (1, 0));
        let c = ring.buf(1, 256);
        assert_eq!(c.len(), 256, "buffer 1 was left as it was");
        drop(c);
        assert_eq!((ring.returned(), ring.outstanding()), (2, 0));
    });
}
