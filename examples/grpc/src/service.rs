//! The `Echo` service, runtime-independent but for its timer: `runtime::time::sleep` on this
//! runtime (tokio's would panic here: no tokio runtime runs), tokio's in `grpc-tokio`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use tonic::service::Routes;
use tonic::{Request, Response, Status, Streaming};

use crate::pattern;
use crate::pb::echo_server::{Echo, EchoServer};
use crate::pb::{EchoReply, EchoRequest, StreamRequest};

/// The largest server-stream reply and client-stream total (tonic's default message limit
/// is 4 MiB).
pub const MAX_PAYLOAD: usize = 3 * 1024 * 1024;
/// The most replies one server-stream call may ask for.
pub const MAX_STREAM: u32 = 100_000;

/// A timer: the future of a sleep of the given length.
pub type SleepFn = fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// The service: echoes, patterns, concatenations.
#[derive(Debug, Clone, Copy)]
pub struct EchoService {
    sleep: SleepFn,
}

impl Default for EchoService {
    fn default() -> Self {
        EchoService::new()
    }
}

impl EchoService {
    /// The service on this runtime's timer.
    pub fn new() -> EchoService {
        EchoService::with_sleep(|d| Box::pin(runtime::time::sleep(d)))
    }

    /// The service on another timer (tokio's, for `grpc-tokio`).
    pub fn with_sleep(sleep: SleepFn) -> EchoService {
        EchoService { sleep }
    }

    fn delay(&self, ms: u32) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        (ms > 0).then(|| (self.sleep)(Duration::from_millis(u64::from(ms))))
    }
}

/// tonic's `Routes` with the `Echo` service: serve it (wrapped in
/// `corering_net::grpc::Deadlines`) with `corering_net::grpc::server()`.
pub fn routes() -> Routes {
    Routes::new(EchoServer::new(EchoService::new()))
}

/// The replies of a server-stream call.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Result<EchoReply, Status>> + Send>>;

#[tonic::async_trait]
impl Echo for EchoService {
    async fn unary(&self, req: Request<EchoRequest>) -> Result<Response<EchoReply>, Status> {
        let req = req.into_inner();
        if let Some(sleep) = self.delay(req.delay_ms) {
            sleep.await;
        }
        Ok(Response::new(EchoReply {
            payload: req.payload,
            count: 1,
        }))
    }

    type ServerStreamStream = ReplyStream;

    async fn server_stream(
        &self,
        req: Request<StreamRequest>,
    ) -> Result<Response<ReplyStream>, Status> {
        let StreamRequest {
            count,
            size,
            seed,
            delay_ms,
        } = req.into_inner();
        let size = size as usize;
        if size > MAX_PAYLOAD || count > MAX_STREAM {
            return Err(Status::invalid_argument(format!(
                "size {size} (at most {MAX_PAYLOAD}) or count {count} (at most {MAX_STREAM})"
            )));
        }
        let this = *self;
        let replies = futures::stream::unfold(0u32, move |i| async move {
            if i >= count {
                return None;
            }
            if let Some(sleep) = this.delay(delay_ms) {
                sleep.await;
            }
            let reply = EchoReply {
                payload: pattern(seed, i, size),
                count: u64::from(i),
            };
            Some((Ok(reply), i + 1))
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn client_stream(
        &self,
        req: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<EchoReply>, Status> {
        let mut requests = req.into_inner();
        let mut payload = Vec::new();
        let mut count = 0u64;
        while let Some(msg) = requests.message().await? {
            if let Some(sleep) = self.delay(msg.delay_ms) {
                sleep.await;
            }
            if payload.len() + msg.payload.len() > MAX_PAYLOAD {
                return Err(Status::resource_exhausted(format!(
                    "client stream over {MAX_PAYLOAD} bytes"
                )));
            }
            payload.extend_from_slice(&msg.payload);
            count += 1;
        }
        Ok(Response::new(EchoReply { payload, count }))
    }
}
