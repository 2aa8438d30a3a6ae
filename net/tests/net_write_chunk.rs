//! `write_chunk`: a received chunk sent on as it is, write-behind. Order with the poll
//! traits' writes, the task woken once per message of a request/response exchange, a chunk
//! back in the ring without the task, bytes sent after a drop, and a failed send reported
//! by the next write. (Byte-exact echoes of random sizes with it are in `net_ring_read`.)

use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream, UnixStream};
use futures::io::AsyncWriteExt;
use runtime::time::timeout;
use runtime::Builder;

const LIMIT: Duration = Duration::from_secs(60);

/// Echoes with `read_chunk` and `write_chunk` until end of stream, then closes; returns the
/// bytes echoed.
async fn echo(mut stream: TcpStream) -> io::Result<u64> {
    let mut total = 0;
    loop {
        let chunk = stream.read_chunk().await?;
        if chunk.is_empty() {
            stream.close().await?;
            return Ok(total);
        }
        total += chunk.len() as u64;
        stream.write_chunk(chunk).await?;
    }
}

/// A future that counts its polls.
struct Counted<F> {
    inner: Pin<Box<F>>,
    polls: Rc<std::cell::Cell<u64>>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.set(self.polls.get() + 1);
        self.inner.as_mut().poll(cx)
    }
}

#[test]
fn a_request_response_exchange_wakes_the_task_once_per_message() {
    const ROUNDS: u64 = 2000;
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // A std client: one message, then wait for its echo, ROUNDS times.
        let client = thread::spawn(move || -> io::Result<()> {
            let mut s = std::net::TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            let mut back = [0u8; 64];
            for i in 0..ROUNDS {
                let msg = [i as u8; 64];
                s.write_all(&msg)?;
                s.read_exact(&mut back)?;
                assert_eq!(back, msg, "round {i}");
            }
            Ok(())
        });
        let (stream, _) = listener.accept().await.unwrap();
        stream.set_nodelay(true).unwrap();
        let polls = Rc::new(std::cell::Cell::new(0));
        let server = runtime::spawn_local(Counted {
            inner: Box::pin(echo(stream)),
            polls: polls.clone(),
        });
        let echoed = timeout(LIMIT, server).await.unwrap().unwrap().unwrap();
        client.join().unwrap().unwrap();
        assert_eq!(echoed, ROUNDS * 64);
        // One wake per request (the send's completion wakes nobody), plus the first poll,
        // end of stream, the close, and a few requests split across two receives.
        let polls = polls.get();
        println!("{polls} polls for {ROUNDS} round trips");
        assert!(
            polls < ROUNDS + ROUNDS / 10,
            "{polls} polls for {ROUNDS} round trips: the send's completion woke the task"
        );
    });
}

#[test]
fn chunks_and_poll_writes_arrive_in_order() {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let (mut c, mut d) = UnixStream::pair().unwrap();
        // Chunks of `c` to pass on through `a`, between writes of `a`'s own.
        AsyncWriteExt::write_all(&mut c, b"-chunk-").await.unwrap();
        c.flush().await.unwrap();
        let chunk = d.read_chunk().await.unwrap();
        assert_eq!(&chunk[..], b"-chunk-");
        AsyncWriteExt::write_all(&mut a, b"before").await.unwrap();
        a.write_chunk(chunk).await.unwrap();
        AsyncWriteExt::write_all(&mut a, b"after").await.unwrap();
        a.close().await.unwrap();
        let mut got = Vec::new();
        futures::io::AsyncReadExt::read_to_end(&mut b, &mut got)
            .await
            .unwrap();
        assert_eq!(got, b"before-chunk-after");
        // An empty chunk (end of stream) sends nothing.
        drop(c);
        let eof = d.read_chunk().await.unwrap();
        assert!(eof.is_empty());
        let (mut e, mut f) = UnixStream::pair().unwrap();
        e.write_chunk(eof).await.unwrap();
        e.close().await.unwrap();
        let mut got = Vec::new();
        futures::io::AsyncReadExt::read_to_end(&mut f, &mut got)
            .await
            .unwrap();
        assert!(got.is_empty());
    });
}

#[test]
fn a_failed_send_is_reported_by_the_next_write() {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let (mut a, b) = UnixStream::pair().unwrap();
        let (mut c, mut d) = UnixStream::pair().unwrap();
        AsyncWriteExt::write_all(&mut c, b"x").await.unwrap();
        c.flush().await.unwrap();
        let chunk = d.read_chunk().await.unwrap();
        // The peer is gone: the send fails (EPIPE, no SIGPIPE), and a later write says so.
        drop(b);
        a.write_chunk(chunk).await.unwrap();
        let err = a.flush().await.expect_err("the failed send is reported");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
        // Sticky: bytes reported written were lost, so every later call fails the same way.
        let again = a.flush().await.expect_err("the failure sticks");
        assert_eq!(again.kind(), io::ErrorKind::BrokenPipe, "{again}");
        let more = AsyncWriteExt::write_all(&mut a, b"more")
            .await
            .expect_err("a later write");
        assert_eq!(more.kind(), io::ErrorKind::BrokenPipe, "{more}");
    });
}

#[test]
fn a_sent_chunk_goes_back_to_the_ring_without_the_task() {
    // 64 connections in request/response lockstep through 16 whole 4 KiB buffers: a chunk
    // held until its connection's next message would hold 64 buffers, more than the ring
    // has, and every connection would wait for a buffer none can give back.
    const CONNS: usize = 64;
    const ROUNDS: usize = 50;
    let rt = Builder::new()
        .recv_buffers(16, 4096)
        .recv_incremental(false)
        .build()
        .unwrap();
    rt.block_on(async {
        // The ring path off (RUNTIME_DISABLE=recv_multishot, or the kernel): a failure under
        // CORERING_REQUIRE_FEATURES=1, else the same lockstep on the own-buffer path, every
        // byte checked, and no ring.
        let ring_on = runtime::ext::testing::require(
            "recv_multishot (the read path's ring)",
            runtime::features().unwrap().recv_multishot,
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The client says when every reply is in, and stays connected and idle until the
        // server has looked at the ring.
        let replied = Arc::new(AtomicBool::new(false));
        let checked = Arc::new(AtomicBool::new(false));
        let (replied_c, checked_c) = (replied.clone(), checked.clone());
        let client = thread::spawn(move || -> io::Result<()> {
            let mut socks = (0..CONNS)
                .map(|_| std::net::TcpStream::connect(addr))
                .collect::<io::Result<Vec<_>>>()?;
            for s in &socks {
                s.set_read_timeout(Some(Duration::from_secs(20)))?;
            }
            let mut back = [0u8; 100];
            for round in 0..ROUNDS {
                for (i, s) in socks.iter_mut().enumerate() {
                    s.write_all(&[(round + i) as u8; 100])?;
                }
                for (i, s) in socks.iter_mut().enumerate() {
                    s.read_exact(&mut back)?;
                    assert_eq!(back, [(round + i) as u8; 100]);
                }
            }
            // Idle with every reply received until the server has checked, then end.
            replied_c.store(true, Ordering::Release);
            let start = std::time::Instant::now();
            while !checked_c.load(Ordering::Acquire) && start.elapsed() < LIMIT {
                thread::sleep(Duration::from_millis(1));
            }
            Ok(())
        });
        let mut servers = Vec::new();
        for _ in 0..CONNS {
            let (stream, _) = listener.accept().await.unwrap();
            servers.push(runtime::spawn_local(echo(stream)));
        }
        timeout(LIMIT, async {
            while !replied.load(Ordering::Acquire) {
                runtime::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the exchange stalled");
        // Every reply went out and the connections wait for more: no chunk is held.
        // Before Linux 6.0 (no multishot receive), or with it switched off, there is no
        // core ring: the chunks are the caller's buffers, and nothing is held by a ring.
        let ring = runtime::buf::core_ring();
        assert_eq!(ring.is_some(), ring_on, "{:?}", runtime::features());
        if let Some(ring) = &ring {
            // The last sends' completions may still be on their way to their tasks: give
            // them a moment (a chunk held until the connection's next message would stay
            // held for as long as the client idles).
            let start = std::time::Instant::now();
            while ring.outstanding() != 0 && start.elapsed() < Duration::from_secs(2) {
                runtime::time::sleep(Duration::from_millis(1)).await;
            }
            assert_eq!(ring.outstanding(), 0, "a sent chunk is still held");
        }
        checked.store(true, Ordering::Release);
        timeout(LIMIT, async {
            for s in servers {
                assert_eq!(s.await.unwrap().unwrap(), (ROUNDS * 100) as u64);
            }
        })
        .await
        .expect("the exchange stalled");
        client.join().unwrap().unwrap();
    });
}

#[test]
fn bytes_written_before_a_drop_are_still_sent() {
    let rt = Builder::new().build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let data: Vec<u8> = (0..1u32 << 20).map(|i| (i % 253) as u8).collect();
        let expect = data.clone();
        // The reader starts late, so the last write is still in flight at the drop.
        let client = thread::spawn(move || -> io::Result<Vec<u8>> {
            let mut s = std::net::TcpStream::connect(addr)?;
            thread::sleep(Duration::from_millis(200));
            let mut got = Vec::new();
            s.read_to_end(&mut got)?;
            Ok(got)
        });
        let (mut stream, _) = listener.accept().await.unwrap();
        for part in data.chunks(64 * 1024) {
            AsyncWriteExt::write_all(&mut stream, part).await.unwrap();
        }
        // No flush, no close: dropped with a send in flight. The core keeps running (the
        // send needs it) while the client reads.
        drop(stream);
        timeout(LIMIT, async {
            while !client.is_finished() {
                runtime::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the client never saw the end of the stream");
        let got = client.join().unwrap().unwrap();
        assert_eq!(got.len(), expect.len());
        assert!(got == expect, "bytes lost at the drop");
    });
}
