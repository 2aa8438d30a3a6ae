//! A WebSocket broadcast chat on every core of the corering runtime: an axum `Router`
//! served by `corering_net::hyper` (axum without its `tokio` feature), the RFC 6455
//! handshake in its `GET /ws` handler, and tokio-tungstenite's frame codec over the
//! upgraded connection ([`corering_net::hyper::UpgradedIo`]).
//!
//! Every text message from any client goes to every connected client on every core, its
//! sender included, with nothing dropped and each sender's messages in order ([`hub`]).
//! Pings get pongs, a client's close gets a close reply, a frame that breaks the protocol
//! closes just that connection (`1002`, or `1007` for text that is not UTF-8, `1009` for
//! one too big), and [`Chat::shutdown`] closes every socket with `1001 Going Away` before
//! it returns.
//!
//! Why not axum's `WebSocketUpgrade`: axum's `ws` feature turns on its `tokio` feature,
//! and with it code that needs a tokio runtime, which this process never starts. The
//! handshake is a few header checks and tungstenite's `derive_accept_key`
//! (`handshake.rs`); the socket is tokio-tungstenite's `WebSocketStream::from_raw_socket`,
//! which needs only tokio's I/O traits (tokio-tungstenite without its `connect` feature).

mod handshake;
pub mod hub;
mod socket;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use corering_net::hyper::{Builder, Server};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

pub use hub::Hub;
pub use socket::CLOSE_WAIT;

/// The largest message (and frame) a client may send; a larger one closes its connection
/// with `1009 Message Too Big`.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// What each core's handler holds (`Send + Sync`, as axum requires of state).
#[derive(Debug, Clone)]
struct AppState {
    hub: Arc<Hub>,
    room: hub::CoreRoom,
    config: WebSocketConfig,
}

/// A core's router: `GET /ws` (the WebSocket), `GET /` (a line saying so).
fn router(state: AppState) -> Router {
    Router::new()
        .route("/ws", get(handshake::websocket))
        .route(
            "/",
            get(|| async { "corering chat: connect a WebSocket to /ws\n" }),
        )
        .with_state(state)
}

/// A running chat server: serving on every core of the runtime it was started in.
#[derive(Debug)]
pub struct Chat {
    server: Server,
    hub: Arc<Hub>,
}

impl Chat {
    /// Serves the chat on `addr` on every core of the current runtime.
    ///
    /// # Errors
    /// Outside a runtime; if `addr` cannot be bound.
    pub fn serve(addr: SocketAddr) -> io::Result<Chat> {
        let cores = runtime::cores().ok_or_else(|| {
            io::Error::other("chat: Chat::serve must be called inside the runtime")
        })?;
        let hub = Arc::new(Hub::new(cores));
        let config = socket::config(MAX_MESSAGE);
        let make_hub = hub.clone();
        // HTTP/1.1 and h2c as usual; a handshake over HTTP/2 (RFC 8441) gets a `400`.
        let server = Builder::new().serve_with_async(addr, move |core| {
            let hub = make_hub.clone();
            async move {
                let room = hub.start_core(core)?;
                Ok(router(AppState { hub, room, config }))
            }
        })?;
        Ok(Chat { server, hub })
    }

    /// The address the chat listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// How many cores serve.
    pub fn cores(&self) -> usize {
        self.server.cores()
    }

    /// Stops: no new connections or handshakes, every open socket is sent a close frame
    /// with `1001 Going Away` (after what was already queued for it) and gets up to
    /// `grace` to answer it; HTTP requests in flight get `grace` too. Returns whether every
    /// socket ended within `grace` (those left are dropped with the runtime).
    ///
    /// # Errors
    /// The first error a core's accept loop met.
    pub async fn shutdown(self, grace: Duration) -> io::Result<bool> {
        let (served, closed) =
            futures::future::join(self.server.shutdown(grace), self.hub.shutdown(grace)).await;
        served.map(|()| closed)
    }
}
