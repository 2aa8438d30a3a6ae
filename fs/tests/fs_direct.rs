//! `O_DIRECT` with `AlignedBuf` round-trips; unaligned buffers, lengths and offsets are
//! `InvalidInput` before anything is submitted.
//!
//! A filesystem that refuses `O_DIRECT` (tmpfs before 6.6 answers `EINVAL` at open) leaves
//! nothing to test beyond that answer: `InvalidInput` at open, through
//! `runtime::ext::testing::require` (a failure under `CORERING_REQUIRE_FEATURES=1`).

mod common;

use std::io::ErrorKind;

use common::{pattern, TempDir};
use corering_fs::{AlignedBuf, File, OpenOptions};
use runtime::buf::IoBuf;

/// Opens `path` for direct I/O, or `None` where the filesystem refuses it (`InvalidInput`,
/// through `require`).
async fn open_direct(path: &std::path::Path) -> Option<File> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .await
    {
        Ok(f) => Some(f),
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            let fs_dir = path.parent().unwrap().display();
            runtime::ext::testing::require(&format!("O_DIRECT on {fs_dir} ({e})"), false);
            None
        }
        Err(e) => panic!("open with O_DIRECT: {e}"),
    }
}

fn sqes() -> u64 {
    runtime::core_metrics().unwrap().sqes_submitted
}

#[runtime::test]
async fn direct_io_round_trip_with_aligned_buffers() {
    let dir = TempDir::new("direct");
    let path = dir.join("d");
    let Some(file) = open_direct(&path).await else {
        return;
    };
    assert!(file.is_direct_io());
    let data = pattern(4 * 4096, 11);
    let mut buf = AlignedBuf::with_capacity(data.len()).unwrap();
    buf.extend_from_slice(&data);
    let (res, _) = file.write_all_at(buf, 8192).await;
    res.unwrap();
    file.sync_data().await.unwrap();
    assert_eq!(
        file.metadata().await.unwrap().len(),
        8192 + data.len() as u64
    );

    let (res, back) = file
        .read_exact_at(AlignedBuf::with_capacity(data.len()).unwrap(), 8192)
        .await;
    res.unwrap();
    assert_eq!(&back[..], &data[..]);
    // A read at the (aligned) end is 0; the hole before the data is zeroes.
    let (res, _) = file
        .read_at(
            AlignedBuf::with_capacity(4096).unwrap(),
            8192 + data.len() as u64,
        )
        .await;
    assert_eq!(res.unwrap(), 0);
    let (res, hole) = file
        .read_at(AlignedBuf::with_capacity(8192).unwrap(), 0)
        .await;
    assert_eq!(res.unwrap(), 8192);
    assert!(hole.iter().all(|&b| b == 0));
    // Vectored direct I/O with aligned segments.
    let (res, bufs) = file
        .readv_at(
            vec![
                AlignedBuf::with_capacity(4096).unwrap(),
                AlignedBuf::with_capacity(4096).unwrap(),
            ],
            8192,
        )
        .await;
    assert_eq!(res.unwrap(), 8192);
    assert_eq!(&bufs[0][..], &data[..4096]);
    assert_eq!(&bufs[1][..], &data[4096..8192]);
    file.close().await.unwrap();
    assert_eq!(&std::fs::read(&path).unwrap()[8192..], &data[..]);
}

#[runtime::test]
async fn unaligned_direct_io_is_invalid_input() {
    let dir = TempDir::new("direct-unaligned");
    let path = dir.join("d");
    let Some(file) = open_direct(&path).await else {
        return;
    };
    let mut full = AlignedBuf::with_capacity(3 * 4096).unwrap();
    full.set_len(full.capacity());
    let before = sqes();

    // Unaligned address: a view that starts one byte in.
    let (res, full) = file.write_at(full.slice(1..4097), 0).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    let full = full.into_inner();
    let (res, full) = file.read_at(full.slice(1..4097), 0).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    let full = full.into_inner();
    // Unaligned length.
    let (res, full) = file.write_at(full.slice(0..100), 0).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    let full = full.into_inner();
    let (res, full) = file.read_at(full.slice(0..4097), 0).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    let full = full.into_inner();
    // Unaligned offset.
    let (res, full) = file.write_at(full.slice(0..4096), 1).await;
    let err = res.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("O_DIRECT"), "{err}");
    println!("unaligned offset: {err}");
    let full = full.into_inner();
    let (res, full) = file.read_exact_at(full.slice(0..4096), 100).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    let full = full.into_inner();
    // An unaligned segment of a vectored op.
    let (res, _) = file
        .writev_at(
            vec![full_copy(&full).slice(0..4096), full.slice(1..4097)],
            0,
        )
        .await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    // A plain Vec of an odd length.
    let (res, _) = file.write_all_at(vec![1u8; 1000], 0).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);

    assert_eq!(sqes(), before, "nothing was submitted");
    assert_eq!(
        file.metadata().await.unwrap().len(),
        0,
        "nothing was written"
    );
    file.close().await.unwrap();
}

fn full_copy(b: &AlignedBuf) -> AlignedBuf {
    let mut c = AlignedBuf::new(b.capacity(), b.alignment()).unwrap();
    c.extend_from_slice(b);
    c
}
