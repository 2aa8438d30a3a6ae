//! The ring's kernel features (`runtime::Features`): what a default build is granted on
//! this kernel, each `Builder` switch turning its feature off (and the runtime still
//! running every kind of op on the fallback path), and `recv_buffers`' bad input.

mod common;

use std::io;
use std::time::Duration;

use common::kernel_version;
use runtime::{Backend, Builder, Features};

/// Each feature: its name (as `Display` prints it), the first kernel that has it, and its
/// state in `f`.
fn each(f: &Features) -> [(&'static str, (u32, u32), bool); 10] {
    [
        ("registered_ring_fd", (5, 18), f.registered_ring_fd),
        ("no_sqarray", (6, 6), f.no_sqarray),
        ("min_timeout", (6, 12), f.min_timeout),
        ("buf_ring", (5, 19), f.buf_ring),
        ("recv_multishot", (6, 0), f.recv_multishot),
        ("recv_bundle", (6, 10), f.recv_bundle),
        ("direct_descriptors", (5, 19), f.direct_descriptors),
        ("fixed_fd_install", (6, 8), f.fixed_fd_install),
        // 6.12 has it, but the runtime takes it only where CQE order is kept (6.16).
        ("recv_incremental", (6, 16), f.recv_incremental),
        ("recv_limit", (6, 17), f.recv_limit),
    ]
}

/// Every feature this kernel is new enough for is granted; one the kernel is too old for
/// fails under `CORERING_REQUIRE_FEATURES=1` (`runtime::ext::testing::require`), and is
/// otherwise reported off, named `(kernel)`.
fn assert_all_granted(f: &Features) {
    let kernel = kernel_version();
    let line = f.to_string();
    for (name, since, on) in each(f) {
        let what = format!("{name} (Linux {}.{})", since.0, since.1);
        if !runtime::ext::testing::require(&what, kernel >= since) {
            if !on {
                // Off for the kernel, or for the kernel profile that stands for an older one.
                let profile = std::env::var("RUNTIME_KERNEL")
                    .map(|k| format!("{name} (RUNTIME_KERNEL={k})"))
                    .unwrap_or_default();
                assert!(
                    line.contains(&format!("{name} (kernel)"))
                        || (!profile.is_empty() && line.contains(&profile)),
                    "{line}"
                );
            }
            continue;
        }
        assert!(on, "{name} not granted on kernel {kernel:?}: {f}");
    }
}

/// Whether `f` is the epoll backend's; if so, checks what it promises there: every io_uring
/// feature off, each named `(epoll backend)` by `Display` (neither the builder nor the
/// kernel).
fn epoll_checked(f: &Features) -> bool {
    if f.backend != Backend::Epoll {
        return false;
    }
    // Under CORERING_REQUIRE_FEATURES=1 the io_uring pass must not fall back unseen.
    runtime::ext::testing::require("the io_uring backend", false);
    let line = f.to_string();
    for (name, _, on) in each(f) {
        // The backend carries out provided-buffer rings and multishot receives (with their
        // byte limit) itself.
        let epoll_has = matches!(name, "buf_ring" | "recv_multishot" | "recv_limit");
        if on {
            assert!(epoll_has, "{name} granted on the epoll backend: {line}");
            continue;
        }
        assert!(
            line.contains(&format!("{name} (epoll backend)"))
                || line.contains(&format!("{name} (builder)")),
            "{name}: Display names why it is off: {line}"
        );
    }
    assert!(line.starts_with("backend: epoll ("), "{line}");
    assert!(!line.contains("(kernel)"), "{line}");
    true
}

/// Runs every kind of op on `builder`'s runtime (two cores): nop, a linked chain, a pipe's
/// write and read, timers, a task on the other core (its ops and a cross-core wake), and
/// `spawn_blocking`. Returns each core's features as its tasks saw them.
fn exercise(builder: Builder) -> (runtime::Runtime, Vec<Features>) {
    let rt = builder.cores(2).build().expect("build");
    let seen = rt.block_on(async {
        let here = runtime::features().expect("inside a runtime");
        // A chain among them: the wait for it asks for a batch (a min-timeout wait where
        // granted).
        common::basic_ops().await;
        let other = runtime::spawn_on(1, async {
            runtime::ext::raw::nop().await.expect("nop on core 1");
            runtime::time::sleep(Duration::from_millis(1)).await;
            (runtime::current_core(), runtime::features())
        })
        .await
        .expect("core 1's task");
        assert_eq!(other.0, Some(1));
        let blocking = runtime::spawn_blocking(|| 6 * 7)
            .await
            .expect("blocking job");
        assert_eq!(blocking, 42);
        vec![here, other.1.expect("core 1 is a runtime")]
    });
    assert_eq!(seen, rt.core_features(), "runtime::features() per core");
    (rt, seen)
}

#[test]
fn default_build_grants_every_feature_on_this_kernel() {
    let (rt, seen) = exercise(Builder::new());
    let epoll = seen[0].backend == Backend::Epoll;
    for f in &seen {
        assert_eq!(
            f.backend, seen[0].backend,
            "every core runs one backend: {f}"
        );
        if epoll_checked(f) {
            assert!(
                f.buf_ring && f.recv_multishot,
                "the default read path on epoll: {f}"
            );
        } else {
            assert_all_granted(f);
        }
        assert_eq!(f.recv_ring_entries, 1024);
        assert_eq!(f.recv_ring_buf_len, 16384);
    }
    assert_eq!(rt.features(), seen[0]);
    assert_eq!(rt.core_flags()[0].no_sqarray, rt.features().no_sqarray);
    let line = rt.features().to_string();
    if epoll {
        eprintln!("checked the epoll backend: its features, the runtime runs: {line}");
        return;
    }
    assert!(line.starts_with("backend: io_uring ("), "{line}");
    assert!(line.contains("; granted: "), "{line}");
    assert!(!line.contains("(builder)"), "{line}");
    eprintln!("features: {line}");
}

#[test]
fn features_are_none_outside_a_runtime() {
    assert_eq!(runtime::features(), None);
    let rt = Builder::new().build().unwrap();
    // Built but not running on this thread: no core is current.
    assert_eq!(runtime::features(), None);
    assert_eq!(
        rt.block_on(async { runtime::features() }),
        Some(rt.features())
    );
}

/// Each switch off: its feature is off, the reason is the builder, the rest is as on a
/// default build, and the runtime runs every op.
#[test]
fn each_switch_off_turns_its_feature_off_and_the_runtime_still_runs() {
    type Switch = fn(Builder) -> Builder;
    let switches: [(&str, Switch); 7] = [
        ("registered_ring_fd", |b| b.registered_ring_fd(false)),
        ("no_sqarray", |b| b.no_sqarray(false)),
        ("min_timeout", |b| b.min_timeout(false)),
        ("recv_multishot", |b| b.recv_multishot(false)),
        ("recv_bundle", |b| b.recv_bundle(false)),
        ("direct_descriptors", |b| b.direct_descriptors(false)),
        ("recv_incremental", |b| b.recv_incremental(false)),
    ];
    let mut epoll = false;
    for (off, switch) in switches {
        let (rt, seen) = exercise(switch(Builder::new()));
        for f in &seen {
            epoll |= epoll_checked(f);
            let line = f.to_string();
            for (name, _, on) in each(f) {
                if name == off {
                    assert!(!on, "{off} off by the builder, yet granted: {line}");
                }
            }
            assert!(
                line.contains(&format!("{off} (builder)")),
                "{off}: Display names the builder: {line}"
            );
            assert_eq!(line.matches("(builder)").count(), 1, "{line}");
        }
        if off == "no_sqarray" {
            assert!(!rt.flags().no_sqarray, "{}", rt.flags());
        }
    }
    if epoll {
        eprintln!("checked the epoll backend: each switch turns its feature off, the runtime runs");
    }
}

#[test]
fn every_switch_off_at_once_still_runs() {
    let b = Builder::new()
        .registered_ring_fd(false)
        .no_sqarray(false)
        .min_timeout(false)
        .recv_multishot(false)
        .recv_bundle(false)
        .recv_incremental(false)
        .direct_descriptors(false);
    let (_rt, seen) = exercise(b);
    for f in &seen {
        assert!(
            !f.registered_ring_fd && !f.no_sqarray && !f.min_timeout,
            "{f}"
        );
        assert!(
            !f.recv_multishot && !f.recv_bundle && !f.direct_descriptors && !f.recv_incremental,
            "{f}"
        );
        epoll_checked(f);
        assert_eq!(f.to_string().matches("(builder)").count(), 7, "{f}");
    }
}

/// The legacy setup flags off as well (no DEFER_TASKRUN, no SINGLE_ISSUER, no COOP_TASKRUN)
/// with every feature switch off: the oldest path the driver has.
#[test]
fn no_flags_and_no_features_still_runs() {
    let b = Builder::new()
        .single_issuer(false)
        .coop_taskrun(false)
        .registered_ring_fd(false)
        .no_sqarray(false)
        .min_timeout(false)
        .direct_descriptors(false);
    exercise(b);
}

/// A registered ring fd is unregistered when its runtime is dropped: a thread has room for
/// 16, and each runtime built after the last one is dropped gets one again.
#[test]
fn registered_ring_fds_are_given_back() {
    let mut epoll = false;
    for i in 0..40 {
        let rt = Builder::new().entries(8).build().unwrap();
        if epoll_checked(&rt.features()) {
            // No ring fd to register: the feature reads off.
            epoll = true;
        } else if runtime::ext::testing::require(
            "registered_ring_fd (Linux 5.18)",
            kernel_version() >= (5, 18),
        ) {
            assert!(
                rt.features().registered_ring_fd,
                "runtime {i}: {}",
                rt.features()
            );
        } else {
            assert!(!rt.features().registered_ring_fd, "{}", rt.features());
        }
        rt.block_on(async { runtime::ext::raw::nop().await.unwrap() });
    }
    if epoll {
        eprintln!("checked the epoll backend: registered_ring_fd is off, 40 runtimes ran");
    }
}

#[test]
fn recv_buffers_are_reported() {
    let rt = Builder::new().recv_buffers(1, 1 << 20).build().unwrap();
    let f = rt.features();
    assert_eq!((f.recv_ring_entries, f.recv_ring_buf_len), (1, 1 << 20));
    assert!(f.to_string().ends_with("recv buffers 1x1048576"), "{f}");
    drop(rt);
    let rt = Builder::new().recv_buffers(32768, 1).build().unwrap();
    let f = rt.features();
    assert_eq!((f.recv_ring_entries, f.recv_ring_buf_len), (32768, 1));
}

#[test]
fn recv_buffers_bad_input_is_invalid_input_naming_the_values() {
    for (entries, len) in [
        (0u16, 16384u32),
        (3, 16384),
        (1000, 16384),
        (u16::MAX, 16384),
        (1024, 0),
        (1024, (1 << 20) + 1),
        (1024, u32::MAX),
    ] {
        let err = Builder::new()
            .recv_buffers(entries, len)
            .build()
            .expect_err("out of range");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("entries = {entries}")) && msg.contains(&format!("len = {len}")),
            "({entries}, {len}): {msg}"
        );
    }
    // A failed build leaves the thread free for the next runtime.
    Builder::new().build().unwrap();
}

/// `RUNTIME_DISABLE` turns switches off in every builder (run in a child process, since the
/// variable is process-wide): known names are off, an unknown one fails the build.
#[test]
fn runtime_disable_turns_features_off() {
    if std::env::var_os("RT_FEATURES_CHILD").is_some() {
        let expect_bad = std::env::var("RUNTIME_DISABLE").unwrap().contains("bogus");
        match runtime::Builder::new().build() {
            Ok(rt) => {
                assert!(!expect_bad, "an unknown name must fail the build");
                let f = rt.features();
                assert!(!f.direct_descriptors && !f.recv_multishot, "{f}");
                if epoll_checked(&f) {
                    println!("child on the epoll backend");
                }
                assert!(f.to_string().contains("(builder)"), "{f}");
            }
            Err(e) => {
                assert!(expect_bad, "{e}");
                assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
                assert!(e.to_string().contains("bogus"), "{e}");
            }
        }
        println!("child checked");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for list in ["direct_descriptors, recv_multishot", "recv_multishot,bogus"] {
        let out = std::process::Command::new(&exe)
            .args([
                "runtime_disable_turns_features_off",
                "--exact",
                "--nocapture",
            ])
            .env("RT_FEATURES_CHILD", "1")
            .env("RUNTIME_DISABLE", list)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "RUNTIME_DISABLE={list}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("child checked"), "the child ran no check");
        if stdout.contains("child on the epoll backend") {
            eprintln!("RUNTIME_DISABLE={list}: checked the epoll backend: every feature off");
        }
    }
}
