//! The calls `grpc-client` and the tests make, with every byte of every reply checked
//! against what the service promises. Generic over the transport: this runtime's
//! `corering_net::grpc::Channel`, or tonic's own channel on tokio.

use std::time::Duration;

use bytes::Bytes;
use tonic::client::GrpcService;
use tonic::{Code, Request};

use crate::pattern;
use crate::pb::echo_client::EchoClient;
use crate::pb::{EchoRequest, StreamRequest};

/// A boxed error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a generated client needs of its transport, in one name.
pub trait Transport:
    GrpcService<
        tonic::body::Body,
        Error: Into<BoxError>,
        ResponseBody: http_body::Body<Data = Bytes, Error: Into<BoxError> + Send> + Send + 'static,
    > + Clone
{
}

impl<T> Transport for T where
    T: GrpcService<
            tonic::body::Body,
            Error: Into<BoxError>,
            ResponseBody: http_body::Body<Data = Bytes, Error: Into<BoxError> + Send>
                              + Send
                              + 'static,
        > + Clone
{
}

/// A small deterministic generator (xorshift64*) for payload sizes and bytes.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded (0 is mapped to a fixed non-zero seed).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..=max`.
    pub fn below(&mut self, max: usize) -> usize {
        (self.next_u64() % (max as u64 + 1)) as usize
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

/// Unary: `payload` must come back byte for byte.
///
/// # Errors
/// The call's status, or what differed.
pub async fn unary<T: Transport>(
    client: &mut EchoClient<T>,
    payload: Vec<u8>,
) -> Result<(), String> {
    let len = payload.len();
    let reply = client
        .unary(EchoRequest {
            payload: payload.clone(),
            delay_ms: 0,
        })
        .await
        .map_err(|s| format!("unary ({len} bytes): {s}"))?
        .into_inner();
    if reply.payload != payload {
        return Err(format!(
            "unary ({len} bytes): reply differs ({} bytes, first difference at {:?})",
            reply.payload.len(),
            first_difference(&reply.payload, &payload)
        ));
    }
    Ok(())
}

/// Server streaming: `count` replies, reply `i` being `pattern(seed, i, size)`.
///
/// # Errors
/// The call's status, or what differed.
pub async fn server_stream<T: Transport>(
    client: &mut EchoClient<T>,
    count: u32,
    size: u32,
    seed: u32,
) -> Result<(), String> {
    let what = format!("server stream ({count} x {size} bytes, seed {seed})");
    let mut replies = client
        .server_stream(StreamRequest {
            count,
            size,
            seed,
            delay_ms: 0,
        })
        .await
        .map_err(|s| format!("{what}: {s}"))?
        .into_inner();
    let mut i = 0u32;
    while let Some(reply) = replies
        .message()
        .await
        .map_err(|s| format!("{what}: {s}"))?
    {
        let want = pattern(seed, i, size as usize);
        if reply.count != u64::from(i) || reply.payload != want {
            return Err(format!(
                "{what}: reply {i} differs (index {}, {} bytes, first difference at {:?})",
                reply.count,
                reply.payload.len(),
                first_difference(&reply.payload, &want)
            ));
        }
        i += 1;
    }
    if i != count {
        return Err(format!("{what}: {i} replies"));
    }
    Ok(())
}

/// Client streaming: the reply is every payload concatenated, and their count.
///
/// # Errors
/// The call's status, or what differed.
pub async fn client_stream<T: Transport>(
    client: &mut EchoClient<T>,
    payloads: Vec<Vec<u8>>,
) -> Result<(), String> {
    let want: Vec<u8> = payloads.concat();
    let n = payloads.len();
    let what = format!("client stream ({n} messages, {} bytes)", want.len());
    let requests = futures::stream::iter(payloads.into_iter().map(|payload| EchoRequest {
        payload,
        delay_ms: 0,
    }));
    let reply = client
        .client_stream(requests)
        .await
        .map_err(|s| format!("{what}: {s}"))?
        .into_inner();
    if reply.count != n as u64 || reply.payload != want {
        return Err(format!(
            "{what}: reply differs (count {}, {} bytes, first difference at {:?})",
            reply.count,
            reply.payload.len(),
            first_difference(&reply.payload, &want)
        ));
    }
    Ok(())
}

/// A unary call whose server waits `delay` with a deadline of `deadline` set on the
/// request (`grpc-timeout`): it must end with `DEADLINE_EXCEEDED`.
///
/// # Errors
/// Any other outcome.
pub async fn deadline_exceeded<T: Transport>(
    client: &mut EchoClient<T>,
    deadline: Option<Duration>,
    delay: Duration,
) -> Result<(), String> {
    let mut req = Request::new(EchoRequest {
        payload: b"late".to_vec(),
        delay_ms: u32::try_from(delay.as_millis()).unwrap_or(u32::MAX),
    });
    if let Some(d) = deadline {
        req.set_timeout(d);
    }
    match client.unary(req).await {
        Err(s) if s.code() == Code::DeadlineExceeded => Ok(()),
        Err(s) => Err(format!("deadline: want DEADLINE_EXCEEDED, got {s}")),
        Ok(_) => Err("deadline: the call succeeded past its deadline".to_owned()),
    }
}

/// Every method, `calls` times in all with random payloads up to `max_size` bytes,
/// `concurrency` calls at once (on clones of `client`: one connection, many streams).
///
/// # Errors
/// The first failure.
pub async fn all<T: Transport>(
    client: &EchoClient<T>,
    calls: usize,
    max_size: usize,
    concurrency: usize,
    seed: u64,
) -> Result<(), String> {
    use futures::stream::{StreamExt, TryStreamExt};
    let mut rng = Rng::new(seed);
    let jobs: Vec<(usize, u64)> = (0..calls).map(|i| (i % 3, rng.next_u64())).collect();
    futures::stream::iter(jobs)
        .map(|(kind, seed)| {
            let mut client = client.clone();
            async move {
                let mut rng = Rng::new(seed);
                match kind {
                    0 => {
                        let size = rng.below(max_size);
                        unary(&mut client, rng.bytes(size)).await
                    }
                    1 => {
                        let count = 1 + rng.below(8) as u32;
                        let size = rng.below(max_size / count as usize) as u32;
                        server_stream(&mut client, count, size, rng.next_u64() as u32).await
                    }
                    _ => {
                        let n = rng.below(8);
                        let per = max_size / n.max(1);
                        let payloads = (0..n).map(|_| {
                            let size = rng.below(per);
                            rng.bytes(size)
                        });
                        client_stream(&mut client, payloads.collect()).await
                    }
                }
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<()>()
        .await
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}
