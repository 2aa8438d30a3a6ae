//! TCP streams and listeners on loopback: echo, errors, half-close, reset, halves, adapters.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::thread;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream};
use futures::io::{AsyncReadExt, AsyncWriteExt};
use runtime::buf::IoBuf;
use runtime::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

/// Echoes until end of stream, with owned buffers.
async fn echo(stream: TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 4096];
    let mut total = 0;
    loop {
        let (res, b) = stream.read_owned(buf).await;
        let n = res?;
        if n == 0 {
            return Ok(total);
        }
        let (res, b) = stream.write_all_owned(b.slice(..n)).await;
        res?;
        buf = b.into_inner();
        total += n as u64;
    }
}

/// Binds `addr`, or `None` where the machine has no such address (no IPv6 loopback):
/// through `runtime::ext::testing::require`, so a failure under
/// `CORERING_REQUIRE_FEATURES=1`.
fn bind_or_skip(addr: &str) -> Option<TcpListener> {
    match TcpListener::bind(addr) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == ErrorKind::AddrNotAvailable => {
            runtime::ext::testing::require(&format!("the address {addr} ({e})"), false);
            None
        }
        Err(e) => panic!("bind {addr}: {e}"),
    }
}

async fn echo_round_trip(bind: &str) {
    let Some(listener) = bind_or_skip(bind) else {
        return;
    };
    let addr = listener.local_addr().unwrap();
    assert_eq!(addr.ip(), bind.parse::<SocketAddr>().unwrap().ip());
    let server = runtime::spawn_local(async move {
        let (stream, peer) = listener.accept().await?;
        assert_eq!(peer, stream.peer_addr()?);
        echo(stream).await
    });
    let client = TcpStream::connect(addr).await.unwrap();
    assert_eq!(client.peer_addr().unwrap(), addr);
    let msg: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    let (res, msg) = client.write_all_owned(msg).await;
    res.unwrap();
    let (res, back) = client
        .read_exact_owned(vec![0u8; msg.len()].into_boxed_slice())
        .await;
    res.unwrap();
    assert_eq!(&back[..], &msg[..]);
    client.shutdown_socket(Shutdown::Write).await.unwrap();
    assert_eq!(server.await.unwrap().unwrap(), msg.len() as u64);
    // The server closed: end of stream.
    let (res, _) = client.read_owned(vec![0u8; 16]).await;
    assert_eq!(res.unwrap(), 0);
}

#[runtime::test]
async fn echo_v4() {
    timeout(LIMIT, echo_round_trip("127.0.0.1:0"))
        .await
        .unwrap();
}

#[runtime::test]
async fn echo_v6() {
    timeout(LIMIT, echo_round_trip("[::1]:0")).await.unwrap();
}

#[runtime::test]
async fn echo_with_std_client() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(LIMIT)).unwrap();
        s.write_all(b"hello ring").unwrap();
        let mut back = [0u8; 10];
        s.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hello ring");
    });
    let (stream, _) = timeout(LIMIT, listener.accept()).await.unwrap().unwrap();
    let echoed = timeout(LIMIT, echo(stream)).await.unwrap().unwrap();
    assert_eq!(echoed, 10);
    client.join().unwrap();
}

#[runtime::test]
async fn connection_refused_keeps_kind_and_names_address() {
    // Bind then drop a listener: its port is (almost surely) closed now.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = TcpStream::connect(addr).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    assert!(
        err.to_string().contains(&format!("connect to {addr}")),
        "{err}"
    );
}

#[runtime::test]
async fn bad_input_gives_errors() {
    let err = TcpListener::bind("not an address").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = TcpStream::connect("127.0.0.1:notaport").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = TcpStream::connect(&[][..] as &[SocketAddr])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let err = TcpListener::bind(addr).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
    assert!(
        err.to_string().contains(&format!("bind to {addr}")),
        "{err}"
    );

    // Zero-length reads and writes answer at once.
    let client = TcpStream::connect(addr).await.unwrap();
    let (res, buf) = client.read_owned(Vec::new()).await;
    assert_eq!(res.unwrap(), 0);
    assert_eq!(buf.capacity(), 0);
    let (res, _) = client.read_owned(vec![0u8; 8].slice(8..)).await;
    assert_eq!(res.unwrap(), 0);
    let (res, _) = client.write_owned(Vec::new()).await;
    assert_eq!(res.unwrap(), 0);
}

#[runtime::test]
async fn half_close() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();

    let (res, _) = client.write_all_owned(b"request".as_slice()).await;
    res.unwrap();
    client.shutdown_socket(Shutdown::Write).await.unwrap();
    // Writing after the shutdown is the kernel's EPIPE, not a SIGPIPE.
    let (res, _) = client.write_owned(b"more".as_slice()).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::BrokenPipe);

    let (res, req) = server
        .read_exact_owned(vec![0u8; 7].into_boxed_slice())
        .await;
    res.unwrap();
    assert_eq!(&req[..], b"request");
    let (res, _) = server.read_owned(vec![0u8; 16]).await;
    assert_eq!(res.unwrap(), 0, "the peer reads end of stream");
    // The other direction still works.
    let (res, _) = server.write_all_owned(b"response".as_slice()).await;
    res.unwrap();
    drop(server);
    let (res, resp) = client
        .read_exact_owned(vec![0u8; 8].into_boxed_slice())
        .await;
    res.unwrap();
    assert_eq!(&resp[..], b"response");
}

#[runtime::test]
async fn peer_reset_is_an_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = std::net::TcpStream::connect(addr).unwrap();
    let (server, _) = listener.accept().await.unwrap();
    let (res, _) = server.write_all_owned(b"hi".as_slice()).await;
    res.unwrap();
    // SO_LINGER 0 makes close send an RST.
    socket2::SockRef::from(&peer)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(peer);
    runtime::time::sleep(Duration::from_millis(20)).await;

    let (res, _) = server.read_owned(vec![0u8; 16]).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::ConnectionReset);
    // Writes fail too (EPIPE with MSG_NOSIGNAL; no SIGPIPE kills the test).
    let mut failed = None;
    for _ in 0..100 {
        let (res, _) = server.write_owned(vec![7u8; 1024]).await;
        if let Err(e) = res {
            failed = Some(e);
            break;
        }
    }
    let err = failed.expect("a write to a reset peer fails");
    // The read took the reset (ECONNRESET): a send after it says EPIPE, as std's does.
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err:?}");
}

#[runtime::test]
async fn accepted_streams_outlive_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    drop(listener);
    assert_eq!(
        TcpStream::connect(addr).await.unwrap_err().kind(),
        ErrorKind::ConnectionRefused
    );
    let task = runtime::spawn_local(echo(server));
    let (res, _) = client.write_all_owned(b"still here".as_slice()).await;
    res.unwrap();
    let (res, back) = client
        .read_exact_owned(vec![0u8; 10].into_boxed_slice())
        .await;
    res.unwrap();
    assert_eq!(&back[..], b"still here");
    drop(client);
    assert_eq!(timeout(LIMIT, task).await.unwrap().unwrap().unwrap(), 10);
}

#[runtime::test]
async fn futures_io_copy_through_halves() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The server echoes with futures::io::copy from its read half to its write half.
    let server = runtime::spawn_local(async move {
        let (stream, _) = listener.accept().await?;
        let (reader, mut writer) = stream.into_split();
        let n = futures::io::copy(reader, &mut writer).await?;
        writer.close().await?;
        Ok::<_, io::Error>(n)
    });
    let client = TcpStream::connect(addr).await.unwrap();
    let msg: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    // Write and read from two tasks, as the halves must allow.
    let (mut rd, mut wr) = client.into_split();
    let to_send = msg.clone();
    let writer = runtime::spawn_local(async move {
        for chunk in to_send.chunks(7_000) {
            AsyncWriteExt::write_all(&mut wr, chunk).await?;
        }
        wr.close().await?;
        Ok::<_, io::Error>(())
    });
    let mut back = Vec::new();
    timeout(LIMIT, rd.read_to_end(&mut back))
        .await
        .unwrap()
        .unwrap();
    writer.await.unwrap().unwrap();
    assert_eq!(back.len(), msg.len());
    assert!(back == msg);
    assert_eq!(server.await.unwrap().unwrap(), msg.len() as u64);
}

#[runtime::test]
async fn futures_io_on_stream_and_bufread() {
    use futures::io::AsyncBufReadExt;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).await.unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    AsyncWriteExt::write_all(&mut client, b"line one\nline two\n")
        .await
        .unwrap();
    client.flush().await.unwrap();
    let mut line = String::new();
    server.read_line(&mut line).await.unwrap();
    assert_eq!(line, "line one\n");
    line.clear();
    server.read_line(&mut line).await.unwrap();
    assert_eq!(line, "line two\n");
    client.close().await.unwrap();
    let mut rest = Vec::new();
    server.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    // Zero-length AsyncRead is Ok(0). (The inherent owned-buffer methods shadow the
    // extension traits' methods of the same names, hence the qualified calls.)
    assert_eq!(AsyncReadExt::read(&mut server, &mut []).await.unwrap(), 0);
}

#[runtime::test]
async fn halves_reunite_and_options() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let a = TcpStream::connect(addr).await.unwrap();
    let b = TcpStream::connect(addr).await.unwrap();
    a.set_nodelay(true).unwrap();
    assert!(a.nodelay().unwrap());
    a.set_keepalive(true).unwrap();
    assert!(a.keepalive().unwrap());
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    assert_eq!(ar.local_addr().unwrap(), aw.local_addr().unwrap());
    let err: corering_net::ReuniteError = ar.reunite(bw).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tried to reunite halves of different TCP streams"
    );
    // `ReuniteError` is an alias of the generic `stream::ReuniteError<Tcp>`: its fields are
    // reached by name (a tuple pattern needs the generic type's own path).
    let corering_net::stream::ReuniteError(ar, bw) = err;
    let a = ar.reunite(aw).unwrap();
    assert!(a.nodelay().unwrap());
    let _b = br.reunite(bw).unwrap();
}

#[runtime::test]
async fn std_conversions() {
    use std::os::fd::AsRawFd;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let listener = TcpListener::from_std(std_listener).unwrap();
    let addr = listener.local_addr().unwrap();
    let std_client = std::net::TcpStream::connect(addr).unwrap();
    let (server, peer) = listener.accept().await.unwrap();
    assert_eq!(peer, std_client.local_addr().unwrap());
    let client = TcpStream::from_std(std_client).unwrap();
    let (res, _) = client.write_all_owned(b"x".as_slice()).await;
    res.unwrap();
    let mut std_server = server.into_std().unwrap();
    let mut one = [0u8; 1];
    std_server.read_exact(&mut one).unwrap();
    assert_eq!(&one, b"x");
    let std_listener = listener.into_std().unwrap();
    assert!(std_listener.as_raw_fd() >= 0);
}
