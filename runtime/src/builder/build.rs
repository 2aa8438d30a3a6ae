//! [`Builder::build`]: checks what the builder asks for, then starts the cores.

use std::io;
use std::rc::Rc;
use std::sync::Arc;

use super::{Builder, DISABLE_NAMES};
use crate::blocking::BlockingPool;
use crate::context;
use crate::cores::{self, Worker};
use crate::driver::{RingConfig, RingFlags};
use crate::executor::Core;
use crate::executor::CoreSet;
use crate::runtime::Runtime;

impl Builder {
    /// The flags and features this builder asks the kernel for.
    fn wanted(&self) -> io::Result<RingConfig> {
        if self.entries == 0 || self.entries > 32768 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ring entries must be 1..=32768, got {}", self.entries),
            ));
        }
        let sq = self.entries.next_power_of_two();
        let cq = self.cq_entries.unwrap_or(sq * 4).max(sq);
        let mut f = RingFlags::all(sq, cq);
        f.single_issuer = self.single_issuer;
        f.defer_taskrun = self.defer_taskrun && self.single_issuer;
        f.coop_taskrun = self.coop_taskrun;
        f.taskrun_flag = self.coop_taskrun;
        f.no_sqarray = self.no_sqarray;
        let (entries, len) = self.recv_buffers;
        let max_entries = crate::driver::features::MAX_RECV_RING_ENTRIES;
        let max_len = crate::driver::features::MAX_RECV_RING_BUF_LEN;
        if entries == 0 || !entries.is_power_of_two() || entries > max_entries {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "Builder::recv_buffers(entries = {entries}, len = {len}): entries must be \
                     a power of two in 1..={max_entries}, got {entries}"
                ),
            ));
        }
        if len == 0 || len > max_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "Builder::recv_buffers(entries = {entries}, len = {len}): len must be \
                     1..={max_len} bytes (1 MiB), got {len}"
                ),
            ));
        }
        if let Some(n) = self.fixed_files {
            let limit = crate::driver::probe::nofile_soft_limit();
            if n == 0 || u64::from(n) > limit {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "Builder::fixed_files({n}): the direct-descriptor table needs 1 to \
                         the process's RLIMIT_NOFILE soft limit ({limit}) slots, got {n}"
                    ),
                ));
            }
        }
        Ok(RingConfig {
            flags: f,
            asked: self.features,
            recv_ring_entries: entries,
            recv_ring_buf_len: len,
            fixed_files: self.fixed_files,
            backend: self.backend,
            backend_why: self.backend_why,
            profile: self.kernel,
        })
    }

    /// Which CPU each core is pinned to (`None`: not pinned), every CPU checked to fit a
    /// `cpu_set_t` before any thread is pinned or started.
    fn cpu_plan(&self) -> io::Result<impl Fn(usize) -> Option<usize>> {
        let cpus = match &self.cpus {
            Some(c) if c.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "Builder::cpus was given no CPU",
                ))
            }
            Some(c) => c.clone(),
            None => cores::allowed_cpus(),
        };
        let pin = self.pin.unwrap_or(self.cores > 1 || self.cpus.is_some());
        let cpu_of = move |i: usize| pin.then(|| cpus[i % cpus.len()]);
        for cpu in (0..self.cores).filter_map(&cpu_of) {
            cores::check_cpu(cpu)?;
        }
        Ok(cpu_of)
    }

    /// Starts worker cores 1..n; if one fails, stops those already started.
    fn start_workers(
        &self,
        cpu_of: &impl Fn(usize) -> Option<usize>,
        want: &RingConfig,
        set: &Arc<CoreSet>,
    ) -> io::Result<Vec<Worker>> {
        let mut workers: Vec<Worker> = Vec::with_capacity(self.cores - 1);
        for i in 1..self.cores {
            match cores::start_worker(i, cpu_of(i), *want, set.clone()) {
                Ok(w) => workers.push(w),
                Err(e) => {
                    for w in &workers {
                        w.request_stop();
                    }
                    for w in workers {
                        w.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(workers)
    }

    /// Sets up the ring on the calling thread and returns the runtime.
    ///
    /// Fails if a runtime already lives on this thread, if no backend can start (io_uring
    /// refused and epoll too; or io_uring refused under [`Backend::IoUring`](
    /// crate::Backend::IoUring): the error says why, and what to change),
    /// if the entries, [`recv_buffers`](Builder::recv_buffers) or
    /// [`fixed_files`](Builder::fixed_files) are out of range, or if a core cannot be pinned
    /// to its CPU (see [`Builder::cpus`]). A failed build leaves the calling thread's CPU
    /// affinity as it was.
    pub fn build(&self) -> io::Result<Runtime> {
        if context::runtime_alive() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a runtime is already running on this thread; one thread drives one ring \
                 (build the second runtime on another thread, or spawn onto the first)",
            ));
        }
        if let Some(name) = &self.bad_disable {
            let known: Vec<&str> = DISABLE_NAMES.iter().map(|(n, _)| *n).collect();
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "RUNTIME_DISABLE names `{name}`, which is no feature switch (known: {})",
                    known.join(", ")
                ),
            ));
        }
        if let Some(value) = &self.bad_backend {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("RUNTIME_BACKEND is `{value}`, which is no backend (known: auto, io_uring, epoll)"),
            ));
        }
        if let Some((value, who)) = &self.bad_kernel {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{who} names `{value}`, which is no kernel profile (known: {})",
                    crate::driver::kernel::Profile::names()
                ),
            ));
        }
        let want = self.wanted()?;
        if self.cores == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a runtime needs at least one core",
            ));
        }
        let cpu_of = self.cpu_plan()?;
        // The calling thread's affinity, given back if the build fails after pinning it.
        let mut unpinned = None;
        if let Some(cpu) = cpu_of(0) {
            unpinned = cores::affinity().ok();
            cores::pin_to(cpu)?;
        }
        let unpin = |e: io::Error| {
            if let Some(old) = &unpinned {
                let _ = cores::set_affinity(old);
            }
            e
        };
        let set = Arc::new(CoreSet::new(
            BlockingPool::new(self.max_blocking_threads, self.thread_keep_alive),
            self.placement,
            self.cores,
            self.histograms,
        ));
        let core = Core::new(&want, 0, set.clone()).map_err(unpin)?;
        let workers = self.start_workers(&cpu_of, &want, &set).map_err(unpin)?;
        let mut all = vec![core.shared.clone()];
        all.extend(workers.iter().map(|w| w.shared.clone()));
        set.set(all);
        let rt = Runtime {
            core: Rc::new(core),
            workers,
            unpinned,
        };
        // Core 0 lives on this thread from now on, in place in its `Rc` until the runtime's
        // drop clears this.
        context::set_home(Some(rt.core.entry()));
        if cfg!(feature = "tracing") || std::env::var_os("RUNTIME_LOG").is_some() {
            if let Some(p) = self.kernel {
                crate::trace::rt_info!(
                    "kernel profile on ({}): behaving as Linux {}.{}, what it lacks is off",
                    p.why,
                    p.version.0,
                    p.version.1
                );
            }
            let features = rt.core_features();
            for (i, f) in rt.core_flags().iter().enumerate() {
                let feat = &features[i];
                match feat.backend {
                    crate::Backend::Epoll => crate::trace::rt_info!(
                        "core {i} runs the epoll backend: {}",
                        feat.backend_reason
                    ),
                    _ => crate::trace::rt_info!("core {i} ring set up with {f}"),
                }
                crate::trace::rt_info!("core {i} features {feat}");
            }
        }
        Ok(rt)
    }
}
