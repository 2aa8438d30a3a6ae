//! The same failures on both backends, side by side: each scenario runs once on a fresh
//! io_uring runtime and once on a fresh epoll runtime, and the two must fail with the same
//! `io::ErrorKind`, the one the API promises. Where io_uring is refused (a seccomp profile,
//! `kernel.io_uring_disabled`), a note says so and only epoll is checked.
//!
//! The fd-limit scenario lowers `RLIMIT_NOFILE`, which is process-wide, so it runs in child
//! processes: the test re-executes this binary with `BACKEND_ERRORS_CHILD` set, once per
//! backend, and compares what the children report.

use std::error::Error;
use std::fmt::Debug;
use std::future::Future;
use std::io::{self, ErrorKind, Read};
use std::net::Shutdown;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use corering_net::{TcpListener, TcpStream};
use futures::{AsyncReadExt, StreamExt};
use runtime::process::Command;
use runtime::time::timeout;
use runtime::{Backend, Builder, Runtime};

/// Every scenario's bound.
const LIMIT: Duration = Duration::from_secs(10);

/// What one scenario gave on each backend: `io_uring` is `None` where io_uring is refused.
#[derive(Debug)]
struct Runs<T> {
    name: &'static str,
    io_uring: Option<T>,
    epoll: T,
}

impl<T: PartialEq + Debug> Runs<T> {
    /// Asserts that both backends gave the same result, and returns it.
    fn same(self) -> T {
        if let Some(uring) = &self.io_uring {
            assert_eq!(
                *uring, self.epoll,
                "{}: io_uring (left) and epoll (right) disagree",
                self.name
            );
        }
        self.epoll
    }

    /// The part `f` picks of each backend's result.
    fn map<U>(&self, f: impl Fn(&T) -> U) -> Runs<U> {
        Runs {
            name: self.name,
            io_uring: self.io_uring.as_ref().map(&f),
            epoll: f(&self.epoll),
        }
    }

    /// Each backend's result, with the backend.
    fn each(&self) -> impl Iterator<Item = (Backend, &T)> {
        let uring = self.io_uring.as_ref().map(|t| (Backend::IoUring, t));
        uring.into_iter().chain([(Backend::Epoll, &self.epoll)])
    }
}

/// A runtime on `backend`; `None` (after a note) if that is io_uring and this machine
/// refuses it.
fn runtime_on(backend: Backend, name: &str) -> Option<Runtime> {
    match Builder::new().backend(backend).build() {
        Ok(rt) => {
            assert_eq!(rt.features().backend, backend, "{name}");
            Some(rt)
        }
        Err(e) if refused(backend, &e) => {
            // Checking epoll only (a failure under CORERING_REQUIRE_FEATURES=1).
            runtime::ext::testing::require(&format!("io_uring ({name}: {e})"), false);
            None
        }
        Err(e) => panic!("{name}: building a runtime on {backend}: {e}"),
    }
}

/// Whether `e`, from building a runtime on `backend`, says io_uring is refused here.
fn refused(backend: Backend, e: &io::Error) -> bool {
    backend == Backend::IoUring
        && matches!(
            e.kind(),
            ErrorKind::PermissionDenied | ErrorKind::Unsupported
        )
}

/// Runs `f()` on a fresh io_uring runtime (where io_uring is allowed), then on a fresh epoll
/// runtime, each within [`LIMIT`].
fn on_each_backend<T, Fut>(name: &'static str, f: impl Fn() -> Fut) -> Runs<T>
where
    T: PartialEq + Debug,
    Fut: Future<Output = T>,
{
    let run = |backend: Backend| {
        let rt = runtime_on(backend, name)?;
        let out = rt.block_on(timeout(LIMIT, f()));
        Some(out.unwrap_or_else(|_| panic!("{name} on {backend}: no result in {LIMIT:?}")))
    };
    let io_uring = run(Backend::IoUring);
    let epoll = run(Backend::Epoll).expect("epoll always builds");
    Runs {
        name,
        io_uring,
        epoll,
    }
}

/// The kind of the error `r` must be.
fn kind_of<T>(r: io::Result<T>, what: &str) -> ErrorKind {
    match r {
        Ok(_) => panic!("{what}: succeeded, but should have failed"),
        Err(e) => e.kind(),
    }
}

/// The OS error behind `e`: its own, or that of the first `io::Error` in its source chain
/// (setup and path errors carry context around the kernel's error).
fn os_error(e: &io::Error) -> Option<i32> {
    if let Some(n) = e.raw_os_error() {
        return Some(n);
    }
    let mut next: Option<&(dyn Error + 'static)> = e.get_ref().map(|s| s as _);
    while let Some(s) = next {
        if let Some(n) = s
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error)
        {
            return Some(n);
        }
        next = s.source();
    }
    None
}

/// A TCP socket bound to a port of 127.0.0.1 and not listening, with that port: a connect
/// to it is refused, and while the socket lives no other socket of a concurrent test can
/// bind the port (a port bound and let go could be, and then be connected to).
fn closed_port() -> (socket2::Socket, u16) {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = socket.local_addr().unwrap().as_socket().unwrap().port();
    (socket, port)
}

/// Held while a test of this binary spawns a process (the children of the fd-limit test)
/// and while the closed-pipe scenario runs: a process forked meanwhile holds a copy of every
/// fd until it execs, the read end of the closed-pipe scenario's pipe included, and a write
/// to that pipe would then succeed.
static SPAWN: Mutex<()> = Mutex::new(());

fn spawn_lock() -> MutexGuard<'static, ()> {
    SPAWN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connected pair on loopback: (client, server).
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, server)
}

// 1. Connection refused.

async fn refused_connect(port: u16) -> ErrorKind {
    kind_of(
        TcpStream::connect(("127.0.0.1", port)).await,
        "connect to a closed port",
    )
}

#[test]
fn connect_to_a_closed_port_is_refused() {
    let (_bound, port) = closed_port();
    let kind = on_each_backend("refused", || refused_connect(port)).same();
    assert_eq!(kind, ErrorKind::ConnectionRefused);
}

// 2. Connection reset by the peer.

/// How the client reads after the reset.
#[derive(Clone, Copy, Debug)]
enum ReadVia {
    /// `read_owned`: a receive into the caller's buffer.
    Owned,
    /// `read_chunk`: the buffered path (a provided-buffer receive on io_uring).
    Chunk,
}

/// The kinds the client saw after the peer reset the connection.
#[derive(Debug, PartialEq)]
struct ResetKinds {
    read: ErrorKind,
    write: ErrorKind,
}

/// The client writes, the peer reads that and closes with `SO_LINGER` 0 (an RST); then the
/// client reads, then writes.
async fn reset(via: ReadVia) -> ResetKinds {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(LIMIT)).unwrap();
        let mut got = [0u8; 5];
        s.read_exact(&mut got).unwrap();
        socket2::SockRef::from(&s)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        // Dropped: closing with a zero linger sends an RST.
    });
    let mut client = TcpStream::connect(addr).await.unwrap();
    client.write_all_from(b"hello").await.unwrap();
    let read = match via {
        ReadVia::Owned => kind_of(client.read_owned(vec![0u8; 64]).await.0, "read"),
        ReadVia::Chunk => kind_of(client.read_chunk().await, "read_chunk"),
    };
    let write = kind_of(
        client.write_all_from(b"more").await,
        "write after the reset",
    );
    peer.join().unwrap();
    ResetKinds { read, write }
}

fn check_reset(name: &'static str, via: ReadVia) {
    let runs = on_each_backend(name, || reset(via));
    assert_eq!(runs.map(|r| r.read).same(), ErrorKind::ConnectionReset);
    for (backend, r) in runs.each() {
        assert!(
            matches!(r.write, ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "{name} on {backend}: a write after the reset gave {:?}",
            r.write
        );
    }
}

#[test]
fn peer_reset_read_owned() {
    check_reset("reset (read_owned)", ReadVia::Owned);
}

#[test]
fn peer_reset_read_chunk() {
    check_reset("reset (read_chunk)", ReadVia::Chunk);
}

// 3. Out of fds (EMFILE), in child processes.

/// Set to `io_uring` or `epoll` in a child that runs the fd-limit scenario on that backend.
const CHILD_ENV: &str = "BACKEND_ERRORS_CHILD";
/// The child's report line: this, then the outcome of each step.
const RESULT: &str = "BACKEND_ERRORS_RESULT";
/// The child's line where io_uring is refused: this, then why.
const REFUSED: &str = "BACKEND_ERRORS_REFUSED";
/// What each step must give, in the order the child runs them.
const EMFILE_EXPECTED: &str =
    "accept=EMFILE connect=EMFILE incoming=EMFILE accept_after=ok incoming_after=ok";

/// One step's outcome, as the child reports it: `ok`, `EMFILE` (with a non-empty message),
/// or what else it was.
fn outcome<T>(r: io::Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => {
            let msg = e.to_string();
            match os_error(&e) {
                Some(libc::EMFILE) if !msg.is_empty() => "EMFILE".to_string(),
                Some(libc::EMFILE) => "EMFILE(empty-message)".to_string(),
                Some(n) => format!("errno-{n}({:?})", e.kind()),
                None => format!("no-errno({:?})", e.kind()),
            }
        }
    }
}

/// The child's part: with the fd table full, an accept, a connect and a multishot accept
/// fail with `EMFILE`; once fds are free again, the connections that waited in the
/// backlog are accepted (`TcpListener::accept` and `incoming` promise both). Direct
/// descriptors are off, so that io_uring's accepts make regular fds as epoll's do: with
/// them on (the default where the kernel has `FIXED_FD_INSTALL`), io_uring accepts into
/// the ring's fixed-file table, which holds no fd of the process, so those accepts succeed
/// at the fd limit where epoll's fail with `EMFILE`, as the net crate documents.
fn emfile_child(which: &str) {
    let backend: Backend = which.parse().expect("a backend name");
    let rt = match Builder::new()
        .backend(backend)
        .direct_descriptors(false)
        .build()
    {
        Ok(rt) => rt,
        Err(e) if refused(backend, &e) => {
            println!("{REFUSED} {e}");
            return;
        }
        Err(e) => panic!("building a runtime on {backend}: {e}"),
    };
    assert_eq!(rt.features().backend, backend);
    let steps = rt.block_on(timeout(LIMIT, async {
        let (one, many) = (
            TcpListener::bind("127.0.0.1:0").unwrap(),
            TcpListener::bind("127.0.0.1:0").unwrap(),
        );
        let addr = one.local_addr().unwrap();
        // One connection waiting in each backlog (connected: the kernel answered the
        // handshake).
        let _c1 = std::net::TcpStream::connect(addr).unwrap();
        let _c2 = std::net::TcpStream::connect(many.local_addr().unwrap()).unwrap();
        tests::set_nofile_soft(tests::fd_count() as u64 + 8).unwrap();
        let mut fill = Vec::new();
        let full = loop {
            match std::fs::File::open("/dev/null") {
                Ok(f) => fill.push(f),
                Err(e) => break e,
            }
            assert!(fill.len() < 1000, "the fd limit does not hold");
        };
        assert_eq!(full.raw_os_error(), Some(libc::EMFILE), "{full}");
        let accept = outcome(one.accept().await);
        let connect = outcome(TcpStream::connect(addr).await);
        let mut incoming = many.incoming();
        let first = incoming.next().await.expect("incoming never ends");
        let incoming_err = outcome(first);
        fill.truncate(fill.len().saturating_sub(4));
        let accept_after = outcome(one.accept().await);
        let next = incoming.next().await.expect("incoming never ends");
        let incoming_after = outcome(next);
        format!(
            "accept={accept} connect={connect} incoming={incoming_err} \
             accept_after={accept_after} incoming_after={incoming_after}"
        )
    }));
    let steps = steps.unwrap_or_else(|_| format!("no result in {LIMIT:?}"));
    println!("{RESULT} {steps}");
}

/// Runs this binary's [`fd_limit_emfile`] as a child on `backend`: its report, or `None`
/// (after a note) where io_uring is refused.
fn emfile_in_child(backend: Backend) -> Option<String> {
    let exe = std::env::current_exe().unwrap();
    let spawning = spawn_lock();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "fd_limit_emfile",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, backend.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(spawning);
    // Read on threads of their own, so that a child that writes much is never blocked.
    let read_all = |pipe: Option<Box<dyn Read + Send>>| {
        let mut pipe = pipe.unwrap();
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).map(|_| text)
        })
    };
    let out = read_all(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read_all(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + LIMIT * 3;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("emfile on {backend}: the child did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out.join().unwrap().unwrap();
    let err = err.join().unwrap().unwrap();
    let tail = |s: &str| {
        let from = (s.len().saturating_sub(2000)..s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        s[from..].to_string()
    };
    assert!(
        status.success(),
        "emfile on {backend}: the child failed ({status}):\n{}\n{}",
        tail(&out),
        tail(&err)
    );
    // The harness prints the test's name on the same line, before the report.
    let line = |tag: &str| {
        out.lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest.trim().to_string()))
    };
    if let Some(why) = line(REFUSED) {
        // Checking epoll only (a failure under CORERING_REQUIRE_FEATURES=1).
        runtime::ext::testing::require(&format!("io_uring (emfile: {why})"), false);
        return None;
    }
    let report = line(RESULT);
    Some(report.unwrap_or_else(|| panic!("emfile on {backend}: no report:\n{}", tail(&out))))
}

#[test]
fn fd_limit_emfile() {
    if let Ok(which) = std::env::var(CHILD_ENV) {
        emfile_child(&which);
        return;
    }
    let runs = Runs {
        name: "emfile",
        io_uring: emfile_in_child(Backend::IoUring),
        epoll: emfile_in_child(Backend::Epoll).expect("epoll always builds"),
    };
    assert_eq!(runs.same(), EMFILE_EXPECTED);
}

// 4. Missing and existing paths.

/// The kinds of the path operations that must fail.
#[derive(Debug, PartialEq)]
struct PathKinds {
    open_missing: ErrorKind,
    create_in_missing_dir: ErrorKind,
    metadata_missing: ErrorKind,
    remove_missing: ErrorKind,
    create_dir_existing: ErrorKind,
}

/// A new empty directory of this process's own.
fn scratch_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("backend_errors-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    dir
}

async fn paths() -> PathKinds {
    let dir = scratch_dir();
    let missing = dir.join("missing");
    let kinds = PathKinds {
        open_missing: kind_of(corering_fs::File::open(&missing).await, "open"),
        create_in_missing_dir: kind_of(
            corering_fs::File::create(missing.join("file")).await,
            "create in a missing directory",
        ),
        metadata_missing: kind_of(corering_fs::metadata(&missing).await, "metadata"),
        remove_missing: kind_of(corering_fs::remove_file(&missing).await, "remove_file"),
        create_dir_existing: kind_of(corering_fs::create_dir(&dir).await, "create_dir"),
    };
    std::fs::remove_dir(&dir).unwrap();
    kinds
}

#[test]
fn missing_and_existing_paths() {
    let kinds = on_each_backend("paths", paths).same();
    assert_eq!(
        kinds,
        PathKinds {
            open_missing: ErrorKind::NotFound,
            create_in_missing_dir: ErrorKind::NotFound,
            metadata_missing: ErrorKind::NotFound,
            remove_missing: ErrorKind::NotFound,
            create_dir_existing: ErrorKind::AlreadyExists,
        }
    );
}

// 5. A child's pipes after it exited.

/// A write to the stdin of a child that exited, and a read of its stdout.
#[derive(Debug, PartialEq)]
struct PipeOutcome {
    write: ErrorKind,
    read: Result<usize, ErrorKind>,
}

async fn exited_child_pipes() -> PipeOutcome {
    let mut child = Command::new("true")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Taken first: `wait` closes a stdin still in the child.
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    assert!(child.wait().await.unwrap().success());
    let write = kind_of(stdin.write_all_from(b"x").await, "write to a closed pipe");
    let mut buf = [0u8; 16];
    let read = stdout.read(&mut buf).await.map_err(|e| e.kind());
    PipeOutcome { write, read }
}

#[test]
fn exited_child_pipes_are_closed() {
    let outcome = {
        let _spawning = spawn_lock();
        on_each_backend("closed pipe", exited_child_pipes).same()
    };
    assert_eq!(
        outcome,
        PipeOutcome {
            write: ErrorKind::BrokenPipe,
            read: Ok(0),
        }
    );
}

// 6. A write after shutting down the write direction.

async fn write_after_shutdown() -> ErrorKind {
    let (client, _server) = pair().await;
    client.shutdown_socket(Shutdown::Write).await.unwrap();
    kind_of(client.write_all_from(b"x").await, "write after shutdown")
}

#[test]
fn write_after_shutdown_is_broken_pipe() {
    let kind = on_each_backend("write after shutdown", write_after_shutdown).same();
    assert_eq!(kind, ErrorKind::BrokenPipe);
}
