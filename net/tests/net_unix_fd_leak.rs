//! Dropped Unix accepts, `incoming()` streams, connects and datagram receives leak no fd.
//!
//! The fd count is process-wide, so this file holds one test that runs its cases in turn.

use std::path::{Path, PathBuf};
use std::pin::pin;
use std::time::Duration;

use corering_net::{UnixDatagram, UnixListener, UnixStream};
use futures::StreamExt;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Lets the ring reap the CQEs of cancelled ops (the cancels and the ops' final CQEs).
async fn settle() {
    for _ in 0..5 {
        runtime::time::sleep(Duration::from_millis(5)).await;
        runtime::ext::raw::nop().await.unwrap();
    }
}

async fn dropped_accepts(dir: &Path) {
    let path = dir.join("accept.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let before = open_fds();
    {
        let mut accept = pin!(listener.accept());
        assert!(futures::poll!(accept.as_mut()).is_pending());
    }
    settle().await;
    assert_eq!(open_fds(), before, "a cancelled accept");

    let client;
    {
        let mut accept = pin!(listener.accept());
        assert!(futures::poll!(accept.as_mut()).is_pending());
        client = std::os::unix::net::UnixStream::connect(&path).unwrap();
        settle().await;
    }
    settle().await;
    assert_eq!(open_fds(), before + 1, "only the client is open");
    drop(client);
}

async fn dropped_incoming(dir: &Path) {
    let path = dir.join("incoming.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let before = open_fds();
    let mut clients = Vec::new();
    {
        let mut incoming = listener.incoming();
        for _ in 0..3 {
            clients.push(std::os::unix::net::UnixStream::connect(&path).unwrap());
            drop(incoming.next().await.unwrap().unwrap());
        }
        // Connections accepted by the armed SQE but never taken from the stream.
        for _ in 0..4 {
            clients.push(std::os::unix::net::UnixStream::connect(&path).unwrap());
        }
        settle().await;
    }
    settle().await;
    assert_eq!(
        open_fds(),
        before + clients.len(),
        "only the clients are open"
    );
    drop(clients);
    assert_eq!(open_fds(), before, "a dropped incoming stream");
}

async fn dropped_connect_and_recv(dir: &Path) {
    let before = open_fds();
    {
        // A connect to a listener whose backlog is not drained completes at once; drop it
        // before polling it again.
        let path = dir.join("connect.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let mut connect = pin!(UnixStream::connect(&path));
        let _ = futures::poll!(connect.as_mut());
        settle().await;
        drop(listener);
    }
    {
        let (a, _b) = UnixDatagram::pair().unwrap();
        let mut recv = pin!(a.recv_from(vec![0u8; 16]));
        assert!(futures::poll!(recv.as_mut()).is_pending());
    }
    settle().await;
    assert_eq!(
        open_fds(),
        before,
        "a dropped connect and a dropped recv_from"
    );
}

#[runtime::test]
async fn dropped_ops_leak_no_fd() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("net-unix-fd-leak-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    dropped_accepts(&dir).await;
    dropped_incoming(&dir).await;
    dropped_connect_and_recv(&dir).await;
    std::fs::remove_dir_all(&dir).unwrap();
}
