//! `syscall-probe`: tries `io_uring_setup(2)` and `epoll_create1(2)` once each and prints
//! whether they worked, one line per call:
//!
//! ```text
//! io_uring_setup: ok
//! epoll_create1: EPERM
//! ```
//!
//! The result is `ok`, the errno's name for `EPERM` and `ENOSYS`, or `errno N` for any
//! other error. The tests run it under `seccomp-deny` to check that the filter refuses what
//! it should and nothing else. Any file descriptor a call returns is closed. Exit status 0
//! unless writing to stdout fails.

use std::io::{self, Write};
use std::process::ExitCode;

/// `struct io_uring_params` is 120 bytes (`sq_entries` .. `cq_off`); all zero asks for the
/// defaults. `u64` elements keep it aligned for the kernel's view of the struct.
type IoUringParams = [u64; 15];

fn main() -> ExitCode {
    let mut params: IoUringParams = [0; 15];
    // SAFETY: io_uring_setup(entries, params) reads and writes the 120-byte
    // `io_uring_params` at `params`, which is valid, writable and exactly that large.
    let uring = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            2 as libc::c_uint,
            params.as_mut_ptr(),
        )
    };
    let uring = outcome(uring);

    // SAFETY: epoll_create1 takes only a flags integer.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    let epoll = outcome(libc::c_long::from(epoll));

    let mut out = io::stdout().lock();
    match writeln!(out, "io_uring_setup: {uring}\nepoll_create1: {epoll}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Describes a call's result (`ok`, `EPERM`, `ENOSYS`, `errno N`) and closes the file
/// descriptor it returned, if any. Must run right after the call, before errno changes.
fn outcome(rc: libc::c_long) -> String {
    if rc >= 0 {
        if let Ok(fd) = libc::c_int::try_from(rc) {
            // SAFETY: `fd` was just returned by the kernel to this process and nothing
            // else owns it. A failed close is of no interest here.
            unsafe { libc::close(fd) };
        }
        return "ok".to_owned();
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EPERM) => "EPERM".to_owned(),
        Some(libc::ENOSYS) => "ENOSYS".to_owned(),
        Some(n) => format!("errno {n}"),
        None => "error".to_owned(),
    }
}
