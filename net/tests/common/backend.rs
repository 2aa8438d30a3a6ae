//! The backend a test's core runs: on epoll (the readiness backend) a few io_uring-only
//! behaviours differ (a zero-copy send is a plain one), and those tests check what epoll does.

/// Whether the current core runs the epoll backend. Panics outside a runtime.
pub fn on_epoll() -> bool {
    runtime::features().expect("inside a runtime").backend == runtime::Backend::Epoll
}
