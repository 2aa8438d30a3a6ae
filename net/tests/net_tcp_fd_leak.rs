//! Dropped accepts, reads and `incoming()` streams leak no fd (nor, with direct descriptors,
//! table slot); `incoming()` survives `EMFILE`.
//!
//! The fd count is process-wide, so this file holds one test that runs its cases in turn,
//! once with direct descriptors (accepted sockets hold no fd) and once without.

mod common;

use std::future::Future;
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::time::Duration;

use common::fds::{direct, open_fds, table_slots_in_use};
use corering_net::{TcpListener, TcpStream};
use futures::StreamExt;

/// The fds one accepted connection holds: none as a direct descriptor.
fn accepted_fds() -> usize {
    usize::from(!direct())
}

/// Lets the ring reap the CQEs of cancelled ops (the cancels and the ops' final CQEs).
async fn settle() {
    for _ in 0..5 {
        runtime::time::sleep(Duration::from_millis(5)).await;
        runtime::ext::raw::nop().await.unwrap();
    }
}

/// Polls `fut` once (which submits its op) and gives it back pinned, unfinished.
async fn poll_once<F: Future>(fut: &mut std::pin::Pin<&mut F>) {
    assert!(futures::poll!(fut.as_mut()).is_pending());
}

async fn dropped_pending_accept() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let before = open_fds();
    {
        let mut accept = pin!(listener.accept());
        poll_once(&mut accept).await;
    }
    settle().await;
    assert_eq!(open_fds(), before, "a cancelled accept");
}

async fn dropped_completed_accept() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let before = open_fds();
    let client;
    {
        let mut accept = pin!(listener.accept());
        poll_once(&mut accept).await;
        client = std::net::TcpStream::connect(addr).unwrap();
        // The accept completes in the kernel and its CQE is reaped, but nobody polls it.
        settle().await;
        assert_eq!(
            open_fds(),
            before + 1 + accepted_fds(),
            "the client and the accepted fd"
        );
        assert_eq!(table_slots_in_use(), usize::from(direct()));
    }
    drop(client);
    settle().await;
    assert_eq!(
        open_fds(),
        before,
        "an accept completed after its future was dropped"
    );
    assert_eq!(table_slots_in_use(), 0, "its direct descriptor closed");
}

async fn dropped_pending_read() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let before = open_fds();
    {
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut read = pin!(server.read_owned(vec![0u8; 64]));
        poll_once(&mut read).await;
        drop(client);
    }
    settle().await;
    assert_eq!(open_fds(), before, "a cancelled read");

    // A stream dropped with an AsyncRead op in flight inside it.
    {
        let client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut byte = [0u8; 1];
        let read = futures::io::AsyncReadExt::read(&mut server, &mut byte);
        assert!(runtime::time::timeout(Duration::from_millis(5), read)
            .await
            .is_err());
        drop(server);
        drop(client);
    }
    settle().await;
    assert_eq!(open_fds(), before, "a stream dropped mid-AsyncRead");
}

async fn dropped_incoming() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let before = open_fds();
    let mut clients = Vec::new();
    {
        let mut incoming = listener.incoming();
        for _ in 0..3 {
            clients.push(std::net::TcpStream::connect(addr).unwrap());
            let s = incoming.next().await.unwrap().unwrap();
            drop(s);
        }
        // Connections accepted by the armed SQE but never taken from the stream.
        for _ in 0..4 {
            clients.push(std::net::TcpStream::connect(addr).unwrap());
        }
        settle().await;
    }
    settle().await;
    assert_eq!(
        open_fds(),
        before + clients.len(),
        "only the clients are open"
    );
    assert_eq!(table_slots_in_use(), 0, "no direct descriptor left");
    drop(clients);
    assert_eq!(open_fds(), before, "a dropped incoming stream");
    drop(listener);
}

/// Restores `RLIMIT_NOFILE` when dropped.
struct NofileGuard(libc::rlimit);

impl NofileGuard {
    /// Lowers the soft limit to `soft`.
    fn lower(soft: u64) -> NofileGuard {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `old` is a valid rlimit to write to.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) }, 0);
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: old.rlim_max,
        };
        // SAFETY: `new` is a valid rlimit.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) }, 0);
        NofileGuard(old)
    }
}

impl Drop for NofileGuard {
    fn drop(&mut self) {
        // SAFETY: self.0 is the valid rlimit read before.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.0) };
    }
}

/// The lowest fd number not in use: with the limit there, no new fd can be made.
fn lowest_free_fd(open: &impl AsRawFd) -> u64 {
    // SAFETY: F_DUPFD on an open fd makes a new fd at the lowest free number, or fails.
    let fd = unsafe { libc::fcntl(open.as_raw_fd(), libc::F_DUPFD, 0) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: `fd` was just made here and nothing else owns it.
    unsafe { libc::close(fd) };
    fd as u64
}

async fn incoming_survives_emfile() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let before = open_fds();
    // The client socket exists before the limit is lowered; connecting needs no new fd.
    let client = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let mut incoming = listener.incoming();
    let guard = NofileGuard::lower(lowest_free_fd(&listener));
    client.connect(&addr.into()).unwrap();
    // The accept is armed (and reads the limit) with the limit lowered.
    let first = runtime::time::timeout(Duration::from_secs(5), incoming.next())
        .await
        .expect("incoming yields the error")
        .unwrap();
    if direct() {
        // A direct descriptor needs no fd: the connection is accepted, and a regular fd is
        // asked for in vain.
        let stream = first.unwrap();
        assert!(stream.is_direct());
        let err = stream.try_as_fd().unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("installing a real fd for direct descriptor"),
            "{msg}"
        );
        assert!(
            msg.contains(&std::io::Error::from_raw_os_error(libc::EMFILE).to_string()),
            "{msg}"
        );
        drop(guard);
        assert_eq!(
            stream.peer_addr().unwrap(),
            client.local_addr().unwrap().as_socket().unwrap()
        );
        drop((stream, incoming, client));
        settle().await;
        assert_eq!(open_fds(), before);
        assert_eq!(table_slots_in_use(), 0);
        return;
    }
    let err = first.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EMFILE), "{err}");
    drop(guard);
    // After its back-off the stream accepts the connection that waited in the backlog.
    let stream = runtime::time::timeout(Duration::from_secs(5), incoming.next())
        .await
        .expect("incoming goes on after EMFILE")
        .unwrap()
        .unwrap();
    assert_eq!(
        stream.peer_addr().unwrap(),
        client.local_addr().unwrap().as_socket().unwrap()
    );
    drop((stream, incoming, client));
    settle().await;
    assert_eq!(open_fds(), before);
}

#[test]
fn dropped_ops_leak_no_fd() {
    for direct_descriptors in [true, false] {
        let rt = runtime::Builder::new()
            .direct_descriptors(direct_descriptors)
            .build()
            .unwrap();
        rt.block_on(async {
            dropped_pending_accept().await;
            dropped_completed_accept().await;
            dropped_pending_read().await;
            dropped_incoming().await;
            incoming_survives_emfile().await;
        });
    }
}
