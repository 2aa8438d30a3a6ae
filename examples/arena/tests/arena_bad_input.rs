//! Bad input against the `arena` binary as it ships: each is answered (or its connection
//! closed) and the server goes on serving everyone else. Trickled headers, headers over the
//! limit, an upload over the limit, malformed chunked bodies, HTTP/2 rapid resets, WebSocket
//! frames that break the protocol, static paths that leave the root, and a database that
//! goes away mid-run.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::{exchange, parse, read_all, Arena};

#[test]
fn trickled_headers_are_closed_at_the_header_timeout() {
    let arena = Arena::start(&[]);
    let mut slow = TcpStream::connect(arena.http).unwrap();
    slow.set_nonblocking(true).unwrap();
    let started = Instant::now();
    let header = b"GET /baseline11?a=1&b=2 HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    let mut closed = None;
    let mut last_check = Instant::now();
    // One byte every 250 ms (a slowloris client), for at most three header timeouts.
    for byte in header.iter().chain(std::iter::repeat(&b'a')) {
        if started.elapsed() > arena::HEADER_TIMEOUT * 3 {
            break;
        }
        let mut buf = [0u8; 256];
        let eof = match slow.read(&mut buf) {
            // EOF (hyper may send a 408 first: read on), or a reset.
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        };
        if eof || slow.write_all(&[*byte]).is_err() {
            closed = Some(started.elapsed());
            break;
        }
        // Everyone else is served meanwhile.
        if last_check.elapsed() > Duration::from_secs(2) {
            arena.still_serves();
            last_check = Instant::now();
        }
        thread::sleep(Duration::from_millis(250));
    }
    let closed = closed.expect("a client trickling its headers was never closed");
    assert!(
        closed >= arena::HEADER_TIMEOUT / 2,
        "closed after {closed:?}, before the header timeout could pass"
    );
    arena.still_serves();
}

#[test]
fn headers_over_the_limit_get_431() {
    let arena = Arena::start(&[]);
    // More headers than hyper takes (100), in one small request: 431, then close.
    let mut many = b"GET /baseline11?a=1&b=2 HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..150 {
        many.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let got = exchange(arena.http, &many, Duration::from_secs(10));
    assert!(
        got.starts_with(b"HTTP/1.1 431"),
        "{:?}",
        String::from_utf8_lossy(&got[..got.len().min(80)])
    );
    // One header far over hyper's buffer (1 MiB): 431, or a reset that overtakes it (the
    // server closes with the rest of the request unread, and the kernel resets).
    let mut big = b"GET /baseline11?a=1&b=2 HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    big.resize(big.len() + 1024 * 1024, b'a');
    big.extend_from_slice(b"\r\n\r\n");
    let got = exchange(arena.http, &big, Duration::from_secs(10));
    assert!(
        got.is_empty() || got.starts_with(b"HTTP/1.1 431"),
        "{:?}",
        String::from_utf8_lossy(&got[..got.len().min(80)])
    );
    arena.still_serves();
}

#[test]
fn an_upload_over_the_limit_gets_413_without_being_read() {
    let arena = Arena::start(&[]);
    // Declared too large: answered at once, with almost nothing sent.
    let mut s = TcpStream::connect(arena.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        100 * 1024 * 1024
    )
    .unwrap();
    s.write_all(&[7u8; 4096]).unwrap();
    let (status, _) = parse(&read_all(&mut s));
    assert_eq!(status, 413);

    // Chunked past the limit: the server counts up to it, answers 413 and stops reading.
    let mut s = TcpStream::connect(arena.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let mut writer = s.try_clone().unwrap();
    let sender = thread::spawn(move || {
        let chunk = vec![b'z'; 1 << 20];
        let mut sent = 0usize;
        for _ in 0..64 {
            if writer.write_all(b"100000\r\n").is_err()
                || writer.write_all(&chunk).is_err()
                || writer.write_all(b"\r\n").is_err()
            {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let (status, body) = parse(&read_all(&mut s));
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    drop(s);
    let sent = sender.join().unwrap();
    assert!(
        sent < 64 << 20,
        "the server read all {sent} bytes of a refused body"
    );

    // Under the limit, random sizes: every byte counted.
    for size in [0usize, 1, 65_537, 2 << 20, 20 << 20] {
        let mut req = format!("POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {size}\r\n\r\n").into_bytes();
        req.extend((0..size).map(|i| (i * 31 % 251) as u8));
        let (status, body) = parse(&exchange(arena.http, &req, Duration::from_secs(20)));
        assert_eq!(
            (status, String::from_utf8_lossy(&body).into_owned()),
            (200, size.to_string())
        );
    }
    arena.still_serves();
}

#[test]
fn malformed_chunked_bodies_get_400() {
    let arena = Arena::start(&[]);
    for path in ["/baseline11?a=1&b=2", "/upload"] {
        for body in [
            "ZZ\r\nab\r\n0\r\n\r\n",
            "2\r\nabcdef\r\n0\r\n\r\n",
            "-1\r\n\r\n",
        ] {
            let req = format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{body}"
            );
            let (status, got) = parse(&exchange(
                arena.http,
                req.as_bytes(),
                Duration::from_secs(5),
            ));
            assert_eq!(
                status,
                400,
                "{path} {body:?}: {}",
                String::from_utf8_lossy(&got)
            );
        }
    }
    arena.still_serves();
}

/// One HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn h2_rapid_resets_end_in_goaway_and_others_are_served() {
    let arena = Arena::start(&[]);
    for addr in [arena.h2c, arena.http] {
        let mut attack = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        attack.extend(frame(4, 0, 0, &[]));
        // GET /baseline2 (HPACK: :method GET, :scheme http, :path from the static table's
        // "/" then a literal), reset at once, 2,000 times.
        for i in 0..2000u32 {
            let id = 2 * i + 1;
            attack.extend(frame(1, 0x5, id, &[0x82, 0x86, 0x84]));
            attack.extend(frame(3, 0, id, &8u32.to_be_bytes()));
        }
        let got = exchange(addr, &attack, Duration::from_secs(10));
        // Find a GOAWAY frame (type 7) in what came back.
        let mut rest = &got[..];
        let mut goaway = None;
        while rest.len() >= 9 {
            let len = (rest[0] as usize) << 16 | (rest[1] as usize) << 8 | rest[2] as usize;
            if rest[3] == 7 && rest.len() >= 9 + 8 {
                goaway = Some(u32::from_be_bytes(rest[13..17].try_into().unwrap()));
            }
            rest = &rest[(9 + len).min(rest.len())..];
        }
        // ENHANCE_YOUR_CALM (11): h2's answer to a reset flood.
        assert_eq!(
            goaway,
            Some(11),
            "no GOAWAY(ENHANCE_YOUR_CALM) after 2,000 resets on {addr}"
        );
        arena.still_serves();
    }
}

/// A WebSocket handshake on a fresh connection to `arena`; the connection after the `101`.
fn websocket(arena: &Arena) -> TcpStream {
    let mut s = TcpStream::connect(arena.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).unwrap(),
            1,
            "the handshake's answer ended early"
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
    s
}

/// A masked client frame.
fn ws_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mask = [1u8, 2, 3, 4];
    let mut f = vec![0x80 | opcode, 0x80 | payload.len() as u8];
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

#[test]
fn websocket_frames_that_break_the_protocol_close_the_socket() {
    let arena = Arena::start(&[]);
    // An echo first.
    let mut ok = websocket(&arena);
    ok.write_all(&ws_frame(1, b"hello")).unwrap();
    let mut echo = [0u8; 7];
    ok.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"\x81\x05hello");
    let bad: [(&str, Vec<u8>); 4] = [
        ("an unmasked client frame", vec![0x81, 0x02, b'h', b'i']),
        ("a reserved opcode", ws_frame(0x3, b"x")),
        ("RSV bits without an extension", {
            let mut f = ws_frame(1, b"x");
            f[0] |= 0x40;
            f
        }),
        ("text that is not UTF-8", ws_frame(1, &[0xff, 0xfe])),
    ];
    for (what, frame) in bad {
        let mut s = websocket(&arena);
        s.write_all(&frame).unwrap();
        let got = read_all(&mut s);
        // A close frame (opcode 8) with a protocol (1002) or data (1007) error, then EOF.
        assert!(got.len() >= 4 && got[0] == 0x88, "{what}: {got:?}");
        let code = u16::from_be_bytes([got[2], got[3]]);
        assert!(code == 1002 || code == 1007, "{what}: close code {code}");
    }
    // The first socket still echoes.
    ok.write_all(&ws_frame(2, b"still")).unwrap();
    let mut echo = [0u8; 7];
    ok.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"\x82\x05still");
    arena.still_serves();
}

#[test]
fn static_paths_that_leave_the_root_are_refused() {
    let arena = Arena::start(&[]);
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (status, body) = arena.get("/static/reset.css");
    assert_eq!(status, 200);
    assert_eq!(
        body,
        std::fs::read(here.join("data/static/reset.css")).unwrap()
    );
    for path in [
        "/static/../Cargo.toml",
        "/static/%2e%2e/Cargo.toml",
        "/static/%2E%2E/%2E%2E/Cargo.toml",
        "/static/..%2fCargo.toml",
        "/static/..%5cCargo.toml",
        "/static//etc/passwd",
        "/static/%2fetc%2fpasswd",
        "/static/reset.css%00.txt",
        "/static/../../../../../../etc/passwd",
    ] {
        let (status, body) = arena.get(path);
        assert!(
            status == 404 || status == 400,
            "{path}: {status} {}",
            String::from_utf8_lossy(&body[..body.len().min(80)])
        );
        assert!(
            !String::from_utf8_lossy(&body).contains("[package]"),
            "{path} leaked a file"
        );
        assert!(
            !String::from_utf8_lossy(&body).contains("root:"),
            "{path} leaked a file"
        );
    }
    arena.still_serves();
}
