//! [`Builder`]: the backend, the ring's flags and features, the read path's ring, the
//! cores and their CPUs, the blocking pool, `RUNTIME_DISABLE`, `RUNTIME_BACKEND` and
//! `RUNTIME_KERNEL`;
//! [`Builder::build`] (build.rs) starts the cores.

mod build;

use std::time::Duration;

use crate::blocking;
use crate::driver::kernel::Profile;
use crate::driver::{feature_bit as bit, Backend, RingConfig};
use crate::executor::Placement;

/// Configures and builds a [`Runtime`](crate::Runtime).
///
/// Every setup flag and kernel feature is asked for by default; one this kernel lacks is
/// left off silently, and [`Runtime::flags`](crate::Runtime::flags) and [`Runtime::features`](crate::Runtime::features) say what each core
/// got. The feature switches ([`registered_ring_fd`](Builder::registered_ring_fd),
/// [`no_sqarray`](Builder::no_sqarray), [`min_timeout`](Builder::min_timeout),
/// [`recv_multishot`](Builder::recv_multishot), [`recv_bundle`](Builder::recv_bundle),
/// [`recv_incremental`](Builder::recv_incremental),
/// [`direct_descriptors`](Builder::direct_descriptors)) turn one off on purpose: to
/// compare, or to run the fallback path on a kernel that has the feature.
///
/// # Examples
///
/// ```
/// use runtime::Builder;
///
/// // Two cores (this thread is core 0), a 64-entry SQ, smaller receive buffers, no pinning.
/// let rt = Builder::new()
///     .cores(2)
///     .entries(64)
///     .recv_buffers(256, 4096)
///     .pin(false)
///     .build()?;
/// println!("granted: {}", rt.flags());
/// println!("{}", rt.features());
/// assert_eq!(rt.cores(), 2);
/// let on = rt.block_on(async { runtime::spawn_on(1, async { runtime::current_core() }).await });
/// assert_eq!(on.unwrap(), Some(1));
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Turning a feature off, to compare it or to run its fallback path:
///
/// ```
/// let rt = runtime::Builder::new().recv_multishot(false).build()?;
/// assert!(!rt.features().recv_multishot);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    entries: u32,
    cq_entries: Option<u32>,
    single_issuer: bool,
    defer_taskrun: bool,
    coop_taskrun: bool,
    cores: usize,
    cpus: Option<Vec<usize>>,
    pin: Option<bool>,
    placement: Placement,
    histograms: bool,
    max_blocking_threads: usize,
    thread_keep_alive: Duration,
    no_sqarray: bool,
    /// The features asked for (`driver::features::bit`s).
    features: u16,
    recv_buffers: (u16, u32),
    /// See [`Builder::fixed_files`].
    fixed_files: Option<u32>,
    /// A name in `RUNTIME_DISABLE` that is no feature: `build` reports it.
    bad_disable: Option<String>,
    /// See [`Builder::backend`].
    backend: Backend,
    /// Who chose `backend` (for [`Features::backend_reason`](crate::Features)).
    backend_why: &'static str,
    /// A `RUNTIME_BACKEND` value that is no backend: `build` reports it.
    bad_backend: Option<String>,
    /// See [`Builder::kernel_profile`].
    kernel: Option<Profile>,
    /// A kernel profile name that is none, and who gave it: `build` reports it.
    bad_kernel: Option<(String, &'static str)>,
}

/// The feature names `RUNTIME_DISABLE` takes, and their switches.
pub(crate) const DISABLE_NAMES: [(&str, u16); 7] = [
    ("registered_ring_fd", bit::REGISTERED_RING_FD),
    ("no_sqarray", bit::NO_SQARRAY),
    ("min_timeout", bit::MIN_TIMEOUT),
    ("recv_multishot", bit::RECV_MULTISHOT),
    ("recv_bundle", bit::RECV_BUNDLE),
    ("direct_descriptors", bit::DIRECT_DESCRIPTORS),
    ("recv_incremental", bit::RECV_INCREMENTAL),
];

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Which I/O backend the cores run (default [`Backend::Auto`]: io_uring where the
    /// kernel allows it, else epoll). Overrides `RUNTIME_BACKEND`. [`Backend::Epoll`]
    /// runs the readiness backend even where io_uring is allowed (to compare, or to test
    /// what a container that refuses io_uring will run); [`Backend::IoUring`] makes
    /// [`build`](Builder::build) fail where io_uring is refused rather than fall back.
    /// [`Runtime::features`](crate::Runtime::features) says which runs, and why.
    ///
    /// ```
    /// use runtime::{Backend, Builder};
    ///
    /// let rt = Builder::new().backend(Backend::Epoll).build()?;
    /// assert_eq!(rt.features().backend, Backend::Epoll);
    /// assert!(!rt.features().direct_descriptors, "io_uring-only features are off on epoll");
    /// let n = rt.block_on(async {
    ///     runtime::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     7
    /// });
    /// assert_eq!(n, 7);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn backend(mut self, backend: Backend) -> Builder {
        self.backend = backend;
        self.backend_why = "forced by Builder::backend";
        self.bad_backend = None;
        self
    }

    /// A builder with 256 SQ entries and every fast setup flag and kernel feature asked
    /// for, less those the `RUNTIME_DISABLE` environment variable names.
    ///
    /// `RUNTIME_BACKEND` (`auto`, `io_uring` or `epoll`) chooses the backend as
    /// [`backend`](Builder::backend) does; another value makes [`build`](Builder::build)
    /// fail with `InvalidInput`.
    ///
    /// `RUNTIME_KERNEL` (`5.19`, `6.1` or `6.8`) makes the runtime behave as on that
    /// kernel, as [`kernel_profile`](Builder::kernel_profile) does.
    ///
    /// `RUNTIME_DISABLE` is a comma-separated list of feature switches to turn off in every
    /// runtime the process builds (`registered_ring_fd`, `no_sqarray`, `min_timeout`,
    /// `recv_multishot`, `recv_bundle`, `recv_incremental`, `direct_descriptors`): a way to run a program or a
    /// test suite on the fallback paths without changing it. An unknown name makes
    /// [`build`](Builder::build) fail with `InvalidInput`.
    pub fn new() -> Builder {
        let mut b = Builder::plain();
        if let Some(list) = std::env::var_os("RUNTIME_DISABLE") {
            for name in list.to_string_lossy().split(',').map(str::trim) {
                match DISABLE_NAMES.iter().find(|(n, _)| *n == name) {
                    Some(&(n, bit)) => {
                        b = b.feature(bit, false);
                        if n == "no_sqarray" {
                            b.no_sqarray = false;
                        }
                    }
                    None if name.is_empty() => {}
                    None => b.bad_disable = Some(name.to_string()),
                }
            }
        }
        if let Some(v) = std::env::var_os("RUNTIME_BACKEND") {
            match v.to_string_lossy().parse::<Backend>() {
                Ok(backend) => {
                    b.backend = backend;
                    b.backend_why = "forced by RUNTIME_BACKEND";
                }
                Err(_) => b.bad_backend = Some(v.to_string_lossy().into_owned()),
            }
        }
        if let Some(v) = std::env::var_os("RUNTIME_KERNEL") {
            let v = v.to_string_lossy();
            b.kernel = Profile::named(&v, true);
            if b.kernel.is_none() {
                b.bad_kernel = Some((v.into_owned(), "RUNTIME_KERNEL"));
            }
        }
        b
    }

    /// Behave as on Linux `version` (`"5.19"`, `"6.1"` or `"6.8"`), on this newer kernel:
    /// every setup flag, [`Features`](crate::Features) field and io_uring op that release
    /// lacks is off or refused as that kernel refuses it (the opcode probe says unsupported,
    /// an op it lacks answers `EINVAL`), so a program or test suite runs the paths it would
    /// run there. Overrides `RUNTIME_KERNEL`, which [`Builder::new`] reads the same way.
    /// [`Runtime::features`](crate::Runtime::features) names the profile as the reason a
    /// feature is off (`recv_bundle (RUNTIME_KERNEL=6.1)`), and `RUNTIME_LOG=1` says it is
    /// on. The table of what came in which release is in ARCHITECTURE.md ("Kernel
    /// profiles"). No effect on the epoll backend.
    ///
    /// [`build`](Builder::build) fails with `InvalidInput`, naming the accepted values, for
    /// any other `version`.
    ///
    /// ```
    /// let rt = runtime::Builder::new().kernel_profile("6.1").build()?;
    /// if rt.features().backend == runtime::Backend::IoUring {
    ///     assert!(!rt.features().recv_bundle, "bundles came in 6.10");
    ///     assert!(!rt.flags().no_sqarray, "NO_SQARRAY came in 6.6");
    ///     assert_eq!(rt.features().kernel_profile(), Some("Builder::kernel_profile(\"6.1\")"));
    /// }
    /// assert!(runtime::Builder::new().kernel_profile("5.15").build().is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kernel_profile(mut self, version: &str) -> Builder {
        self.kernel = Profile::named(version, false);
        self.bad_kernel = match self.kernel {
            Some(_) => None,
            None => Some((version.to_string(), "Builder::kernel_profile")),
        };
        self
    }

    /// The builder before `RUNTIME_DISABLE`.
    fn plain() -> Builder {
        Builder {
            entries: 256,
            cq_entries: None,
            single_issuer: true,
            defer_taskrun: true,
            coop_taskrun: true,
            cores: 1,
            cpus: None,
            pin: None,
            placement: Placement::Local,
            histograms: false,
            max_blocking_threads: blocking::DEFAULT_MAX_THREADS,
            thread_keep_alive: blocking::DEFAULT_KEEP_ALIVE,
            no_sqarray: true,
            features: bit::ALL,
            recv_buffers: {
                let d = RingConfig::all(1, 1);
                (d.recv_ring_entries, d.recv_ring_buf_len)
            },
            fixed_files: None,
            bad_disable: None,
            backend: Backend::Auto,
            backend_why: "",
            bad_backend: None,
            kernel: None,
            bad_kernel: None,
        }
    }

    fn feature(mut self, b: u16, on: bool) -> Builder {
        if on {
            self.features |= b;
        } else {
            self.features &= !b;
        }
        self
    }

    /// Register each ring's own fd and enter the kernel through the registered index
    /// (`IORING_REGISTER_RING_FDS`, `IORING_ENTER_REGISTERED_RING`, Linux 5.18; default on):
    /// each `io_uring_enter(2)` skips an fd lookup. See [`Features::registered_ring_fd`](crate::Features::registered_ring_fd).
    pub fn registered_ring_fd(self, on: bool) -> Builder {
        self.feature(bit::REGISTERED_RING_FD, on)
    }

    /// Ask for `IORING_SETUP_NO_SQARRAY` (Linux 6.6; default on): the kernel reads SQEs in
    /// ring order, without the SQ array's indirection. See [`Features::no_sqarray`](crate::Features::no_sqarray).
    pub fn no_sqarray(mut self, on: bool) -> Builder {
        self.no_sqarray = on;
        self.feature(bit::NO_SQARRAY, on)
    }

    /// Let a wait for a batch of completions (a task waiting on a linked chain) carry a
    /// minimum timeout of a few microseconds (`min_wait_usec`, `IORING_FEAT_MIN_TIMEOUT`,
    /// Linux 6.12; default on), so the batch arrives in one wake. An idle core's wait is the
    /// same either way. See [`Features::min_timeout`](crate::Features::min_timeout).
    pub fn min_timeout(self, on: bool) -> Builder {
        self.feature(bit::MIN_TIMEOUT, on)
    }

    /// Let sockets read with multishot receives from a per-core provided-buffer ring
    /// (`IORING_RECV_MULTISHOT`, Linux 6.0, with buffer rings; default on). Off, reads use
    /// the caller's buffers. See [`Features::recv_multishot`](crate::Features::recv_multishot).
    pub fn recv_multishot(self, on: bool) -> Builder {
        self.feature(bit::RECV_MULTISHOT, on)
    }

    /// Let receives from the provided-buffer ring take several buffers per completion
    /// (`IORING_FEAT_RECVSEND_BUNDLE`, Linux 6.10; default on). See
    /// [`Features::recv_bundle`](crate::Features::recv_bundle).
    pub fn recv_bundle(self, on: bool) -> Builder {
        self.feature(bit::RECV_BUNDLE, on)
    }

    /// Let the kernel consume the read path's buffers incrementally (`IOU_PBUF_RING_INC`,
    /// Linux 6.12, taken on 6.16 or newer; default on): a receive takes only the bytes it
    /// needs from the buffer at the ring's head, so small messages pack into one buffer.
    /// See [`Features::recv_incremental`](crate::Features::recv_incremental).
    pub fn recv_incremental(self, on: bool) -> Builder {
        self.feature(bit::RECV_INCREMENTAL, on)
    }

    /// Register a sparse fixed-file table on each ring for direct descriptors (Linux 5.19;
    /// default on), sized to the process's `RLIMIT_NOFILE` soft limit, at most 65536 (or
    /// [`fixed_files`](Builder::fixed_files)). With `FIXED_FD_INSTALL` too (Linux 6.8),
    /// `net` accepts TCP connections into it: ops name the table index instead of an fd, and
    /// a regular fd is made only when asked for. Off, every socket is a regular fd. See
    /// [`Features::direct_descriptors`](crate::Features::direct_descriptors).
    pub fn direct_descriptors(self, on: bool) -> Builder {
        self.feature(bit::DIRECT_DESCRIPTORS, on)
    }

    /// The number of slots of each ring's direct-descriptor table (default: the process's
    /// `RLIMIT_NOFILE` soft limit at setup, at most 65536), which bounds the connections a
    /// core holds as direct descriptors at once. A full table is survived: an accept that
    /// finds no free slot fails with `ENFILE` (the kernel closes that connection), which
    /// `incoming()` yields and then backs off, as for `EMFILE`.
    ///
    /// [`Builder::build`] fails with `InvalidInput`, naming the values, if `n` is 0 or more
    /// than the `RLIMIT_NOFILE` soft limit (the kernel refuses a larger table). Has no effect
    /// with [`direct_descriptors`](Builder::direct_descriptors) off. See
    /// [`Features::fixed_files`](crate::Features::fixed_files).
    pub fn fixed_files(mut self, n: u32) -> Builder {
        self.fixed_files = Some(n);
        self
    }

    /// The per-core provided-buffer ring of the read path: `entries` buffers (a power of
    /// two, 1..=32768; default 1024) of `len` bytes each (1..=1 MiB; default 16384).
    /// [`Builder::build`] fails with `InvalidInput`, naming the values, if either is out of
    /// range. See [`Features::recv_ring_entries`](crate::Features::recv_ring_entries).
    pub fn recv_buffers(mut self, entries: u16, len: u32) -> Builder {
        self.recv_buffers = (entries, len);
        self
    }
    /// Whether each core's thread is pinned to one CPU. By default a runtime of more than
    /// one core pins (core `i` to the `i`-th allowed CPU, or to [`cpus`](Builder::cpus)),
    /// and a one-core runtime pins only when given `cpus`. `pin(false)` runs every core
    /// unpinned (the scheduler may move them), e.g. when several runtimes or other
    /// programs share the CPUs.
    pub fn pin(mut self, on: bool) -> Builder {
        self.pin = Some(on);
        self
    }

    /// Where [`spawn`](crate::spawn) puts a `Send` task on a runtime of several cores:
    /// [`Placement::Local`] (the default: on the spawning core, taken by an idle core
    /// before its first poll) or [`Placement::RoundRobin`] (dealt out over the cores, never
    /// moved). [`spawn_on`](crate::spawn_on) and [`spawn_local`](crate::spawn_local) place
    /// tasks explicitly under either.
    ///
    /// ```
    /// let rt = runtime::Builder::new()
    ///     .cores(2)
    ///     .spawn_placement(runtime::Placement::RoundRobin)
    ///     .build()?;
    /// let cores = rt.block_on(async {
    ///     let a = runtime::spawn(async { runtime::current_core() });
    ///     let b = runtime::spawn(async { runtime::current_core() });
    ///     (a.await.unwrap(), b.await.unwrap())
    /// });
    /// assert_eq!(cores, (Some(0), Some(1)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn spawn_placement(mut self, placement: Placement) -> Builder {
        self.placement = placement;
        self
    }

    /// Record each core's poll-time and schedule-delay histograms (default off), read
    /// through [`RuntimeMetrics`](crate::RuntimeMetrics) (`poll_time_histogram_*`,
    /// `schedule_delay_histogram_bucket_count`) and in its Prometheus text. Costs two clock
    /// reads per task poll and one per wake; chosen when the runtime is built.
    pub fn metrics_histograms(mut self, on: bool) -> Builder {
        self.histograms = on;
        self
    }

    /// The most threads the blocking pool ([`spawn_blocking`](crate::spawn_blocking)) runs
    /// at once (default 512; at least 1). Further jobs wait for a free thread.
    pub fn max_blocking_threads(mut self, n: usize) -> Builder {
        self.max_blocking_threads = n.max(1);
        self
    }

    /// How long an idle blocking-pool thread waits for a job before it exits (default 10 s).
    pub fn thread_keep_alive(mut self, keep_alive: Duration) -> Builder {
        self.thread_keep_alive = keep_alive;
        self
    }

    /// Runs `n` cores: the building thread is core 0, and `n - 1` worker threads are started,
    /// each with its own ring. With more than one core, every core's thread (the building
    /// thread too) is pinned to its own CPU: the i-th allowed CPU, or the i-th of
    /// [`Builder::cpus`].
    pub fn cores(mut self, n: usize) -> Builder {
        self.cores = n;
        self
    }

    /// The CPUs to pin cores to, in core order (wrapping around if there are more cores).
    ///
    /// [`Builder::build`] fails with an `InvalidInput` error naming the CPU if a core's CPU
    /// is `CPU_SETSIZE` (1024) or more, does not exist, is offline, or is outside this
    /// process's cpuset.
    pub fn cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Builder {
        self.cpus = Some(cpus.into_iter().collect());
        self
    }

    /// Submission queue entries (rounded up to a power of two by the kernel). The SQ never
    /// limits how many ops are in flight: a full SQ is submitted and refilled.
    pub fn entries(mut self, entries: u32) -> Builder {
        self.entries = entries;
        self
    }

    /// Completion queue entries; by default four times the SQ's, so bursts of completions
    /// rarely overflow (overflow is survived either way).
    pub fn cq_entries(mut self, entries: u32) -> Builder {
        self.cq_entries = Some(entries);
        self
    }

    /// Ask for `IORING_SETUP_SINGLE_ISSUER` (default on). Off also turns `DEFER_TASKRUN` off.
    pub fn single_issuer(mut self, on: bool) -> Builder {
        self.single_issuer = on;
        self
    }

    /// Ask for `IORING_SETUP_DEFER_TASKRUN` (default on; needs `SINGLE_ISSUER`).
    pub fn defer_taskrun(mut self, on: bool) -> Builder {
        self.defer_taskrun = on;
        self
    }

    /// Ask for `IORING_SETUP_COOP_TASKRUN` and `TASKRUN_FLAG` (default on).
    pub fn coop_taskrun(mut self, on: bool) -> Builder {
        self.coop_taskrun = on;
        self
    }
}
