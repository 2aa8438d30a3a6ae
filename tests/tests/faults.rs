//! Network faults under load: a reader that stops reading (backpressure), half-close on many
//! connections at once, and peers that reset or close while reads are pending.
//!
//! The peer reset in the middle of a large write, with `SIGPIPE` at its default action, is
//! in `faults_sigpipe.rs`: it changes a process-wide signal disposition.

use std::io::{self, ErrorKind};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream};
use futures::StreamExt;
use runtime::buf::IoBuf;
use runtime::time::{sleep, timeout};
use tests::Rng;

const LIMIT: Duration = Duration::from_secs(30);

/// The byte at stream position `i`: a hash of the position, so that a lost, repeated or
/// reordered chunk of any length shows.
fn byte_at(i: u64) -> u8 {
    (i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// Stream bytes `start..start + len`.
fn bytes(start: u64, len: usize) -> Vec<u8> {
    (start..start + len as u64).map(byte_at).collect()
}

/// An `int` the kernel reports for `fd` through `ioctl(fd, req)` (`TIOCOUTQ`, `FIONREAD`).
fn ioctl_int(fd: RawFd, req: libc::Ioctl) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: both requests write one `int` through the pointer, which points at `n`.
    let r = unsafe { libc::ioctl(fd, req, &mut n) };
    assert_eq!(r, 0, "ioctl: {}", io::Error::last_os_error());
    n as usize
}

/// A connected pair on loopback: (client, server).
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, server)
}

/// A writer to a peer that does not read stays pending once the socket buffers are full:
/// it neither completes nor spins nor buffers in userspace; then every byte arrives, in order.
#[runtime::test]
async fn slow_reader_backpressure() {
    const TOTAL: usize = 64 << 20;
    const RSS_BOUND_KIB: u64 = 16 << 10;
    let (writer, reader) = pair().await;
    let (wfd, rfd) = (writer.as_raw_fd(), reader.as_raw_fd());
    let data = bytes(0, TOTAL);
    let rss_with_data = tests::rss_kib();

    let writer = Rc::new(writer);
    let w = writer.clone();
    let task = runtime::spawn_local(async move { w.write_all_owned(data).await });

    // Wait until the kernel takes no more: bytes queued on both sides stop growing.
    let mut queued = 0;
    let mut still = 0;
    for _ in 0..500 {
        sleep(Duration::from_millis(10)).await;
        let now = ioctl_int(wfd, libc::TIOCOUTQ) + ioctl_int(rfd, libc::FIONREAD);
        still = if now == queued { still + 1 } else { 0 };
        queued = now;
        if still == 5 {
            break;
        }
    }
    assert_eq!(still, 5, "the socket buffers never filled");
    assert!(queued < TOTAL, "the kernel took all {TOTAL} bytes");

    // The peer stays idle: the write must stay pending, and cheaply.
    let before = runtime::core_metrics().unwrap();
    for _ in 0..20 {
        sleep(Duration::from_millis(10)).await;
        assert!(
            !task.is_finished(),
            "write_all completed with the peer idle"
        );
        let grown = tests::rss_kib().saturating_sub(rss_with_data);
        assert!(
            grown < RSS_BOUND_KIB,
            "RSS grew {grown} KiB while the write was blocked"
        );
    }
    let idle = runtime::core_metrics().unwrap() - before;
    // Each sleep is one timer (no SQE); a resubmitting send would count thousands here.
    assert!(
        idle.sqes_submitted < 100,
        "{} SQEs submitted while blocked",
        idle.sqes_submitted
    );
    println!(
        "blocked with {queued} bytes in the kernel of {TOTAL}; {} SQEs, {} task polls in 200 ms \
         idle; RSS {} KiB over the data",
        idle.sqes_submitted,
        idle.polls,
        tests::rss_kib().saturating_sub(rss_with_data)
    );

    // Drain: everything arrives, in order.
    let mut got = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while got < TOTAL as u64 {
        let (res, b) = timeout(LIMIT, reader.read_owned(buf))
            .await
            .expect("read in time");
        let n = res.unwrap();
        assert!(n > 0, "end of stream after {got} bytes");
        if let Some(j) = (0..n).find(|&j| b[j] != byte_at(got + j as u64)) {
            panic!("byte {} is wrong", got + j as u64);
        }
        got += n as u64;
        buf = b;
    }
    let (res, data) = timeout(LIMIT, task).await.unwrap().unwrap();
    res.unwrap();
    assert_eq!(data.len(), TOTAL, "the buffer comes back whole");
    writer.shutdown_socket(Shutdown::Write).await.unwrap();
    let (res, _) = reader.read_owned(buf).await;
    assert_eq!(res.unwrap(), 0, "nothing past the {TOTAL} bytes");
}

/// The server's side of `half_close_under_load`: echoes until end of stream, then sends a
/// trailer with the count and closes.
async fn echo_then_trailer(stream: TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 16 << 10];
    let mut total = 0u64;
    loop {
        let (res, b) = stream.read_owned(buf).await;
        let n = res?;
        if n == 0 {
            break;
        }
        let (res, b) = stream.write_all_owned(b.slice(..n)).await;
        res?;
        buf = b.into_inner();
        total += n as u64;
    }
    // The read side is shut; the write side still works.
    let (res, _) = stream
        .write_all_owned(format!("END {total}").into_bytes())
        .await;
    res?;
    Ok(total)
}

/// Many connections write, shut down their write side while their echoes are still in
/// flight, and read the rest: every echo and trailer arrives, then end of stream.
#[runtime::test]
async fn half_close_under_load() {
    const CONNS: usize = 32;
    let mut rng = Rng::new(tests::seed_from_env(0x4A1F_C105));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = runtime::spawn_local(async move {
        let mut incoming = listener.incoming();
        let mut tasks = Vec::new();
        for _ in 0..CONNS {
            let s = incoming.next().await.expect("incoming never ends").unwrap();
            tasks.push(runtime::spawn_local(echo_then_trailer(s)));
        }
        tasks
    });

    let mut clients = Vec::new();
    for c in 0..CONNS {
        let len = rng.range(1, 512 << 10) as usize;
        let chunks: Vec<usize> = (0..64).map(|_| rng.range(1, 64 << 10) as usize).collect();
        clients.push(runtime::spawn_local(async move {
            let start = (c as u64) << 32;
            let (rd, wr) = TcpStream::connect(addr).await?.into_split();
            let writer = runtime::spawn_local(async move {
                let mut sent = 0;
                for &chunk in chunks.iter().cycle() {
                    if sent == len {
                        break;
                    }
                    let n = chunk.min(len - sent);
                    let (res, _) = wr.write_all_owned(bytes(start + sent as u64, n)).await;
                    res?;
                    sent += n;
                }
                wr.shutdown_socket(Shutdown::Write).await?;
                // Writing after the shutdown is EPIPE, not a signal.
                let (res, _) = wr.write_owned(b"late".as_slice()).await;
                assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);
                Ok::<_, io::Error>(())
            });
            let mut got = Vec::with_capacity(len + 32);
            loop {
                let (res, buf) = rd.read_owned(Vec::with_capacity(32 << 10)).await;
                if res? == 0 {
                    break;
                }
                got.extend_from_slice(&buf);
            }
            writer.await.unwrap()?;
            let trailer = format!("END {len}");
            assert_eq!(got.len(), len + trailer.len(), "connection {c}");
            assert!(
                got[..len] == bytes(start, len),
                "connection {c}: echo differs"
            );
            assert_eq!(&got[len..], trailer.as_bytes(), "connection {c}");
            Ok::<_, io::Error>(len as u64)
        }));
    }
    let run = async {
        let mut sent = 0;
        for c in clients {
            sent += c.await.unwrap().unwrap();
        }
        let mut echoed = 0;
        for t in server.await.unwrap() {
            echoed += t.await.unwrap().unwrap();
        }
        assert_eq!(echoed, sent);
        println!("{CONNS} connections half-closed with {sent} bytes echoed");
    };
    timeout(LIMIT, run).await.expect("finished in time");
}

/// Reads pending on many connections end as their peers do: `ConnectionReset` for a peer
/// that resets (`SO_LINGER` 0), end of stream for one that closes; writes then fail with
/// `EPIPE` or `ECONNRESET`, not a signal.
#[runtime::test]
async fn peers_reset_or_close_while_reads_are_pending() {
    const CONNS: usize = 64;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut peers = Vec::new();
    let mut reads = Vec::new();
    for c in 0..CONNS {
        let peer = std::net::TcpStream::connect(addr).unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        reads.push(runtime::spawn_local(async move {
            let (res, _) = stream.read_owned(vec![0u8; 4096]).await;
            (res, stream)
        }));
        peers.push((c % 2 == 0, peer));
    }
    // Let every read reach the kernel, then end the peers.
    sleep(Duration::from_millis(20)).await;
    assert!(reads.iter().all(|r| !r.is_finished()), "a read ended early");
    for (reset, peer) in &peers {
        if *reset {
            socket2::SockRef::from(peer)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
        }
    }
    let resets: Vec<bool> = peers.iter().map(|(r, _)| *r).collect();
    drop(peers);

    let run = async {
        for (c, read) in reads.into_iter().enumerate() {
            let (res, stream) = read.await.unwrap();
            if resets[c] {
                assert_eq!(res.unwrap_err().kind(), ErrorKind::ConnectionReset, "{c}");
            } else {
                assert_eq!(res.unwrap(), 0, "connection {c}: end of stream");
            }
            // The peer is gone: writing fails within a few sends (the first may be taken
            // before the RST of a closed peer comes back).
            let mut err = None;
            for _ in 0..100 {
                let (res, _) = stream.write_owned(vec![1u8; 4096]).await;
                if let Err(e) = res {
                    err = Some(e);
                    break;
                }
                sleep(Duration::from_millis(1)).await;
            }
            let err = err.expect("a write to a closed peer fails");
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
                ),
                "connection {c}: {err:?}"
            );
        }
    };
    timeout(LIMIT, run).await.expect("finished in time");
}
