//! Worker cores: threads 1..n of a runtime, each pinned to its CPU, each creating its own
//! ring on itself (SINGLE_ISSUER binds a ring to the thread that creates it) and running
//! its loop until the runtime stops it.

use std::any::Any;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::Poll;
use std::thread;

use super::pin::pin_to;
use crate::driver::{Features, RingConfig, RingFlags};
use crate::error::context;
use crate::executor::{Core, CoreSet, Shared};

/// A worker core's thread, as the runtime holds it.
pub(crate) struct Worker {
    pub(crate) shared: Arc<Shared>,
    pub(crate) flags: RingFlags,
    pub(crate) features: Features,
    thread: thread::JoinHandle<()>,
}

/// Starts worker core `index` on its own thread, pinned to `cpu`; returns once its ring
/// exists (or failed to).
pub(crate) fn start_worker(
    index: usize,
    cpu: Option<usize>,
    want: RingConfig,
    set: Arc<CoreSet>,
) -> io::Result<Worker> {
    let (tx, rx) = mpsc::channel::<io::Result<(Arc<Shared>, RingFlags, Features)>>();
    let thread = thread::Builder::new()
        .name(format!("runtime-core-{index}"))
        .spawn(move || worker_main(index, cpu, want, set, tx))
        .map_err(|e| context(e, format!("spawning core {index}'s thread")))?;
    match rx.recv() {
        Ok(Ok((shared, flags, features))) => Ok(Worker {
            shared,
            flags,
            features,
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
    want: RingConfig,
    set: Arc<CoreSet>,
    tx: mpsc::Sender<io::Result<(Arc<Shared>, RingFlags, Features)>>,
) {
    if let Some(cpu) = cpu {
        if let Err(e) = pin_to(cpu) {
            let _ = tx.send(Err(e));
            return;
        }
    }
    let core = match Core::new(&want, index, set) {
        Ok(core) => core,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let shared = core.shared.clone();
    let flags = core.ctx.driver.borrow().flags();
    if tx
        .send(Ok((shared.clone(), flags, core.ctx.features)))
        .is_err()
    {
        return;
    }
    // The core stays in place in this frame until it is dropped below, after this is
    // cleared.
    crate::context::set_home(Some(core.entry()));
    let res = catch_unwind(AssertUnwindSafe(|| core.block_on(wait_for_stop(shared))));
    // Whatever happened, the core's tasks and ops are dropped and reaped on this thread.
    core.shutdown();
    crate::context::set_home(None);
    drop(core);
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
            crate::trace::rt_warn!("core {index} panicked: {}", panic_message(&payload));
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

/// Completes once the core's runtime asks it to stop (the loop of a worker core).
pub(crate) async fn wait_for_stop(shared: Arc<Shared>) {
    std::future::poll_fn(|cx| {
        if shared.stop.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        shared.stop_waker.register(cx.waker());
        if shared.stop.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}
