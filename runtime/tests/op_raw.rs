//! The raw ops of `runtime::ext::raw`, which name their file by a `SharedFd`: a round trip,
//! a dropped op that keeps its file open until the kernel is done with it, a splice and a
//! multishot poll.

mod common;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use futures::StreamExt;
use runtime::ext::{raw, SharedFd};
use runtime::Runtime;
use tokio_test::assert_pending;

/// Whether `fd` is an open file descriptor of this process.
fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD reads the fd's flags and touches no memory.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

#[test]
fn a_write_then_a_read_through_shared_fds_round_trip() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let (r, w) = (SharedFd::new(r), SharedFd::new(w));
    rt.block_on(async {
        let (n, _) = raw::write(&w, b"ping".to_vec(), u64::MAX).await;
        assert_eq!(n.unwrap(), 4);
        let (n, buf) = raw::read(&r, Vec::with_capacity(16), u64::MAX).await;
        assert_eq!(&buf[..n.unwrap()], b"ping");
    });
}

#[test]
fn a_read_dropped_in_flight_keeps_its_file_open_until_the_final_cqe() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let fd = SharedFd::new(r);
    let number = fd.raw();
    rt.block_on(async {
        let mut op = tokio_test::task::spawn(raw::read(&fd, vec![0u8; 8], u64::MAX));
        assert_pending!(op.poll());
        // The caller's clone goes first: the op's own keeps the file open.
        drop(fd);
        assert!(
            is_open(number),
            "the file closed while a read was in flight"
        );
        // Dropped in flight: the driver cancels the read and keeps its data (and so the
        // file) until the kernel's final CQE; then the file closes.
        drop(op);
        for _ in 0..100 {
            if !is_open(number) {
                break;
            }
            runtime::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(!is_open(number), "the file outlived the read's final CQE");
    });
    drop(w);
}

#[test]
fn a_splice_between_shared_fds_moves_the_bytes() {
    let rt = Runtime::new().unwrap();
    let (from_r, from_w) = common::pipe();
    let (to_r, to_w) = common::pipe();
    let mut from_w = std::fs::File::from(from_w);
    from_w.write_all(b"spliced").unwrap();
    let (from_r, to_w) = (SharedFd::new(from_r), SharedFd::new(to_w));
    let n = rt
        .block_on(raw::splice(&from_r, None, &to_w, None, 64, 0))
        .unwrap();
    assert_eq!(n, 7);
    let mut out = [0u8; 7];
    std::fs::File::from(to_r).read_exact(&mut out).unwrap();
    assert_eq!(&out, b"spliced");
}

#[test]
fn poll_add_and_poll_multi_report_readiness() {
    let rt = Runtime::new().unwrap();
    let (r, w) = common::pipe();
    let mut reader = std::fs::File::from(r.try_clone().unwrap());
    let mut writer = std::fs::File::from(w);
    let watched = SharedFd::new(r);
    assert!(watched.as_raw_fd() >= 0);
    rt.block_on(async {
        writer.write_all(b"x").unwrap();
        let revents = raw::poll_add(&watched, libc::POLLIN as u32).await.unwrap();
        assert_ne!(revents & libc::POLLIN as u32, 0);
        reader.read_exact(&mut [0u8; 1]).unwrap();

        let mut ready = raw::poll_multi(&watched, libc::POLLIN as u32);
        for _ in 0..3 {
            writer.write_all(b"y").unwrap();
            let revents = ready.next().await.unwrap().unwrap();
            assert_ne!(revents & libc::POLLIN as u32, 0);
            reader.read_exact(&mut [0u8; 1]).unwrap();
        }
        ready.cancel();
        while ready.next().await.is_some() {}
    });
}
