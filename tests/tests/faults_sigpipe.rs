//! A peer resets the connection in the middle of a 32 MiB write while `SIGPIPE` has its
//! default action (kill the process): the write ends with `ECONNRESET` or `EPIPE` and the
//! process lives, which holds only if every send uses `MSG_NOSIGNAL`.
//!
//! Alone in its binary: Rust sets `SIGPIPE` to `SIG_IGN` before `main`, and this test puts
//! the default back for the whole process.

use std::io::{ErrorKind, Read};
use std::time::Duration;

use corering_net::TcpStream;
use futures::io::AsyncWriteExt;
use runtime::time::timeout;

const TOTAL: usize = 32 << 20;
const READ_FIRST: usize = 256 << 10;

#[runtime::test]
async fn peer_reset_mid_write_is_an_error_not_a_signal() {
    // SAFETY: SIG_DFL is a valid disposition for SIGPIPE; no handler runs.
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    assert_eq!(old, libc::SIG_IGN, "Rust ignores SIGPIPE before main");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The peer reads a little, then resets: SO_LINGER 0 makes close send an RST.
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut first = vec![0u8; READ_FIRST];
        s.read_exact(&mut first).unwrap();
        socket2::SockRef::from(&s)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        first
    });

    let stream = TcpStream::connect(addr).await.unwrap();
    let data: Vec<u8> = (0..TOTAL).map(|i| (i % 251) as u8).collect();
    let (res, data) = timeout(Duration::from_secs(20), stream.write_all_owned(data))
        .await
        .expect("the write ends once the peer resets");
    let err = res.expect_err("32 MiB cannot all be taken by a peer that reset");
    assert!(
        matches!(
            err.kind(),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
        ),
        "{err:?}"
    );
    assert_eq!(data.len(), TOTAL, "the buffer comes back");
    let first = peer.join().unwrap();
    assert!(
        first[..] == data[..READ_FIRST],
        "the peer read the first bytes"
    );
    // Later writes fail the same way; still no signal.
    for _ in 0..3 {
        let (res, _) = stream.write_owned(vec![0u8; 4096]).await;
        let err = res.unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
            ),
            "{err:?}"
        );
    }
    // The vectored write too (it once was IORING_OP_WRITEV, which raises SIGPIPE).
    for _ in 0..3 {
        let (res, _) = stream
            .writev_owned(vec![vec![1u8; 100], vec![2u8; 100]])
            .await;
        let err = res.unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
            ),
            "{err:?}"
        );
    }
    // And the futures-io adapter: it buffers, so the error shows by the flush at the latest.
    let mut stream = stream;
    let res = match AsyncWriteExt::write_all(&mut stream, &[3u8; 4096]).await {
        Ok(()) => stream.flush().await,
        Err(e) => Err(e),
    };
    assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);
    println!("write_all of {TOTAL} bytes ended with {err} (SIGPIPE at SIG_DFL)");
}
