//! `File` through tokio's I/O traits (`tokio-io`): write, seek, read back, lines.

#![cfg(feature = "tokio-io")]

mod common;

use std::io::SeekFrom;

use common::TempDir;
use corering_fs::OpenOptions;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

#[runtime::test]
async fn tokio_traits_round_trip() {
    let dir = TempDir::new("stream-tokio");
    let path = dir.join("f");
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(&path)
        .await
        .unwrap();
    file.write_all(b"one\ntwo\nthree\n").await.unwrap();
    file.flush().await.unwrap();
    assert_eq!(file.seek(SeekFrom::Start(4)).await.unwrap(), 4);
    let mut rest = String::new();
    file.read_to_string(&mut rest).await.unwrap();
    assert_eq!(rest, "two\nthree\n");
    assert_eq!(file.seek(SeekFrom::Start(0)).await.unwrap(), 0);
    let mut lines = tokio::io::BufReader::new(file).lines();
    let mut got = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        got.push(line);
    }
    assert_eq!(got, ["one", "two", "three"]);
}
