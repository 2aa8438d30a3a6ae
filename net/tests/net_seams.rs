//! The seams a tokio port trips on: both I/O styles without qualified calls, borrowed
//! writes, `writev_all`, the halves' vectored and zero-copy sends, the borrowed `split`, and
//! `incoming_with_addr`.

use std::net::SocketAddr;

use corering_net::{TcpListener, TcpStream, UnixStream};
use futures::io::{AsyncReadExt, AsyncWriteExt};
use futures::StreamExt;
use runtime::Runtime;

/// A connected pair of TCP streams on loopback.
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = futures::join!(TcpStream::connect(addr), listener.accept());
    (client.unwrap(), accepted.unwrap().0)
}

/// The futures-io style on a `&mut TcpStream` parameter: no qualified call.
async fn echo_via_ext(s: &mut TcpStream) -> std::io::Result<usize> {
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).await?;
    s.write_all(&buf[..n]).await?;
    s.flush().await?;
    Ok(n)
}

#[test]
fn both_styles_without_qualified_calls() {
    Runtime::new().unwrap().block_on(async {
        let (mut a, mut b) = pair().await;
        // Owned buffers: inherent methods.
        let (res, _) = a.write_all_owned(b"hello".to_vec()).await;
        res.unwrap();
        assert_eq!(echo_via_ext(&mut b).await.unwrap(), 5);
        let (res, buf) = a.read_exact_owned(vec![0u8; 5]).await;
        res.unwrap();
        assert_eq!(buf, b"hello");
        // futures-io on a binding, through `&mut`.
        let (a_io, b_io) = (&mut a, &mut b);
        a_io.write_all(b"abc").await.unwrap();
        a_io.flush().await.unwrap();
        let mut got = [0u8; 3];
        b_io.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abc");
    });
}

#[test]
fn write_all_from_borrowed_data() {
    Runtime::new().unwrap().block_on(async {
        let (a, b) = pair().await;
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let reader = runtime::spawn_local(async move {
            let (res, buf) = b.read_exact_owned(vec![0u8; 200_001]).await;
            res.unwrap();
            buf
        });
        a.write_all_from(&data[..]).await.unwrap();
        a.write_all_from(&[]).await.unwrap();
        a.write_all_from(b"!").await.unwrap();
        let got = reader.await.unwrap();
        assert_eq!(&got[..200_000], &data[..]);
        assert_eq!(got[200_000], b'!');
    });
}

#[test]
fn writev_all_sends_everything_in_order() {
    Runtime::new().unwrap().block_on(async {
        let (a, b) = pair().await;
        // Large enough that the first vectored send is short (the socket buffer fills).
        let bufs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 1 << 20]).collect();
        let total = 8 << 20;
        let reader = runtime::spawn_local(async move {
            let (res, buf) = b.read_exact_owned(vec![0u8; total]).await;
            res.unwrap();
            buf
        });
        let (res, back) = a.writev_all_owned(bufs).await;
        res.unwrap();
        assert_eq!(back.len(), 8);
        assert!(back.iter().all(|b| b.len() == 1 << 20));
        let got = reader.await.unwrap();
        for (i, chunk) in got.chunks(1 << 20).enumerate() {
            assert!(
                chunk.iter().all(|&x| x == i as u8),
                "chunk {i} out of order"
            );
        }
        // Nothing to send: done at once.
        let (res, back) = a.writev_all_owned(vec![Vec::<u8>::new()]).await;
        res.unwrap();
        assert_eq!(back.len(), 1);
    });
}

#[test]
fn owned_write_half_has_writev_writev_all_and_send_zc() {
    Runtime::new().unwrap().block_on(async {
        let (a, b) = pair().await;
        let (_rd, wr) = a.into_split();
        let (res, _) = wr.writev_owned(vec![b"ab".to_vec(), b"cd".to_vec()]).await;
        assert_eq!(res.unwrap(), 4);
        let (res, _) = wr
            .writev_all_owned(vec![b"ef".to_vec(), b"gh".to_vec()])
            .await;
        res.unwrap();
        match wr.send_zc(b"ij".to_vec()).await {
            (Ok(n), _) => assert_eq!(n, 2),
            // Before Linux 6.0 there is no zero-copy send: send it plainly instead.
            (Err(_), buf) => wr.write_all_owned(buf).await.0.unwrap(),
        }
        wr.write_all_from(b"kl").await.unwrap();
        let (res, buf) = b.read_exact_owned(vec![0u8; 12]).await;
        res.unwrap();
        assert_eq!(buf, b"abcdefghijkl");
    });
}

#[test]
fn borrowed_split_works_in_one_task() {
    Runtime::new().unwrap().block_on(async {
        let (mut a, mut b) = pair().await;
        // With futures' `AsyncReadExt` in scope, `a.split()` would be its by-value
        // `split(self)` (found before an inherent `&mut self` method); borrow explicitly.
        let (mut rd, mut wr) = TcpStream::split(&mut a);
        assert_eq!(rd.peer_addr().unwrap(), wr.peer_addr().unwrap());
        let (wrote, read, echoed) = futures::join!(
            async {
                wr.write_all(b"to b").await?;
                wr.close().await // shuts a's write direction down
            },
            async {
                let mut buf = [0u8; 4];
                rd.read_exact(&mut buf).await.map(|_| buf)
            },
            async {
                let mut got = Vec::new();
                let b = &mut b;
                b.read_to_end(&mut got).await?;
                b.write_all(b"from").await?;
                b.flush().await.map(|_| got)
            },
        );
        wrote.unwrap();
        assert_eq!(echoed.unwrap(), b"to b");
        assert_eq!(&read.unwrap(), b"from");
        // The stream is usable again once the halves are gone.
        assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
    });
}

/// tokio's traits, in a scope without futures' extension traits (as a tokio port has):
/// there `stream.split()` is the inherent borrowed split.
#[cfg(feature = "tokio-io")]
mod tokio_io {
    use runtime::Runtime;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn borrowed_split_has_tokio_traits() {
        Runtime::new().unwrap().block_on(async {
            let (mut a, b) = super::pair().await;
            let (mut rd, mut wr) = a.split();
            wr.write_all(b"tok").await.unwrap();
            wr.flush().await.unwrap();
            let (res, buf) = b.read_exact_owned(vec![0u8; 3]).await;
            res.unwrap();
            assert_eq!(buf, b"tok");
            let (res, _) = b.write_all_owned(b"io".to_vec()).await;
            res.unwrap();
            let mut got = [0u8; 2];
            rd.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"io");
            // And the tokio style on a `&mut` binding.
            let a = &mut a;
            a.write_all(b"t").await.unwrap();
            a.flush().await.unwrap();
        });
    }
}

#[test]
fn unix_stream_seams() {
    Runtime::new().unwrap().block_on(async {
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all_from(b"one").await.unwrap();
        let (res, _) = a
            .writev_all_owned(vec![b"two".to_vec(), b"three".to_vec()])
            .await;
        res.unwrap();
        let (res, buf) = b.read_exact_owned(vec![0u8; 11]).await;
        res.unwrap();
        assert_eq!(buf, b"onetwothree");
        {
            let (mut rd, mut wr) = UnixStream::split(&mut a);
            wr.write_all(b"split").await.unwrap();
            wr.flush().await.unwrap();
            let (res, buf) = b.read_exact_owned(vec![0u8; 5]).await;
            res.unwrap();
            assert_eq!(buf, b"split");
            let (res, _) = b.write_all_owned(b"back".to_vec()).await;
            res.unwrap();
            let mut got = [0u8; 4];
            rd.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"back");
        }
        let (_rd, wr) = a.into_split();
        let (res, _) = wr.writev_owned(vec![b"h".to_vec(), b"alf".to_vec()]).await;
        assert_eq!(res.unwrap(), 4);
        wr.write_all_from(b"!").await.unwrap();
        let (res, _) = wr.writev_all_owned(vec![b"?".to_vec()]).await;
        res.unwrap();
        let (res, buf) = b.read_exact_owned(vec![0u8; 6]).await;
        res.unwrap();
        assert_eq!(buf, b"half!?");
    });
}

#[test]
fn incoming_with_addr_yields_peer_addresses() {
    Runtime::new().unwrap().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = listener.incoming_with_addr();
        for _ in 0..3 {
            let (client, accepted) = futures::join!(TcpStream::connect(addr), incoming.next());
            let client = client.unwrap();
            let (stream, peer): (TcpStream, SocketAddr) = accepted.unwrap().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(stream.peer_addr().unwrap(), peer);
        }
    });
}

/// `read_buf` appends into a Vec's spare capacity (tokio's semantics), so a Vec is reused
/// without `clear()` and keeps what it held; with no spare capacity it reserves some.
#[test]
fn read_buf_appends_after_the_vec_length() {
    runtime::Runtime::new().unwrap().block_on(async {
        let listener = corering_net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = runtime::spawn_local(corering_net::TcpStream::connect(addr));
        let (server, _) = listener.accept().await.unwrap();
        let client = client.await.unwrap().unwrap();

        let (res, _) = client.write_all_owned(b"hello".to_vec()).await;
        res.unwrap();
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(b">> ");
        let mut n = 0;
        while n < 5 {
            let (res, b) = server.read_buf_owned(buf).await;
            n += res.unwrap();
            buf = b;
        }
        assert_eq!(buf, b">> hello");

        // Reused as it is: the next bytes go after the first ones.
        let (res, _) = client.write_all_owned(b" world".to_vec()).await;
        res.unwrap();
        let mut n = 0;
        while n < 6 {
            let (res, b) = server.read_buf_owned(buf).await;
            n += res.unwrap();
            buf = b;
        }
        assert_eq!(buf, b">> hello world");

        // A full Vec gets room reserved instead of a zero-length read.
        let mut full = b"xy".to_vec();
        full.shrink_to_fit();
        let (res, _) = client.write_all_owned(b"!".to_vec()).await;
        res.unwrap();
        let (res, full) = server.read_buf_owned(full).await;
        assert_eq!(res.unwrap(), 1);
        assert_eq!(full, b"xy!");
    });
}
