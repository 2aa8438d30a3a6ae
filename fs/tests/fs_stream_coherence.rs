//! The stream (read-ahead, write-behind) against the handle's other calls and against other
//! handles: `set_len` below the cursor gives EOF, every call first waits for the
//! write-behind (and gives its error), a dropped file still writes what it reported
//! written, a file cut by another handle gives EOF rather than old bytes.

mod common;

use std::io::{self, SeekFrom};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::{pattern, TempDir};
use corering_fs::{File, OpenOptions};
use futures::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

async fn open_rw(path: &std::path::Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(path)
        .await
        .unwrap()
}

/// The reported case: 200,000 bytes written through the stream, seek 0, read 10,
/// `set_len(5)`, read: std gives 0 (end of file), and so must the stream.
#[runtime::test]
async fn set_len_below_the_cursor_gives_eof() {
    let dir = TempDir::new("coh-set-len");
    let path = dir.join("f");
    let data = pattern(200_000, 1);
    let mut file = open_rw(&path).await;
    file.write_all(&data).await.unwrap();
    assert_eq!(file.seek(SeekFrom::Start(0)).await.unwrap(), 0);
    let mut head = [0u8; 10];
    file.read_exact(&mut head).await.unwrap();
    assert_eq!(head, data[..10]);
    file.set_len(5).await.unwrap();
    let mut buf = vec![0u8; 1000];
    assert_eq!(
        file.read(&mut buf).await.unwrap(),
        0,
        "no bytes past the new end"
    );
    assert_eq!(
        file.fill_buf().await.unwrap(),
        b"",
        "nothing lent past the new end"
    );
    assert_eq!(file.cursor(), 10);
    // Back inside the file: exactly what is left of it.
    file.seek(SeekFrom::Start(2)).await.unwrap();
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).await.unwrap();
    assert_eq!(rest, data[2..5]);

    // The 10 bytes read through the buffered path (64 KiB read ahead), then cut.
    file.write_all(&data[5..]).await.unwrap();
    file.seek(SeekFrom::Start(0)).await.unwrap();
    assert!(file.fill_buf().await.unwrap().len() > 10);
    file.consume_unpin(10);
    file.set_len(5).await.unwrap();
    assert_eq!(
        file.read(&mut buf).await.unwrap(),
        0,
        "no read-ahead past the new end"
    );
    assert_eq!(file.fill_buf().await.unwrap(), b"");

    // Cut while the write-behind is in flight: the cut comes after the write, as in std.
    file.write_all(&data).await.unwrap();
    file.set_len(5).await.unwrap();
    file.flush().await.unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 5);
    file.close().await.unwrap();
}

/// The same through tokio's traits.
#[cfg(feature = "tokio-io")]
mod tokio_traits {
    use std::io::SeekFrom;

    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::{open_rw, pattern, TempDir};

    #[runtime::test]
    async fn set_len_below_the_cursor_gives_eof_tokio() {
        let dir = TempDir::new("coh-set-len-tokio");
        let mut file = open_rw(&dir.join("f")).await;
        file.write_all(&pattern(200_000, 2)).await.unwrap();
        file.seek(SeekFrom::Start(0)).await.unwrap();
        let mut head = [0u8; 10];
        file.read_exact(&mut head).await.unwrap();
        file.set_len(5).await.unwrap();
        let mut buf = vec![0u8; 1000];
        assert_eq!(file.read(&mut buf).await.unwrap(), 0);
    }
}

/// A read in flight when `set_len` cuts the file is forgotten, not handed out later.
#[runtime::test]
async fn a_read_in_flight_does_not_outlive_set_len() {
    let dir = TempDir::new("coh-read-in-flight");
    let path = dir.join("f");
    std::fs::write(&path, pattern(300_000, 3)).unwrap();
    let mut file = open_rw(&path).await;
    file.seek(SeekFrom::Start(1000)).await.unwrap();
    {
        let mut buf = [0u8; 100];
        let fut = file.read(&mut buf);
        futures::pin_mut!(fut);
        let _ = futures::poll!(fut); // submitted, then given up on
    }
    file.set_len(10).await.unwrap();
    let mut buf = [0u8; 100];
    assert_eq!(file.read(&mut buf).await.unwrap(), 0);
}

/// A `SeekFrom::End` given up on mid-way does not lend its (old) size to a later one.
#[runtime::test]
async fn a_size_query_in_flight_does_not_outlive_a_write() {
    let dir = TempDir::new("coh-size");
    let path = dir.join("f");
    std::fs::write(&path, b"0123456789").unwrap();
    let mut file = open_rw(&path).await;
    {
        let fut = file.seek(SeekFrom::End(0));
        futures::pin_mut!(fut);
        let _ = futures::poll!(fut);
    }
    file.write_all(&[7u8; 100]).await.unwrap();
    assert_eq!(file.seek(SeekFrom::End(0)).await.unwrap(), 100);
    {
        let fut = file.seek(SeekFrom::End(0));
        futures::pin_mut!(fut);
        let _ = futures::poll!(fut);
    }
    file.set_len(3).await.unwrap();
    assert_eq!(file.seek(SeekFrom::End(0)).await.unwrap(), 3);
}

/// Positional reads and writes, `metadata` and the syncs see the write-behind: no flush.
#[runtime::test]
async fn handle_calls_see_the_write_behind() {
    let dir = TempDir::new("coh-calls");
    let path = dir.join("f");
    let data = pattern(500_000, 4);
    let mut file = open_rw(&path).await;
    file.write_all(&data).await.unwrap();
    assert_eq!(file.metadata().await.unwrap().len(), data.len() as u64);
    file.write_all(b"tail").await.unwrap();
    let (res, buf) = file.read_at(Vec::with_capacity(4), 500_000).await;
    assert_eq!(res.unwrap(), 4);
    assert_eq!(buf, b"tail");
    // A positional write lands after the stream's, not under it.
    file.write_all(b"stream").await.unwrap();
    let (res, _) = file.write_all_at(b"at".to_vec(), 500_004).await;
    res.unwrap();
    file.sync_data().await.unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(&on_disk[500_000..], b"tailatream");
    file.close().await.unwrap();
}

/// A positional write or `fallocate` after a read-ahead: the stream reads the new bytes.
#[runtime::test]
async fn handle_changes_drop_the_read_ahead() {
    let dir = TempDir::new("coh-read-ahead");
    let path = dir.join("f");
    let data = pattern(100_000, 5);
    std::fs::write(&path, &data).unwrap();
    let mut file = open_rw(&path).await;
    let lent = file.fill_buf().await.unwrap().len();
    assert!(lent > 20_000, "a read-ahead of {lent} bytes");
    file.consume_unpin(10);
    let (res, _) = file.write_all_at(b"NEW".to_vec(), 10).await;
    res.unwrap();
    let mut got = [0u8; 5];
    file.read_exact(&mut got).await.unwrap();
    let mut expect = b"NEW".to_vec();
    expect.extend_from_slice(&data[13..15]);
    assert_eq!(
        got[..],
        expect[..],
        "the positional write, not the read-ahead"
    );

    // Punch a hole ahead of the cursor: it reads back as zeroes.
    assert!(!file.fill_buf().await.unwrap().is_empty());
    let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    match file.fallocate(0, 65_536, punch).await {
        Ok(()) => {
            let mut zeroes = vec![1u8; 1000];
            file.read_exact(&mut zeroes).await.unwrap();
            assert!(
                zeroes.iter().all(|&b| b == 0),
                "the punched bytes read as zero"
            );
        }
        // A filesystem without hole punching answers EOPNOTSUPP (through the helper: a
        // failure under CORERING_REQUIRE_FEATURES=1).
        Err(e) => {
            runtime::ext::testing::require(&format!("FALLOC_FL_PUNCH_HOLE ({e})"), false);
            assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
        }
    }
    file.close().await.unwrap();
}

/// A failed write-behind is reported by the next call on the handle, with its kind.
#[runtime::test]
async fn the_write_behind_error_goes_to_the_next_call() {
    let dir = TempDir::new("coh-error");
    let path = dir.join("f");
    std::fs::write(&path, b"read only").unwrap();
    let mut file = File::open(&path).await.unwrap(); // read-only: writes fail with EBADF
    assert_eq!(
        file.write(b"xyz").await.unwrap(),
        3,
        "reported written (write-behind)"
    );
    let err = file.metadata().await.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err}");
    // Reported once; the call after that runs as usual.
    assert_eq!(file.metadata().await.unwrap().len(), 9);
    assert_eq!(
        file.cursor(),
        0,
        "the cursor is back where the failed bytes began"
    );
    assert_eq!(file.write(b"xyz").await.unwrap(), 3);
    let (res, _) = file.read_at(Vec::with_capacity(4), 0).await;
    assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
}

/// Several calls of a shared file wait for one write-behind at once; all are woken.
#[runtime::test]
async fn shared_calls_all_wait_for_the_write_behind() {
    let dir = TempDir::new("coh-shared");
    let path = dir.join("f");
    let mut file = open_rw(&path).await;
    file.write_all(&pattern(3 << 20, 6)).await.unwrap();
    let in_flight = file.write(&pattern(65_536, 7)).await.unwrap();
    assert_eq!(in_flight, 65_536);
    let file = Rc::new(file);
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let file = file.clone();
            runtime::spawn_local(async move { file.metadata().await.unwrap().len() })
        })
        .collect();
    for t in tasks {
        let len = runtime::timeout(Duration::from_secs(10), t)
            .await
            .expect("a waiting call was never woken")
            .unwrap();
        assert_eq!(len, (3 << 20) + 65_536);
    }
}

/// Dropped right after a large `write_all`, no flush: every byte reaches the file, and
/// the fd stays open until the last write is done.
#[runtime::test]
async fn a_dropped_file_writes_what_it_reported_written() {
    let dir = TempDir::new("coh-drop");
    let path = dir.join("f");
    let data = pattern(4 << 20, 8);
    for round in 0..4 {
        let mut file = open_rw(&path).await;
        file.write_all(&data).await.unwrap();
        let fd = file.as_raw_fd();
        drop(file);
        // The fd closes when the write holding it completes: wait for that (another test
        // may reuse the number, but not for this path).
        let link = format!("/proc/self/fd/{fd}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_link(&link).is_ok_and(|p| p == path) {
            assert!(Instant::now() < deadline, "the fd was never closed");
            runtime::sleep(Duration::from_millis(1)).await;
        }
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), data.len(), "round {round}: length");
        assert!(got == data, "round {round}: contents");
        std::fs::remove_file(&path).unwrap();
    }
}

/// Cut by another handle under a reader: the next read gives what is left (here
/// nothing), never the old bytes; a read past the end is 0, not an error or a panic.
#[runtime::test]
async fn cut_by_another_handle_under_a_reader() {
    let dir = TempDir::new("coh-cut");
    let path = dir.join("f");
    let data = pattern(300_000, 9);
    std::fs::write(&path, &data).unwrap();
    let mut file = File::open(&path).await.unwrap();
    let mut head = [0u8; 10];
    file.read_exact(&mut head).await.unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(5)
        .unwrap();
    let mut buf = vec![0u8; 1000];
    assert_eq!(file.read(&mut buf).await.unwrap(), 0);
    let mut all = Vec::new();
    assert_eq!(file.read_to_end(&mut all).await.unwrap(), 0);
    let err = file.read_exact(&mut buf[..1]).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    // Grown again by the other handle: the reader sees the new bytes at its cursor.
    std::fs::write(&path, b"0123456789abcdef").unwrap();
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).await.unwrap();
    assert_eq!(rest, b"abcdef");
}
