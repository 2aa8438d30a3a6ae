//! Path operations, each checked against what std sees; `read`, `write`, `copy`.

mod common;

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;

use common::{pattern, TempDir};

#[runtime::test]
async fn create_and_remove_dirs() {
    let dir = TempDir::new("dirs");
    let a = dir.join("a");
    corering_fs::create_dir(&a).await.unwrap();
    assert!(std::fs::metadata(&a).unwrap().is_dir());
    let err = corering_fs::create_dir(&a).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    let err = corering_fs::create_dir(dir.join("x/y")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);

    let deep = dir.join("b/c/d/e");
    corering_fs::create_dir_all(&deep).await.unwrap();
    assert!(std::fs::metadata(&deep).unwrap().is_dir());
    // Again: every part exists, which is fine.
    corering_fs::create_dir_all(&deep).await.unwrap();
    corering_fs::create_dir_all(dir.path()).await.unwrap();
    // A file in the way is an error.
    std::fs::write(dir.join("b/file"), b"").unwrap();
    let err = corering_fs::create_dir_all(dir.join("b/file/sub"))
        .await
        .unwrap_err();
    assert_ne!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = corering_fs::create_dir_all(dir.join("b/file"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");

    // remove_dir: only empty directories.
    let err = corering_fs::remove_dir(dir.join("b/c")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DirectoryNotEmpty);
    corering_fs::remove_dir(&deep).await.unwrap();
    assert!(!deep.exists());
    assert!(dir.join("b/c/d").exists());
    corering_fs::remove_dir(&a).await.unwrap();
    assert!(std::fs::metadata(&a).is_err());
    let err = corering_fs::remove_dir(dir.join("b/file"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotADirectory);
}

#[runtime::test]
async fn remove_file_and_rename() {
    let dir = TempDir::new("files");
    let f = dir.join("f");
    std::fs::write(&f, b"content").unwrap();
    let g = dir.join("g");
    corering_fs::rename(&f, &g).await.unwrap();
    assert!(!f.exists());
    assert_eq!(std::fs::read(&g).unwrap(), b"content");
    // Rename over an existing file replaces it.
    std::fs::write(&f, b"other").unwrap();
    corering_fs::rename(&f, &g).await.unwrap();
    assert_eq!(std::fs::read(&g).unwrap(), b"other");
    // Rename a directory.
    std::fs::create_dir(dir.join("d1")).unwrap();
    corering_fs::rename(dir.join("d1"), dir.join("d2"))
        .await
        .unwrap();
    assert!(std::fs::metadata(dir.join("d2")).unwrap().is_dir());

    corering_fs::remove_file(&g).await.unwrap();
    assert!(std::fs::symlink_metadata(&g).is_err());
    let err = corering_fs::remove_file(&g).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains(g.to_str().unwrap()), "{err}");
    let err = corering_fs::remove_file(dir.join("d2")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IsADirectory);
}

#[runtime::test]
async fn hard_links_and_symlinks() {
    let dir = TempDir::new("links");
    let original = dir.join("original");
    std::fs::write(&original, b"shared").unwrap();
    let hard = dir.join("hard");
    corering_fs::hard_link(&original, &hard).await.unwrap();
    let (m1, m2) = (
        std::fs::metadata(&original).unwrap(),
        std::fs::metadata(&hard).unwrap(),
    );
    assert_eq!(m1.ino(), m2.ino());
    assert_eq!(m1.nlink(), 2);
    assert_eq!(corering_fs::metadata(&hard).await.unwrap().nlink(), 2);
    let err = corering_fs::hard_link(&original, &hard).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);

    let soft = dir.join("soft");
    corering_fs::symlink("original", &soft).await.unwrap();
    assert_eq!(
        std::fs::read_link(&soft).unwrap(),
        std::path::Path::new("original")
    );
    assert_eq!(std::fs::read(&soft).unwrap(), b"shared");
    // A dangling symlink is allowed.
    corering_fs::symlink(dir.join("nowhere"), dir.join("dangling"))
        .await
        .unwrap();
    assert!(std::fs::symlink_metadata(dir.join("dangling"))
        .unwrap()
        .is_symlink());
    let err = corering_fs::metadata(dir.join("dangling"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(corering_fs::symlink_metadata(dir.join("dangling"))
        .await
        .unwrap()
        .is_symlink());
    // remove_file removes the link, not the target.
    corering_fs::remove_file(&soft).await.unwrap();
    assert!(original.exists());
}

#[runtime::test]
async fn read_write_whole_files() {
    let dir = TempDir::new("whole");
    let path = dir.join("w");
    corering_fs::write(&path, "hello").await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"hello");
    assert_eq!(corering_fs::read(&path).await.unwrap(), b"hello");
    // write truncates.
    corering_fs::write(&path, b"hi").await.unwrap();
    assert_eq!(corering_fs::read(&path).await.unwrap(), b"hi");
    // Empty and large files.
    corering_fs::write(&path, Vec::new()).await.unwrap();
    assert_eq!(corering_fs::read(&path).await.unwrap(), b"");
    let big = pattern(3 * 1024 * 1024 + 17, 4);
    corering_fs::write(&path, big.clone()).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), big);
    assert_eq!(corering_fs::read(&path).await.unwrap(), big);
    // A file whose size statx cannot tell (procfs says 0).
    let status = corering_fs::read("/proc/self/status").await.unwrap();
    assert!(String::from_utf8_lossy(&status).contains("Name:"));
}

#[runtime::test]
async fn copy_files() {
    let dir = TempDir::new("copy");
    for (i, len) in [0usize, 1, 128 * 1024, 128 * 1024 * 4, 5 * 1024 * 1024 + 3]
        .into_iter()
        .enumerate()
    {
        let from = dir.join(&format!("from-{i}"));
        let to = dir.join(&format!("to-{i}"));
        let data = pattern(len, i as u64);
        std::fs::write(&from, &data).unwrap();
        assert_eq!(corering_fs::copy(&from, &to).await.unwrap(), len as u64);
        assert_eq!(std::fs::read(&to).unwrap(), data, "len {len}");
    }
    // Copy over a longer file truncates it.
    let from = dir.join("short");
    std::fs::write(&from, b"short").unwrap();
    let to = dir.join("long");
    std::fs::write(&to, vec![9u8; 100_000]).unwrap();
    assert_eq!(corering_fs::copy(&from, &to).await.unwrap(), 5);
    assert_eq!(std::fs::read(&to).unwrap(), b"short");
    // Permissions of a new copy come from the source.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&from, std::fs::Permissions::from_mode(0o600)).unwrap();
    let fresh = dir.join("fresh");
    corering_fs::copy(&from, &fresh).await.unwrap();
    assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o600);
    // Missing source.
    let err = corering_fs::copy(dir.join("missing"), dir.join("x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(!dir.join("x").exists());
}
