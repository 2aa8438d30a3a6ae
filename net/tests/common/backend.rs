//! The backend a test's core runs: on epoll (the readiness backend) io_uring-only
//! facilities are refused, and the ring tests check that refusal instead.

use std::io;

use runtime::buf::BufRing;

/// Whether the current core runs the epoll backend. Panics outside a runtime.
pub fn on_epoll() -> bool {
    runtime::features().expect("inside a runtime").backend == runtime::Backend::Epoll
}

/// A provided-buffer ring of `entries` buffers of `len` bytes on io_uring. On the epoll
/// backend, asserts that `BufRing::new` is refused there (`Unsupported`, naming the
/// io_uring backend), says so for `test`, and returns `None`. Inside a runtime only.
pub fn buf_ring_or_epoll_refusal(entries: u16, len: u32, test: &str) -> Option<BufRing> {
    let res = BufRing::new(entries, len);
    if !on_epoll() {
        return Some(res.expect("a buffer ring on the io_uring backend"));
    }
    let err = match res {
        Ok(_) => panic!("{test}: the epoll backend granted a buffer ring"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), io::ErrorKind::Unsupported, "{test}: {err}");
    assert!(
        err.to_string().contains("need the io_uring backend"),
        "{test}: {err}"
    );
    eprintln!("{test}: checked the epoll refusal (BufRing::new: {err})");
    None
}
