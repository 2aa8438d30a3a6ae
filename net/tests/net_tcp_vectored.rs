//! Vectored reads and writes, and zero-copy sends, over a TCP connection.

mod common;

use std::time::Duration;

use corering_net::{TcpListener, TcpStream};

async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = futures::join!(TcpStream::connect(addr), listener.accept());
    (client.unwrap(), accepted.unwrap().0)
}

#[runtime::test]
async fn writev_then_readv_keeps_order() {
    let (a, b) = pair().await;
    let bufs = vec![b"hello ".to_vec(), b"vectored ".to_vec(), b"world".to_vec()];
    let (res, bufs) = a.writev_owned(bufs).await;
    assert_eq!(res.unwrap(), 20);
    assert_eq!(bufs.len(), 3);
    let mut got = Vec::new();
    while got.len() < 20 {
        let parts = vec![
            vec![0u8; 4].into_boxed_slice(),
            vec![0u8; 30].into_boxed_slice(),
        ];
        let (res, parts) = b.readv_owned(parts).await;
        let n = res.unwrap();
        assert!(n > 0);
        let flat: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        got.extend_from_slice(&flat[..n]);
    }
    assert_eq!(&got, b"hello vectored world");
    // Empty buffers are answered at once.
    let (res, _) = b.readv_owned(Vec::<Vec<u8>>::new()).await;
    assert_eq!(res.unwrap(), 0);
    let (res, _) = a.writev_owned(vec![Vec::<u8>::new()]).await;
    assert_eq!(res.unwrap(), 0);
}

#[runtime::test]
async fn send_zc_delivers_a_large_buffer_and_gives_it_back() {
    let (a, b) = pair().await;
    let data: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
    let reader = runtime::spawn_local(async move {
        let (res, buf) = b
            .read_exact_owned(vec![0u8; 1 << 20].into_boxed_slice())
            .await;
        res.unwrap();
        buf
    });
    let mut sent = 0;
    let mut buf = data.clone();
    while sent < buf.len() {
        let (res, slice) = a.send_zc(runtime::buf::IoBuf::slice(buf, sent..)).await;
        buf = slice.into_inner();
        sent += res.unwrap();
    }
    let got = reader.await.unwrap();
    assert_eq!(&got[..], &data[..]);
}

#[runtime::test]
async fn send_zc_dropped_in_flight_is_safe() {
    let (a, b) = pair().await;
    // The peer reads nothing, so a large send stays in flight; dropping it must park the
    // buffer in the driver until the kernel's final CQE.
    let data: Vec<u8> = (0..64 << 20).map(|i| (i % 251) as u8).collect();
    let send = a.send_zc(data.clone());
    let r = runtime::time::timeout(Duration::from_millis(20), send).await;
    let code = io_uring::opcode::SendZc::CODE;
    let plain = !runtime::features().unwrap().supports_op(code);
    if common::backend::on_epoll() || plain {
        // On the epoll backend, and before Linux 6.0, SEND_ZC is a plain send: what fits in the
        // socket buffers goes at once, a short count, and nothing stays in flight.
        let (res, _) = r.expect("the epoll backend's send_zc answers at once");
        let n = res.expect("a send into empty socket buffers");
        assert!(n > 0 && n <= data.len(), "sent {n} of {} bytes", data.len());
        // The peer reads exactly the first `n` bytes, then what is sent next.
        let (res, got) = b.read_exact_owned(vec![0u8; n].into_boxed_slice()).await;
        res.unwrap();
        assert!(
            got[..] == data[..n],
            "the peer got other bytes than the first {n}"
        );
        let (res, _) = a.send_zc(b"next".to_vec()).await;
        assert_eq!(res.unwrap(), 4);
        let (res, got) = b.read_exact_owned(vec![0u8; 4].into_boxed_slice()).await;
        res.unwrap();
        assert_eq!(&got[..], b"next", "bytes beyond the first {n} were sent");
        // Bytes the peer never reads, then the peer goes (a reset): the next send fails.
        let (res, _) = a.send_zc(vec![3u8; 1024]).await;
        assert_eq!(res.unwrap(), 1024);
        drop(b);
        runtime::time::sleep(Duration::from_millis(20)).await;
        let (res, _) = a.send_zc(vec![2u8; 16]).await;
        assert!(res.is_err(), "the peer is gone: {res:?}");
        eprintln!(
            "checked the epoll backend: send_zc sent {n} bytes at once, exactly those arrived"
        );
        return;
    }
    assert!(r.is_err(), "64 MiB cannot fit in the socket buffers: {r:?}");
    drop(b);
    runtime::time::sleep(Duration::from_millis(20)).await;
    let (res, _) = a.send_zc(vec![2u8; 16]).await;
    assert!(res.is_err(), "the peer is gone: {res:?}");
}

#[runtime::test]
async fn async_write_vectored_gathers_slices_into_one_send() {
    use futures::{AsyncReadExt, AsyncWriteExt};
    use std::io::IoSlice;
    let (mut a, mut b) = pair().await;
    let before = runtime::core_metrics().unwrap();
    let n = AsyncWriteExt::write_vectored(
        &mut a,
        &[
            IoSlice::new(b"head, "),
            IoSlice::new(b""),
            IoSlice::new(b"body"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(n, 10, "every slice is taken");
    AsyncWriteExt::flush(&mut a).await.unwrap();
    assert_eq!(
        (runtime::core_metrics().unwrap() - before).sqes_submitted,
        1,
        "one send for all the slices"
    );
    let mut got = [0u8; 10];
    AsyncReadExt::read_exact(&mut b, &mut got).await.unwrap();
    assert_eq!(&got, b"head, body");
    // More than the 64 KiB a write takes: a short count, the rest for the next call.
    let big = vec![7u8; 48 * 1024];
    let n = AsyncWriteExt::write_vectored(&mut a, &[IoSlice::new(&big), IoSlice::new(&big)])
        .await
        .unwrap();
    assert_eq!(n, 64 * 1024);
    AsyncWriteExt::flush(&mut a).await.unwrap();
    let mut got = vec![0u8; n];
    AsyncReadExt::read_exact(&mut b, &mut got).await.unwrap();
    assert!(got.iter().all(|&x| x == 7));
    // Nothing but empty slices: Ok(0) at once.
    assert_eq!(
        AsyncWriteExt::write_vectored(&mut a, &[IoSlice::new(b"")])
            .await
            .unwrap(),
        0
    );
}
