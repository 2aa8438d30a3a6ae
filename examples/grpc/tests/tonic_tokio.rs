//! A peer this project did not write: tonic's own client (its `transport` channel, on a
//! tokio current-thread runtime in a thread of its own) against our server.

mod common;

use grpc_example::check;
use grpc_example::pb::echo_client::EchoClient;

#[test]
fn tonic_on_tokio_against_our_server() {
    common::runtime().block_on(async {
        let (server, uri) = common::start(true).expect("the server starts");
        let (tx, rx) = runtime::sync::oneshot::channel();
        let peer = std::thread::spawn(move || {
            let tokio = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let result = tokio.block_on(async move {
                let channel = tonic::transport::Endpoint::from(uri)
                    .connect()
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
                let mut client = EchoClient::new(channel);
                check::unary(&mut client, vec![3u8; 100_000]).await?;
                check::server_stream(&mut client, 6, 70_000, 8).await?;
                check::client_stream(&mut client, vec![vec![1u8; 5], vec![2u8; 300_000]]).await?;
                check::all(&client, 150, 1 << 20, 16, 5).await
                // No deadline check here: tonic's channel times a `grpc-timeout` call out
                // itself and reports its own timer as CANCELLED ("Timeout expired"), racing
                // our server's DEADLINE_EXCEEDED (see `bad_input.rs` for the server's).
            });
            let _ = tx.send(result);
        });
        let result = rx.await.expect("the tokio thread reports");
        peer.join().expect("the tokio thread ends");
        result.unwrap();
        common::stop(server).await;
    });
}
