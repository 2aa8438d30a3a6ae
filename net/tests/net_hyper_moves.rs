//! `corering_net::hyper::serve` moving idle HTTP/1.1 connections between cores
//! (`Rebalance`): with `Rebalance::Always` every request of a connection is served on
//! another core than the one before, through GETs with bodies up to a megabyte, echoed
//! uploads, pipelined requests, a request's head cut after the one before it, and requests
//! written in pieces (a head that arrives while its connection moves), on both backends;
//! every byte is checked, every connection's cores alternate, and the fds of moved sockets
//! are all closed once the clients are gone, after peers reset mid-move, and after a
//! shutdown with connections still open, and after a runtime dropped with sockets waiting
//! in a core's mailbox. `Rebalance::Off` moves nothing.

mod common;

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use corering_net::hyper::{from_hyper, Builder, Rebalance};
use http_body_util::{BodyExt, Full};
use hyper::{service::service_fn, Request, Response};

use common::fds::open_fds;
use common::pattern;

/// The tests count this process's fds: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Connections at once, and requests on each.
const CONNS: usize = 96;
const REQUESTS: usize = 24;

/// A small deterministic generator for the clients' choices.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `GET /get/LEN/TAG` answers `pattern(TAG, LEN)`, `POST /echo` its body; each says which
/// core served it (`x-core`).
fn app() -> impl tower_service::Service<
    Request<hyper::body::Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future: 'static,
> + Clone
       + Send
       + 'static {
    from_hyper(service_fn(
        |req: Request<hyper::body::Incoming>| async move {
            let core = runtime::current_core().unwrap_or(usize::MAX);
            let path = req.uri().path().to_string();
            let body = if let Some(rest) = path.strip_prefix("/get/") {
                let mut parts = rest.split('/');
                let len: usize = parts.next().unwrap().parse().unwrap();
                let tag: u64 = parts.next().unwrap().parse().unwrap();
                pattern(tag, len)
            } else {
                req.into_body().collect().await.unwrap().to_bytes().to_vec()
            };
            let mut res = Response::new(Full::new(Bytes::from(body)));
            res.headers_mut().insert("x-core", core.into());
            Ok::<_, Infallible>(res)
        },
    ))
}

/// Reads one response: its `x-core` and body.
fn read_response(r: &mut BufReader<TcpStream>) -> io::Result<(usize, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    assert!(line.starts_with("HTTP/1.1 200"), "status line {line:?}");
    let (mut len, mut core) = (None, None);
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => len = Some(value.trim().parse::<usize>().unwrap()),
            "x-core" => core = Some(value.trim().parse::<usize>().unwrap()),
            _ => {}
        }
    }
    let mut body = vec![0; len.expect("content-length")];
    r.read_exact(&mut body)?;
    Ok((core.expect("x-core"), body))
}

fn get(len: usize, tag: u64) -> Vec<u8> {
    format!("GET /get/{len}/{tag} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}

/// One client connection: `REQUESTS` requests of every kind, each answer checked; returns
/// the cores that served its GETs, in order.
fn client(addr: SocketAddr, conn: u64) -> Vec<usize> {
    let mut rng = Rng(conn.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    // A lost request or response fails the test instead of hanging it.
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    let mut cores = Vec::new();
    for seq in 0..REQUESTS as u64 {
        let tag = conn << 16 | seq;
        let big = rng.below(8) == 0;
        let len = rng.below(if big { 1 << 20 } else { 4096 }) as usize;
        match rng.below(5) {
            // A plain GET, the kind after which a connection moves.
            0 => {
                w.write_all(&get(len, tag)).unwrap();
                let (core, body) = read_response(&mut r).unwrap();
                assert!(
                    body == pattern(tag, len),
                    "conn {conn} req {seq}: body differs"
                );
                cores.push(core);
            }
            // An upload, echoed.
            1 => {
                let up = pattern(!tag, len);
                let head = format!(
                    "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                    up.len()
                );
                w.write_all(head.as_bytes()).unwrap();
                w.write_all(&up).unwrap();
                let (_, body) = read_response(&mut r).unwrap();
                assert!(body == up, "conn {conn} req {seq}: echo differs");
            }
            // Two GETs in one write (pipelined).
            2 => {
                let mut both = get(len, tag);
                both.extend_from_slice(&get(len / 2, tag ^ 1));
                w.write_all(&both).unwrap();
                let (c1, b1) = read_response(&mut r).unwrap();
                let (c2, b2) = read_response(&mut r).unwrap();
                assert!(
                    b1 == pattern(tag, len),
                    "conn {conn} req {seq}: first differs"
                );
                assert!(
                    b2 == pattern(tag ^ 1, len / 2),
                    "conn {conn} req {seq}: second differs"
                );
                cores.extend([c1, c2]);
            }
            // A GET and the first part of the next in one write, the rest after the first
            // answer: when the first is answered, hyper holds part of a head (the
            // connection must not move then, or that part is lost).
            3 => {
                let next = get(len / 3, tag ^ 2);
                let cut = 1 + rng.below(next.len() as u64 - 1) as usize;
                let mut first = get(len, tag);
                first.extend_from_slice(&next[..cut]);
                w.write_all(&first).unwrap();
                let (c1, b1) = read_response(&mut r).unwrap();
                assert!(
                    b1 == pattern(tag, len),
                    "conn {conn} req {seq}: first differs"
                );
                std::thread::sleep(Duration::from_micros(rng.below(2000)));
                w.write_all(&next[cut..]).unwrap();
                let (c2, b2) = read_response(&mut r).unwrap();
                assert!(
                    b2 == pattern(tag ^ 2, len / 3),
                    "conn {conn} req {seq}: rest differs"
                );
                cores.extend([c1, c2]);
            }
            // A GET in pieces, a pause between them: its head arrives while the connection
            // may be moving.
            _ => {
                let req = get(len, tag);
                let cut = 1 + rng.below(req.len() as u64 - 1) as usize;
                w.write_all(&req[..cut]).unwrap();
                std::thread::sleep(Duration::from_micros(rng.below(2000)));
                w.write_all(&req[cut..]).unwrap();
                let (core, body) = read_response(&mut r).unwrap();
                assert!(
                    body == pattern(tag, len),
                    "conn {conn} req {seq}: split body differs"
                );
                cores.push(core);
            }
        }
        if rng.below(4) == 0 {
            std::thread::sleep(Duration::from_micros(rng.below(3000)));
        }
    }
    cores
}

/// Runs `CONNS` clients on std threads against `addr`; the cores each one's GETs met.
async fn clients(addr: SocketAddr) -> Vec<Vec<usize>> {
    let (tx, rx) = futures::channel::oneshot::channel();
    std::thread::spawn(move || {
        let threads: Vec<_> = (0..CONNS as u64)
            .map(|c| std::thread::spawn(move || client(addr, c + 1)))
            .collect();
        let seen: Vec<_> = threads.into_iter().map(|t| t.join()).collect();
        let _ = tx.send(seen);
    });
    rx.await
        .unwrap()
        .into_iter()
        .map(|r| r.expect("a client failed"))
        .collect()
}

/// Waits up to 5 s for this process's open fds to come back to `baseline`.
async fn fds_back_to(baseline: usize) -> usize {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let now = open_fds();
        if now <= baseline || Instant::now() > until {
            return now;
        }
        runtime::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `f` on a 2-core runtime of the default backend, then on one of the epoll backend
/// where it can be built; one at a time (a thread runs one runtime).
fn on_each_backend(mut f: impl FnMut(&'static str, &runtime::Runtime)) {
    f(
        "default",
        &runtime::Builder::new().cores(2).build().unwrap(),
    );
    let epoll = runtime::Builder::new()
        .cores(2)
        .backend(runtime::Backend::Epoll)
        .build();
    if runtime::ext::testing::require("the epoll backend", epoll.is_ok()) {
        f("epoll", &epoll.unwrap());
    }
}

/// What this process's fds are, for a failure's message.
fn fd_list() -> String {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The app served with every idle connection moving to the other core.
fn moving_server() -> corering_net::hyper::Server {
    Builder::new()
        .rebalance(Rebalance::Always)
        .serve("127.0.0.1:0", app())
        .unwrap()
}

#[test]
fn every_request_on_the_other_core_and_every_byte_right() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    on_each_backend(|backend, rt| {
        rt.block_on(async {
            let baseline = open_fds();
            let server = moving_server();
            let seen = clients(server.local_addr()).await;
            let moved = server.connections_moved();
            if runtime::buf::core_ring().is_none() {
                // Without a receive ring (kernels before 5.19's buffer rings) a read in
                // flight cannot be stopped, so nothing moves; the answers were checked.
                assert_eq!(moved, 0, "{backend}: moves without a receive ring");
                server.shutdown(Duration::from_secs(1)).await.unwrap();
                return;
            }
            // Every GET answered right (checked by the clients); the connections moved
            // after their requests without a body, so the cores their GETs met changed.
            let changed = seen
                .iter()
                .filter(|c| c.windows(2).any(|w| w[0] != w[1]))
                .count();
            assert!(
                changed >= CONNS * 3 / 4,
                "{backend}: only {changed} of {CONNS} connections were served on both cores \
                 ({moved} moves)"
            );
            assert!(moved >= CONNS as u64 * 4, "{backend}: {moved} moves");
            let left = fds_back_to(baseline + 4).await;
            assert!(
                left <= baseline + 4,
                "{backend}: {left} fds open after the clients left, {baseline} before"
            );
            server.shutdown(Duration::from_secs(1)).await.unwrap();
        });
    });
}

#[test]
fn a_shutdown_with_idle_connections_moving_closes_every_socket() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    on_each_backend(|backend, rt| {
        rt.block_on(async {
            let baseline = open_fds();
            let server = moving_server();
            let addr = server.local_addr();
            // 64 connections, each one request answered, then left open: each moves.
            let (tx, rx) = mpsc::channel();
            let (done_tx, done) = futures::channel::oneshot::channel::<()>();
            std::thread::spawn(move || {
                let mut open = Vec::new();
                for c in 0..64u64 {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.write_all(&get(100, c)).unwrap();
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let (_, body) = read_response(&mut r).unwrap();
                    assert_eq!(body, pattern(c, 100));
                    open.push(s);
                }
                let _ = done_tx.send(());
                // Held until the test says the server is down.
                let _: () = rx.recv().unwrap_or(());
                drop(open);
            });
            done.await.unwrap();
            server.shutdown(Duration::from_millis(500)).await.unwrap();
            // The server side of every connection is closed: moved, moving or not.
            let left = fds_back_to(baseline + 64 + 4).await;
            tx.send(()).unwrap();
            assert!(
                left <= baseline + 64 + 4,
                "{backend}: {left} fds open with the 64 client sockets, {baseline} before: {}",
                fd_list()
            );
        });
    });
}

#[test]
fn a_connection_accepted_on_a_core_it_should_leave_goes_before_its_first_read() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    on_each_backend(|backend, rt| {
        rt.block_on(async {
            if runtime::buf::core_ring().is_none() {
                return;
            }
            let server = moving_server();
            let addr = server.local_addr();
            let (connected_tx, connected) = futures::channel::oneshot::channel::<()>();
            let (go_tx, go) = mpsc::channel::<()>();
            let (tx, answered) = futures::channel::oneshot::channel();
            std::thread::spawn(move || {
                let s = TcpStream::connect(addr).unwrap();
                let _ = connected_tx.send(());
                go.recv().unwrap();
                let mut w = s.try_clone().unwrap();
                w.write_all(&get(300, 5)).unwrap();
                let _ = tx.send(read_response(&mut BufReader::new(s)).unwrap().1);
            });
            connected.await.unwrap();
            // Accepted, not read: it moved once, and stays on its new core until it has
            // served a request there.
            let until = Instant::now() + Duration::from_secs(5);
            while server.connections_moved() == 0 && Instant::now() < until {
                runtime::time::sleep(Duration::from_millis(5)).await;
            }
            runtime::time::sleep(Duration::from_millis(50)).await;
            assert_eq!(server.connections_moved(), 1, "{backend}");
            go_tx.send(()).unwrap();
            assert_eq!(answered.await.unwrap(), pattern(5, 300), "{backend}");
            server.shutdown(Duration::from_secs(1)).await.unwrap();
        });
    });
}

#[test]
fn peers_that_reset_while_their_connection_moves_leave_nothing_open() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    on_each_backend(|backend, rt| {
        rt.block_on(async {
            let baseline = open_fds();
            let server = moving_server();
            let addr = server.local_addr();
            // Each peer reads its answer and resets the connection at once (SO_LINGER 0),
            // while the server stops its receive, waits for its send and posts it; some
            // send the next request first, which the reset throws away.
            let (tx, done) = futures::channel::oneshot::channel::<()>();
            std::thread::spawn(move || {
                for c in 0..200u64 {
                    let s = TcpStream::connect(addr).unwrap();
                    let mut w = s.try_clone().unwrap();
                    w.write_all(&get(c as usize * 97 % 70_000, c)).unwrap();
                    let mut r = BufReader::new(s);
                    let (_, body) = read_response(&mut r).unwrap();
                    assert!(body == pattern(c, c as usize * 97 % 70_000));
                    if c % 2 == 0 {
                        w.write_all(&get(10, c)).unwrap();
                    }
                    socket2::SockRef::from(&w)
                        .set_linger(Some(Duration::ZERO))
                        .unwrap();
                }
                let _ = tx.send(());
            });
            done.await.unwrap();
            let left = fds_back_to(baseline + 4).await;
            assert!(
                left <= baseline + 4,
                "{backend}: {left} fds open after 200 resets, {baseline} before: {}",
                fd_list()
            );
            // The server goes on answering.
            let fresh = TcpStream::connect(addr).unwrap();
            let (tx, answered) = futures::channel::oneshot::channel();
            std::thread::spawn(move || {
                let mut w = fresh.try_clone().unwrap();
                w.write_all(&get(5, 9)).unwrap();
                let _ = tx.send(read_response(&mut BufReader::new(fresh)).unwrap().1);
            });
            assert_eq!(answered.await.unwrap(), pattern(9, 5));
            server.shutdown(Duration::from_secs(1)).await.unwrap();
        });
    });
}

#[test]
fn a_runtime_dropped_with_sockets_waiting_in_a_mailbox_closes_every_socket() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let baseline = open_fds();
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    let clients = rt.block_on(async {
        if runtime::buf::core_ring().is_none() {
            // Nothing moves without a receive ring (see the first test).
            return Vec::new();
        }
        let server = moving_server();
        let addr = server.local_addr();
        // Core 1 is held (a task blocking its thread), so the connections that core 0
        // answers and moves to it wait in its mailbox, unread, until the runtime is gone.
        drop(runtime::spawn_on(1, async {
            std::thread::sleep(Duration::from_millis(800));
        }));
        let clients: Vec<_> = (0..32u64)
            .map(|c| {
                std::thread::spawn(move || {
                    let s = TcpStream::connect(addr).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut w = s.try_clone().unwrap();
                    let mut r = BufReader::new(s);
                    let mut n = 0u64;
                    // Until the server side closes (its runtime dropped).
                    while w.write_all(&get(64, c << 20 | n)).is_ok() {
                        match read_response(&mut r) {
                            Ok((_, body)) => assert!(body == pattern(c << 20 | n, 64)),
                            Err(_) => break,
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        let until = Instant::now() + Duration::from_secs(5);
        while server.connections_moved() == 0 && Instant::now() < until {
            runtime::time::sleep(Duration::from_millis(5)).await;
        }
        runtime::time::sleep(Duration::from_millis(100)).await;
        assert!(server.connections_moved() > 0, "nothing moved");
        // Dropped without a shutdown: its connections go on until the runtime goes.
        drop(server);
        clients
    });
    drop(rt);
    for c in clients {
        c.join().unwrap();
    }
    let until = Instant::now() + Duration::from_secs(5);
    while open_fds() > baseline && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        open_fds() <= baseline,
        "{} fds open after the runtime, {baseline} before: {}",
        open_fds(),
        fd_list()
    );
}

#[test]
fn rebalance_off_keeps_each_connection_on_its_core() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime::Builder::new().cores(2).build().unwrap();
    rt.block_on(async {
        let server = Builder::new()
            .rebalance(Rebalance::Off)
            .serve("127.0.0.1:0", app())
            .unwrap();
        let seen = clients(server.local_addr()).await;
        let cores: BTreeSet<usize> = seen.iter().flatten().copied().collect();
        assert_eq!(server.connections_moved(), 0);
        for c in &seen {
            assert!(
                c.windows(2).all(|w| w[0] == w[1]),
                "a connection moved: {c:?}"
            );
        }
        assert!(!cores.is_empty());
        server.shutdown(Duration::from_secs(1)).await.unwrap();
    });
}
