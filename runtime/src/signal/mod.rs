//! Unix signals through the ring: [`ctrl_c`], [`shutdown`] (the first `SIGINT` or
//! `SIGTERM`) and [`unix::signal`].
//!
//! A handler (installed for a signal on its first listener) writes to an eventfd per
//! listener of that signal; each listener reads its eventfd through its core's ring, so a
//! waiting program sleeps in `io_uring_enter` like any other, and a signal that arrives
//! between two reads is counted by the eventfd, not lost. The eventfds belong to a fixed set
//! of slots per signal and are never closed, so the handler can never write to an fd number
//! that was reused. With no listener of its signal alive, the handler restores the default
//! action and re-raises the signal: Ctrl-C still ends a program that does not listen for it,
//! and a later listener installs the handler again.

pub mod unix;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Listeners of one signal that may exist at once.
const SLOTS: usize = 16;
/// Signals 1..=31 (the standard ones) can be listened for.
const SIGNALS: usize = 32;

struct Slot {
    fd: AtomicI32,
    armed: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    fd: AtomicI32::new(-1),
    armed: AtomicBool::new(false),
};

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SET: [Slot; SLOTS] = [EMPTY; SLOTS];

static SLOT: [[Slot; SLOTS]; SIGNALS] = [EMPTY_SET; SIGNALS];

#[allow(clippy::declare_interior_mutable_const)]
const NOT_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether our handler is the signal's action now.
static INSTALLED: [AtomicBool; SIGNALS] = [NOT_INSTALLED; SIGNALS];

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: atomics, write(2), signal(2) and raise(3) only.
    let Some(slots) = usize::try_from(sig).ok().and_then(|i| SLOT.get(i)) else {
        return;
    };
    let mut delivered = false;
    for slot in slots {
        if slot.armed.load(Ordering::Acquire) {
            let fd = slot.fd.load(Ordering::Acquire);
            if fd >= 0 {
                let one: u64 = 1;
                // SAFETY: writes 8 bytes from a live u64 to an eventfd that is never closed.
                unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
                delivered = true;
            }
        }
    }
    if !delivered {
        INSTALLED[sig as usize].store(false, Ordering::Release);
        // SAFETY: signal(2) and raise(3) are async-signal-safe; the default action runs.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Makes `on_signal` the action of `sig` unless it is already.
fn install(sig: libc::c_int) -> io::Result<()> {
    let installed = &INSTALLED[sig as usize];
    if installed.load(Ordering::Acquire) {
        return Ok(());
    }
    // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn that only does
    // async-signal-safe work.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: `sa` is a live, initialised sigaction; the old action is not asked for.
    if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        return Err(crate::error::context(
            e,
            format!("installing a handler for signal {sig}"),
        ));
    }
    installed.store(true, Ordering::Release);
    Ok(())
}

/// A listener's slot for one signal, armed while it lives.
struct Claimed {
    sig: usize,
    slot: usize,
}

impl Claimed {
    /// Claims a slot of `sig` (creating its eventfd the first time, clearing a stale count)
    /// and installs the handler.
    fn new(sig: libc::c_int) -> io::Result<Claimed> {
        let index = usize::try_from(sig)
            .ok()
            .filter(|&i| (1..SIGNALS).contains(&i))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("signal {sig} cannot be listened for (1 to 31 only)"),
                )
            })?;
        for (i, slot) in SLOT[index].iter().enumerate() {
            if slot
                .armed
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let claimed = Claimed {
                sig: index,
                slot: i,
            };
            let mut fd = slot.fd.load(Ordering::Acquire);
            if fd < 0 {
                // SAFETY: eventfd takes no pointers; the result is checked.
                let new = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
                if new < 0 {
                    return Err(io::Error::last_os_error());
                }
                fd = new;
                slot.fd.store(fd, Ordering::Release);
            }
            let mut stale = 0u64;
            // SAFETY: a non-blocking read of 8 bytes into a live u64 (clears an old count).
            unsafe { libc::read(fd, (&mut stale as *mut u64).cast(), 8) };
            install(sig)?;
            return Ok(claimed);
        }
        Err(io::Error::other(format!(
            "more than {SLOTS} listeners of signal {sig} at once"
        )))
    }

    fn fd(&self) -> i32 {
        SLOT[self.sig][self.slot].fd.load(Ordering::Acquire)
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        SLOT[self.sig][self.slot]
            .armed
            .store(false, Ordering::Release);
    }
}

/// Completes when the process receives `SIGINT` (Ctrl-C).
///
/// ```no_run
/// # let rt = runtime::Runtime::new().unwrap();
/// # rt.block_on(async {
/// runtime::signal::ctrl_c().await.unwrap();
/// println!("stopping");
/// # });
/// ```
///
/// # Errors
/// If the handler cannot be installed, or more than 16 tasks listen for `SIGINT` at once.
pub async fn ctrl_c() -> io::Result<()> {
    let mut signal = unix::signal(unix::SignalKind::interrupt())?;
    signal.recv().await;
    Ok(())
}

/// Listens for `SIGINT` and `SIGTERM` from this call on, and returns a future that
/// completes on the first of them: the stop signal of a service (Ctrl-C by hand, `SIGTERM`
/// from `docker stop`, systemd or Kubernetes). The handlers are installed by this call, so
/// a signal that arrives before the future is first polled is not lost.
///
/// ```no_run
/// # let rt = runtime::Runtime::new().unwrap();
/// # rt.block_on(async {
/// let stop = runtime::signal::shutdown()?;
/// // ... start serving ...
/// stop.await;
/// println!("stopping");
/// # Ok::<(), std::io::Error>(())
/// # });
/// ```
///
/// # Errors
/// If a handler cannot be installed, or more than 16 tasks listen for one of the signals
/// at once.
pub fn shutdown() -> io::Result<Shutdown> {
    Ok(Shutdown {
        int: unix::signal(unix::SignalKind::interrupt())?,
        term: unix::signal(unix::SignalKind::terminate())?,
    })
}

/// The future [`shutdown`] returns: completes on the first `SIGINT` or `SIGTERM` since it
/// was made.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Shutdown {
    int: unix::Signal,
    term: unix::Signal,
}

impl std::future::Future for Shutdown {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = &mut *self;
        if this.int.poll_recv(cx).is_ready() || this.term.poll_recv(cx).is_ready() {
            return std::task::Poll::Ready(());
        }
        std::task::Poll::Pending
    }
}
