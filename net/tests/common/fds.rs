//! This process's open fds and the direct descriptors its rings hold; every fd taken
//! ([`Exhausted`]).

use std::fs::File;

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

/// Takes every fd below a limit lowered to a little above what is open now; gives back the
/// old limit and the fds when dropped.
pub struct Exhausted {
    old: libc::rlimit,
    fillers: Vec<File>,
}

impl Exhausted {
    /// Lowers the limit and opens `/dev/null` until `EMFILE`.
    pub fn new() -> Exhausted {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `old` is a live rlimit for the call to fill.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) }, 0);
        let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
        let low = libc::rlimit {
            rlim_cur: (open + 32).min(old.rlim_cur),
            rlim_max: old.rlim_max,
        };
        // SAFETY: `low` is a live rlimit for the call to read.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
        let mut fillers = Vec::new();
        loop {
            match File::open("/dev/null") {
                Ok(f) => fillers.push(f),
                Err(e) if e.raw_os_error() == Some(libc::EMFILE) => break,
                Err(e) => panic!("filling the fd table: {e}"),
            }
            assert!(fillers.len() < 1 << 20, "no EMFILE under the lowered limit");
        }
        Exhausted { old, fillers }
    }
}

impl Drop for Exhausted {
    fn drop(&mut self) {
        self.fillers.clear();
        // SAFETY: `old` is a live rlimit for the call to read.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.old) };
    }
}
