//! One WebSocket connection, in its own task on the core that accepted it:
//! tokio-tungstenite's frame codec over the upgraded connection ([`UpgradedIo`]), reading
//! the client's messages and writing the room's.
//!
//! - A text message goes to the whole chat ([`Hub::publish`]), its sender included;
//!   binary messages are ignored.
//! - A ping is answered with a pong, a close with a close reply (tungstenite queues both,
//!   and they go out with the next read).
//! - A frame that breaks the protocol (unmasked, a reserved opcode or bit, a bad
//!   continuation) ends the connection with `1002 Protocol Error`; text that is not UTF-8
//!   with `1007 Invalid Data`; a message over the size limit with `1009 Message Too Big`.
//!   Only this connection ends.
//! - On the server's shutdown: a close with `1001 Going Away`, then the client's reply is
//!   awaited (for [`CLOSE_WAIT`] at most) before the connection is dropped.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use corering_net::hyper::UpgradedIo;
use futures::{SinkExt, StreamExt};
use hyper::upgrade::{OnUpgrade, Upgraded};
use tokio_tungstenite::tungstenite::error::Error as WsError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use crate::hub::{Hub, Member, Out};

/// How long a closing connection waits for the client's close reply.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// At most this many queued messages are written before a flush (and a read turn).
const BATCH: usize = 64;

type Ws = WebSocketStream<UpgradedIo<Upgraded>>;

/// The frame limits of every socket.
pub fn config(max_message: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message))
}

/// What woke the socket's loop.
enum Next {
    /// The client sent something, or ended.
    Client(Option<Result<Message, WsError>>),
    /// The room has something for the client.
    Room(Option<Out>),
}

/// Runs one socket: waits for hyper to hand the connection over, then relays until either
/// side closes.
pub async fn run(
    on_upgrade: OnUpgrade,
    mut member: Member,
    hub: Arc<Hub>,
    config: WebSocketConfig,
) {
    // The `101` was not sent (or the client left first): nothing to close.
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    let mut ws =
        WebSocketStream::from_raw_socket(UpgradedIo::new(upgraded), Role::Server, Some(config))
            .await;
    let mut room_first = true;
    loop {
        // Alternate which side is polled first, so neither starves the other.
        room_first = !room_first;
        let next = poll_fn(|cx| {
            if room_first {
                if let Poll::Ready(out) = member.queue.poll_recv(cx) {
                    return Poll::Ready(Next::Room(out));
                }
            }
            if let Poll::Ready(msg) = ws.poll_next_unpin(cx) {
                return Poll::Ready(Next::Client(msg));
            }
            if let Poll::Ready(out) = member.queue.poll_recv(cx) {
                return Poll::Ready(Next::Room(out));
            }
            Poll::Pending
        })
        .await;
        match next {
            Next::Client(Some(Ok(Message::Text(text)))) => hub.publish(&text),
            // Pongs and close replies go out with the next read; binary is not chat.
            Next::Client(Some(Ok(_))) => {}
            // The close handshake is done (or the client dropped the connection).
            Next::Client(None) => return,
            Next::Client(Some(Err(e))) => {
                if let Some(code) = close_code(&e) {
                    close(&mut ws, code, &e.to_string()).await;
                }
                return;
            }
            Next::Room(Some(Out::Text(text))) => {
                if send_batch(&mut ws, &mut member, text).await.is_err() {
                    return;
                }
            }
            Next::Room(Some(Out::Shutdown) | None) => {
                close(&mut ws, CloseCode::Away, "server shutting down").await;
                return;
            }
        }
    }
}

/// Writes `first` and whatever else is queued (up to [`BATCH`]), then flushes once.
async fn send_batch(ws: &mut Ws, member: &mut Member, first: Utf8Bytes) -> Result<(), WsError> {
    ws.feed(Message::Text(first)).await?;
    for _ in 1..BATCH {
        match member.queue.try_recv() {
            Ok(Out::Text(text)) => ws.feed(Message::Text(text)).await?,
            Ok(Out::Shutdown) => {
                ws.flush().await?;
                close(ws, CloseCode::Away, "server shutting down").await;
                return Err(WsError::ConnectionClosed);
            }
            Err(_) => break,
        }
    }
    ws.flush().await
}

/// The close code for a read error that breaks the protocol; `None` for a dead connection
/// (nothing can be sent on it).
fn close_code(e: &WsError) -> Option<CloseCode> {
    match e {
        WsError::Protocol(_) | WsError::AttackAttempt => Some(CloseCode::Protocol),
        WsError::Utf8(_) => Some(CloseCode::Invalid),
        WsError::Capacity(_) => Some(CloseCode::Size),
        _ => None,
    }
}

/// Sends a close frame with `code`, then waits (up to [`CLOSE_WAIT`]) for the client's
/// reply or the end of the connection. The reason is cut to fit a control frame.
async fn close(ws: &mut Ws, code: CloseCode, reason: &str) {
    let mut end = reason.len().min(120);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason[..end].to_string()),
    };
    let _ = runtime::time::timeout(CLOSE_WAIT, async {
        if ws.close(Some(frame)).await.is_ok() {
            // Until the client's close (or anything else) ends the stream; after a read
            // error the stream is already over and this returns at once.
            while let Some(Ok(_)) = ws.next().await {}
        }
    })
    .await;
}
