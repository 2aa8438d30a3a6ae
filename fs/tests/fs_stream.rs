//! `File` as a stream (futures-io): lines of a large file, read_to_end, copy, seeks past
//! the end and below 0, appends from two handles, a dropped poll; and the tokio-style path
//! ops: read_dir, try_exists, canonicalize, read_link, set_permissions, read_to_string.

mod common;

use std::io::{self, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::task::Poll;

use common::{pattern, TempDir};
use corering_fs::{File, OpenOptions};
use futures::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt, BufReader};
use futures::StreamExt;

/// 20 MB: large enough for hundreds of 64 KiB reads (lines split across buffer edges), small
/// enough to keep CI fast in a debug build.
const BIG: usize = 20 * 1024 * 1024;

fn rw() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true);
    o
}

#[runtime::test]
async fn lines_of_a_large_file() {
    let dir = TempDir::new("stream-lines");
    let path = dir.join("big");
    let mut text = String::with_capacity(BIG + 64);
    let mut n = 0u64;
    while text.len() < BIG {
        text.push_str(&format!("line {n} {}\n", "x".repeat((n % 97) as usize)));
        n += 1;
    }
    std::fs::write(&path, &text).unwrap();

    let file = File::open(&path).await.unwrap();
    let mut lines = BufReader::new(file).lines();
    let mut i = 0u64;
    while let Some(line) = lines.next().await {
        let line = line.unwrap();
        assert_eq!(line, format!("line {i} {}", "x".repeat((i % 97) as usize)));
        i += 1;
    }
    assert_eq!(i, n);
}

#[runtime::test]
async fn read_to_end_and_copy() {
    let dir = TempDir::new("stream-copy");
    let (src, dst) = (dir.join("src"), dir.join("dst"));
    let data = pattern(1_000_003, 7);
    std::fs::write(&src, &data).unwrap();

    let mut file = File::open(&src).await.unwrap();
    let mut all = Vec::new();
    assert_eq!(file.read_to_end(&mut all).await.unwrap(), data.len());
    assert_eq!(all, data);
    assert_eq!(file.cursor(), data.len() as u64);

    let reader = File::open(&src).await.unwrap();
    let mut writer = File::create(&dst).await.unwrap();
    let copied = futures::io::copy(reader, &mut writer).await.unwrap();
    assert_eq!(copied, data.len() as u64);
    writer.close().await.unwrap();
    assert_eq!(std::fs::read(&dst).unwrap(), data);
}

#[runtime::test]
async fn seeks_past_the_end_and_below_zero() {
    let dir = TempDir::new("stream-seek");
    let path = dir.join("f");
    let mut file = rw().open(&path).await.unwrap();
    file.write_all(b"hello").await.unwrap();
    assert_eq!(file.seek(SeekFrom::Start(0)).await.unwrap(), 0);
    let mut buf = [0u8; 5];
    file.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"hello");

    // Past the end: a read gives 0, a write there leaves a hole.
    assert_eq!(file.seek(SeekFrom::End(10)).await.unwrap(), 15);
    assert_eq!(file.read(&mut buf).await.unwrap(), 0);
    file.write_all(b"!").await.unwrap();
    file.flush().await.unwrap();
    assert_eq!(file.seek(SeekFrom::Current(0)).await.unwrap(), 16);
    let mut expect = b"hello".to_vec();
    expect.extend_from_slice(&[0; 10]);
    expect.push(b'!');
    assert_eq!(std::fs::read(&path).unwrap(), expect);

    // Below zero, from each origin: InvalidInput, and the cursor stays.
    for target in [
        SeekFrom::Current(-17),
        SeekFrom::End(-17),
        SeekFrom::Current(i64::MIN),
    ] {
        let err = file.seek(target).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{target:?}");
    }
    assert_eq!(file.seek(SeekFrom::Current(-6)).await.unwrap(), 10);
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).await.unwrap();
    assert_eq!(tail, expect[10..]);
    file.close().await.unwrap();
}

#[runtime::test]
async fn reads_see_writes_and_writes_drop_read_ahead() {
    let dir = TempDir::new("stream-mixed");
    let path = dir.join("f");
    std::fs::write(&path, pattern(200_000, 3)).unwrap();
    let mut file = rw().open(&path).await.unwrap();
    // The buffered read reads up to 64 KiB ahead (a plain read takes only what it asks).
    assert!(file.fill_buf().await.unwrap().len() > 10);
    file.consume_unpin(10);
    file.write_all(b"XYZ").await.unwrap(); // lands at 10, not at 64 KiB
    file.seek(SeekFrom::Start(8)).await.unwrap();
    let mut mid = [0u8; 7];
    file.read_exact(&mut mid).await.unwrap();
    let data = pattern(200_000, 3);
    assert_eq!(&mid[..2], &data[8..10]);
    assert_eq!(&mid[2..5], b"XYZ");
    assert_eq!(&mid[5..], &data[13..15]);
    file.close().await.unwrap();
}

#[runtime::test]
async fn appends_from_two_handles_interleave() {
    let dir = TempDir::new("stream-append");
    let path = dir.join("log");
    let open = || async {
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .await
            .unwrap()
    };
    let (mut a, mut b) = (open().await, open().await);
    for i in 0..50 {
        a.write_all(format!("a{i}\n").as_bytes()).await.unwrap();
        a.flush().await.unwrap();
        b.write_all(format!("b{i}\n").as_bytes()).await.unwrap();
        b.flush().await.unwrap();
    }
    // The cursor follows the kernel's: just past the last append.
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(b.cursor(), len);
    a.close().await.unwrap();
    b.close().await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let expect: String = (0..50).map(|i| format!("a{i}\nb{i}\n")).collect();
    assert_eq!(text, expect, "every append present, none overwritten");
}

#[runtime::test]
async fn a_dropped_poll_loses_nothing() {
    let dir = TempDir::new("stream-drop");
    let path = dir.join("f");
    let data = pattern(300_000, 9);
    std::fs::write(&path, &data).unwrap();
    let mut file = File::open(&path).await.unwrap();
    // Start a read, then drop its future after one poll (the read is left in flight).
    let mut buf = [0u8; 100];
    {
        let fut = file.read(&mut buf);
        futures::pin_mut!(fut);
        let _ = futures::poll!(fut);
    }
    let mut all = Vec::new();
    file.read_to_end(&mut all).await.unwrap();
    assert_eq!(all, data, "the read in flight was kept, at the cursor");

    // A write polled once and dropped is still written (write-behind), and close waits.
    let mut out = File::create(dir.join("g")).await.unwrap();
    {
        let fut = out.write(b"kept");
        futures::pin_mut!(fut);
        assert!(matches!(futures::poll!(fut), Poll::Ready(Ok(4))));
    }
    out.close().await.unwrap();
    assert_eq!(std::fs::read(dir.join("g")).unwrap(), b"kept");
}

#[runtime::test]
async fn direct_files_refuse_streams() {
    let dir = TempDir::new("stream-direct");
    let path = dir.join("d");
    std::fs::write(&path, [0u8; 4096]).unwrap();
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .await;
    // tmpfs before 6.6 and some others have no O_DIRECT: the open answers InvalidInput
    // (through the helper: a failure under CORERING_REQUIRE_FEATURES=1).
    let mut file = match opened {
        Ok(file) => file,
        Err(e) => {
            runtime::ext::testing::require(&format!("O_DIRECT on this filesystem ({e})"), false);
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
            return;
        }
    };
    let mut buf = [0u8; 16];
    let err = file.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[runtime::test]
async fn read_dir_lists_files_and_subdirs() {
    let dir = TempDir::new("read-dir");
    std::fs::create_dir(dir.join("sub")).unwrap();
    for i in 0..70 {
        // More than one chunk of 32.
        std::fs::write(dir.join(&format!("f{i}")), b"x").unwrap();
    }
    let mut entries = corering_fs::read_dir(dir.path()).await.unwrap();
    let mut files = 0;
    let mut dirs = Vec::new();
    while let Some(entry) = entries.next_entry().await.unwrap() {
        assert_eq!(entry.path(), dir.path().join(entry.file_name()));
        let ty = entry.file_type().await.unwrap();
        let meta = entry.metadata().await.unwrap();
        assert_eq!(ty.is_dir(), meta.is_dir());
        if ty.is_dir() {
            dirs.push(entry.file_name());
        } else {
            assert!(ty.is_file());
            assert_eq!(meta.len(), 1);
            files += 1;
        }
    }
    assert_eq!(files, 70);
    assert_eq!(dirs, ["sub"]);
    assert!(entries.next_entry().await.unwrap().is_none());
}

#[runtime::test]
async fn read_dir_bad_input() {
    let dir = TempDir::new("read-dir-bad");
    let file = dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    let err = corering_fs::read_dir(&file).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotADirectory, "{err}");
    assert!(err.to_string().contains("file"), "{err}");
    let err = corering_fs::read_dir(dir.join("missing"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[runtime::test]
async fn exists_canonicalize_read_link() {
    let dir = TempDir::new("paths");
    let file = dir.join("target");
    std::fs::write(&file, b"hi").unwrap();
    std::os::unix::fs::symlink("target", dir.join("link")).unwrap();
    std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();

    assert!(corering_fs::try_exists(&file).await.unwrap());
    assert!(corering_fs::try_exists(dir.join("link")).await.unwrap());
    assert!(!corering_fs::try_exists(dir.join("missing")).await.unwrap());
    assert!(!corering_fs::try_exists(dir.join("dangling")).await.unwrap());

    let canon = corering_fs::canonicalize(dir.path().join("./link"))
        .await
        .unwrap();
    assert_eq!(canon, std::fs::canonicalize(&file).unwrap());
    let err = corering_fs::canonicalize(dir.join("missing"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains("missing"), "{err}");

    assert_eq!(
        corering_fs::read_link(dir.join("link")).await.unwrap(),
        std::path::Path::new("target")
    );
    let err = corering_fs::read_link(&file).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

    assert_eq!(corering_fs::read_to_string(&file).await.unwrap(), "hi");
    std::fs::write(dir.join("bin"), [0xff, 0xfe]).unwrap();
    let err = corering_fs::read_to_string(dir.join("bin"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
}

#[runtime::test]
async fn set_permissions_and_set_len() {
    let dir = TempDir::new("perms");
    let path = dir.join("f");
    std::fs::write(&path, pattern(10_000, 1)).unwrap();
    corering_fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640))
        .await
        .unwrap();
    assert_eq!(
        corering_fs::metadata(&path).await.unwrap().mode() & 0o777,
        0o640
    );
    let err =
        corering_fs::set_permissions(dir.join("missing"), std::fs::Permissions::from_mode(0o600))
            .await
            .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);

    let mut file = rw().open(&path).await.unwrap();
    file.set_len(100).await.unwrap();
    assert_eq!(file.metadata().await.unwrap().len(), 100);
    assert_eq!(file.seek(SeekFrom::End(0)).await.unwrap(), 100);
    file.set_len(1 << 20).await.unwrap();
    assert_eq!(file.seek(SeekFrom::End(0)).await.unwrap(), 1 << 20);
    file.close().await.unwrap();
}
