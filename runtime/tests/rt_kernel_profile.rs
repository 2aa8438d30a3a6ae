//! Kernel profiles (`Builder::kernel_profile`, `RUNTIME_KERNEL`): under each of 5.19, 6.1
//! and 6.8 the ring gets only that release's setup flags and features, `Features` names the
//! profile as the reason, an op the release lacks answers `EINVAL` as it would there, and
//! every kind of op still runs. Bad names fail the build with `InvalidInput`.

mod common;

use std::io;

use common::pipe;
use io_uring::{opcode, types};
use runtime::ext::{raw, Completable, Cqe, Op, SharedFd};
use runtime::{Backend, Builder, Features, RingFlags};

/// What differs between the profiles' releases (the rest is checked in `check`).
struct Expect {
    name: &'static str,
    single_issuer: bool,
    defer_taskrun: bool,
    recv_multishot: bool,
    fixed_fd_install: bool,
    no_sqarray: bool,
}

const PROFILES: [Expect; 3] = [
    Expect {
        name: "5.19",
        no_sqarray: false,
        single_issuer: false,
        defer_taskrun: false,
        recv_multishot: false,
        fixed_fd_install: false,
    },
    Expect {
        name: "6.1",
        no_sqarray: false,
        single_issuer: true,
        defer_taskrun: true,
        recv_multishot: true,
        fixed_fd_install: false,
    },
    Expect {
        name: "6.8",
        no_sqarray: true,
        single_issuer: true,
        defer_taskrun: true,
        recv_multishot: true,
        fixed_fd_install: true,
    },
];

/// An op whose result is the CQE's, for SQEs built here.
struct Raw;

impl Completable for Raw {
    type Output = io::Result<u32>;
    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// Submits `sqe` (which points at no memory) and returns its result.
async fn submit(sqe: io_uring::squeue::Entry) -> io::Result<u32> {
    // SAFETY: every SQE given here points at no memory of the test's.
    unsafe { Op::new(Raw, sqe) }.await
}

/// Checks `rt`'s flags and features against `e`.
fn check(e: &Expect, flags: RingFlags, f: &Features, why: &str) {
    assert_eq!(f.kernel_profile(), Some(why), "{f}");
    if f.backend == Backend::Epoll {
        // No ring: the profile changes nothing the epoll backend does.
        assert!(!f.to_string().contains("(kernel)"), "{f}");
        return;
    }
    assert!(
        flags.coop_taskrun && flags.taskrun_flag && flags.submit_all,
        "{flags}"
    );
    assert_eq!(flags.single_issuer, e.single_issuer, "{}: {flags}", e.name);
    assert_eq!(flags.defer_taskrun, e.defer_taskrun, "{}: {flags}", e.name);
    assert_eq!(
        flags.no_sqarray, e.no_sqarray,
        "NO_SQARRAY came in 6.6: {flags}"
    );
    assert_eq!(f.no_sqarray, e.no_sqarray, "{}: {f}", e.name);
    assert!(
        f.registered_ring_fd && f.buf_ring && f.direct_descriptors,
        "{f}"
    );
    assert_eq!(f.recv_multishot, e.recv_multishot, "{}: {f}", e.name);
    assert_eq!(f.fixed_fd_install, e.fixed_fd_install, "{}: {f}", e.name);
    assert!(
        !f.min_timeout && !f.recv_bundle && !f.recv_incremental,
        "{f}"
    );
    let line = f.to_string();
    let mut lacked = vec!["min_timeout", "recv_bundle", "recv_incremental"];
    lacked.extend((!e.no_sqarray).then_some("no_sqarray"));
    lacked.extend((!e.fixed_fd_install).then_some("fixed_fd_install"));
    lacked.extend((!e.recv_multishot).then_some("recv_multishot"));
    for off in lacked {
        assert!(line.contains(&format!("{off} ({why})")), "{off}: {line}");
    }
    assert!(
        !line.contains("(kernel)") && !line.contains("(builder)"),
        "{line}"
    );
}

/// Every kind of op on `rt` (two cores): nop, a linked chain, a pipe's write and read,
/// timers, a task on core 1, `spawn_blocking`; and the ops `e`'s release lacks answer
/// `EINVAL`, those it has do not.
fn exercise(rt: &runtime::Runtime, e: &Expect) {
    let uring = rt.features().backend == Backend::IoUring;
    rt.block_on(async {
        common::basic_ops().await;
        let on = runtime::spawn_on(1, async {
            raw::nop().await.expect("nop on core 1");
            runtime::current_core()
        });
        assert_eq!(on.await.expect("core 1's task"), Some(1));
        assert_eq!(runtime::spawn_blocking(|| 6 * 7).await.unwrap(), 42);
        if !uring {
            return;
        }
        let (r, w) = pipe();
        let (r, w) = (SharedFd::new(r), SharedFd::new(w));
        let fd = r.raw();
        // A multishot RECV (6.0) of a pipe: not a socket where the flag is known.
        let multi = opcode::RecvMulti::new(types::Fd(fd), 0xfff0).build();
        let err = submit(multi).await.expect_err("multishot RECV of a pipe");
        let want = if e.recv_multishot {
            libc::ENOTSOCK
        } else {
            libc::EINVAL
        };
        assert_eq!(err.raw_os_error(), Some(want), "{}: RECV: {err}", e.name);
        // WAITID (6.7) on a pipe, which is no pidfd: EBADF where the op exists.
        let waitid = opcode::WaitId::new(libc::P_PIDFD, fd as libc::id_t, libc::WEXITED).build();
        let err = submit(waitid).await.expect_err("WAITID on a pipe");
        let want = if e.name == "6.8" {
            libc::EBADF
        } else {
            libc::EINVAL
        };
        assert_eq!(err.raw_os_error(), Some(want), "{}: WAITID: {err}", e.name);
        // FIXED_FD_INSTALL (6.8) of an empty slot: EBADF where the op exists.
        let install = opcode::FixedFdInstall::new(types::Fixed(0), 0).build();
        let err = submit(install)
            .await
            .expect_err("FIXED_FD_INSTALL of an empty slot");
        let want = if e.fixed_fd_install {
            libc::EBADF
        } else {
            libc::EINVAL
        };
        assert_eq!(err.raw_os_error(), Some(want), "{}: install: {err}", e.name);
        // FTRUNCATE (6.9): no profile has it.
        let ftruncate = opcode::Ftruncate::new(types::Fd(w.raw()), 0).build();
        let err = submit(ftruncate)
            .await
            .expect_err("FTRUNCATE under a profile");
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{}: {err}", e.name);
        drop((r, w));
    });
}

#[test]
fn each_profile_limits_flags_and_features_and_io_still_runs() {
    for e in &PROFILES {
        let rt = Builder::new()
            .kernel_profile(e.name)
            .cores(2)
            .build()
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let why = format!("Builder::kernel_profile(\"{}\")", e.name);
        for (flags, f) in rt.core_flags().iter().zip(rt.core_features()) {
            check(e, *flags, &f, &why);
        }
        exercise(&rt, e);
        if rt.features().backend == Backend::Epoll {
            eprintln!(
                "{}: checked on the epoll backend: the profile is reported, I/O runs",
                e.name
            );
        }
    }
}

#[test]
fn bad_profile_names_are_invalid_input_naming_the_accepted_values() {
    for bad in ["", "5.15", "6.6", "6.18", "latest", "6.1.0"] {
        let err = Builder::new().kernel_profile(bad).build().expect_err(bad);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("`{bad}`")), "{msg}");
        assert!(msg.contains("Builder::kernel_profile"), "{msg}");
        assert!(msg.contains("5.19, 6.1, 6.8"), "{msg}");
    }
    // The last call wins, and a failed build leaves the thread free.
    let rt = Builder::new()
        .kernel_profile("4.0")
        .kernel_profile("6.8")
        .build()
        .unwrap();
    assert_eq!(
        rt.features().kernel_profile(),
        Some("Builder::kernel_profile(\"6.8\")")
    );
}

/// `RUNTIME_KERNEL` (process-wide, so in a child process): the profile it names, reported
/// as `RUNTIME_KERNEL=...` and by `RUNTIME_LOG=1`; a bad value fails the build.
#[test]
fn runtime_kernel_env_picks_the_profile() {
    if let Ok(v) = std::env::var("RT_KERNEL_CHILD") {
        match Builder::new().build() {
            Ok(rt) => {
                let e = PROFILES.iter().find(|e| e.name == v).expect("a good value");
                check(
                    e,
                    rt.flags(),
                    &rt.features(),
                    &format!("RUNTIME_KERNEL={v}"),
                );
                println!("child checked");
            }
            Err(err) => {
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
                assert!(
                    err.to_string().contains("RUNTIME_KERNEL names `bogus`"),
                    "{err}"
                );
                assert!(err.to_string().contains("5.19, 6.1, 6.8"), "{err}");
                println!("child refused");
            }
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for v in ["5.19", "6.1", "6.8", "bogus"] {
        let out = std::process::Command::new(&exe)
            .args([
                "runtime_kernel_env_picks_the_profile",
                "--exact",
                "--nocapture",
            ])
            .env("RT_KERNEL_CHILD", v)
            .env("RUNTIME_KERNEL", v)
            .env("RUNTIME_LOG", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "RUNTIME_KERNEL={v}: {stderr}");
        if v == "bogus" {
            assert!(stdout.contains("child refused"), "{stdout}");
        } else {
            assert!(stdout.contains("child checked"), "{stdout}");
            let said = format!("kernel profile on (RUNTIME_KERNEL={v})");
            assert!(
                stderr.contains(&said),
                "RUNTIME_LOG=1 says the profile is on: {stderr}"
            );
        }
    }
}
