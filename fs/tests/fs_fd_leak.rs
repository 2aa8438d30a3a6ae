//! Opens, closes, drops and dropped ops leak no fd.
//!
//! The fd count is process-wide, so this file holds one test that runs its cases in turn.

mod common;

use std::future::Future;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::time::Duration;

use common::TempDir;
use corering_fs::{File, OpenOptions};

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

/// Polls `fut` once (which submits its op) and gives it back pinned, unfinished.
async fn poll_once<F: Future>(fut: &mut Pin<&mut F>) {
    assert!(futures::poll!(fut.as_mut()).is_pending());
}

async fn open_close_and_drop(dir: &TempDir) {
    let path = dir.join("a");
    std::fs::write(&path, b"data").unwrap();
    let before = open_fds();
    for _ in 0..200 {
        let file = File::open(&path).await.unwrap();
        file.close().await.unwrap();
        let file = File::open(&path).await.unwrap();
        drop(file);
    }
    assert_eq!(open_fds(), before, "open then close or drop");
}

async fn dropped_opens(dir: &TempDir) {
    let path = dir.join("b");
    std::fs::write(&path, b"data").unwrap();
    let before = open_fds();
    for _ in 0..50 {
        // Polled once, then dropped: either cancelled, or completed with an fd that the
        // driver must close.
        let mut open = pin!(File::open(&path));
        poll_once(&mut open).await;
    }
    settle().await;
    assert_eq!(open_fds(), before, "opens dropped after submission");
    for _ in 0..50 {
        // Completed in the kernel and reaped, but never polled again.
        let mut open = pin!(File::open(&path));
        poll_once(&mut open).await;
        settle().await;
    }
    settle().await;
    assert_eq!(
        open_fds(),
        before,
        "opens completed after their future was dropped"
    );
    // Dropped before the first poll: nothing submitted.
    for _ in 0..10 {
        drop(File::open(&path));
    }
    assert_eq!(open_fds(), before);
}

async fn dropped_ops_keep_the_fd_until_done(dir: &TempDir) {
    let path = dir.join("c");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    let before = open_fds();
    {
        let file = File::open(&path).await.unwrap();
        assert_eq!(open_fds(), before + 1);
        for _ in 0..10 {
            let mut read = pin!(file.read_at(vec![0u8; 1 << 20], 0));
            poll_once(&mut read).await;
        }
        {
            let mut stat = pin!(file.metadata());
            poll_once(&mut stat).await;
        }
        drop(file);
        // The dropped ops may still hold the fd; it goes when their CQEs do.
    }
    settle().await;
    assert_eq!(open_fds(), before, "file dropped with its ops in flight");

    // close() while dropped ops still hold the fd: it waits for them and closes.
    let file = File::open(&path).await.unwrap();
    {
        let mut read = pin!(file.read_at(vec![0u8; 1 << 20], 0));
        poll_once(&mut read).await;
    }
    file.close().await.unwrap();
    settle().await;
    assert_eq!(open_fds(), before, "close after a dropped read");
}

async fn many_tasks_and_helpers(dir: &TempDir) {
    let before = open_fds();
    let file = Rc::new(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .open(dir.join("d"))
            .await
            .unwrap(),
    );
    let tasks: Vec<_> = (0..100u64)
        .map(|i| {
            let file = file.clone();
            runtime::spawn_local(async move {
                let (res, _) = file.write_all_at(vec![i as u8; 100], i * 100).await;
                res.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    drop(file);
    for i in 0..20 {
        let p = dir.join(&format!("w{i}"));
        corering_fs::write(&p, vec![1u8; 1000]).await.unwrap();
        assert_eq!(corering_fs::read(&p).await.unwrap().len(), 1000);
        corering_fs::copy(&p, dir.join(&format!("c{i}")))
            .await
            .unwrap();
        corering_fs::metadata(&p).await.unwrap();
    }
    // Errors on the way leak nothing either.
    for _ in 0..20 {
        assert!(corering_fs::read(dir.join("missing")).await.is_err());
        assert!(corering_fs::copy(dir.join("w0"), dir.join("no/such/dir"))
            .await
            .is_err());
    }
    settle().await;
    assert_eq!(open_fds(), before, "tasks and whole-file helpers");
}

#[runtime::test]
async fn no_fd_leaks() {
    let dir = TempDir::new("fd-leak");
    open_close_and_drop(&dir).await;
    dropped_opens(&dir).await;
    dropped_ops_keep_the_fd_until_done(&dir).await;
    many_tasks_and_helpers(&dir).await;
}
