//! A child's pipes through tokio's I/O traits (feature `tokio-io`): lines written to `cat`
//! come back through `AsyncBufReadExt::lines`.

#![cfg(feature = "tokio-io")]

use runtime::process::{Command, Stdio};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[test]
fn lines_through_cat_with_tokio_traits() {
    let rt = runtime::Runtime::new().unwrap();
    let lines = rt.block_on(async {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let writer = runtime::spawn_local(async move {
            for i in 0..1000 {
                AsyncWriteExt::write_all(&mut stdin, format!("line {i}\n").as_bytes())
                    .await
                    .unwrap();
            }
            AsyncWriteExt::shutdown(&mut stdin).await.unwrap();
            // Dropping stdin closes the pipe: cat sees end of input.
        });
        let mut lines = BufReader::new(stdout).lines();
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            got.push(line);
        }
        writer.await.unwrap();
        assert!(child.wait().await.unwrap().success());
        got
    });
    assert_eq!(lines.len(), 1000);
    assert_eq!(lines[999], "line 999");
}
