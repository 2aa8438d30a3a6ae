//! gRPC statuses made here: the `grpc-status` codes this module sends, and trailers-only
//! responses (a status in the response head, no body).

use std::fmt::Write;

use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Response};

use super::GrpcBody;

/// A gRPC status code, as the `grpc-status` header carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code(pub u16);

impl Code {
    /// `OK` (0).
    pub const OK: Code = Code(0);
    /// `CANCELLED` (1).
    pub const CANCELLED: Code = Code(1);
    /// `DEADLINE_EXCEEDED` (4): the call's deadline passed before it finished.
    pub const DEADLINE_EXCEEDED: Code = Code(4);
    /// `INTERNAL` (13): sent for a malformed `grpc-timeout`.
    pub const INTERNAL: Code = Code(13);
    /// `UNAVAILABLE` (14): the connection could not be made or failed.
    pub const UNAVAILABLE: Code = Code(14);
}

/// A trailers-only gRPC response: HTTP 200, `content-type: application/grpc`, and
/// `grpc-status: code` with `grpc-message: message` (percent-encoded) in the head, no body.
/// Every gRPC client (tonic's included) reads it as the call's status.
pub fn status_response<B>(code: Code, message: &str) -> Response<GrpcBody<B>> {
    let mut res = Response::new(GrpcBody::empty());
    *res.headers_mut() = status_headers(code, message);
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    res
}

/// `grpc-status` and `grpc-message` (percent-encoded, as the protocol wants).
pub(crate) fn status_headers(code: Code, message: &str) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(3);
    headers.insert("grpc-status", HeaderValue::from(code.0));
    if let Ok(value) = HeaderValue::from_str(&percent_encode(message)) {
        headers.insert("grpc-message", value);
    }
    headers
}

/// gRPC's percent-encoding of `grpc-message`: every byte outside printable ASCII, and `%`,
/// as `%XX`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_only_response() {
        let res = status_response::<()>(Code::DEADLINE_EXCEEDED, "late: 100% ü");
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "application/grpc");
        assert_eq!(res.headers()["grpc-status"], "4");
        assert_eq!(res.headers()["grpc-message"], "late: 100%25 %C3%BC");
    }
}
