//! The chat against tokio-tungstenite clients on this runtime (over `corering_net::TcpStream`
//! with its tokio traits) and raw-socket clients: 200 clients on two cores, every message
//! delivered to every client in its sender's order; malformed frames and bad handshakes
//! end only their own connection (`1002`, `1007`, `1009`; `400`); ping, pong and the close
//! handshake; and a shutdown that closes every socket with `1001 Going Away`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use chat::Chat;
use corering_net::TcpStream;
use futures::io::{AsyncReadExt as _, AsyncWriteExt as _};
use futures::{SinkExt, StreamExt};
use runtime::sync::Barrier;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

/// Clients, spread over both cores.
const CLIENTS: usize = 200;
/// Messages each client sends in the first round.
const K: usize = 3;
/// The bound on the whole test: a hang fails it instead of stalling CI.
const LIMIT: Duration = Duration::from_secs(120);

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

async fn connect(addr: SocketAddr) -> Ws {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (ws, res) = tokio_tungstenite::client_async(format!("ws://{addr}/ws"), stream)
        .await
        .expect("handshake");
    assert_eq!(res.status(), 101);
    ws
}

/// Receives `count` text messages and checks that each client's arrive in order, with the
/// contents `c{sender}-{tag}{seq}` for `seq` in `0..per_sender`.
async fn receive_round(ws: &mut Ws, me: usize, tag: &str, per_sender: usize) {
    let count = CLIENTS * per_sender;
    let mut next = vec![0usize; CLIENTS];
    for got in 0..count {
        let msg = match ws.next().await {
            Some(Ok(Message::Text(t))) => t,
            other => panic!("client {me}: message {got} of {count}: {other:?}"),
        };
        let (sender, seq) = msg
            .strip_prefix('c')
            .and_then(|m| m.split_once('-'))
            .and_then(|(s, rest)| Some((s.parse::<usize>().ok()?, rest.strip_prefix(tag)?)))
            .and_then(|(s, q)| Some((s, q.parse::<usize>().ok()?)))
            .unwrap_or_else(|| panic!("client {me}: unexpected message {msg:?}"));
        assert!(sender < CLIENTS, "client {me}: {msg:?}");
        assert_eq!(seq, next[sender], "client {me}: {msg:?} out of order");
        next[sender] += 1;
    }
    assert!(
        next.iter().all(|&n| n == per_sender),
        "client {me}: {next:?}"
    );
}

/// One client: connects, sends its messages, checks it got everyone's, twice (around the
/// malformed-frame checks), then expects the shutdown's `1001`.
async fn client(me: usize, addr: SocketAddr, phases: Arc<Barrier>) -> usize {
    let mut ws = connect(addr).await;
    phases.wait().await; // 1: everyone is in the room
    for k in 0..K {
        ws.send(Message::text(format!("c{me}-m{k}")))
            .await
            .expect("send");
    }
    receive_round(&mut ws, me, "m", K).await;
    phases.wait().await; // 2: round one done
    phases.wait().await; // 3: the bad-input checks done
    ws.send(Message::text(format!("c{me}-r0")))
        .await
        .expect("send");
    receive_round(&mut ws, me, "r", 1).await;
    phases.wait().await; // 4: round two done; the server shuts down
    match ws.next().await {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(frame.code, CloseCode::Away, "client {me}: {frame:?}");
        }
        other => panic!("client {me}: expected close 1001, got {other:?}"),
    }
    // Our close reply goes out with this read; then the server ends the connection.
    while let Some(msg) = ws.next().await {
        assert!(msg.is_err(), "client {me}: after the close: {msg:?}");
    }
    CLIENTS * K + CLIENTS
}

/// A raw connection through the handshake (RFC 6455's sample key); returns the stream.
async fn raw_ws(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("request");
    s.flush().await.expect("flush");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).await.expect("read head"),
            1,
            "EOF in head"
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head)
        .expect("ASCII head")
        .to_ascii_lowercase();
    assert!(
        head.starts_with("http/1.1 101 switching protocols\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\nupgrade: websocket\r\n"), "{head}");
    // RFC 6455 section 1.3's worked example.
    assert!(
        head.contains("\r\nsec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=\r\n"),
        "{head}"
    );
    s
}

/// Sends `frame` raw and returns the close code of the server's close frame, after checking
/// that the server then ends the connection.
async fn close_code_for(addr: SocketAddr, frame: &[u8]) -> u16 {
    let mut s = raw_ws(addr).await;
    s.write_all(frame).await.expect("frame");
    s.flush().await.expect("flush");
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.expect("read to EOF");
    // The server's first frame: FIN + close, unmasked, a 2-byte code and a short reason.
    assert!(all.len() >= 4, "{all:?}");
    assert_eq!(all[0], 0x88, "not a close frame: {all:?}");
    let len = usize::from(all[1]);
    assert!((2..=125).contains(&len), "{all:?}");
    assert_eq!(all.len(), 2 + len, "bytes after the close frame: {all:?}");
    u16::from_be_bytes([all[2], all[3]])
}

/// A masked client frame: `first` (FIN, RSV, opcode), then `payload` under a fixed mask.
fn masked(first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut f = vec![
        first,
        0x80 | u8::try_from(payload.len()).expect("short payload"),
    ];
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

/// Sends a raw request and returns the response head and body, the server closing after.
async fn raw_request(addr: SocketAddr, headers: &str) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req =
        format!("GET /ws HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade, close\r\n{headers}\r\n");
    s.write_all(req.as_bytes()).await.expect("request");
    s.flush().await.expect("flush");
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.expect("response");
    String::from_utf8(all).expect("ASCII")
}

/// Malformed frames and bad handshakes, each on its own connection; ping, pong and a
/// client's close on a good one.
async fn bad_input(addr: SocketAddr) {
    // An unmasked client frame, a reserved opcode, a reserved bit: 1002.
    assert_eq!(close_code_for(addr, &[0x81, 0x02, b'h', b'i']).await, 1002);
    assert_eq!(close_code_for(addr, &masked(0x83, b"x")).await, 1002);
    assert_eq!(close_code_for(addr, &masked(0x8b, b"x")).await, 1002);
    assert_eq!(close_code_for(addr, &masked(0xc1, b"x")).await, 1002);
    // A continuation with nothing to continue: 1002.
    assert_eq!(close_code_for(addr, &masked(0x80, b"x")).await, 1002);
    // Text that is not UTF-8: 1007.
    assert_eq!(
        close_code_for(addr, &masked(0x81, &[0xff, 0xfe])).await,
        1007
    );
    // A frame announcing 1 MiB (over the 64 KiB limit): 1009, from the header alone.
    let mut big = vec![0x81, 0x80 | 127];
    big.extend_from_slice(&(1u64 << 20).to_be_bytes());
    big.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(close_code_for(addr, &big).await, 1009);

    // Bad handshakes: 400, saying why.
    let ok_key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    for (headers, why) in [
        (format!("Sec-WebSocket-Version: 13\r\n{ok_key}"), "Upgrade"),
        (
            "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n".to_string(),
            "Sec-WebSocket-Key",
        ),
        (
            "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: c2hvcnQ=\r\n"
                .to_string(),
            "Sec-WebSocket-Key",
        ),
        (
            format!("Upgrade: websocket\r\n{ok_key}"),
            "Sec-WebSocket-Version",
        ),
        (
            format!("Upgrade: websocket\r\nSec-WebSocket-Version: 8\r\n{ok_key}"),
            "Sec-WebSocket-Version",
        ),
    ] {
        let res = raw_request(addr, &headers).await;
        assert!(
            res.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{headers}: {res}"
        );
        assert!(res.contains(why), "{headers}: {res}");
    }
    let res = raw_request(
        addr,
        &format!("Upgrade: websocket\r\nSec-WebSocket-Version: 12\r\n{ok_key}"),
    )
    .await;
    assert!(
        res.to_ascii_lowercase()
            .contains("\r\nsec-websocket-version: 13\r\n"),
        "{res}"
    );

    // Ping gets its pong; a client's close gets its reply, and the connection ends.
    let mut ws = connect(addr).await;
    ws.send(Message::Ping(b"are you there"[..].into()))
        .await
        .expect("ping");
    match ws.next().await {
        Some(Ok(Message::Pong(p))) => assert_eq!(&p[..], b"are you there"),
        other => panic!("expected a pong: {other:?}"),
    }
    ws.close(None).await.expect("close");
    match ws.next().await {
        Some(Ok(Message::Close(_))) => {}
        other => panic!("expected a close reply: {other:?}"),
    }
    while let Some(msg) = ws.next().await {
        assert!(msg.is_err(), "after the close: {msg:?}");
    }
}

#[test]
fn broadcast_across_cores_bad_input_and_shutdown() {
    let rt = runtime::Builder::new().cores(2).build().expect("runtime");
    rt.block_on(async {
        let chat = Chat::serve("127.0.0.1:0".parse().unwrap()).expect("serve");
        assert_eq!(chat.cores(), 2);
        let addr = chat.local_addr();
        let phases = Arc::new(Barrier::new(CLIENTS + 1));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|me| {
                let phases = phases.clone();
                runtime::spawn_on_local(me % 2, move || client(me, addr, phases))
            })
            .collect();
        let run = async {
            phases.wait().await; // 1
            phases.wait().await; // 2
            bad_input(addr).await;
            phases.wait().await; // 3
            phases.wait().await; // 4
            let all_closed = chat
                .shutdown(Duration::from_secs(30))
                .await
                .expect("shutdown");
            assert!(all_closed, "some sockets did not close");
            let mut received = 0;
            for c in clients {
                received += c.await.expect("client task");
            }
            assert_eq!(received, CLIENTS * (CLIENTS * K + CLIENTS));
        };
        runtime::time::timeout(LIMIT, run)
            .await
            .expect("the chat test did not finish in time");
        // The port is closed: a new connection is refused.
        assert!(TcpStream::connect(addr).await.is_err());
    });
}
