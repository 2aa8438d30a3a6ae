//! unary-grpc and stream-grpc: HttpArena's `benchmark.BenchmarkService`
//! (proto/benchmark.proto) with tonic's generated server, runtime-independent.

use std::pin::Pin;

use futures::Stream;
use tonic::{Request, Response, Status, Streaming};

/// The messages and server tonic generated from `benchmark.proto`.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("benchmark");
}

use proto::benchmark_service_server::{BenchmarkService, BenchmarkServiceServer};
use proto::{StreamRequest, SumReply, SumRequest};

/// The route of the service's methods (`/benchmark.BenchmarkService/GetSum`, ...).
pub const PATHS: &str = "/benchmark.BenchmarkService/{*method}";

/// The most replies one `StreamSum` call sends (HttpArena asks for 5,000).
pub const MAX_STREAM: i32 = 1_000_000;

/// The service: sums of two integers, once or as a stream.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sums;

/// A stream of replies.
type Replies = Pin<Box<dyn Stream<Item = Result<SumReply, Status>> + Send>>;

#[tonic::async_trait]
impl BenchmarkService for Sums {
    async fn get_sum(&self, req: Request<SumRequest>) -> Result<Response<SumReply>, Status> {
        let SumRequest { a, b } = req.into_inner();
        Ok(Response::new(SumReply {
            result: a.wrapping_add(b),
        }))
    }

    type StreamSumStream = Replies;

    /// `count` replies (clamped to 1..=[`MAX_STREAM`]), `a + b + i` for `i` from 0.
    async fn stream_sum(&self, req: Request<StreamRequest>) -> Result<Response<Replies>, Status> {
        let StreamRequest { a, b, count } = req.into_inner();
        let sum = a.wrapping_add(b);
        let replies = (0..count.clamp(1, MAX_STREAM)).map(move |i| {
            Ok(SumReply {
                result: sum.wrapping_add(i),
            })
        });
        Ok(Response::new(Box::pin(futures::stream::iter(replies))))
    }

    /// The total of every request's `a + b`.
    async fn collect_sum(
        &self,
        req: Request<Streaming<SumRequest>>,
    ) -> Result<Response<SumReply>, Status> {
        let mut requests = req.into_inner();
        let mut total = 0i32;
        while let Some(r) = requests.message().await? {
            total = total.wrapping_add(r.a.wrapping_add(r.b));
        }
        Ok(Response::new(SumReply { result: total }))
    }

    type EchoSumStream = Replies;

    /// One reply per request, `a + b`, as they come.
    async fn echo_sum(
        &self,
        req: Request<Streaming<SumRequest>>,
    ) -> Result<Response<Replies>, Status> {
        let requests = req.into_inner();
        let replies = futures::StreamExt::map(requests, |r| {
            r.map(|r| SumReply {
                result: r.a.wrapping_add(r.b),
            })
        });
        Ok(Response::new(Box::pin(replies)))
    }
}

/// The service as tonic's server, for [`tonic::service::Routes`].
pub fn server() -> BenchmarkServiceServer<Sums> {
    BenchmarkServiceServer::new(Sums)
}
