//! This process's open fds and the direct descriptors its rings hold.

/// Open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

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

/// Occupied slots of the fixed-file tables of this process's rings: each ring's fdinfo lists
/// its occupied slots after `UserFiles:`.
pub fn table_slots_in_use() -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
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
