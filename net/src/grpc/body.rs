//! [`GrpcBody`]: a gRPC response body that ends with `DEADLINE_EXCEEDED` at its call's
//! deadline, or that is empty because the status is in the head (trailers-only).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http_body::{Body, Frame, SizeHint};
use runtime::time::Sleep;

use super::status::{status_headers, Code};

/// A gRPC response body: the peer's (or the service's) body `B`, cut off at the call's
/// deadline with the trailers `grpc-status: 4` (`DEADLINE_EXCEEDED`); or no body at all
/// for a trailers-only response (the status is in its headers).
///
/// When the deadline passes first, `B` is dropped (a client's stream is reset, so the
/// server stops; a server's handler stops producing) and the trailers end the body.
pub struct GrpcBody<B> {
    inner: Option<B>,
    deadline: Option<Sleep>,
}

impl<B> GrpcBody<B> {
    /// `inner` as it is, cut off at `deadline` if there is one.
    pub fn new(inner: B, deadline: Option<Instant>) -> GrpcBody<B> {
        GrpcBody::with_sleep(inner, deadline.map(runtime::time::sleep_until))
    }

    /// `inner` cut off when `deadline` fires: the timer that already timed the call's
    /// head goes on with its body (one timer per call, not two).
    pub(crate) fn with_sleep(inner: B, deadline: Option<Sleep>) -> GrpcBody<B> {
        GrpcBody {
            inner: Some(inner),
            deadline,
        }
    }

    /// No body: the response's status is in its headers (a trailers-only response).
    pub fn empty() -> GrpcBody<B> {
        GrpcBody {
            inner: None,
            deadline: None,
        }
    }
}

impl<B> fmt::Debug for GrpcBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcBody")
            .field("streaming", &self.inner.is_some())
            .field("deadline", &self.deadline.as_ref().map(Sleep::deadline))
            .finish()
    }
}

impl<B> Body for GrpcBody<B>
where
    B: Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(sleep) = this.deadline.as_mut() {
            if Pin::new(sleep).poll(cx).is_ready() {
                this.inner = None;
                this.deadline = None;
                let trailers = status_headers(Code::DEADLINE_EXCEEDED, "deadline exceeded");
                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
            }
        }
        let frame = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            this.inner = None;
            this.deadline = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(B::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            // Cut off at the deadline, it may end sooner: no bounds then.
            Some(inner) if self.deadline.is_none() => inner.size_hint(),
            Some(_) => SizeHint::default(),
            None => SizeHint::with_exact(0),
        }
    }
}
