//! Thread-per-core: the worker threads of a runtime built with [`Builder::cores`].
//!
//! Core 0 is the thread that builds the runtime (it runs `block_on`); cores 1..n are worker
//! threads, each pinned to its CPU, each creating its own ring on itself (SINGLE_ISSUER binds
//! a ring to the thread that creates it) and running its loop until the runtime stops it.
//! Work reaches a worker through `spawn_on` and wakes; an idle worker sleeps in
//! `io_uring_enter`.
//!
//! [`Builder::cores`]: crate::Builder::cores

use std::any::Any;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use crate::driver::RingFlags;
use crate::error::context;
use crate::executor::{self, Core, CoreSet, Shared};

/// A worker core's thread, as the runtime holds it.
pub(crate) struct Worker {
    pub(crate) shared: Arc<Shared>,
    pub(crate) flags: RingFlags,
    thread: thread::JoinHandle<()>,
}

/// The CPUs this process may run on, in order.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = affinity() else {
        return vec![0];
    };
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE, so CPU_ISSET reads a bit inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// Checks that `cpu` can be named in a `cpu_set_t`, which holds CPUs `0..CPU_SETSIZE` (1024):
/// an `InvalidInput` error naming the CPU if not.
pub(crate) fn check_cpu(cpu: usize) -> io::Result<()> {
    if cpu < libc::CPU_SETSIZE as usize {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "cannot pin a core to CPU {cpu}: CPU numbers must be below {} (CPU_SETSIZE)",
            libc::CPU_SETSIZE
        ),
    ))
}

/// The calling thread's CPU affinity (to give back to [`set_affinity`]).
pub(crate) fn affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; 0 is the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r == 0 {
        Ok(set)
    } else {
        let e = io::Error::last_os_error();
        Err(context(e, "reading the thread's CPU affinity"))
    }
}

/// Sets the calling thread's CPU affinity to `set`.
pub(crate) fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a live cpu_set_t of the size passed; 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread to `cpu`.
///
/// Fails with `InvalidInput`, naming the CPU, if `cpu` is past `CPU_SETSIZE`, or (the
/// kernel's `EINVAL`) does not exist, is offline or is outside this process's cpuset; the
/// thread's affinity is then unchanged.
pub(crate) fn pin_to(cpu: usize) -> io::Result<()> {
    check_cpu(cpu)?;
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so CPU_SET writes a bit inside
    // `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(&set).map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::EINVAL) {
            " (no such CPU, or it is offline or outside this process's cpuset)"
        } else {
            ""
        };
        context(e, format!("pinning a core to CPU {cpu}{why}"))
    })
}

/// Starts worker core `index` on its own thread, pinned to `cpu`; returns once its ring
/// exists (or failed to).
pub(crate) fn start_worker(
    index: usize,
    cpu: Option<usize>,
    want: RingFlags,
    set: Arc<CoreSet>,
) -> io::Result<Worker> {
    let (tx, rx) = mpsc::channel::<io::Result<(Arc<Shared>, RingFlags)>>();
    let thread = thread::Builder::new()
        .name(format!("runtime-core-{index}"))
        .spawn(move || worker_main(index, cpu, want, set, tx))
        .map_err(|e| context(e, format!("spawning core {index}'s thread")))?;
    match rx.recv() {
        Ok(Ok((shared, flags))) => Ok(Worker {
            shared,
            flags,
            thread,
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(context(e, format!("core {index}")))
        }
        Err(_) => {
            let _ = thread.join();
            Err(io::Error::other(format!(
                "core {index} died while starting"
            )))
        }
    }
}

fn worker_main(
    index: usize,
    cpu: Option<usize>,
    want: RingFlags,
    set: Arc<CoreSet>,
    tx: mpsc::Sender<io::Result<(Arc<Shared>, RingFlags)>>,
) {
    if let Some(cpu) = cpu {
        if let Err(e) = pin_to(cpu) {
            let _ = tx.send(Err(e));
            return;
        }
    }
    let core = match Core::new(want, index, set) {
        Ok(core) => core,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let shared = core.shared.clone();
    let flags = core.ctx.driver.borrow().flags();
    if tx.send(Ok((shared.clone(), flags))).is_err() {
        return;
    }
    crate::runtime::set_alive(true);
    let res = catch_unwind(AssertUnwindSafe(|| {
        core.block_on(executor::wait_for_stop(shared))
    }));
    // Whatever happened, the core's tasks and ops are dropped and reaped on this thread.
    core.shutdown();
    drop(core);
    crate::runtime::set_alive(false);
    if let Err(payload) = res {
        resume_unwind(payload);
    }
}

impl Worker {
    /// Asks the worker to stop.
    pub(crate) fn request_stop(&self) {
        self.shared.request_stop();
    }

    /// Waits for the worker's thread; a panic in its loop is reported, not propagated.
    pub(crate) fn join(self) {
        let index = self.shared.index;
        if let Err(payload) = self.thread.join() {
            eprintln!(
                "runtime: core {index} panicked: {}",
                panic_message(&payload)
            );
        }
    }
}

fn panic_message(payload: &Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string())
}
