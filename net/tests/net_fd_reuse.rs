//! fd numbers are reused the moment a file closes; what a core knew of the old file (the
//! readiness backend's registration with epoll, its non-blocking mode) must never pass to
//! the new one, whatever closed the old fd: a drop after `block_on` returned, `into_std`, a
//! raw `close` by the user, a `from_std` of the reused number. On the epoll backend a stale
//! entry once left a new listener blocking, and the core stuck in `accept4` for ever (a
//! `timeout` around it never fired). Each case ends with an accept that must complete under
//! a timeout, and a read that must not block the core. Runs on whichever backend the run
//! selects (CI: both).
//!
//! fd numbers are process-wide, so the cases run one at a time.

use std::os::fd::{AsRawFd, IntoRawFd};
use std::sync::Mutex;
use std::time::Duration;

use corering_net::{TcpListener, TcpStream, UdpSocket};
use futures::StreamExt;
use runtime::time::timeout;
use runtime::Runtime;

static SERIAL: Mutex<()> = Mutex::new(());

const LIMIT: Duration = Duration::from_secs(3);

/// Two UDP sockets that exchange a datagram on the core; their fd numbers.
async fn udp_exchange() -> (UdpSocket, UdpSocket, Vec<i32>) {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (r, _) = a.send_to(&b"ping"[..], b.local_addr().unwrap()).await;
    r.unwrap();
    let (r, buf) = b.recv_from(vec![0u8; 8]).await;
    assert_eq!(&buf[..r.unwrap().0], b"ping");
    let fds = vec![a.as_raw_fd(), b.as_raw_fd()];
    (a, b, fds)
}

/// A listener on a fresh socket (which takes the lowest free fd number: one of `reused`, when
/// given), a client connecting to it, and the accept, under a timeout; then a byte each way.
async fn accept_works(reused: Option<&[i32]>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    if let Some(reused) = reused {
        assert!(
            reused.contains(&listener.as_raw_fd()),
            "the listener ({}) reuses one of {reused:?}",
            listener.as_raw_fd()
        );
    }
    accept_on(listener).await;
}

async fn accept_on(listener: TcpListener) {
    let addr = listener.local_addr().unwrap();
    let client = runtime::spawn_local(async move { TcpStream::connect(addr).await.unwrap() });
    let mut incoming = listener.incoming();
    let server = timeout(LIMIT, incoming.next())
        .await
        .expect("the accept completes: the core is not stuck in a blocking accept4")
        .unwrap()
        .unwrap();
    let client = client.await.unwrap();
    let (r, _) = client.write_all_owned(b"x".to_vec()).await;
    r.unwrap();
    let (r, buf) = timeout(LIMIT, server.read_owned(vec![0u8; 1]))
        .await
        .expect("the read completes");
    assert_eq!(r.unwrap(), 1);
    assert_eq!(buf, b"x");
}

#[test]
fn a_listener_on_the_number_of_sockets_dropped_after_block_on_accepts() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::new().unwrap();
    let (a, b, fds) = rt.block_on(udp_exchange());
    drop((a, b));
    rt.block_on(accept_works(Some(&fds)));
}

#[test]
fn a_number_given_up_by_into_std_or_into_raw_fd_starts_afresh() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let (a, b, fds) = udp_exchange().await;
        drop(a.into_std().unwrap());
        // SAFETY: the fd is ours (into_raw_fd gave it up) and closed once.
        unsafe { libc::close(b.into_raw_fd()) };
        accept_works(Some(&fds)).await;
    });
}

#[test]
fn a_number_closed_behind_the_cores_back_starts_afresh_in_from_std() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let (a, b, fds) = udp_exchange().await;
        // The user closes the fds under the sockets and forgets them: the core is never
        // told (an I/O-safety violation, but the next file must not pay for it).
        for fd in &fds {
            // SAFETY: the sockets are forgotten below, so each fd is closed once.
            unsafe { libc::close(*fd) };
        }
        std::mem::forget((a, b));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(fds.contains(&std_listener.as_raw_fd()));
        accept_on(TcpListener::from_std(std_listener).unwrap()).await;
        accept_works(None).await;
    });
}

#[test]
fn into_std_gives_a_blocking_socket() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::new().unwrap();
    let (a, b) = rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = runtime::spawn_local(async move { TcpStream::connect(addr).await.unwrap() });
        let (server, _) = listener.accept().await.unwrap();
        let client = client.await.unwrap();
        // Both have done I/O on the core (registered, non-blocking on epoll).
        let (r, _) = client.write_all_owned(b"hi".to_vec()).await;
        r.unwrap();
        let (r, _) = server.read_exact_owned(vec![0u8; 2]).await;
        r.unwrap();
        (client.into_std().unwrap(), server.into_std().unwrap())
    });
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        std::io::Write::write_all(&mut &a, b"late").unwrap();
        a
    });
    let mut buf = [0u8; 4];
    std::io::Read::read_exact(&mut &b, &mut buf).expect("a blocking read waits for the bytes");
    assert_eq!(&buf, b"late");
    drop(writer.join().unwrap());
}
