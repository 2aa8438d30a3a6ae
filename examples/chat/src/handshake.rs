//! The server side of the WebSocket opening handshake (RFC 6455, section 4.2), in an axum
//! handler: check the request, answer `101 Switching Protocols` with the
//! `Sec-WebSocket-Accept` tungstenite derives from the key, and hand the upgraded
//! connection to a task on this core. A request that is not a valid handshake gets
//! `400 Bad Request` and a line saying why.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{
    CONNECTION, HOST, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use axum::http::{HeaderMap, HeaderName, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use crate::AppState;

/// `GET /ws`: the handshake, then the socket ([`crate::socket::run`]) in a task on this core.
pub async fn websocket(State(state): State<AppState>, mut req: Request) -> Response {
    let key = match check(&req) {
        Ok(key) => key,
        Err(why) => return bad_request(why),
    };
    // Present on every HTTP/1.1 request `corering_net::hyper` serves (it serves with upgrades).
    let Some(on_upgrade) = req.extensions_mut().remove::<OnUpgrade>() else {
        return bad_request("this connection cannot be upgraded");
    };
    // Join the room before the `101` goes out: the client may be sent every message from
    // the moment it sees the handshake complete.
    let Some(member) = state.room.join() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down\n",
        )
            .into_response();
    };
    // The socket lives in its own task on this core (the connection is bound to it); it
    // starts once hyper has written the `101` and handed the connection over.
    drop(runtime::spawn_local(crate::socket::run(
        on_upgrade,
        member,
        state.hub.clone(),
        state.config,
    )));
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(UPGRADE, "websocket")
        .header(CONNECTION, "Upgrade")
        .header(SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.as_bytes()))
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A `400` with `why` as its body; a version mismatch also says which version is spoken.
fn bad_request(why: &'static str) -> Response {
    let mut res = (
        StatusCode::BAD_REQUEST,
        format!("bad WebSocket handshake: {why}\n"),
    )
        .into_response();
    if why == VERSION_MISMATCH {
        res.headers_mut().insert(
            SEC_WEBSOCKET_VERSION,
            axum::http::HeaderValue::from_static("13"),
        );
    }
    res
}

/// The reason given for a `Sec-WebSocket-Version` other than 13.
const VERSION_MISMATCH: &str = "Sec-WebSocket-Version must be 13";

/// Checks a request against RFC 6455's list (section 4.2.1; the method is the router's),
/// and returns its `Sec-WebSocket-Key`.
fn check(req: &Request) -> Result<String, &'static str> {
    if req.version() != Version::HTTP_11 {
        return Err("WebSocket over this server needs HTTP/1.1");
    }
    let headers = req.headers();
    if !headers.contains_key(HOST) {
        return Err("no Host header");
    }
    if !has_token(headers, UPGRADE, "websocket") {
        return Err("Upgrade must name websocket");
    }
    if !has_token(headers, CONNECTION, "upgrade") {
        return Err("Connection must name upgrade");
    }
    match headers.get(SEC_WEBSOCKET_VERSION).map(|v| v.as_bytes()) {
        Some(b"13") => {}
        Some(_) => return Err(VERSION_MISMATCH),
        None => return Err("no Sec-WebSocket-Version header"),
    }
    let mut keys = headers.get_all(SEC_WEBSOCKET_KEY).iter();
    let (Some(key), None) = (keys.next(), keys.next()) else {
        return Err("there must be exactly one Sec-WebSocket-Key header");
    };
    let key = key
        .to_str()
        .map_err(|_| "Sec-WebSocket-Key is not ASCII")?
        .trim();
    if !is_base64_of_16_bytes(key) {
        return Err("Sec-WebSocket-Key must be 16 bytes in base64");
    }
    Ok(key.to_string())
}

/// Whether any value of header `name` lists `token` (comma-separated, any case).
fn has_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Whether `key` is the base64 of exactly 16 bytes: 22 base64 digits, the last with its
/// low 4 bits (beyond the 128th bit) zero, then `==`.
fn is_base64_of_16_bytes(key: &str) -> bool {
    let b = key.as_bytes();
    let digit = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    b.len() == 24
        && b[..22].iter().all(|&c| digit(c))
        && matches!(b[21], b'A' | b'Q' | b'g' | b'w')
        && &b[22..] == b"=="
}

#[cfg(test)]
mod tests {
    use super::is_base64_of_16_bytes;

    #[test]
    fn keys() {
        // RFC 6455's sample key, and keys that are not 16 bytes.
        assert!(is_base64_of_16_bytes("dGhlIHNhbXBsZSBub25jZQ=="));
        assert!(!is_base64_of_16_bytes("dGhlIHNhbXBsZSBub25jZR=="));
        assert!(!is_base64_of_16_bytes("dGhlIHNhbXBsZSBub25jZQ="));
        assert!(!is_base64_of_16_bytes("dGhlIHNhbXBsZSBub25j*Q=="));
        assert!(!is_base64_of_16_bytes(""));
    }
}
