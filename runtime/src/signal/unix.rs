//! Listening for a Unix signal: [`signal`]`(`[`SignalKind`]`)` gives a [`Signal`] whose
//! [`recv`](Signal::recv) completes once per delivery, tokio's `tokio::signal::unix` API.
//!
//! Several listeners of one signal (up to 16, on any cores) each see every delivery. The
//! kernel merges a signal sent again before its handler ran into one delivery, as it does
//! for every program; deliveries between two `recv` calls are counted, and `recv` returns
//! once for all of them.
//!
//! ```no_run
//! use runtime::signal::unix::{signal, SignalKind};
//!
//! # #[runtime::main]
//! # async fn main() -> std::io::Result<()> {
//! let mut term = signal(SignalKind::terminate())?;
//! term.recv().await;
//! println!("SIGTERM: stopping");
//! # Ok(())
//! # }
//! ```

use std::future::{poll_fn, Future};
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use io_uring::{opcode, types};

use super::Claimed;
use crate::ext::{Completable, Cqe, Op};

/// A signal to listen for: tokio's names for the common ones, or any number 1 to 31 through
/// [`from_raw`](SignalKind::from_raw).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignalKind(libc::c_int);

impl SignalKind {
    /// The signal numbered `signum` (checked by [`signal`]: 1 to 31, not `SIGKILL`,
    /// `SIGSTOP` or a fault signal).
    pub const fn from_raw(signum: libc::c_int) -> SignalKind {
        SignalKind(signum)
    }

    /// The signal's number.
    pub const fn as_raw_value(&self) -> libc::c_int {
        self.0
    }

    /// `SIGALRM`.
    pub const fn alarm() -> SignalKind {
        SignalKind(libc::SIGALRM)
    }

    /// `SIGCHLD`.
    pub const fn child() -> SignalKind {
        SignalKind(libc::SIGCHLD)
    }

    /// `SIGHUP`: the terminal went away; daemons take it as "reload".
    pub const fn hangup() -> SignalKind {
        SignalKind(libc::SIGHUP)
    }

    /// `SIGINT`: Ctrl-C.
    pub const fn interrupt() -> SignalKind {
        SignalKind(libc::SIGINT)
    }

    /// `SIGIO`.
    pub const fn io() -> SignalKind {
        SignalKind(libc::SIGIO)
    }

    /// `SIGPIPE`.
    pub const fn pipe() -> SignalKind {
        SignalKind(libc::SIGPIPE)
    }

    /// `SIGQUIT`.
    pub const fn quit() -> SignalKind {
        SignalKind(libc::SIGQUIT)
    }

    /// `SIGTERM`: the polite request to stop (what `kill` and service managers send).
    pub const fn terminate() -> SignalKind {
        SignalKind(libc::SIGTERM)
    }

    /// `SIGUSR1`.
    pub const fn user_defined1() -> SignalKind {
        SignalKind(libc::SIGUSR1)
    }

    /// `SIGUSR2`.
    pub const fn user_defined2() -> SignalKind {
        SignalKind(libc::SIGUSR2)
    }

    /// `SIGWINCH`: the terminal was resized.
    pub const fn window_change() -> SignalKind {
        SignalKind(libc::SIGWINCH)
    }
}

impl From<libc::c_int> for SignalKind {
    fn from(signum: libc::c_int) -> SignalKind {
        SignalKind(signum)
    }
}

/// A listener of one signal, from [`signal`]. It counts deliveries from its creation until
/// it is dropped; while at least one listener of a signal lives, the signal's default
/// action (usually: end the process) does not run.
///
/// `!Send`: its read is an op of the core it was made on.
pub struct Signal {
    claimed: Claimed,
    /// The eventfd read in flight, kept between polls so that a dropped `recv` loses no
    /// delivery.
    read: Option<Op<CounterRead>>,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("signal", &self.claimed.sig)
            .field("waiting", &self.read.is_some())
            .finish()
    }
}

/// Listens for `kind` from now on.
///
/// # Errors
/// `InvalidInput` for a signal that cannot be handled (`SIGKILL`, `SIGSTOP`, `SIGSEGV`,
/// `SIGBUS`, `SIGFPE`, `SIGILL`, or a number outside 1 to 31); if the handler cannot be
/// installed; if 16 listeners of this signal exist already.
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    let sig = kind.0;
    if matches!(
        sig,
        libc::SIGKILL | libc::SIGSTOP | libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
    ) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("signal {sig} cannot be listened for"),
        ));
    }
    Ok(Signal {
        claimed: Claimed::new(sig)?,
        read: None,
    })
}

impl Signal {
    /// Waits for the next delivery (or returns at once for those since the last call).
    /// Always `Some(())`: the stream of signals never ends; the `Option` is tokio's shape.
    ///
    /// Cancel-safe: dropping the future loses no delivery.
    pub async fn recv(&mut self) -> Option<()> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next delivery; as [`recv`](Signal::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        loop {
            let fd = self.claimed.fd();
            let op = self.read.get_or_insert_with(|| read_counter(fd));
            let res = std::task::ready!(Pin::new(op).poll(cx));
            self.read = None;
            match res {
                Ok(8) => return Poll::Ready(Some(())),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // The eventfd is never closed, so its read cannot fail otherwise.
                Err(e) => panic!("reading the signal eventfd {fd}: {e}"),
            }
        }
    }
}

/// The data of a read of a signal's eventfd: the 8-byte counter the kernel writes into.
/// The eventfd is static and never closed, so the op names it by number and holds no fd
/// (and a [`Signal`] stays `Send`).
///
/// A read dropped in flight may still complete (its cancel can lose the race: without
/// `DEFER_TASKRUN`, before Linux 6.1, the kernel runs the read's retry as task work at the
/// start of the very `io_uring_enter(2)` that submits the cancel). The deliveries it took
/// are then posted again when its data is freed, so the next listener sees them: dropping
/// a listener loses none.
struct CounterRead {
    fd: RawFd,
    counter: Box<u64>,
}

impl Completable for CounterRead {
    type Output = io::Result<usize>;

    fn complete(mut self, cqe: Cqe) -> io::Result<usize> {
        // Delivered to its listener: nothing to post again.
        *self.counter = 0;
        cqe.result.map(|n| n as usize)
    }
}

impl Drop for CounterRead {
    fn drop(&mut self) {
        // The op's data is freed only after its final CQE, so the kernel is done with the
        // counter: non-zero, a dropped read took deliveries; they go back to the eventfd.
        let taken: u64 = *self.counter;
        if taken != 0 {
            // SAFETY: writes 8 bytes from a live local to the static eventfd.
            unsafe { libc::write(self.fd, std::ptr::from_ref(&taken).cast(), 8) };
        }
    }
}

/// Reads the eventfd `fd`'s counter (which resets it).
fn read_counter(fd: RawFd) -> Op<CounterRead> {
    let mut counter = Box::new(0u64);
    let ptr = std::ptr::from_mut::<u64>(&mut counter).cast::<u8>();
    let sqe = opcode::Read::new(types::Fd(fd), ptr, 8)
        .offset(u64::MAX)
        .build();
    // SAFETY: the SQE points only at the boxed counter (8 bytes), which the data owns; a
    // Box's heap block does not move when the Box does.
    unsafe { Op::new(CounterRead { fd, counter }, sqe) }
}
