//! Choosing the backend: `Auto` takes io_uring where the kernel allows it and the epoll
//! backend where `io_uring_setup` is refused (CI runs this file under a seccomp filter that
//! refuses it, and under one that refuses epoll too); `Builder::backend` and
//! `RUNTIME_BACKEND` force either; bad input is an error that says what to change.

use std::io;
use std::time::Duration;

use runtime::{Backend, Builder};

/// What this process may use, asked of the kernel directly.
fn io_uring_allowed() -> Result<(), io::Error> {
    io_uring::IoUring::new(2).map(drop)
}

fn epoll_allowed() -> bool {
    // SAFETY: epoll_create1 takes a flag; the fd is closed at once.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd >= 0 {
        // SAFETY: the fd just made.
        unsafe { libc::close(fd) };
    }
    fd >= 0
}

/// A runtime of either backend runs a timer and moves bytes through a socket pair.
fn runs(rt: &runtime::Runtime) {
    use runtime::ext::{raw, SharedFd};
    let echoed = rt.block_on(async {
        runtime::time::sleep(Duration::from_millis(2)).await;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (a, b) = (SharedFd::new(a.into()), SharedFd::new(b.into()));
        // The read waits first (on epoll: for readiness), then the write wakes it.
        let read = runtime::spawn_local(async move {
            let (res, buf) = raw::read(&b, vec![0u8; 16], u64::MAX).await;
            buf[..res.unwrap()].to_vec()
        });
        runtime::time::sleep(Duration::from_millis(2)).await;
        let (res, _) = raw::write(&a, b"ping".to_vec(), u64::MAX).await;
        assert_eq!(res.unwrap(), 4);
        read.await.unwrap()
    });
    assert_eq!(echoed, b"ping");
}

#[test]
fn auto_takes_io_uring_where_allowed_and_epoll_where_refused() {
    if !epoll_allowed() {
        return both_refused_is_one_clear_error();
    }
    let rt = Builder::new().backend(Backend::Auto).build().unwrap();
    let f = rt.features();
    match io_uring_allowed() {
        Ok(()) => {
            assert_eq!(f.backend, Backend::IoUring, "{f}");
            assert!(f.to_string().starts_with("backend: io_uring"), "{f}");
        }
        Err(e) => {
            eprintln!("io_uring is refused here ({e}): checking the automatic fallback");
            assert_eq!(f.backend, Backend::Epoll, "{f}");
            assert!(f.backend_reason.contains("refused"), "{}", f.backend_reason);
            // Provided-buffer rings and multishot receives are the backend's own; the rest off.
            assert!(f.recv_multishot && f.buf_ring && !f.direct_descriptors && !f.recv_bundle);
            runs(&rt);
            drop(rt);
            // Forcing io_uring where it is refused: an error, not a fallback.
            let e = Builder::new()
                .backend(Backend::IoUring)
                .build()
                .unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
            assert!(e.to_string().contains("io_uring_setup"), "{e}");
            return;
        }
    }
    runs(&rt);
}

/// Neither backend can start: one error naming both, and what to allow.
fn both_refused_is_one_clear_error() {
    assert!(
        io_uring_allowed().is_err(),
        "epoll refused but io_uring allowed?"
    );
    eprintln!("io_uring and epoll are both refused here: checking the error");
    let e = Builder::new().build().unwrap_err();
    let msg = e.to_string();
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{msg}");
    assert!(msg.contains("no I/O backend could start"), "{msg}");
    assert!(
        msg.contains("io_uring_setup") && msg.contains("epoll_create1"),
        "{msg}"
    );
    let e = Builder::new().backend(Backend::Epoll).build().unwrap_err();
    assert!(e.to_string().contains("epoll_create1"), "{e}");
}

#[test]
fn epoll_can_be_forced_and_says_why() {
    if !runtime::ext::testing::require("epoll (epoll_create1 refused here)", epoll_allowed()) {
        // The documented answer where epoll is refused: forcing it is an error naming it.
        let e = Builder::new().backend(Backend::Epoll).build().unwrap_err();
        assert!(e.to_string().contains("epoll_create1"), "{e}");
        return;
    }
    let rt = Builder::new().backend(Backend::Epoll).build().unwrap();
    let f = rt.features();
    assert_eq!(f.backend, Backend::Epoll);
    assert_eq!(f.backend_reason, "forced by Builder::backend");
    let shown = f.to_string();
    assert!(
        shown.starts_with(
            "backend: epoll (forced by Builder::backend); granted: buf_ring|recv_multishot|recv_limit; off: "
        ),
        "{shown}"
    );
    assert!(
        shown.contains("direct_descriptors (epoll backend)"),
        "{shown}"
    );
    assert_eq!(
        rt.flags().to_string(),
        format!(
            "(none) sq={} cq={}",
            rt.flags().sq_entries,
            rt.flags().cq_entries
        )
    );
    runs(&rt);
    drop(rt);
    // Asking for io_uring-only features on epoll: off, with the reason, never a panic.
    let rt = Builder::new()
        .backend(Backend::Epoll)
        .recv_bundle(true)
        .direct_descriptors(true)
        .build()
        .unwrap();
    assert!(!rt.features().recv_bundle && !rt.features().direct_descriptors);
    runs(&rt);
}

#[test]
fn runtime_backend_env_forces_a_backend_and_rejects_bad_values() {
    // The variable is read by `Builder::new`; a child process keeps it out of this one.
    let exe = std::env::current_exe().unwrap();
    let run = |value: &str| {
        std::process::Command::new(&exe)
            .args(["--exact", "env_child", "--nocapture"])
            .env("RT_BACKEND_CHILD", "1")
            .env("RUNTIME_BACKEND", value)
            .output()
            .unwrap()
    };
    if epoll_allowed() {
        let out = run("epoll");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("child backend: epoll (forced by RUNTIME_BACKEND)"),
            "{text}"
        );
    }
    let out = run("kqueue");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("child error: InvalidInput: RUNTIME_BACKEND is `kqueue`"),
        "{text}"
    );
}

/// The child of `runtime_backend_env_forces_a_backend_and_rejects_bad_values`.
#[test]
fn env_child() {
    if std::env::var_os("RT_BACKEND_CHILD").is_none() {
        return;
    }
    match Builder::new().build() {
        Ok(rt) => {
            let f = rt.features();
            println!("child backend: {} ({})", f.backend, f.backend_reason);
        }
        Err(e) => println!("child error: {:?}: {e}", e.kind()),
    }
}
