//! [`Timeout`]: a future with a deadline, and [`Elapsed`], its error when time runs out.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{sleep, sleep_until, Sleep};

/// The error of a [`timeout`] whose deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for io::Error {
    fn from(e: Elapsed) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, e)
    }
}

pin_project_lite::pin_project! {
    /// A future with a deadline. Made by [`timeout`].
    #[must_use = "futures do nothing unless awaited"]
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

/// Runs `future` for at most `duration`: its output, or [`Elapsed`] if time ran out first
/// (the future is then dropped, which cancels its ops).
///
/// ```
/// use std::time::Duration;
/// use runtime::time::{sleep, timeout};
/// let rt = runtime::Runtime::new().unwrap();
/// let r = rt.block_on(timeout(Duration::from_millis(1), sleep(Duration::from_secs(60))));
/// assert!(r.is_err());
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep(duration),
    }
}

/// Runs `future` until `deadline` at most.
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep_until(deadline),
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
