//! tokio's I/O traits (feature `tokio-io`) on the stream sockets: tokio-util's `Framed`,
//! tokio's `copy_bidirectional`, and polls dropped midway that lose no byte. No tokio
//! runtime runs here: only the traits.
//!
//! The streams' own owned-buffer `read`/`write_all`/`shutdown` shadow the extension
//! methods of the same names, hence the `AsyncWriteExt::write_all(&mut s, ..)` calls.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream, UnixStream};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Framed, LinesCodec};

/// A connected pair over loopback TCP.
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let connect = runtime::spawn_local(TcpStream::connect(addr));
    let (server, _) = listener.accept().await.unwrap();
    (connect.await.unwrap().unwrap(), server)
}

#[test]
fn framed_lines_echo() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (client, server) = tcp_pair().await;
        let echo = runtime::spawn_local(async move {
            let mut lines = Framed::new(server, LinesCodec::new());
            while let Some(line) = lines.next().await {
                lines
                    .send(format!("echo: {}", line.unwrap()))
                    .await
                    .unwrap();
            }
        });
        let mut lines = Framed::new(client, LinesCodec::new());
        for i in 0..100 {
            lines.send(format!("line {i}")).await.unwrap();
        }
        for i in 0..100 {
            assert_eq!(
                lines.next().await.unwrap().unwrap(),
                format!("echo: line {i}")
            );
        }
        // Close our side: the server's stream ends and its task finishes.
        AsyncWriteExt::shutdown(lines.get_mut()).await.unwrap();
        assert!(lines.next().await.is_none());
        echo.await.unwrap();
    });
}

#[test]
fn copy_bidirectional_between_tcp_and_unix() {
    runtime::Runtime::new().unwrap().block_on(async {
        // outside (TCP) <-> proxy <-> inside (Unix): a proxy of tokio's kind.
        let (outside, proxy_tcp) = tcp_pair().await;
        let (proxy_unix, inside) = UnixStream::pair().unwrap();
        let proxy = runtime::spawn_local(async move {
            let (mut a, mut b) = (proxy_tcp, proxy_unix);
            tokio::io::copy_bidirectional(&mut a, &mut b).await
        });
        // The inside echoes in upper case through its owned halves, until end of stream.
        let upper = runtime::spawn_local(async move {
            let (read, mut write) = inside.into_split();
            let mut read = tokio::io::BufReader::new(read);
            let mut line = String::new();
            let mut n = 0u64;
            while read.read_line(&mut line).await.unwrap() > 0 {
                AsyncWriteExt::write_all(&mut write, line.to_uppercase().as_bytes())
                    .await
                    .unwrap();
                n += line.len() as u64;
                line.clear();
            }
            AsyncWriteExt::shutdown(&mut write).await.unwrap();
            n
        });
        let payload: String = (0..2000).map(|i| format!("message {i}\n")).collect();
        let sent = payload.len() as u64;
        let (mut read, mut write) = outside.into_split();
        let writer = {
            let payload = payload.clone();
            runtime::spawn_local(async move {
                AsyncWriteExt::write_all(&mut write, payload.as_bytes())
                    .await
                    .unwrap();
                AsyncWriteExt::shutdown(&mut write).await.unwrap();
                write
            })
        };
        let mut back = String::new();
        read.read_to_string(&mut back).await.unwrap();
        assert_eq!(back, payload.to_uppercase());
        read.reunite(writer.await.unwrap()).unwrap();
        assert_eq!(upper.await.unwrap(), sent);
        let (to_inside, to_outside) = proxy.await.unwrap().unwrap();
        assert_eq!((to_inside, to_outside), (sent, sent));
    });
}

#[test]
fn dropped_poll_read_loses_no_byte() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (mut client, mut server) = tcp_pair().await;
        // A read that waits, then is dropped by a timeout: its receive stays in the socket.
        let mut buf = [0u8; 64];
        let waited = runtime::time::timeout(
            Duration::from_millis(20),
            AsyncReadExt::read(&mut server, &mut buf),
        )
        .await;
        assert!(waited.is_err());
        AsyncWriteExt::write_all(&mut client, b"hello, world")
            .await
            .unwrap();
        client.flush().await.unwrap();
        // A short read takes part; the rest stays buffered for the next one.
        let mut first = [0u8; 5];
        AsyncReadExt::read_exact(&mut server, &mut first)
            .await
            .unwrap();
        assert_eq!(&first, b"hello");
        let mut rest = [0u8; 7];
        AsyncReadExt::read_exact(&mut server, &mut rest)
            .await
            .unwrap();
        assert_eq!(&rest, b", world");
    });
}

#[test]
fn dropped_poll_write_loses_no_byte() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (mut client, mut server) = tcp_pair().await;
        // Write until the socket pushes back (the peer reads nothing yet), then drop the
        // pending write: every byte reported written must still arrive, in order.
        let chunk: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
        let mut accepted = 0usize;
        let mut pending = false;
        for _ in 0..10_000 {
            let res = poll_fn(|cx| {
                let off = accepted % chunk.len();
                match Pin::new(&mut client).poll_write(cx, &chunk[off..]) {
                    Poll::Pending => Poll::Ready(None),
                    Poll::Ready(r) => Poll::Ready(Some(r)),
                }
            })
            .await;
            match res {
                Some(n) => accepted += n.unwrap(),
                None => {
                    pending = true;
                    break;
                }
            }
        }
        assert!(pending, "the socket never pushed back");
        let reader = runtime::spawn_local(async move {
            let mut got = Vec::new();
            server.read_to_end(&mut got).await.unwrap();
            got
        });
        client.flush().await.unwrap();
        AsyncWriteExt::shutdown(&mut client).await.unwrap();
        let got = reader.await.unwrap();
        assert_eq!(got.len(), accepted);
        let want: Vec<u8> = chunk.iter().copied().cycle().take(accepted).collect();
        assert!(got == want, "the bytes arrived out of order or changed");
    });
}

/// tokio's `read` with large buffers (its `ReadBuf` is uninitialised memory the read
/// receives straight into), mixed with small reads, against a writer sending 8 MiB in
/// bursts: every byte in order, then the end of stream.
#[test]
fn large_tokio_reads_receive_every_byte_in_order() {
    runtime::Runtime::new().unwrap().block_on(async {
        let (mut client, mut server) = tcp_pair().await;
        let total = 8u64 << 20;
        let byte = |i: u64| (i.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 24) as u8;
        let writer = runtime::spawn_local(async move {
            let mut at = 0;
            let mut size = 1u64;
            while at < total {
                size = (size * 7 + 13) % (3 << 20);
                let n = size.min(total - at);
                let bytes: Vec<u8> = (at..at + n).map(byte).collect();
                AsyncWriteExt::write_all(&mut client, &bytes).await.unwrap();
                at += n;
            }
            AsyncWriteExt::shutdown(&mut client).await.unwrap();
        });
        let mut at = 0u64;
        let mut turn = 0usize;
        loop {
            turn += 1;
            // Uninitialised spare capacity, as tokio's `read_buf` and hyper read into.
            let mut buf = Vec::with_capacity(if turn % 3 == 0 { 1000 } else { 512 * 1024 });
            let n = AsyncReadExt::read_buf(&mut server, &mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            for (j, b) in buf.iter().enumerate() {
                assert_eq!(*b, byte(at + j as u64), "byte {}", at + j as u64);
            }
            at += n as u64;
        }
        assert_eq!(at, total);
        writer.await.unwrap();
    });
}
