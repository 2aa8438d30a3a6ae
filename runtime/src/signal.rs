//! Ctrl-C: `ctrl_c().await` completes when the process gets `SIGINT`.
//!
//! A `SIGINT` handler (installed on first use) writes to an eventfd per waiting listener;
//! each listener awaits a read of its eventfd through its core's ring, so a waiting program
//! sleeps in `io_uring_enter` like any other. The eventfds belong to a fixed set of slots
//! and are never closed, so the handler can never write to an fd number that was reused.
//! With no listener waiting, the handler restores the default action and re-raises the
//! signal: Ctrl-C still ends a program that does not listen for it.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;

/// Listeners that may wait at once.
const SLOTS: usize = 16;

struct Slot {
    fd: AtomicI32,
    armed: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    fd: AtomicI32::new(-1),
    armed: AtomicBool::new(false),
};

static SLOT: [Slot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();

extern "C" fn on_sigint(_sig: libc::c_int) {
    // Async-signal-safe: atomics and write(2) only.
    let mut delivered = false;
    for slot in &SLOT {
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
        // SAFETY: signal(2) and raise(3) are async-signal-safe; default action: terminate.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::raise(libc::SIGINT);
        }
    }
}

fn install() -> io::Result<()> {
    let mut err = None;
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn that only
        // does async-signal-safe work.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        // SAFETY: `sa` is a live, initialised sigaction.
        if unsafe { libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) } != 0 {
            err = Some(io::Error::last_os_error());
        }
    });
    match err {
        Some(e) => Err(crate::error::context(e, "installing a SIGINT handler")),
        None => Ok(()),
    }
}

/// Claims a slot, creating its eventfd the first time; clears a stale count.
fn claim() -> io::Result<usize> {
    for (i, slot) in SLOT.iter().enumerate() {
        if slot
            .armed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        let mut fd = slot.fd.load(Ordering::Acquire);
        if fd < 0 {
            // SAFETY: eventfd takes no pointers; the result is checked.
            let new = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if new < 0 {
                slot.armed.store(false, Ordering::Release);
                return Err(io::Error::last_os_error());
            }
            fd = new;
            slot.fd.store(fd, Ordering::Release);
        }
        let mut stale = 0u64;
        // SAFETY: a non-blocking read of 8 bytes into a live u64 (clears an old count).
        unsafe { libc::read(fd, (&mut stale as *mut u64).cast(), 8) };
        return Ok(i);
    }
    Err(io::Error::other(format!(
        "more than {SLOTS} tasks wait for ctrl_c() at once"
    )))
}

struct Claimed(usize);

impl Drop for Claimed {
    fn drop(&mut self) {
        SLOT[self.0].armed.store(false, Ordering::Release);
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
/// If the handler cannot be installed, or more than 16 tasks wait at once.
pub async fn ctrl_c() -> io::Result<()> {
    install()?;
    let claimed = Claimed(claim()?);
    let fd = SLOT[claimed.0].fd.load(Ordering::Acquire);
    loop {
        let (res, _) = crate::read(fd, vec![0u8; 8], u64::MAX).await;
        match res {
            Ok(8) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
