//! echo-ws: `GET /ws` opens a WebSocket (RFC 6455's handshake, checked here) that sends
//! every text or binary message back; tungstenite answers pings and closes. The upgraded
//! connection is handed to the runtime's task ([`Spawn`]): a task of the accepting core on
//! this runtime, a tokio task in `arena-tokio`.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{
    CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use hyper::upgrade::OnUpgrade;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::error::Error as WsError;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::app::AppState;
use crate::db::Db;

/// The largest message (and frame) a client may send: 1 MiB.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Starts the socket's task once the upgrade completes: the runtime's part of `/ws`.
pub type Spawn = fn(OnUpgrade);

/// The socket's settings: messages up to [`MAX_MESSAGE`].
pub fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
}

/// Echoes every text and binary message on `io` (an upgraded connection) until the client
/// closes, breaks the protocol (answered with a close frame saying how: 1002, 1007 or
/// 1009) or goes away.
pub async fn echo<S: AsyncRead + AsyncWrite + Unpin>(io: S) {
    let mut ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config())).await;
    loop {
        let msg = match ws.next().await {
            Some(Ok(msg)) => msg,
            Some(Err(e)) => {
                let code = match e {
                    WsError::Protocol(_) => CloseCode::Protocol,
                    WsError::Utf8(_) => CloseCode::Invalid,
                    WsError::Capacity(_) => CloseCode::Size,
                    // The connection itself failed: nobody to tell.
                    _ => return,
                };
                let frame = CloseFrame {
                    code,
                    reason: e.to_string().chars().take(100).collect::<String>().into(),
                };
                let _ = ws.close(Some(frame)).await;
                return;
            }
            None => return,
        };
        let reply = match msg {
            Message::Text(_) | Message::Binary(_) => msg,
            // tungstenite queued the pong, or the close reply: flush it.
            Message::Ping(_) | Message::Pong(_) | Message::Close(_) | Message::Frame(_) => {
                if ws.flush().await.is_err() {
                    return;
                }
                continue;
            }
        };
        if ws.send(reply).await.is_err() {
            return;
        }
    }
}

/// `GET /ws`: checks the handshake, answers `101 Switching Protocols` and hands the
/// connection to the echo task; `400` (with why) for a request that is not a handshake.
pub async fn upgrade<D: Db>(State(state): State<AppState<D>>, mut req: Request) -> Response {
    let key = match check(&req) {
        Ok(key) => key,
        Err(why) => return bad_request(why),
    };
    let Some(on_upgrade) = req.extensions_mut().remove::<OnUpgrade>() else {
        return bad_request("this connection cannot be upgraded");
    };
    (state.ws)(on_upgrade);
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(UPGRADE, "websocket")
        .header(CONNECTION, "Upgrade")
        .header(SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.as_bytes()))
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn bad_request(why: &'static str) -> Response {
    let mut res = (
        StatusCode::BAD_REQUEST,
        format!("bad WebSocket handshake: {why}\n"),
    )
        .into_response();
    if why == VERSION {
        res.headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    }
    res
}

const VERSION: &str = "Sec-WebSocket-Version must be 13";

/// Whether a comma-separated header of `headers` lists `token` (case-insensitively).
fn lists(headers: &HeaderMap, name: axum::http::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .map(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
            .unwrap_or(false)
    })
}

/// RFC 6455 section 4.2.1's checks (the method is the router's); the key.
fn check(req: &Request) -> Result<String, &'static str> {
    if req.version() != Version::HTTP_11 {
        return Err("WebSocket needs HTTP/1.1");
    }
    let headers = req.headers();
    if !lists(headers, UPGRADE, "websocket") {
        return Err("Upgrade must be websocket");
    }
    if !lists(headers, CONNECTION, "upgrade") {
        return Err("Connection must include Upgrade");
    }
    if headers.get(SEC_WEBSOCKET_VERSION).map(|v| v.as_bytes()) != Some(b"13") {
        return Err(VERSION);
    }
    let key = headers
        .get(SEC_WEBSOCKET_KEY)
        .and_then(|k| k.to_str().ok())
        .ok_or("Sec-WebSocket-Key is missing")?;
    // A 16-byte nonce in base64: 24 characters ending in "==".
    if key.len() != 24 || !key.ends_with("==") {
        return Err("Sec-WebSocket-Key must be 16 bytes in base64");
    }
    Ok(key.to_owned())
}
