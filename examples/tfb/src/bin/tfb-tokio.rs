//! `tfb-tokio` (feature `tokio-peer`): the `tfb` handlers on tokio current-thread, the peer
//! of `scripts/tfb_bench.sh`. axum's `Router` on hyper-util's `auto` builder over `TokioIo`,
//! with tokio-postgres' own `connect` (its `runtime` feature) and `--pool` connections
//! handed out in turn (no reconnection: a benchmark peer). SIGINT or SIGTERM stops it.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tfb::cli::{usage_error, Args};
use tfb::{Db, DbConn, Statements};
use tokio::net::TcpListener;
use tokio_postgres::{Client, NoTls};

const USAGE: &str = "\
tfb-tokio: TechEmpower's six tests (axum + tokio-postgres) on tokio current-thread

usage: tfb-tokio [--host ADDR] [--port PORT] [--pool N] [--db URL]

  --host ADDR   address to listen on (default 127.0.0.1)
  --port PORT   port; 0 picks one (default 8080)
  --pool N      database connections (default 4)
  --db URL      the database (default $TFB_DB_URL, else
                postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world)
  -h, --help    this text
";

/// A connection and its statements.
struct Conn {
    client: Client,
    statements: Statements,
}

impl DbConn for Conn {
    fn client(&self) -> &Client {
        &self.client
    }

    fn statements(&self) -> &Statements {
        &self.statements
    }
}

/// The connections, in turn.
#[derive(Clone)]
struct Conns {
    conns: Arc<Vec<Arc<Conn>>>,
    next: Arc<AtomicUsize>,
}

impl Db for Conns {
    type Conn = Conn;

    async fn conn(&self) -> io::Result<Arc<Conn>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        Ok(self.conns[i].clone())
    }
}

async fn connect(url: &str, n: usize) -> io::Result<Conns> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let (client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(|e| io::Error::other(format!("connecting to {url}: {e}")))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                eprintln!("tfb-tokio: connection ended: {e}");
            }
        });
        let statements = Statements::prepare(&client)
            .await
            .map_err(|e| io::Error::other(format!("preparing: {e}")))?;
        conns.push(Arc::new(Conn { client, statements }));
    }
    Ok(Conns {
        conns: Arc::new(conns),
        next: Arc::new(AtomicUsize::new(0)),
    })
}

fn main() -> io::Result<()> {
    let args = Args::parse(USAGE);
    if args.db.parse::<tokio_postgres::Config>().is_err() {
        usage_error(USAGE, format!("--db {:?}: not a PostgreSQL URL", args.db));
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(serve(args))
}

async fn serve(args: Args) -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let app = tfb::router(connect(&args.db, args.pool).await?);
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1().timer(TokioTimer::new()).pipeline_flush(true);
    let http = Arc::new(http);
    let listener = TcpListener::bind(args.addr).await?;
    println!(
        "tfb-tokio: listening on http://{}, tokio current-thread, {} database connection(s); \
         Ctrl-C or SIGTERM stops",
        listener.local_addr()?,
        args.pool
    );
    loop {
        tokio::select! {
            res = listener.accept() => {
                let Ok((stream, _)) = res else { continue };
                let _ = stream.set_nodelay(true);
                let http = http.clone();
                let service = TowerToHyperService::new(app.clone());
                tokio::spawn(async move {
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                });
            }
            _ = int.recv() => break,
            _ = term.recv() => break,
        }
    }
    println!("tfb-tokio: stopping");
    Ok(())
}
