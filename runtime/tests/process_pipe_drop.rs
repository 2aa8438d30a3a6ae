//! A child's stdin keeps the write-behind promise: bytes `AsyncWrite` reported written reach
//! the child even when the writer is dropped unflushed, with a write still in flight; and
//! writing to the pipe of a child that exited is a plain `BrokenPipe` error (no panic, no
//! death by SIGPIPE).

use std::io;
use std::time::Duration;

use futures::io::AsyncWriteExt;
use runtime::process::{Command, Stdio};
use runtime::time::timeout;

const LIMIT: Duration = Duration::from_secs(60);
/// Several pipe buffers' worth, in writes of odd sizes.
const LEN: usize = 8 << 20;

/// `LEN` bytes no two runs of which repeat in step with the write sizes.
fn pattern() -> Vec<u8> {
    (0..LEN).map(|i| (i * 31 % 251) as u8).collect()
}

/// Writes `data` through `AsyncWrite` in pieces of `piece` bytes, then drops the writer
/// without flushing, asserting a write was still in flight (else the test proves nothing).
async fn write_and_drop(mut stdin: runtime::process::ChildStdin, data: &[u8], piece: usize) {
    for piece in data.chunks(piece) {
        // Fully qualified: the inherent `write_all` waits for its last write.
        AsyncWriteExt::write_all(&mut stdin, piece).await.unwrap();
    }
    let state = format!("{stdin:?}");
    assert!(state.contains("writing: true"), "{state}");
    drop(stdin);
}

/// Byte-exact comparison that names the first difference instead of printing megabytes.
fn assert_same(got: &[u8], want: &[u8]) {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!("byte {i} differs: {} != {}", got[i], want[i]);
    }
    assert_eq!(got.len(), want.len(), "lengths differ");
}

#[test]
fn bytes_written_before_a_drop_reach_cat_through_its_stdout() {
    let rt = runtime::Runtime::new().unwrap();
    let data = pattern();
    let out = rt.block_on(async {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (_, out) = timeout(
            LIMIT,
            futures::future::join(write_and_drop(stdin, &data, 100_003), stdout.read_to_vec()),
        )
        .await
        .expect("cat finishes");
        let status = timeout(LIMIT, child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "{status}");
        out.unwrap()
    });
    assert_same(&out, &data);
}

#[test]
fn a_write_blocked_on_a_full_pipe_at_the_drop_reaches_a_file() {
    // One write fills the pipe (64 KiB), the next waits for room when the writer is
    // dropped: the child reads nothing for a while, then copies its stdin to a file.
    const PIPE: usize = 64 * 1024;
    let rt = runtime::Runtime::new().unwrap();
    let data = pattern()[..PIPE + 40_000].to_vec();
    let path = std::env::temp_dir().join(format!("process_pipe_drop-{}", std::process::id()));
    rt.block_on(async {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("sleep 0.3; exec cat > \"$0\"")
            .arg(&path)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        timeout(LIMIT, write_and_drop(stdin, &data, PIPE))
            .await
            .unwrap();
        let status = timeout(LIMIT, child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "{status}");
    });
    let got = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_same(&got, &data);
}

/// A child that exited without reading, and its stdin, still open on our side.
async fn exited_child_stdin() -> runtime::process::ChildStdin {
    let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let status = timeout(LIMIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success());
    stdin
}

#[test]
fn writing_to_a_child_that_exited_is_broken_pipe() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut stdin = exited_child_stdin().await;
        let block = vec![9u8; 1 << 20];
        // The first write may be accepted (write-behind); its failure comes with the next.
        let err = timeout(LIMIT, async {
            AsyncWriteExt::write_all(&mut stdin, &block).await?;
            stdin.flush().await
        })
        .await
        .unwrap()
        .expect_err("writing to a pipe with no reader");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
        // Again, through the inherent write_all: the same kind.
        let err = stdin.write_all(&block).await.expect_err("again");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
    });
}

#[test]
fn dropping_the_stdin_of_a_child_that_exited_with_a_write_in_flight_is_quiet() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut stdin = exited_child_stdin().await;
        // Accepted, write-behind; its EPIPE goes to the task the drop leaves.
        let n = futures::future::poll_fn(|cx| {
            futures::io::AsyncWrite::poll_write(std::pin::Pin::new(&mut stdin), cx, &[1; 4096])
        })
        .await
        .unwrap();
        assert_eq!(n, 4096);
        drop(stdin);
        runtime::time::sleep(Duration::from_millis(20)).await;
    });
}

#[test]
fn a_runtime_that_ends_with_a_writer_blocked_in_a_task_shuts_down_quietly() {
    let rt = runtime::Runtime::new().unwrap();
    let mut child = rt.block_on(async {
        // `sleep` never reads its stdin: a big write stays blocked on the full pipe.
        let mut child = Command::new("sleep")
            .arg("5")
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        runtime::spawn_local(async move {
            let _ = stdin.write_all(&vec![1u8; 8 << 20]).await;
        });
        // Let the task start its write.
        runtime::time::sleep(Duration::from_millis(50)).await;
        child
    });
    // The task (and its writer, with a write in flight) is dropped by the shutdown.
    drop(rt);
    let _ = child.start_kill();
}
