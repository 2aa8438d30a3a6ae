//! Our client (tonic's generated one over `corering_net::grpc::Channel`) against our server
//! (tonic's `Routes` through `corering_net::grpc::server()`): every method, every byte, on
//! one connection; deadlines enforced by the client.

mod common;

use std::time::Duration;

use corering_net::grpc::Channel;
use grpc_example::check::{self, Rng};
use grpc_example::pb::echo_client::EchoClient;
use grpc_example::pb::StreamRequest;
use tonic::{Code, Request};

#[test]
fn every_method_every_byte_on_one_connection() {
    common::runtime().block_on(async {
        let (server, uri) = common::start(true).expect("the server starts");
        let channel = Channel::new(uri);
        let mut client = EchoClient::new(channel.clone());
        let mut rng = Rng::new(7);
        // The edges: empty, one byte, a frame's worth, exactly 1 MiB.
        for size in [0, 1, 16 * 1024 - 5, 16 * 1024, 1 << 20] {
            check::unary(&mut client, rng.bytes(size)).await.unwrap();
        }
        check::server_stream(&mut client, 0, 10, 1).await.unwrap();
        check::server_stream(&mut client, 3, 0, 2).await.unwrap();
        check::server_stream(&mut client, 4, 1 << 20, 3)
            .await
            .unwrap();
        check::client_stream(&mut client, vec![]).await.unwrap();
        check::client_stream(&mut client, vec![vec![]; 3])
            .await
            .unwrap();
        check::client_stream(&mut client, vec![rng.bytes(1 << 20), rng.bytes(12345)])
            .await
            .unwrap();
        // Several hundred random calls, 16 at once: streams of one connection.
        check::all(&client, 300, 1 << 20, 16, 11).await.unwrap();
        assert_eq!(channel.connections_opened(), 1, "one connection, reused");
        common::stop(server).await;
    });
}

#[test]
fn client_enforces_deadlines() {
    common::runtime().block_on(async {
        // A server that ignores grpc-timeout: only the channel stops these calls.
        let (server, uri) = common::start(false).expect("the server starts");
        let channel = Channel::new(uri.clone());
        let mut client = EchoClient::new(channel.clone());
        // The call's own deadline (tonic's `set_timeout`, sent as grpc-timeout).
        check::deadline_exceeded(
            &mut client,
            Some(Duration::from_millis(50)),
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        // The channel's default.
        let short = Channel::builder(uri.clone())
            .timeout(Duration::from_millis(50))
            .build();
        check::deadline_exceeded(&mut EchoClient::new(short), None, Duration::from_secs(2))
            .await
            .unwrap();
        // The earlier of the two wins: a call allowing 10 s on a 50 ms channel.
        let short = Channel::builder(uri)
            .timeout(Duration::from_millis(50))
            .build();
        check::deadline_exceeded(
            &mut EchoClient::new(short),
            Some(Duration::from_secs(10)),
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        // Mid-stream: replies 100 ms apart, a deadline of 250 ms. Whatever came before it
        // is whole and right; then DEADLINE_EXCEEDED.
        let mut req = Request::new(StreamRequest {
            count: 50,
            size: 1000,
            seed: 9,
            delay_ms: 100,
        });
        req.set_timeout(Duration::from_millis(250));
        let mut replies = client
            .server_stream(req)
            .await
            .expect("the head")
            .into_inner();
        let mut i = 0u32;
        let end = loop {
            match replies.message().await {
                Ok(Some(reply)) => {
                    assert_eq!(reply.payload, grpc_example::pattern(9, i, 1000));
                    i += 1;
                }
                Ok(None) => panic!("the stream ended after {i} replies, past its deadline"),
                Err(status) => break status,
            }
        };
        assert_eq!(end.code(), Code::DeadlineExceeded, "{end}");
        assert!(i < 50);
        // The connection goes on serving.
        check::unary(&mut client, b"after".to_vec()).await.unwrap();
        assert_eq!(channel.connections_opened(), 1);
        common::stop(server).await;
    });
}

#[test]
fn connection_refused_is_unavailable() {
    common::runtime().block_on(async {
        // A port nobody listens on: bind one, note it, close it.
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let channel = Channel::new(format!("http://{addr}").parse().unwrap());
        let mut client = EchoClient::new(channel);
        let status = client
            .unary(grpc_example::pb::EchoRequest::default())
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unavailable, "{status}");
        assert!(status.message().contains(&addr.to_string()), "{status}");
    });
}
