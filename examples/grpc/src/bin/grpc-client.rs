//! `grpc-client`: calls every method of a `corering.echo.Echo` server (ours, or any other:
//! `scripts/grpc_check.sh` runs it against Python's grpcio) through tonic's generated
//! client over `corering_net::grpc::Channel`, checks every byte of every reply, and exits
//! 1 on the first mismatch or failed call.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use corering_net::grpc::Channel;
use grpc_example::args::Args;
use grpc_example::check;
use grpc_example::pb::echo_client::EchoClient;

const USAGE: &str = "\
grpc-client: calls every method of a corering.echo.Echo gRPC server and checks the replies

usage: grpc-client [--addr URI] [--calls N] [--max-size BYTES] [--concurrency N]
                   [--seed N] [--deadline MS]

  --addr URI        the server (default http://127.0.0.1:50051), h2c
  --calls N         random calls after the fixed ones (default 300)
  --max-size BYTES  largest random payload (default 1048576)
  --concurrency N   calls at once, as streams of one connection (default 16)
  --seed N          seed of the random sizes and bytes (default 1)
  --deadline MS     also check deadlines: a call with a grpc-timeout of MS whose server
                    waits 4 x MS, and one on a channel whose default timeout is MS, must
                    both end with DEADLINE_EXCEEDED
  -h, --help        this text
";

fn main() -> ExitCode {
    let args = Args::parse(
        USAGE,
        &[
            "addr",
            "calls",
            "max-size",
            "concurrency",
            "seed",
            "deadline",
        ],
        &[],
    );
    let addr: http::Uri = args.value("addr", "http://127.0.0.1:50051".parse().expect("a URI"));
    let calls: usize = args.value("calls", 300);
    let max_size: usize = args.value("max-size", 1 << 20);
    let concurrency: usize = args.value("concurrency", 16);
    let seed: u64 = args.value("seed", 1);
    let deadline_ms: u64 = args.value("deadline", 0);
    let deadline = (deadline_ms > 0).then(|| Duration::from_millis(deadline_ms));
    let rt = runtime::Builder::new().cores(1).build().expect("a runtime");
    let result = rt.block_on(run(addr, calls, max_size, concurrency, seed, deadline));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("grpc-client: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    addr: http::Uri,
    calls: usize,
    max_size: usize,
    concurrency: usize,
    seed: u64,
    deadline: Option<Duration>,
) -> Result<(), String> {
    let channel = Channel::new(addr.clone());
    let mut client = EchoClient::new(channel.clone());
    let t = Instant::now();
    check::unary(&mut client, b"hello, gRPC".to_vec()).await?;
    println!("unary: ok (11 bytes echoed)");
    check::server_stream(&mut client, 5, 1000, 42).await?;
    println!("server stream: ok (5 replies of 1000 bytes)");
    let parts = vec![b"one ".to_vec(), b"two ".to_vec(), vec![7u8; 100_000]];
    check::client_stream(&mut client, parts).await?;
    println!("client stream: ok (3 messages, 100008 bytes)");
    check::all(&client, calls, max_size, concurrency, seed).await?;
    println!(
        "random calls: ok ({calls} calls, payloads up to {max_size} bytes, {concurrency} at once)"
    );
    if let Some(d) = deadline {
        check::deadline_exceeded(&mut client, Some(d), d * 4).await?;
        println!("deadline (grpc-timeout {d:?}): ok, DEADLINE_EXCEEDED");
        let short = Channel::builder(addr).timeout(d).build();
        check::deadline_exceeded(&mut EchoClient::new(short), None, d * 4).await?;
        println!("deadline (channel timeout {d:?}): ok, DEADLINE_EXCEEDED");
    }
    println!(
        "grpc-client: all checks passed in {:.2?} on {} connection(s)",
        t.elapsed(),
        channel.connections_opened()
    );
    Ok(())
}
