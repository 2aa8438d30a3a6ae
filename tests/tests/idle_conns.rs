//! 19,000 idle TCP connections to an echo server on this runtime (fewer where the fd hard
//! limit is lower: N = min(19,000, hard - 500), printed): all open and idle for 1 s, then
//! each echoes its own message, byte for byte; the server's RSS per connection is printed
//! (idle, and after the echo), not asserted.
//!
//! The server is a thread of this process with its own one-core runtime: `incoming()` and a
//! `spawn_local` task per connection, which `into_split()`s it and echoes through the
//! futures-io traits of the halves (`fill_buf`, `write_all`, `consume`, `flush`), the path
//! whose read side takes its bytes from the core's provided-buffer ring, so that an idle
//! connection holds no read buffer. The clients run in a child process
//! (`src/bin/idle_client.rs`), which checks every echo: N client and N server sockets would
//! not fit under one process's fd limit.
//!
//! One test in this file, so its binary runs alone (test binaries run one after another):
//! nothing else holds fds or loads the loopback meanwhile. Every wait is bounded.

use std::io::{self, BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use futures::future::{self, Either};
use futures::io::{AsyncBufReadExt, AsyncWriteExt};
use futures::StreamExt;

/// The most connections tried (the fd hard limit of the machines this runs on is 20,000).
const MAX_CONNS: u64 = 19_000;
/// Fds this process (and the client) keeps beside its connections.
const SPARE_FDS: u64 = 500;
/// Below this many connections the test cannot run (the fd hard limit is too low): it says
/// so through `runtime::ext::testing::require`, a failure under `CORERING_REQUIRE_FEATURES=1`.
const MIN_CONNS: u64 = 1_000;
/// Bound on each phase: every connection open, every echo checked, every connection ended.
const PHASE: Duration = Duration::from_secs(120);
/// Bound on the server's start and stop.
const SERVER_START_STOP: Duration = Duration::from_secs(10);

/// What the server saw, counted by its tasks.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    ended: AtomicUsize,
    failed: AtomicUsize,
}

/// One connection: echoes with the split halves' futures-io traits until end of stream.
/// Fully qualified: the halves also have owned-buffer `write_all`, and tokio's traits.
async fn echo(stream: corering_net::TcpStream) -> io::Result<()> {
    let (mut r, mut w) = stream.into_split();
    loop {
        let data = AsyncBufReadExt::fill_buf(&mut r).await?;
        if data.is_empty() {
            return AsyncWriteExt::close(&mut w).await;
        }
        let n = data.len();
        AsyncWriteExt::write_all(&mut w, data).await?;
        AsyncBufReadExt::consume_unpin(&mut r, n);
        AsyncWriteExt::flush(&mut w).await?;
    }
}

/// The server thread: its address, its counts, how to stop it, and its result.
struct Server {
    addr: SocketAddr,
    counts: Arc<Counts>,
    stop: Option<runtime::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<io::Result<()>>,
}

impl Server {
    fn start() -> Server {
        let (addr_tx, addr_rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let (stop, stop_rx) = runtime::sync::oneshot::channel::<()>();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        std::thread::spawn(move || {
            let res = serve(c, addr_tx, stop_rx);
            let _ = done_tx.send(res);
        });
        let addr =
            addr_rx
                .recv_timeout(SERVER_START_STOP)
                .unwrap_or_else(|_| match done.try_recv() {
                    Ok(Err(e)) => panic!("the server did not start: {e}"),
                    _ => panic!("the server did not start within {SERVER_START_STOP:?}"),
                });
        Server {
            addr,
            counts,
            stop: Some(stop),
            done,
        }
    }

    /// Stops the accept loop and waits for the runtime to end.
    fn stop(mut self) {
        let _ = self.stop.take().expect("stopped once").send(());
        match self.done.recv_timeout(SERVER_START_STOP) {
            Ok(res) => res.expect("the server's result"),
            Err(_) => panic!("the server did not stop within {SERVER_START_STOP:?}"),
        }
    }
}

fn serve(
    counts: Arc<Counts>,
    addr_tx: mpsc::Sender<SocketAddr>,
    mut stop: runtime::sync::oneshot::Receiver<()>,
) -> io::Result<()> {
    let rt = runtime::Builder::new().cores(1).build()?;
    rt.block_on(async move {
        let listener = corering_net::TcpListener::bind("127.0.0.1:0")?;
        let _ = addr_tx.send(listener.local_addr()?);
        let mut incoming = listener.incoming();
        loop {
            match future::select(incoming.next(), &mut stop).await {
                Either::Left((Some(Ok(stream)), _)) => {
                    counts.accepted.fetch_add(1, Relaxed);
                    let counts = counts.clone();
                    runtime::spawn_local(async move {
                        if let Err(e) = echo(stream).await {
                            eprintln!("server: connection: {e}");
                            counts.failed.fetch_add(1, Relaxed);
                        }
                        counts.ended.fetch_add(1, Relaxed);
                    });
                }
                Either::Left((Some(Err(e)), _)) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "accept after {} connections: {e}",
                            counts.accepted.load(Relaxed)
                        ),
                    ))
                }
                Either::Left((None, _)) => {
                    return Err(io::Error::other("the incoming stream ended"));
                }
                Either::Right(_) => return Ok(()),
            }
        }
    })
}

/// The client child: killed and reaped if still running when dropped; its stdout lines
/// come through a channel, so every wait for one is bounded.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Client {
    fn start(addr: SocketAddr, n: u64) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_idle_client"))
            .arg(addr.to_string())
            .arg(n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn idle_client");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            lines,
        }
    }

    /// The next line, which must start with `want`.
    fn expect_line(&mut self, want: &str) -> String {
        match self.lines.recv_timeout(PHASE) {
            Ok(line) if line.starts_with(want) => line,
            Ok(line) => panic!("idle_client said {line:?}, expected {want:?}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("idle_client printed no {want:?} within {PHASE:?}")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.wait(SERVER_START_STOP);
                panic!("idle_client exited ({status:?}) before {want:?}; its stderr is above")
            }
        }
    }

    fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Closes its stdin (it then closes every connection) and waits for it to succeed.
    fn finish(&mut self) {
        drop(self.stdin.take());
        match self.wait(PHASE) {
            Some(status) => assert!(status.success(), "idle_client: {status}"),
            None => panic!("idle_client did not exit within {PHASE:?}"),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until `done()` holds, at most [`PHASE`]; `what` names it in the panic.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + PHASE;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {PHASE:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn nineteen_thousand_idle_connections_then_each_echoes() {
    let (_, hard) = tests::nofile_limit();
    let n = MAX_CONNS.min(hard.saturating_sub(SPARE_FDS));
    let what = format!("an fd hard limit with room for {MIN_CONNS} connections (it is {hard})");
    if !runtime::ext::testing::require(&what, n >= MIN_CONNS) {
        return;
    }
    tests::set_nofile_soft(hard).unwrap();
    println!("{n} connections (fd hard limit {hard})");

    let server = Server::start();
    // Let the server arm its accept and settle before measuring.
    std::thread::sleep(Duration::from_millis(50));
    let rss_before = tests::rss_kib();

    let start = Instant::now();
    let mut client = Client::start(server.addr, n);
    let line = client.expect_line(&format!("connected {n} "));
    let counts = server.counts.clone();
    wait_until("every connection accepted", || {
        counts.accepted.load(Relaxed) as u64 >= n
    });
    // Within the client's idle second: every task has been polled once and waits to read.
    std::thread::sleep(Duration::from_millis(100));
    let rss_idle = tests::rss_kib();
    let opened = start.elapsed();
    client.expect_line(&format!("verified {n}"));
    let rss_echoed = tests::rss_kib();
    assert_eq!(counts.accepted.load(Relaxed) as u64, n, "accepted");
    assert_eq!(counts.failed.load(Relaxed), 0, "connections failed");

    let per_conn = |kib: u64| (kib as f64 - rss_before as f64) * 1024.0 / n as f64;
    println!(
        "client: {line}; all accepted in {opened:.2?}; server RSS {rss_before} KiB before, \
         {rss_idle} KiB with all idle ({:.0} bytes per connection), {rss_echoed} KiB after \
         each echoed ({:.0} bytes per connection)",
        per_conn(rss_idle),
        per_conn(rss_echoed)
    );

    client.finish();
    wait_until("every connection ended", || {
        counts.ended.load(Relaxed) as u64 >= n
    });
    assert_eq!(counts.failed.load(Relaxed), 0, "connections failed");
    server.stop();
}
