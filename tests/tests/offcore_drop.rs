//! Values that leave their core: streams, halves, listeners, UDP and Unix sockets, files and
//! pipes dropped where no core is entered (after `block_on` returns, after the runtime is
//! dropped, on a std thread that ran its own runtime, while a panic unwinds out of
//! `block_on`) release everything they hold: fds and fixed-table slots go back to their
//! baseline, hundreds at a time, with and without direct descriptors, on whichever backend
//! the run selects (CI runs this file on io_uring and again with `RUNTIME_BACKEND=epoll`).
//!
//! fd counts are process-wide, so the cases run one at a time (`SERIAL`).

use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::Duration;

use corering_fs::File;
use corering_net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixStream};
use futures::StreamExt;
use runtime::ext::testing::{open_fds, table_slots_in_use as table_slots};
use runtime::{Builder, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static SERIAL: Mutex<()> = Mutex::new(());

/// Pairs per case: hundreds of values, well under the fd limit.
const PAIRS: usize = 200;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What each open fd is, for a failing assertion's message.
fn fd_list() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            let link = std::fs::read_link(e.path()).unwrap_or_default();
            format!("{}: {}", e.file_name().to_string_lossy(), link.display())
        })
        .collect()
}

/// What the process holds: open fds and fixed-table slots.
fn held() -> (usize, usize) {
    (open_fds(), table_slots())
}

/// What the process holds once `want` is reached or 5 s have passed: a child's pidfd is
/// held by the thread that reaps it until the child (which sees its stdin close at the same
/// drop) has exited.
fn held_once_reaped(want: (usize, usize)) -> (usize, usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while held() != want && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    held()
}

fn rt(direct: bool) -> Runtime {
    Builder::new().direct_descriptors(direct).build().unwrap()
}

/// One turn of the core (a timer and a nop): what a dropped value handed back is released.
async fn turn() {
    for _ in 0..3 {
        runtime::time::sleep(Duration::from_millis(2)).await;
        runtime::ext::raw::nop().await.unwrap();
    }
}

/// The runtime's own fds and slots once it has served one connection (its receive ring, a
/// blocking thread or two): the baseline its values must come back to.
fn warm(rt: &Runtime) -> (usize, usize) {
    let pairs = rt.block_on(tcp_pairs(1));
    drop(pairs);
    rt.block_on(turn());
    held()
}

/// `n` connected TCP pairs that moved bytes both ways (each side's ring read armed, a write
/// behind done), accepted through `incoming()` as servers are.
async fn tcp_pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut incoming = listener.incoming();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut client = TcpStream::connect(addr).await.unwrap();
        let mut server = incoming.next().await.unwrap().unwrap();
        let msg = format!("hello {i}");
        client.write_all(msg.as_bytes()).await.unwrap();
        let mut buf = vec![0; msg.len()];
        server.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, msg.as_bytes());
        server.write_all(&buf).await.unwrap();
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, msg.as_bytes());
        // Leave a read armed on both sides, as a connection between requests has.
        let mut one = [0u8; 1];
        assert!(futures::poll!(std::pin::pin!(server.read(&mut one))).is_pending());
        assert!(futures::poll!(std::pin::pin!(client.read(&mut one))).is_pending());
        out.push((client, server));
    }
    out
}

/// `n` Unix stream pairs that moved bytes both ways.
async fn unix_pairs(n: usize) -> Vec<(UnixStream, UnixStream)> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let msg = format!("unix {i}");
        a.write_all(msg.as_bytes()).await.unwrap();
        let mut buf = vec![0; msg.len()];
        b.read_exact(&mut buf).await.unwrap();
        b.write_all(&buf).await.unwrap();
        a.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, msg.as_bytes());
        out.push((a, b));
    }
    out
}

#[test]
fn tcp_streams_dropped_after_block_on_release_their_fds_and_slots() {
    let _s = serial();
    for direct in [true, false] {
        let before = held();
        let rt = rt(direct);
        let base = warm(&rt);
        let pairs = rt.block_on(tcp_pairs(PAIRS));
        assert!(held() != base, "the pairs hold something");
        drop(pairs);
        rt.block_on(turn());
        assert_eq!(held(), base, "direct {direct}: after the core's next turn");
        drop(rt);
        assert_eq!(
            held(),
            before,
            "direct {direct}: after the runtime is dropped"
        );
    }
}

#[test]
fn tcp_streams_dropped_after_the_runtime_release_their_fds() {
    let _s = serial();
    for direct in [true, false] {
        let before = held();
        let rt = rt(direct);
        let pairs = rt.block_on(tcp_pairs(PAIRS));
        drop(rt);
        drop(pairs);
        assert_eq!(held(), before, "direct {direct}");
    }
}

#[test]
fn halves_dropped_off_the_core_release_their_fds() {
    let _s = serial();
    for direct in [true, false] {
        let before = held();
        let rt = rt(direct);
        let base = warm(&rt);
        let halves: Vec<_> = rt
            .block_on(tcp_pairs(PAIRS / 2))
            .into_iter()
            .map(|(c, s)| (c.into_split(), s.into_split()))
            .collect();
        let (kept, dropped): (Vec<_>, Vec<_>) = halves
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 0);
        drop(dropped);
        rt.block_on(turn());
        drop(kept);
        rt.block_on(turn());
        assert_eq!(held(), base, "direct {direct}");
        drop(rt);
        assert_eq!(held(), before, "direct {direct}");
    }
}

#[test]
fn unix_pairs_dropped_after_block_on_and_after_the_runtime_release_their_fds() {
    let _s = serial();
    let before = held();
    let rt = Runtime::new().unwrap();
    let base = warm(&rt);
    let pairs = rt.block_on(unix_pairs(50));
    drop(pairs);
    rt.block_on(turn());
    assert_eq!(held(), base, "dropped after block_on");
    let pairs = rt.block_on(unix_pairs(50));
    drop(rt);
    drop(pairs);
    assert_eq!(held(), before, "dropped after the runtime");
}

#[test]
fn listeners_udp_files_and_pipes_dropped_off_the_core_release_their_fds() {
    let _s = serial();
    let dir = std::env::temp_dir().join(format!("corering-offcore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("data"), vec![7u8; 64 * 1024]).unwrap();
    for after_runtime in [false, true] {
        let before = held();
        let rt = Runtime::new().unwrap();
        let base = warm(&rt);
        let values = rt.block_on(async {
            let mut listeners = Vec::new();
            let mut streams = Vec::new();
            let mut std_clients = Vec::new();
            for _ in 0..20 {
                // A listener whose multishot accept took a connection nobody collected.
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = l.local_addr().unwrap();
                let mut incoming = l.incoming();
                let c = TcpStream::connect(addr).await.unwrap();
                let s = incoming.next().await.unwrap().unwrap();
                streams.push((c, s));
                std_clients.push(std::net::TcpStream::connect(addr).unwrap());
                turn().await;
                listeners.push(incoming);
            }
            let mut udp = Vec::new();
            for _ in 0..50 {
                let a = UdpSocket::bind("127.0.0.1:0").unwrap();
                let b = UdpSocket::bind("127.0.0.1:0").unwrap();
                let (r, _) = a.send_to(&b"ping"[..], b.local_addr().unwrap()).await;
                r.unwrap();
                let (r, buf) = b.recv_from(vec![0u8; 16]).await;
                assert_eq!(&buf[..r.unwrap().0], b"ping");
                udp.push((a, b));
            }
            let mut dgrams = Vec::new();
            for _ in 0..20 {
                let (a, b) = UnixDatagram::pair().unwrap();
                a.send(&b"x"[..]).await.0.unwrap();
                assert_eq!(b.recv(vec![0u8; 4]).await.0.unwrap(), 1);
                dgrams.push((a, b));
            }
            let mut files = Vec::new();
            for _ in 0..20 {
                let f = File::open(dir.join("data")).await.unwrap();
                let (n, _) = f.read_at(vec![0u8; 4096], 0).await;
                assert_eq!(n.unwrap(), 4096);
                files.push(f);
            }
            let mut children = Vec::new();
            for _ in 0..5 {
                let mut child = runtime::process::Command::new("cat")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let mut stdin = child.stdin.take().unwrap();
                let mut stdout = child.stdout.take().unwrap();
                stdin.write_all(b"pipe").await.unwrap();
                let mut buf = [0u8; 4];
                stdout.read_exact(&mut buf).await.unwrap();
                assert_eq!(&buf, b"pipe");
                children.push((child, stdin, stdout));
            }
            (
                listeners,
                streams,
                std_clients,
                udp,
                dgrams,
                files,
                children,
            )
        });
        if after_runtime {
            drop(rt);
            drop(values);
            assert_eq!(
                held_once_reaped(before),
                before,
                "dropped after the runtime: {:?}",
                fd_list()
            );
        } else {
            drop(values);
            rt.block_on(turn());
            assert_eq!(held_once_reaped(base), base, "dropped after block_on");
            drop(rt);
            assert_eq!(held(), before, "and the runtime after them");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn values_of_a_runtime_on_a_std_thread_are_released_there() {
    let _s = serial();
    let before = held();
    let after = std::thread::spawn(|| {
        let rt = Runtime::new().unwrap();
        let base = warm(&rt);
        let pairs = rt.block_on(tcp_pairs(PAIRS));
        drop(pairs);
        rt.block_on(turn());
        let on_thread = held();
        let pairs = rt.block_on(tcp_pairs(PAIRS));
        drop(rt);
        drop(pairs);
        (base, on_thread)
    })
    .join()
    .unwrap();
    assert_eq!(
        after.1, after.0,
        "dropped after block_on, on the runtime's thread"
    );
    assert_eq!(held(), before, "dropped after that thread's runtime");
}

#[test]
fn values_dropped_while_a_panic_unwinds_out_of_block_on_are_released() {
    let _s = serial();
    let before = held();
    let rt = Runtime::new().unwrap();
    let base = warm(&rt);
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(async {
            let pairs = tcp_pairs(PAIRS).await;
            let _keep = &pairs;
            panic!("a handler panics holding {} connections", pairs.len());
        })
    }));
    assert!(r.is_err());
    rt.block_on(turn());
    assert_eq!(held(), base);
    // A panic after `block_on` returned them: they drop as it unwinds, off the core.
    let r = catch_unwind(AssertUnwindSafe(|| {
        let pairs = rt.block_on(tcp_pairs(PAIRS));
        let _keep = pairs;
        panic!("the caller panics holding them");
    }));
    assert!(r.is_err());
    rt.block_on(turn());
    assert_eq!(held(), base, "dropped while unwinding outside block_on");
    drop(rt);
    assert_eq!(held(), before);
}

#[test]
fn into_std_off_the_core_keeps_one_fd_and_gives_a_blocking_socket() {
    let _s = serial();
    for direct in [true, false] {
        let before = held();
        let rt = rt(direct);
        let base = warm(&rt);
        let pairs = rt.block_on(tcp_pairs(PAIRS / 4));
        let mut std_pairs = Vec::new();
        for (c, s) in pairs {
            std_pairs.push((c.into_std().unwrap(), s.into_std().unwrap()));
        }
        rt.block_on(turn());
        assert_eq!(
            held().0,
            base.0 + 2 * std_pairs.len(),
            "direct {direct}: one fd per std socket, nothing else"
        );
        // Blocking: a read waits for the peer's write.
        let (mut a, mut b) = std_pairs.pop().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            a.write_all(b"late").unwrap();
            a
        });
        let mut buf = [0u8; 4];
        b.read_exact(&mut buf)
            .expect("a blocking read waits for the bytes");
        assert_eq!(&buf, b"late");
        drop(writer.join().unwrap());
        drop(b);
        drop(std_pairs);
        assert_eq!(held(), base, "direct {direct}");
        drop(rt);
        assert_eq!(held(), before, "direct {direct}");
    }
}
