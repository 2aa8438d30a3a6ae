//! `File`: round trips, sparse files, many concurrent reads, append, vectored I/O, syncs,
//! fallocate, set_len, close, and a read dropped in flight.

mod common;

use std::os::unix::fs::FileExt;
use std::rc::Rc;

use common::{pattern, TempDir};
use corering_fs::{File, OpenOptions};

#[runtime::test]
async fn write_then_read_round_trip() {
    let dir = TempDir::new("round-trip");
    let path = dir.join("data");
    let data = pattern(300_000, 1);
    let file = File::create(&path).await.unwrap();
    let (res, back) = file.write_all_at(data.clone(), 0).await;
    res.unwrap();
    assert_eq!(back, data, "the buffer comes back untouched");
    file.sync_all().await.unwrap();
    file.close().await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), data);

    let file = File::open(&path).await.unwrap();
    let (res, buf) = file
        .read_exact_at(vec![0u8; data.len()].into_boxed_slice(), 0)
        .await;
    res.unwrap();
    assert_eq!(&buf[..], &data[..]);
    // A read in the middle, into a Vec's spare capacity.
    let (res, buf) = file.read_at(Vec::with_capacity(100), 1000).await;
    assert_eq!(res.unwrap(), 100);
    assert_eq!(buf, &data[1000..1100]);
    // At the end of the file: 0.
    let (res, _) = file.read_at(vec![0u8; 10], data.len() as u64).await;
    assert_eq!(res.unwrap(), 0);
    // read_exact past the end: UnexpectedEof.
    let (res, _) = file
        .read_exact_at(vec![0u8; 10].into_boxed_slice(), data.len() as u64 - 5)
        .await;
    assert_eq!(res.unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
    file.close().await.unwrap();
}

#[runtime::test]
async fn sparse_file_at_one_gib() {
    let dir = TempDir::new("sparse");
    let path = dir.join("sparse");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(&path)
        .await
        .unwrap();
    let at = 1u64 << 30;
    let (res, _) = file.write_all_at(b"tail".to_vec(), at).await;
    res.unwrap();
    let meta = file.metadata().await.unwrap();
    assert_eq!(meta.len(), at + 4);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), at + 4);
    // Far fewer blocks than the length: the hole is not allocated.
    assert!(meta.blocks() * 512 < at / 2, "blocks {}", meta.blocks());
    let (res, buf) = file
        .read_exact_at(vec![0xffu8; 8192].into_boxed_slice(), at - 8192)
        .await;
    res.unwrap();
    assert!(buf.iter().all(|&b| b == 0), "a hole reads as zeroes");
    let (res, buf) = file.read_at(Vec::with_capacity(16), at - 2).await;
    assert_eq!(res.unwrap(), 6);
    assert_eq!(buf, b"\0\0tail");
    file.close().await.unwrap();
}

#[runtime::test]
async fn a_thousand_concurrent_reads() {
    let dir = TempDir::new("concurrent");
    let path = dir.join("data");
    let data = pattern(1 << 20, 7);
    std::fs::write(&path, &data).unwrap();
    let file = Rc::new(File::open(&path).await.unwrap());
    let data = Rc::new(data);
    let tasks: Vec<_> = (0..1000u64)
        .map(|i| {
            let file = file.clone();
            let data = data.clone();
            runtime::spawn_local(async move {
                let len = 1 + (i as usize * 37) % 4000;
                let pos = (i * 1009) % (data.len() as u64 - len as u64);
                let (res, buf) = file.read_at(Vec::with_capacity(len), pos).await;
                assert_eq!(res.unwrap(), len);
                assert_eq!(buf, &data[pos as usize..pos as usize + len], "read {i}");
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    Rc::try_unwrap(file).unwrap().close().await.unwrap();
}

#[runtime::test]
async fn appends_land_at_the_end_whatever_the_position() {
    let dir = TempDir::new("append");
    let path = dir.join("log");
    std::fs::write(&path, b"start;").unwrap();
    let file = OpenOptions::new().append(true).open(&path).await.unwrap();
    let (res, _) = file.write_all_at(b"one;".to_vec(), 0).await;
    res.unwrap();
    let (res, _) = file.write_all_at(b"two;".to_vec(), 2).await;
    res.unwrap();
    file.close().await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"start;one;two;");

    // create + append on a new file.
    let path = dir.join("new-log");
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .await
        .unwrap();
    for word in ["a", "b", "c"] {
        let (res, _) = file.write_all_at(word.as_bytes().to_vec(), 0).await;
        res.unwrap();
    }
    file.close().await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"abc");
}

#[runtime::test]
async fn truncate_and_create_new() {
    let dir = TempDir::new("truncate");
    let path = dir.join("f");
    std::fs::write(&path, b"a long old content").unwrap();
    let file = File::create(&path).await.unwrap();
    assert_eq!(file.metadata().await.unwrap().len(), 0, "create truncates");
    file.close().await.unwrap();
    let err = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert!(err.to_string().contains(path.to_str().unwrap()), "{err}");
    let other = dir.join("fresh");
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o640)
        .open(&other)
        .await
        .unwrap();
    let mode = file.metadata().await.unwrap().mode() & 0o777;
    assert_eq!(
        mode & !0o640,
        0,
        "mode {mode:o} within 0o640 (less the umask)"
    );
    file.close().await.unwrap();
}

#[runtime::test]
async fn vectored_round_trip() {
    let dir = TempDir::new("vectored");
    let path = dir.join("v");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(&path)
        .await
        .unwrap();
    let bufs = vec![b"hello ".to_vec(), b"vectored ".to_vec(), b"world".to_vec()];
    let (res, bufs) = file.writev_at(bufs, 10).await;
    assert_eq!(res.unwrap(), 20);
    assert_eq!(bufs.len(), 3);
    let (res, bufs) = file
        .readv_at(vec![Vec::with_capacity(4), Vec::with_capacity(100)], 10)
        .await;
    assert_eq!(res.unwrap(), 20);
    assert_eq!(bufs[0], b"hell");
    assert_eq!(bufs[1], b"o vectored world");
    let std_file = std::fs::File::open(&path).unwrap();
    let mut head = [1u8; 10];
    std_file.read_exact_at(&mut head, 0).unwrap();
    assert_eq!(head, [0u8; 10]);
    file.close().await.unwrap();
}

#[runtime::test]
async fn syncs_fallocate_and_set_len() {
    let dir = TempDir::new("sync");
    let path = dir.join("s");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(&path)
        .await
        .unwrap();
    let (res, _) = file.write_all_at(pattern(100_000, 3), 0).await;
    res.unwrap();
    file.sync_data().await.unwrap();
    file.sync_all().await.unwrap();
    file.sync_range(0, 0, libc::SYNC_FILE_RANGE_WRITE)
        .await
        .unwrap();
    file.sync_range(
        0,
        100_000,
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    )
    .await
    .unwrap();

    // Preallocate past the end: the length grows.
    file.fallocate(0, 1 << 20, 0).await.unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
    // KEEP_SIZE: blocks, no length change.
    file.fallocate(1 << 20, 1 << 20, libc::FALLOC_FL_KEEP_SIZE)
        .await
        .unwrap();
    assert_eq!(file.metadata().await.unwrap().len(), 1 << 20);
    // Punch a hole: it reads back as zeroes.
    file.fallocate(
        4096,
        8192,
        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
    )
    .await
    .unwrap();
    let (res, buf) = file.read_at(vec![1u8; 8192], 4096).await;
    assert_eq!(res.unwrap(), 8192);
    assert!(buf.iter().all(|&b| b == 0));

    file.set_len(10).await.unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 10);
    file.close().await.unwrap();
}

#[runtime::test]
async fn a_read_dropped_in_flight_leaves_the_file_working() {
    let dir = TempDir::new("dropped-read");
    let path = dir.join("d");
    let data = pattern(1 << 20, 9);
    std::fs::write(&path, &data).unwrap();
    let file = File::open(&path).await.unwrap();
    for _ in 0..20 {
        let mut task = tokio_test::task::spawn(file.read_at(vec![0u8; 1 << 20], 0));
        // The first poll submits the read; it cannot be complete yet.
        assert!(task.poll().is_pending());
        drop(task);
    }
    // Also one dropped before its first poll: nothing was submitted.
    drop(file.read_at(vec![0u8; 16], 0));
    let (res, buf) = file.read_at(Vec::with_capacity(64), 4096).await;
    assert_eq!(res.unwrap(), 64);
    assert_eq!(buf, &data[4096..4160]);
    // close waits for the dropped reads' CQEs, then closes through the ring.
    file.close().await.unwrap();
}

#[runtime::test]
async fn from_std_file() {
    let dir = TempDir::new("from-std");
    let path = dir.join("f");
    std::fs::write(&path, b"std made me").unwrap();
    let file = File::from(std::fs::File::open(&path).unwrap());
    let (res, buf) = file.read_at(Vec::with_capacity(32), 4).await;
    assert_eq!(res.unwrap(), 7);
    assert_eq!(buf, b"made me");
}
