//! `runtime::process`: output through ring-op pipes, exit codes and signals, kill, missing
//! programs, no zombie left after many children or a dropped runtime, and the pidfd-poll
//! fallback for kernels without IORING_OP_WAITID.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use runtime::process::{Command, Stdio};

/// Children of this process (of any of its threads) that exist now, zombies included.
fn children() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .map(|s| s.split_whitespace().count())
        .sum()
}

/// The tests count children, so they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn settle_children(want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    while children() != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    children()
}

#[test]
fn a_mebibyte_on_stdout_and_stderr_at_once() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    let out = rt
        .block_on(async {
            Command::new("sh")
                .arg("-c")
                .arg("head -c 1048576 /dev/zero & head -c 1048576 /dev/zero >&2; wait")
                .output()
                .await
        })
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 1 << 20);
    assert_eq!(out.stderr.len(), 1 << 20);
}

#[test]
fn exit_codes_signals_and_kill() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let status = Command::new("sh")
            .args(["-c", "exit 3"])
            .status()
            .await
            .unwrap();
        assert_eq!(status.code(), Some(3));
        let status = Command::new("sh")
            .args(["-c", "kill -TERM $$"])
            .status()
            .await
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM));

        let mut sleeper = Command::new("sleep").arg("100").spawn().unwrap();
        assert!(sleeper.id().is_some());
        assert!(sleeper.try_wait().unwrap().is_none());
        sleeper.kill().await.unwrap();
        let status = sleeper.wait().await.unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert_eq!(sleeper.id(), None, "reaped");
    });
    assert_eq!(settle_children(0), 0);
}

#[test]
fn stdin_and_stdout_pipes_carry_bytes_through_ring_ops() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    let out = rt
        .block_on(async {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()?;
            let mut stdin = child.stdin.take().unwrap();
            let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
            let writer = runtime::spawn_local(async move {
                stdin.write_all_from(&data).await?;
                Ok::<_, std::io::Error>(data)
            });
            let out = child.wait_with_output().await?;
            let data = writer.await.unwrap()?;
            assert!(out.stdout == data, "cat echoed different bytes");
            Ok::<_, std::io::Error>(out)
        })
        .unwrap();
    assert!(out.status.success());
}

#[test]
fn a_missing_program_is_not_found_and_leaves_no_child() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    let err = rt
        .block_on(async { Command::new("/no/such/program").output().await })
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("/no/such/program"), "{err}");
    assert_eq!(settle_children(0), 0);
}

#[test]
fn a_thousand_children_in_a_row_leave_no_zombie() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for _ in 0..1000 {
            let status = Command::new("true").status().await.unwrap();
            assert!(status.success());
        }
        // Dropped without a wait: reaped by the drop's task.
        for _ in 0..10 {
            drop(Command::new("true").spawn().unwrap());
        }
        runtime::time::sleep(Duration::from_millis(100)).await;
    });
    assert_eq!(settle_children(0), 0);
}

#[test]
fn children_outliving_their_runtime_are_reaped() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for _ in 0..3 {
            drop(Command::new("sleep").arg("0.2").spawn().unwrap());
        }
        let kept = Command::new("sleep")
            .arg("100")
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        drop(kept);
    });
    drop(rt);
    assert_eq!(settle_children(0), 0, "a zombie outlived the runtime");
}

#[test]
fn the_pidfd_poll_fallback_waits_too() {
    let _s = serial();
    runtime::process::force_poll_fallback(true);
    let rt = runtime::Runtime::new().unwrap();
    let status = rt.block_on(async {
        Command::new("sh")
            .args(["-c", "sleep 0.05; exit 7"])
            .status()
            .await
    });
    runtime::process::force_poll_fallback(false);
    assert_eq!(status.unwrap().code(), Some(7));
    assert_eq!(settle_children(0), 0);
}

#[test]
fn writing_to_a_child_that_exited_is_an_error() {
    let _s = serial();
    let rt = runtime::Runtime::new().unwrap();
    let err = rt.block_on(async {
        let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // Wait for the exit while keeping stdin open (wait closes child.stdin only).
        let _ = Command::new("sleep").arg("0.1").status().await;
        let res = stdin.write_all_from(&[0u8; 100_000]).await;
        child.wait().await.unwrap();
        res.unwrap_err()
    });
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
}
