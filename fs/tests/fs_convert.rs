//! `File::{from_std, into_std, try_clone}` (the stream cursor across them, the write-behind
//! written first) and `remove_dir_all` (nested trees, symlinks not followed).

mod common;

use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};

use common::{pattern, TempDir};
use corering_fs::{File, OpenOptions};
use futures::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

#[runtime::test]
async fn from_std_starts_at_the_std_offset() {
    let dir = TempDir::new("conv-from-std");
    let path = dir.join("f");
    std::fs::write(&path, b"0123456789").unwrap();
    let mut std_file = std::fs::File::open(&path).unwrap();
    let mut first = [0u8; 3];
    std_file.read_exact(&mut first).unwrap();
    let mut file = File::from_std(std_file);
    assert_eq!(file.cursor(), 3);
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).await.unwrap();
    assert_eq!(rest, b"3456789");
    // Positional reads ignore the cursor.
    let (res, buf) = file.read_at(Vec::with_capacity(4), 0).await;
    assert_eq!(res.unwrap(), 4);
    assert_eq!(buf, b"0123");
}

#[runtime::test]
async fn into_std_writes_the_write_behind_and_keeps_the_cursor() {
    let dir = TempDir::new("conv-into-std");
    let path = dir.join("f");
    let data = pattern(300_000, 7);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .await
        .unwrap();
    // No flush: the last write may still be in flight when into_std is called.
    file.write_all(&data).await.unwrap();
    let mut std_file = file.into_std().await.unwrap();
    assert_eq!(std_file.stream_position().unwrap(), data.len() as u64);
    std_file.write_all(b"tail").unwrap();
    std_file.seek(SeekFrom::Start(0)).unwrap();
    let mut back = Vec::new();
    std_file.read_to_end(&mut back).unwrap();
    assert_eq!(back.len(), data.len() + 4);
    assert_eq!(&back[..data.len()], &data[..]);
    assert_eq!(&back[data.len()..], b"tail");
}

#[runtime::test]
async fn into_std_reports_the_write_behind_error() {
    // A read-only file: the stream write is accepted into the write-behind, and its
    // failure (EBADF) comes back from into_std rather than being lost.
    let dir = TempDir::new("conv-into-std-err");
    let path = dir.join("f");
    std::fs::write(&path, b"x").unwrap();
    let mut file = File::open(&path).await.unwrap();
    let early = file.write(b"not allowed").await;
    let res = file.into_std().await;
    assert!(
        early.is_err() || res.is_err(),
        "a write to a read-only file was lost: {early:?} then {res:?}"
    );
    if let Err(e) = res {
        assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
    }
}

#[runtime::test]
async fn try_clone_shares_the_file_not_the_cursor() {
    let dir = TempDir::new("conv-clone");
    let path = dir.join("f");
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .await
        .unwrap();
    file.write_all(b"hello, ").await.unwrap();
    // The clone sees what the original's write-behind held, and starts at its cursor.
    let mut clone = file.try_clone().await.unwrap();
    assert_eq!(clone.cursor(), 7);
    clone.write_all(b"world").await.unwrap();
    clone.flush().await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"hello, world");
    // The original's cursor did not move with the clone's.
    assert_eq!(file.cursor(), 7);
    file.seek(SeekFrom::Start(0)).await.unwrap();
    let mut all = String::new();
    file.read_to_string(&mut all).await.unwrap();
    assert_eq!(all, "hello, world");
    // Two fds: closing one leaves the other working.
    clone.close().await.unwrap();
    let (res, buf) = file.read_at(Vec::with_capacity(5), 7).await;
    assert_eq!(res.unwrap(), 5);
    assert_eq!(buf, b"world");
    file.close().await.unwrap();
}

#[runtime::test]
async fn remove_dir_all_removes_a_tree_but_not_what_a_symlink_points_at() {
    let dir = TempDir::new("conv-rmtree");
    let outside = dir.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep"), b"keep me").unwrap();
    let tree = dir.join("tree");
    for d in ["a/b/c", "a/d", "e"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    for (i, f) in ["a/1", "a/b/2", "a/b/c/3", "a/d/4", "e/5", "6"]
        .iter()
        .enumerate()
    {
        std::fs::write(tree.join(f), pattern(1000 * i, i as u64)).unwrap();
    }
    std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
    corering_fs::remove_dir_all(&tree).await.unwrap();
    assert!(!tree.exists());
    assert_eq!(std::fs::read(outside.join("keep")).unwrap(), b"keep me");

    let err = corering_fs::remove_dir_all(&tree).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("tree"), "{err}");
}
