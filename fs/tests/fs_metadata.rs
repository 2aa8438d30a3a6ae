//! `Metadata` from `statx` agrees with `std::fs::metadata`.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, SystemTime};

use common::TempDir;
use corering_fs::File;

fn within_a_second(a: SystemTime, b: SystemTime) -> bool {
    let d = a.duration_since(b).unwrap_or_else(|e| e.duration());
    d < Duration::from_secs(1)
}

fn check(ours: &corering_fs::Metadata, std: &std::fs::Metadata) {
    assert_eq!(ours.len(), std.len());
    assert_eq!(ours.is_file(), std.is_file());
    assert_eq!(ours.is_dir(), std.is_dir());
    assert_eq!(ours.is_symlink(), std.is_symlink());
    assert_eq!(ours.mode(), std.mode());
    assert_eq!(ours.permissions().mode(), std.permissions().mode());
    assert_eq!(ours.ino(), std.ino());
    assert_eq!(ours.dev(), std.dev());
    assert_eq!(ours.nlink(), std.nlink());
    assert_eq!(ours.uid(), std.uid());
    assert_eq!(ours.gid(), std.gid());
    assert_eq!(ours.blksize(), std.blksize());
    assert_eq!(ours.blocks(), std.blocks());
    assert!(within_a_second(
        ours.modified().unwrap(),
        std.modified().unwrap()
    ));
    assert!(within_a_second(
        ours.accessed().unwrap(),
        std.accessed().unwrap()
    ));
    match (ours.created(), std.created()) {
        (Ok(a), Ok(b)) => assert!(within_a_second(a, b)),
        (Err(a), Err(_)) => assert_eq!(a.kind(), std::io::ErrorKind::Unsupported),
        (a, b) => panic!("created: ours {a:?}, std {b:?}"),
    }
}

#[runtime::test]
async fn file_metadata_matches_std() {
    let dir = TempDir::new("meta");
    let path = dir.join("f");
    std::fs::write(&path, vec![5u8; 12_345]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let file = File::open(&path).await.unwrap();
    let ours = file.metadata().await.unwrap();
    let std = std::fs::metadata(&path).unwrap();
    check(&ours, &std);
    assert_eq!(ours.len(), 12_345);
    assert_eq!(ours.mode() & 0o7777, 0o640);
    assert!(within_a_second(ours.modified().unwrap(), SystemTime::now()));
    file.close().await.unwrap();

    let by_path = corering_fs::metadata(&path).await.unwrap();
    check(&by_path, &std);
}

#[runtime::test]
async fn directory_and_symlink_metadata_match_std() {
    let dir = TempDir::new("meta-dir");
    let ours = corering_fs::metadata(dir.path()).await.unwrap();
    check(&ours, &std::fs::metadata(dir.path()).unwrap());
    assert!(ours.is_dir() && !ours.is_file());

    let target = dir.join("target");
    std::fs::write(&target, b"abc").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let followed = corering_fs::metadata(&link).await.unwrap();
    check(&followed, &std::fs::metadata(&link).unwrap());
    assert!(followed.is_file());
    assert_eq!(followed.len(), 3);
    let not_followed = corering_fs::symlink_metadata(&link).await.unwrap();
    check(&not_followed, &std::fs::symlink_metadata(&link).unwrap());
    assert!(not_followed.is_symlink() && !not_followed.is_file());
    assert!(not_followed.file_type().is_symlink());
}

#[runtime::test]
async fn metadata_follows_writes() {
    let dir = TempDir::new("meta-writes");
    let path = dir.join("grow");
    let file = File::create(&path).await.unwrap();
    assert!(file.metadata().await.unwrap().is_empty());
    let (res, _) = file.write_all_at(vec![1u8; 5000], 0).await;
    res.unwrap();
    let meta = file.metadata().await.unwrap();
    assert_eq!(meta.len(), 5000);
    check(&meta, &std::fs::metadata(&path).unwrap());
    file.close().await.unwrap();
}
