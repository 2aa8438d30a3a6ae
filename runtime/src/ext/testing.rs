//! For the project's own tests: one way for a test to meet a missing kernel feature.
//!
//! A test that needs a kernel feature (a `Features` flag, a syscall a seccomp filter may
//! refuse, IPv6 loopback, enough fds) asks [`require`] whether it is there. Where it is, the
//! test runs in full. Where it is not:
//!
//! - with `CORERING_REQUIRE_FEATURES=1` in the environment (CI sets it on the io_uring pass,
//!   on a kernel that has every feature), [`require`] panics naming the feature: the test
//!   fails instead of passing without testing;
//! - otherwise [`require`] says on stderr what is missing and returns `false`, and the test
//!   asserts the documented fallback instead (the epoll backend's behaviour, the path taken
//!   with the feature switched off). A test that truly cannot run without the feature (no
//!   seccomp filter can be installed, no IPv6 on the host) may return then, only through
//!   this call.
//!
//! No test prints a skip and returns on its own.
//!
//! Also the leak checks' counts: [`open_fds`] and [`table_slots_in_use`].

/// The environment variable that turns a missing feature into a test failure.
pub const REQUIRE_VAR: &str = "CORERING_REQUIRE_FEATURES";

/// Whether `CORERING_REQUIRE_FEATURES` is set to a true value (`1`, `true`, `yes`, any case):
/// every feature a test asks for through [`require`] must then be present.
pub fn features_required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        v == "1" || v == "true" || v == "yes"
    })
}

/// Returns `present`. Where it is `false`, panics naming `feature` if
/// [`features_required`], and otherwise says on stderr that `feature` is missing and the
/// test takes its fallback instead (so the caller asserts the fallback's behaviour, or,
/// where none exists, returns).
///
/// `feature` names what is missing as a person would look it up: a `Features` field
/// (`"recv_bundle"`), a setup (`"a seccomp filter"`), a host property (`"IPv6 loopback"`).
///
/// # Panics
///
/// If `present` is `false` and `CORERING_REQUIRE_FEATURES=1`.
#[track_caller]
pub fn require(feature: &str, present: bool) -> bool {
    if present {
        return true;
    }
    let at = std::panic::Location::caller();
    if features_required() {
        let features =
            crate::features().map_or_else(|| "outside a runtime".into(), |f| f.to_string());
        panic!("{feature} is missing here, and {REQUIRE_VAR}=1 requires it ({at}; {features})");
    }
    eprintln!("note: {feature} is missing here ({at}): the test checks the fallback instead");
    false
}

/// Open file descriptors of this process (the entries of `/proc/self/fd`, the listing's own
/// included), for the leak checks.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Occupied slots of the fixed-file tables of this process's rings: each ring's fdinfo lists
/// its occupied slots after `UserFiles:`. For the leak checks of direct descriptors, which
/// hold no fd.
pub fn table_slots_in_use() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let mut n = 0;
    for entry in dir.flatten() {
        let Ok(link) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if link.to_string_lossy() != "anon_inode:[io_uring]" {
            continue;
        }
        let path = format!("/proc/self/fdinfo/{}", entry.file_name().to_string_lossy());
        let Ok(info) = std::fs::read_to_string(path) else {
            continue;
        };
        n += info
            .lines()
            .skip_while(|l| !l.starts_with("UserFiles:"))
            .skip(1)
            .take_while(|l| {
                let index = l.trim_start().split(':').next().unwrap_or("");
                index.parse::<u32>().is_ok()
            })
            .count();
    }
    n
}
