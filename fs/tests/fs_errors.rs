//! Bad input gives the right errors, with no panic and nothing submitted.

mod common;

use std::error::Error;
use std::io::ErrorKind;

use common::TempDir;
use corering_fs::{File, OpenOptions};

#[runtime::test]
async fn missing_path_is_not_found_with_the_path() {
    let dir = TempDir::new("missing");
    let path = dir.join("no-such-file");
    let err = File::open(&path).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let msg = err.to_string();
    assert!(msg.contains(path.to_str().unwrap()), "{msg}");
    let source = err.source().expect("the kernel's error is chained");
    let source = source.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(source.raw_os_error(), Some(libc::ENOENT));

    for err in [
        corering_fs::metadata(&path).await.unwrap_err(),
        corering_fs::symlink_metadata(&path).await.unwrap_err(),
        corering_fs::remove_file(&path).await.unwrap_err(),
        corering_fs::remove_dir(&path).await.unwrap_err(),
        corering_fs::read(&path).await.unwrap_err(),
        corering_fs::rename(&path, dir.join("x")).await.unwrap_err(),
        corering_fs::hard_link(&path, dir.join("x"))
            .await
            .unwrap_err(),
        corering_fs::create_dir(dir.join("a/b")).await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
        assert!(
            err.to_string().contains(dir.path().to_str().unwrap()),
            "{err}"
        );
    }
}

#[runtime::test]
async fn interior_nul_is_invalid_input() {
    let bad = "bad\0path";
    let errs = [
        File::open(bad).await.unwrap_err(),
        File::create(bad).await.unwrap_err(),
        corering_fs::metadata(bad).await.unwrap_err(),
        corering_fs::symlink_metadata(bad).await.unwrap_err(),
        corering_fs::remove_file(bad).await.unwrap_err(),
        corering_fs::remove_dir(bad).await.unwrap_err(),
        corering_fs::create_dir(bad).await.unwrap_err(),
        corering_fs::create_dir_all(bad).await.unwrap_err(),
        corering_fs::rename(bad, "x").await.unwrap_err(),
        corering_fs::rename("x", bad).await.unwrap_err(),
        corering_fs::hard_link(bad, "x").await.unwrap_err(),
        corering_fs::symlink("x", bad).await.unwrap_err(),
        corering_fs::read(bad).await.unwrap_err(),
        corering_fs::write(bad, "x").await.unwrap_err(),
        corering_fs::copy(bad, "x").await.unwrap_err(),
    ];
    for err in errs {
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
}

#[runtime::test]
async fn writing_a_read_only_file_is_ebadf() {
    let dir = TempDir::new("ebadf");
    let path = dir.join("ro");
    std::fs::write(&path, b"read only").unwrap();
    let file = File::open(&path).await.unwrap();
    let (res, buf) = file.write_at(b"nope".to_vec(), 0).await;
    let err = res.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err:?}");
    assert_eq!(buf, b"nope", "the buffer comes back");
    let (res, _) = file.write_all_at(b"nope".to_vec(), 0).await;
    assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
    let (res, _) = file.writev_at(vec![b"nope".to_vec()], 0).await;
    assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
    assert_eq!(std::fs::read(&path).unwrap(), b"read only");
    file.close().await.unwrap();

    // And reading a write-only file.
    let file = OpenOptions::new().write(true).open(&path).await.unwrap();
    let (res, _) = file.read_at(vec![0u8; 4], 0).await;
    assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
    file.close().await.unwrap();
}

#[runtime::test]
async fn bad_options_and_offsets() {
    let dir = TempDir::new("bad-options");
    let path = dir.join("f");
    for opts in [
        OpenOptions::new(),
        OpenOptions::new().read(true).create(true).clone(),
        OpenOptions::new().read(true).truncate(true).clone(),
        OpenOptions::new().append(true).truncate(true).clone(),
    ] {
        let err = opts.open(&path).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
    assert!(!path.exists(), "nothing was created");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(&path)
        .await
        .unwrap();
    let (res, _) = file.read_at(vec![0u8; 4], u64::MAX).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    let (res, _) = file.write_at(b"x".to_vec(), 1 << 63).await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(
        file.sync_range(0, u64::MAX, 0).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // Opening a directory for writing: the kernel's EISDIR, with the path.
    let err = OpenOptions::new()
        .write(true)
        .open(dir.path())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IsADirectory);
    assert!(err.to_string().contains(dir.path().to_str().unwrap()));
    file.close().await.unwrap();
}
