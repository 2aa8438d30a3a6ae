//! `io_uring_enter(2)` errors the loop survives: a core whose waits fail with `ENOMEM` (the
//! kernel short of memory) goes on running its tasks and ops instead of panicking.
//!
//! The error is provoked with a seccomp filter on the test's own thread (a filter binds only
//! the thread that installs it): every `io_uring_enter` that waits with a timeout
//! (`IORING_ENTER_EXT_ARG`) and submits nothing fails with `ENOMEM`. Calls that submit, and
//! waits without a timeout, still reach the kernel, so the core can make progress.

use std::io;
use std::time::{Duration, Instant};

/// `IORING_ENTER_EXT_ARG`: the wait's arguments (its timeout) come in a struct.
const IORING_ENTER_EXT_ARG: u32 = 8;

/// `struct sock_filter` (linux/filter.h).
#[repr(C)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog` (linux/filter.h).
#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

const fn stmt(code: u32, k: u32) -> SockFilter {
    SockFilter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> SockFilter {
    SockFilter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// Offset of the low 32 bits of syscall argument `i` in `struct seccomp_data`.
const fn arg_lo(i: u32) -> u32 {
    if cfg!(target_endian = "little") {
        16 + 8 * i
    } else {
        16 + 8 * i + 4
    }
}

/// Makes this thread's `io_uring_enter(fd, 0, _, flags & EXT_ARG, ..)` fail with `ENOMEM`.
/// Err if this kernel or sandbox does not let the test install a seccomp filter.
fn fail_timed_waits_with_enomem() -> io::Result<()> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let nr = libc::SYS_io_uring_enter as u32;
    let prog = [
        // The syscall number (the test runs on its native arch only).
        stmt(BPF_LD | BPF_W | BPF_ABS, 0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4),
        // `to_submit` == 0 ...
        stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(1)),
        jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2),
        // ... and `flags` has EXT_ARG: ENOMEM.
        stmt(BPF_LD | BPF_W | BPF_ABS, arg_lo(3)),
        jump(BPF_JMP | BPF_JSET | BPF_K, IORING_ENTER_EXT_ARG, 1, 0),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(
            BPF_RET | BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOMEM as u32,
        ),
    ];
    let fprog = SockFprog {
        len: prog.len() as u16,
        filter: prog.as_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers; it binds this thread only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fprog` points at `prog`, a valid filter program, for the whole call (the
    // kernel copies it); without TSYNC it binds this thread only.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &fprog as *const SockFprog,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[test]
fn a_core_whose_waits_fail_with_enomem_goes_on() {
    // A thread of its own: the filter stays with it and ends with it.
    let res = std::thread::spawn(|| {
        if let Err(e) = fail_timed_waits_with_enomem() {
            // Nothing to test without the filter: the helper fails the test under
            // CORERING_REQUIRE_FEATURES=1.
            runtime::ext::testing::require(&format!("a seccomp filter ({e})"), false);
            return;
        }
        let rt = runtime::Runtime::new().unwrap();
        if rt.features().backend == runtime::Backend::Epoll {
            // No io_uring_enter to fail: the filter leaves the epoll backend's waits alone,
            // and the core runs timers, ops and tasks under it as anywhere.
            let start = Instant::now();
            let ran = rt.block_on(async {
                assert_eq!(
                    runtime::features().unwrap().backend,
                    runtime::Backend::Epoll
                );
                runtime::ext::raw::nop().await.unwrap();
                runtime::sleep(Duration::from_millis(20)).await;
                let task = runtime::spawn_local(async {
                    runtime::sleep(Duration::from_millis(5)).await;
                    runtime::ext::raw::nop().await.map(|()| 7)
                });
                task.await.unwrap().unwrap()
            });
            assert_eq!(ran, 7);
            assert!(start.elapsed() >= Duration::from_millis(25));
            drop(rt);
            eprintln!(
                "checked the epoll backend: no io_uring_enter to inject ENOMEM into; \
                 the core runs under the filter"
            );
            return;
        }
        let start = Instant::now();
        rt.block_on(async {
            // Submits what is queued (the wake read), so the timed wait below submits nothing.
            runtime::ext::raw::nop().await.unwrap();
            // Waits until the timer with a timeout: ENOMEM, every time, until it is due.
            let enters = runtime::core_metrics().unwrap().enters;
            runtime::sleep(Duration::from_millis(20)).await;
            let enters = runtime::core_metrics().unwrap().enters - enters;
            assert!(
                enters > 10,
                "the timed waits failed and were retried: {enters} enters"
            );
            runtime::ext::raw::nop().await.unwrap();
            let task = runtime::spawn_local(async {
                runtime::sleep(Duration::from_millis(5)).await;
                runtime::ext::raw::nop().await.map(|()| 7)
            });
            assert_eq!(task.await.unwrap().unwrap(), 7);
        });
        assert!(start.elapsed() >= Duration::from_millis(25));
        let start = Instant::now();
        drop(rt);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "shutdown took {:?}",
            start.elapsed()
        );
    })
    .join();
    if let Err(panic) = res {
        std::panic::resume_unwind(panic);
    }
}
