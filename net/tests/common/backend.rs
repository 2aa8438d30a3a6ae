//! The backend a test's core runs: on epoll (the readiness backend) a few io_uring-only
//! behaviours differ (a zero-copy send is a plain one), and those tests check what epoll does.

/// Whether the current core runs the epoll backend. Panics outside a runtime.
pub fn on_epoll() -> bool {
    runtime::features().expect("inside a runtime").backend == runtime::Backend::Epoll
}

/// Runs `f` on a runtime of the default backend (`RUNTIME_BACKEND` decides), then on one of
/// the epoll backend where it can be built; one at a time (one runtime per thread).
pub fn on_each_backend(mut f: impl FnMut(&runtime::Runtime)) {
    f(&runtime::Runtime::new().unwrap());
    let epoll = runtime::Builder::new()
        .backend(runtime::Backend::Epoll)
        .build();
    if runtime::ext::testing::require("the epoll backend", epoll.is_ok()) {
        f(&epoll.unwrap());
    }
}
