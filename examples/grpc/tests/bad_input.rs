//! What a peer can get wrong, sent raw through `corering_net::hyper::Client`: malformed gRPC
//! frames end their own call with a non-OK `grpc-status` and the server goes on serving;
//! a call past its `grpc-timeout` is ended by the server (no client timer involved).

mod common;

use grpc_example::pb::{EchoReply, EchoRequest, StreamRequest};
use prost::Message;

const UNARY: &str = "/corering.echo.Echo/Unary";
const SERVER_STREAM: &str = "/corering.echo.Echo/ServerStream";
const CLIENT_STREAM: &str = "/corering.echo.Echo/ClientStream";

fn echo(payload: &[u8], delay_ms: u32) -> Vec<u8> {
    EchoRequest {
        payload: payload.to_vec(),
        delay_ms,
    }
    .encode_to_vec()
}

#[test]
fn malformed_frames_fail_their_call_and_the_server_goes_on() {
    common::runtime().block_on(async {
        let (server, uri) = common::start(true).expect("the server starts");
        let client = common::raw_client();
        let good = common::frame(&echo(b"fine", 0));
        let mut truncated = common::frame(&echo(&[5u8; 100], 0));
        truncated.truncate(40);
        let mut huge = vec![0u8];
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        huge.extend_from_slice(b"not that much");
        let mut compressed = common::frame(&echo(b"x", 0));
        compressed[0] = 1; // compressed, with no grpc-encoding
        let bad_flag = {
            let mut f = common::frame(&echo(b"x", 0));
            f[0] = 0x7f;
            f
        };
        let cases: Vec<(&str, &str, Vec<u8>)> = vec![
            ("a truncated frame", UNARY, truncated.clone()),
            ("half a frame header", UNARY, vec![0, 0, 0]),
            (
                "a frame that is not protobuf",
                UNARY,
                common::frame(&[0xff; 17]),
            ),
            ("a 4 GiB frame length", UNARY, huge),
            ("a compressed frame with no encoding", UNARY, compressed),
            ("a bad flag byte", UNARY, bad_flag),
            ("no message at all", UNARY, vec![]),
            (
                "a truncated frame after a good one",
                CLIENT_STREAM,
                [good.clone(), truncated].concat(),
            ),
            (
                "garbage in a stream request",
                SERVER_STREAM,
                common::frame(&[0xff, 0xff, 0xff]),
            ),
        ];
        for (what, path, body) in cases {
            let reply = common::raw_call(&client, &uri, path, &[], body).await;
            assert_eq!(reply.status, 200, "{what}: {reply:?}");
            let status = reply
                .grpc_status
                .unwrap_or_else(|| panic!("{what}: no grpc-status: {reply:?}"));
            assert_ne!(status, 0, "{what}: OK for a malformed call: {reply:?}");
            // And the same connection serves a good call after each.
            let ok = common::raw_call(&client, &uri, UNARY, &[], good.clone()).await;
            assert_eq!(ok.grpc_status, Some(0), "after {what}: {ok:?}");
            let messages = common::frames(ok.body);
            assert_eq!(messages.len(), 1);
            let reply = EchoReply::decode(messages[0].clone()).expect("a reply");
            assert_eq!(reply.payload, b"fine");
        }
        assert_eq!(
            client.connections_opened(),
            1,
            "one connection served them all"
        );
        // An unknown method is UNIMPLEMENTED (12).
        let reply = common::raw_call(&client, &uri, "/corering.echo.Echo/Nope", &[], good).await;
        assert_eq!(reply.grpc_status, Some(12), "{reply:?}");
        common::stop(server).await;
    });
}

#[test]
fn the_server_enforces_grpc_timeout() {
    common::runtime().block_on(async {
        let (server, uri) = common::start(true).expect("the server starts");
        let client = common::raw_client();
        // Before the head: a trailers-only DEADLINE_EXCEEDED.
        let late = common::frame(&echo(b"late", 5_000));
        let reply = common::raw_call(&client, &uri, UNARY, &[("grpc-timeout", "50m")], late).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.headers["content-type"], "application/grpc");
        assert_eq!(reply.headers["grpc-status"], "4", "{reply:?}");
        assert!(reply.body.is_empty());
        // Mid-stream: whole replies, then trailers with DEADLINE_EXCEEDED.
        let req = StreamRequest {
            count: 50,
            size: 3000,
            seed: 4,
            delay_ms: 100,
        };
        let reply = common::raw_call(
            &client,
            &uri,
            SERVER_STREAM,
            &[("grpc-timeout", "350000u")],
            common::frame(&req.encode_to_vec()),
        )
        .await;
        assert_eq!(
            reply.headers.get("grpc-status"),
            None,
            "the head went first"
        );
        let trailers = reply.trailers.as_ref().expect("trailers");
        assert_eq!(trailers["grpc-status"], "4", "{reply:?}");
        let messages = common::frames(reply.body.clone());
        assert!(messages.len() < 50);
        for (i, m) in messages.into_iter().enumerate() {
            let reply = EchoReply::decode(m).expect("a reply");
            assert_eq!(reply.payload, grpc_example::pattern(4, i as u32, 3000));
        }
        // A call within its deadline is untouched.
        let ok = common::raw_call(
            &client,
            &uri,
            UNARY,
            &[("grpc-timeout", "10S")],
            common::frame(&echo(b"in time", 1)),
        )
        .await;
        assert_eq!(ok.grpc_status, Some(0), "{ok:?}");
        // A malformed grpc-timeout is INTERNAL (13), as gRPC's servers answer it.
        for bad in ["soon", "123456789m", "5x", "-1S"] {
            let reply = common::raw_call(
                &client,
                &uri,
                UNARY,
                &[("grpc-timeout", bad)],
                common::frame(&echo(b"x", 0)),
            )
            .await;
            assert_eq!(reply.grpc_status, Some(13), "{bad}: {reply:?}");
        }
        common::stop(server).await;
    });
}

#[test]
fn the_server_ends_a_client_stream_at_its_deadline() {
    // The client-streaming method with a slow first message: the server's deadline ends it
    // while it is still reading the request.
    common::runtime().block_on(async {
        let (server, uri) = common::start(true).expect("the server starts");
        let client = common::raw_client();
        let body = [
            common::frame(&echo(b"a", 2_000)),
            common::frame(&echo(b"b", 0)),
        ]
        .concat();
        let reply = common::raw_call(
            &client,
            &uri,
            CLIENT_STREAM,
            &[("grpc-timeout", "30m")],
            body,
        )
        .await;
        assert_eq!(reply.grpc_status, Some(4), "{reply:?}");
        common::stop(server).await;
    });
}

#[test]
fn an_http1_request_is_refused_and_the_server_goes_on() {
    // The gRPC preset is HTTP/2-only: an HTTP/1.1 request never reaches the service (the
    // connection closes with no response), and h2 calls are served as before.
    use std::io::{Read, Write};
    common::runtime().block_on(async {
        let (server, uri) = common::start(true).expect("the server starts");
        let authority = uri.authority().expect("an authority").to_string();
        let answer = runtime::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(&authority).expect("connect");
            s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .expect("a read timeout");
            s.write_all(b"POST /corering.echo.Echo/Unary HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc\r\ncontent-length: 0\r\n\r\n")
                .expect("write");
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
            got
        })
        .await
        .expect("the blocking task");
        assert!(
            !answer.starts_with(b"HTTP/1.1"),
            "an HTTP/1.1 response: {:?}",
            String::from_utf8_lossy(&answer)
        );
        let client = common::raw_client();
        let ok = common::raw_call(&client, &uri, UNARY, &[], common::frame(&echo(b"h2", 0))).await;
        assert_eq!(ok.grpc_status, Some(0), "{ok:?}");
        common::stop(server).await;
    });
}
