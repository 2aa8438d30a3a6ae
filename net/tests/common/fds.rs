//! This process's open fds and the direct descriptors its rings hold.

// Not every test binary that includes this module uses both.
#[allow(unused_imports)]
pub use runtime::ext::testing::{open_fds, table_slots_in_use};

/// Whether the current core accepts into its fixed-file table (direct descriptors, with
/// `FIXED_FD_INSTALL` to make a regular fd on demand).
pub fn direct() -> bool {
    runtime::features().is_some_and(|f| f.direct_descriptors && f.fixed_fd_install)
}

/// [`direct`], for a test that is about direct descriptors: asked through
/// `runtime::ext::testing::require`, so without them a failure under
/// `CORERING_REQUIRE_FEATURES=1`, and otherwise `false`, for the test to check the fallback
/// instead (accepted sockets are regular fds).
#[track_caller]
pub fn require_direct() -> bool {
    runtime::ext::testing::require("direct_descriptors (with fixed_fd_install)", direct())
}
