//! `tfb`: TechEmpower's six test types (see the `tfb` library) on this runtime: axum's
//! `Router` served by `corering_net::hyper` on every core, with a PostgreSQL [`Pool`] per
//! core opened inside `serve_with_async`'s per-core factory, and HTTP/1.1 pipelining
//! answered in one flush per batch.
//!
//! `cargo run --release -p tfb -- --port 8080 --db postgres://...`, then
//! `curl http://127.0.0.1:8080/fortunes`. Ctrl-C or SIGTERM stops it gracefully (exit 0).
//!
//! [`Pool`]: corering_net::postgres::Pool

use std::io;

use corering_net::hyper::Builder;
use futures::FutureExt;
use tfb::cli::{usage_error, Args};

const USAGE: &str = "\
tfb: TechEmpower's six tests (axum + tokio-postgres) on io_uring

usage: tfb [--host ADDR] [--port PORT] [--cores N] [--pool N] [--db URL] [--grace SECS]

  --host ADDR   address to listen on (default 127.0.0.1)
  --port PORT   port; 0 picks one (default 8080)
  --cores N     cores to serve on, one thread and ring each (default 1)
  --pool N      database connections per core (default 4)
  --db URL      the database (default $TFB_DB_URL, else
                postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world)
  --grace SECS  on Ctrl-C or SIGTERM, how long in-flight requests may take (default 5)
  -h, --help    this text

Routes: /plaintext /json /db /queries?queries=N /fortunes /updates?queries=N
";

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE);
    let config = corering_net::postgres::parse(&args.db).unwrap_or_else(|e| usage_error(USAGE, e));
    runtime::Builder::new()
        .cores(args.cores)
        .build()?
        .block_on(serve(args, config))
}

async fn serve(args: Args, config: tokio_postgres::Config) -> io::Result<()> {
    // Listen for the signals before binding: a SIGTERM as soon as the port is open is
    // already a graceful stop.
    let signal = runtime::signal::shutdown()?;
    let pool_size = args.pool;
    let server = Builder::new()
        .http(|http| {
            // Answer a batch of pipelined requests with one write.
            http.http1().pipeline_flush(true);
        })
        .serve_with_async(args.addr, move |_core| {
            let config = config.clone();
            async move { Ok(tfb::router(tfb::pool(config, pool_size).await)) }
        })?;
    println!(
        "tfb: listening on http://{} with {} core(s), {} database connection(s) each; \
         Ctrl-C or SIGTERM stops",
        server.local_addr(),
        server.cores(),
        pool_size
    );
    let grace = args.grace;
    let stop = async move {
        signal.await;
        println!("tfb: stopping");
    }
    .shared();
    server.with_graceful_shutdown(stop, grace).await
}
