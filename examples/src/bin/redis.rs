//! A Redis-protocol (RESP2) server: PING, ECHO, GET, SET (EX/PX/NX/XX), DEL, INCR, EXISTS,
//! MGET, MSET, with pipelining; in memory, no persistence. See `examples::redis` for the
//! store and the connection loop, `examples::resp` for the parser and its limits.
//!
//! `cargo run --release -p examples --bin redis -- --port 6379`, then `redis-cli` or
//! `redis-benchmark -t ping,set,get,incr,mset -P 16 -q`. Ctrl-C stops it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use examples::args::Args;
use examples::redis::{serve_connection, Store};

const USAGE: &str = "\
redis: a Redis-protocol (RESP2) server on io_uring

usage: redis [--host ADDR] [--port PORT] [--cores N]

  --host ADDR   address to listen on (default 127.0.0.1)
  --port PORT   port to listen on; 0 picks one (default 6379)
  --cores N     cores to serve on, one thread and ring each (default 1)
  -h, --help    this text

Commands: PING ECHO GET SET [EX s|PX ms] [NX|XX] DEL INCR EXISTS MGET MSET QUIT.
";

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE, &["host", "port", "cores"], &[]);
    let host: std::net::IpAddr = args.value("host", [127, 0, 0, 1].into());
    let addr = SocketAddr::new(host, args.value("port", 6379));
    examples::run(args.value("cores", 1usize), serve(addr))
}

async fn serve(addr: SocketAddr) -> io::Result<()> {
    let store = Arc::new(Store::default());
    let shared = store.clone();
    let server = corering_net::serve(addr, move |stream: corering_net::TcpStream| {
        let store = shared.clone();
        async move {
            let _ = stream.set_nodelay(true);
            serve_connection(stream, &store).await;
        }
    })?;
    // Keys with a TTL that nobody reads again go in a sweep once a second.
    let sweeper = runtime::spawn_local(async move {
        let mut tick = runtime::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            store.sweep();
        }
    });
    println!(
        "redis: listening on {} with {} core(s); Ctrl-C stops",
        server.local_addr(),
        server.cores()
    );
    let result = examples::until_ctrl_c(server.join()).await;
    sweeper.abort();
    result
}
