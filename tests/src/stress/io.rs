//! The two sides of a stress case: the echo server ([`serve`]) and the clients
//! ([`clients`]), over each transport, through each read and write API.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use corering_net::tls::rustls::{self, pki_types};
use corering_net::tls::{TlsAcceptor, TlsConnector};
use corering_net::{Chunk, ListenOptions, TcpListener, TcpStream, UnixListener, UnixStream};

use super::{pattern, write_sizes, Case, Plan, ReadApi, Reader, Transport, WriteApi};
use crate::Rng;

/// Where the server listens.
pub(super) enum Addr {
    Tcp(SocketAddr),
    /// The socket's directory (removed after the case) and its path.
    Unix(PathBuf, PathBuf),
}

/// How long a case may take before it is reported as hung.
const CASE_LIMIT: Duration = Duration::from_secs(240);
/// The largest read a reader asks for.
const MAX_READ: u64 = 256 * 1024;

/// Received bytes: a chunk of the ring or bytes of our own.
enum Got {
    Chunk(Chunk),
    Bytes(Vec<u8>),
}

impl Got {
    fn bytes(&self) -> &[u8] {
        match self {
            Got::Chunk(c) => c,
            Got::Bytes(v) => v,
        }
    }
}

/// A read direction: one read through the API asked for.
trait ReadSide {
    async fn read_with(&mut self, api: ReadApi, len: usize, rng: &mut Rng) -> io::Result<Got>;
}

/// A write direction: one write through the API asked for; `finish` flushes and shuts it.
trait WriteSide {
    async fn write_with(&mut self, api: WriteApi, data: Got, rng: &mut Rng) -> io::Result<()>;
    async fn finish(&mut self) -> io::Result<()>;
}

/// `ReadApi::Mixed` made concrete: one of the others at random.
fn pick_read(api: ReadApi, rng: &mut Rng) -> ReadApi {
    const ALL: [ReadApi; 5] = [
        ReadApi::Chunk,
        ReadApi::Futures,
        ReadApi::Tokio,
        ReadApi::ReadBuf,
        ReadApi::Owned,
    ];
    match api {
        ReadApi::Mixed => ALL[rng.below(ALL.len() as u64) as usize],
        other => other,
    }
}

/// `WriteApi::Mixed` made concrete for `data`: `Chunk` only for a chunk.
fn pick_write(api: WriteApi, data: &Got, rng: &mut Rng) -> WriteApi {
    const ALL: [WriteApi; 5] = [
        WriteApi::Chunk,
        WriteApi::Futures,
        WriteApi::Tokio,
        WriteApi::Owned,
        WriteApi::Writev,
    ];
    match api {
        WriteApi::Mixed => match (ALL[rng.below(ALL.len() as u64) as usize], data) {
            (WriteApi::Chunk, Got::Bytes(_)) => WriteApi::Futures,
            (w, _) => w,
        },
        other => other,
    }
}

/// `data` cut into one to four pieces (for `writev_all`).
fn pieces(data: &[u8], rng: &mut Rng) -> Vec<Vec<u8>> {
    let n = rng.range(1, 4) as usize;
    let mut out = Vec::with_capacity(n);
    let mut rest = data;
    for i in 0..n {
        let take = if i + 1 == n {
            rest.len()
        } else {
            rng.below(rest.len() as u64 + 1) as usize
        };
        out.push(rest[..take].to_vec());
        rest = &rest[take..];
    }
    out
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} on a TLS stream"),
    )
}

/// The read APIs of a socket type (stream or read half) that has them all.
macro_rules! socket_read {
    ($($ty:ty),*) => {$(
        impl ReadSide for $ty {
            async fn read_with(
                &mut self,
                api: ReadApi,
                len: usize,
                rng: &mut Rng,
            ) -> io::Result<Got> {
                Ok(match pick_read(api, rng) {
                    ReadApi::Chunk => Got::Chunk(self.read_chunk().await?),
                    ReadApi::Futures => {
                        let mut v = vec![0; len];
                        let n = futures::AsyncReadExt::read(self, &mut v).await?;
                        v.truncate(n);
                        Got::Bytes(v)
                    }
                    ReadApi::Tokio => {
                        let mut v = vec![0; len];
                        let n = tokio::io::AsyncReadExt::read(self, &mut v).await?;
                        v.truncate(n);
                        Got::Bytes(v)
                    }
                    ReadApi::ReadBuf => {
                        let (res, v) = self.read_buf_owned(Vec::with_capacity(len)).await;
                        res?;
                        Got::Bytes(v)
                    }
                    ReadApi::Owned | ReadApi::Mixed => {
                        let (res, mut v) = self.read_owned(vec![0; len]).await;
                        v.truncate(res?);
                        Got::Bytes(v)
                    }
                })
            }
        }
    )*};
}

/// The write APIs of a socket type (stream or write half) that has them all.
macro_rules! socket_write {
    ($($ty:ty),*) => {$(
        impl WriteSide for $ty {
            async fn write_with(
                &mut self,
                api: WriteApi,
                data: Got,
                rng: &mut Rng,
            ) -> io::Result<()> {
                match (pick_write(api, &data, rng), data) {
                    (WriteApi::Chunk, Got::Chunk(c)) => self.write_chunk(c).await,
                    (WriteApi::Owned, Got::Chunk(c)) => self.write_all_owned(c).await.0,
                    (WriteApi::Owned, Got::Bytes(v)) => self.write_all_owned(v).await.0,
                    (WriteApi::Writev, d) => self.writev_all_owned(pieces(d.bytes(), rng)).await.0,
                    (WriteApi::Tokio, d) => {
                        tokio::io::AsyncWriteExt::write_all(self, d.bytes()).await
                    }
                    (_, d) => futures::AsyncWriteExt::write_all(self, d.bytes()).await,
                }
            }

            async fn finish(&mut self) -> io::Result<()> {
                futures::AsyncWriteExt::close(self).await
            }
        }
    )*};
}

socket_read!(
    TcpStream,
    UnixStream,
    corering_net::tcp::OwnedReadHalf,
    corering_net::unix::OwnedReadHalf
);
socket_write!(
    TcpStream,
    UnixStream,
    corering_net::tcp::OwnedWriteHalf,
    corering_net::unix::OwnedWriteHalf
);

/// The server side of TLS: the trait APIs only.
type ServerTls = corering_net::tls::TlsStream<TcpStream>;
/// The client side of TLS, split by `futures`: futures' traits only.
type TlsRead = futures::io::ReadHalf<corering_net::tls::TlsStream<TcpStream>>;
type TlsWrite = futures::io::WriteHalf<corering_net::tls::TlsStream<TcpStream>>;

impl ReadSide for ServerTls {
    async fn read_with(&mut self, api: ReadApi, len: usize, _: &mut Rng) -> io::Result<Got> {
        let mut v = vec![0; len];
        let n = match api {
            ReadApi::Futures => futures::AsyncReadExt::read(self, &mut v).await?,
            ReadApi::Tokio => tokio::io::AsyncReadExt::read(self, &mut v).await?,
            _ => return Err(unsupported("an owned or chunk read")),
        };
        v.truncate(n);
        Ok(Got::Bytes(v))
    }
}

impl WriteSide for ServerTls {
    async fn write_with(&mut self, api: WriteApi, data: Got, _: &mut Rng) -> io::Result<()> {
        match api {
            WriteApi::Futures => futures::AsyncWriteExt::write_all(self, data.bytes()).await,
            WriteApi::Tokio => tokio::io::AsyncWriteExt::write_all(self, data.bytes()).await,
            _ => Err(unsupported("an owned or chunk write")),
        }
    }

    async fn finish(&mut self) -> io::Result<()> {
        futures::AsyncWriteExt::close(self).await
    }
}

impl ReadSide for TlsRead {
    async fn read_with(&mut self, _: ReadApi, len: usize, _: &mut Rng) -> io::Result<Got> {
        let mut v = vec![0; len];
        let n = futures::AsyncReadExt::read(self, &mut v).await?;
        v.truncate(n);
        Ok(Got::Bytes(v))
    }
}

impl WriteSide for TlsWrite {
    async fn write_with(&mut self, _: WriteApi, data: Got, _: &mut Rng) -> io::Result<()> {
        futures::AsyncWriteExt::write_all(self, data.bytes()).await
    }

    async fn finish(&mut self) -> io::Result<()> {
        futures::AsyncWriteExt::close(self).await
    }
}

/// Echoes until end of stream with the plan's server APIs, then shuts the write side.
async fn echo<S: ReadSide + WriteSide>(mut s: S, plan: Plan) -> io::Result<()> {
    let mut rng = Rng::new(plan.seed ^ 0x5EED);
    loop {
        let len = rng.range(1, MAX_READ) as usize;
        let got = s.read_with(plan.server_read, len, &mut rng).await?;
        if got.bytes().is_empty() {
            break;
        }
        s.write_with(plan.server_write, got, &mut rng).await?;
    }
    s.finish().await
}

/// The server: binds, reports its address, accepts one connection per plan (the i-th
/// accepted uses plan i's server APIs) and echoes on each until all are done; then checks
/// that the core is at rest.
pub(super) fn serve(
    case: &Case,
    plans: &[Plan],
    tls: Option<Arc<rustls::ServerConfig>>,
    addr_tx: mpsc::Sender<Result<Addr, String>>,
) -> Result<(), String> {
    let rt = match case.builder().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = addr_tx.send(Err(e.to_string()));
            return Err(format!("building the server runtime: {e}"));
        }
    };
    let tls = tls.map(TlsAcceptor::new);
    let res = rt.block_on(async {
        let baseline = runtime::core_metrics().map_or(0, |s| s.alive_tasks);
        let options = ListenOptions::new().backlog(4096);
        let mut tasks = Vec::with_capacity(plans.len());
        let work = async {
            match case.transport {
                Transport::Tcp | Transport::Tls => {
                    let l = TcpListener::bind_with("127.0.0.1:0", &options)
                        .map_err(|e| e.to_string())?;
                    let _ = addr_tx.send(Ok(Addr::Tcp(l.local_addr().map_err(|e| e.to_string())?)));
                    for &plan in plans {
                        let (s, _) = l.accept().await.map_err(|e| format!("accept: {e}"))?;
                        let task = match &tls {
                            None => runtime::spawn_local(echo(s, plan)),
                            Some(acceptor) => {
                                let acceptor = acceptor.clone();
                                runtime::spawn_local(async move {
                                    echo(acceptor.accept(s).await?, plan).await
                                })
                            }
                        };
                        tasks.push(task);
                    }
                }
                Transport::Unix => {
                    let dir = unix_dir();
                    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                    let path = dir.join("sock");
                    let l = UnixListener::bind(&path).map_err(|e| e.to_string())?;
                    let _ = addr_tx.send(Ok(Addr::Unix(dir, path)));
                    for &plan in plans {
                        let (s, _) = l.accept().await.map_err(|e| format!("accept: {e}"))?;
                        tasks.push(runtime::spawn_local(echo(s, plan)));
                    }
                }
            }
            let mut errors = Vec::new();
            for (i, t) in tasks.drain(..).enumerate() {
                match t.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => errors.push(format!("accepted #{i}: {} ({e:?})", e)),
                    Err(e) => errors.push(format!("accepted #{i}: task failed: {e}")),
                }
            }
            if errors.is_empty() {
                Ok(())
            } else {
                Err(summarize(errors))
            }
        };
        let res = match runtime::time::timeout(CASE_LIMIT, work).await {
            Ok(r) => r,
            Err(_) => Err(format!("timed out after {CASE_LIMIT:?}")),
        };
        drop(tasks);
        res.and(at_rest(baseline).await)
    });
    drop(rt);
    res
}

/// The clients: one task per plan, each connecting, writing its stream in random sizes
/// and reading back (checking) the echo. Returns how many read futures were dropped.
pub(super) fn clients(
    case: &Case,
    plans: &[Plan],
    tls: Option<Arc<rustls::ClientConfig>>,
    addr: &Addr,
) -> Result<u64, String> {
    let rt = case
        .builder()
        .build()
        .map_err(|e| format!("building the client runtime: {e}"))?;
    let tls = tls.map(TlsConnector::new);
    let dropped = Rc::new(AtomicU64::new(0));
    let res = rt.block_on(async {
        let baseline = runtime::core_metrics().map_or(0, |s| s.alive_tasks);
        let conns = plans.len() as u32;
        let mut tasks = Vec::with_capacity(plans.len());
        for &plan in plans {
            let (tls, dropped, max_write) = (tls.clone(), dropped.clone(), case.max_write);
            let target = match addr {
                Addr::Tcp(a) => Ok(*a),
                Addr::Unix(_, p) => Err(p.clone()),
            };
            tasks.push(runtime::spawn_local(async move {
                let run = async {
                    match (target, tls) {
                        (Ok(a), None) => {
                            let (r, w) = TcpStream::connect(a).await?.into_split();
                            client(r, w, plan, conns, max_write, &dropped).await
                        }
                        (Ok(a), Some(connector)) => {
                            let s = connector
                                .connect("localhost", TcpStream::connect(a).await?)
                                .await?;
                            let (r, w) = futures::AsyncReadExt::split(s);
                            client(r, w, plan, conns, max_write, &dropped).await
                        }
                        (Err(p), _) => {
                            let (r, w) = UnixStream::connect(&p).await?.into_split();
                            client(r, w, plan, conns, max_write, &dropped).await
                        }
                    }
                };
                run.await
                    .map_err(|e| format!("conn {} {plan:?}: {e} ({e:?})", plan.conn))
            }));
        }
        let work = async {
            let mut errors = Vec::new();
            for t in tasks.drain(..) {
                match t.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => errors.push(e),
                    Err(e) => errors.push(format!("a client task failed: {e}")),
                }
            }
            if errors.is_empty() {
                Ok(())
            } else {
                Err(summarize(errors))
            }
        };
        let res = match runtime::time::timeout(CASE_LIMIT, work).await {
            Ok(r) => r,
            Err(_) => Err(format!("timed out after {CASE_LIMIT:?}")),
        };
        drop(tasks);
        res.and(at_rest(baseline).await)
    });
    drop(rt);
    res.map(|()| dropped.load(Ordering::Relaxed))
}

/// One client: writes the plan's stream while reading (and checking) the echo.
async fn client<R: ReadSide, W: WriteSide>(
    mut r: R,
    mut w: W,
    plan: Plan,
    conns: u32,
    max_write: usize,
    dropped: &AtomicU64,
) -> io::Result<()> {
    let writer = async {
        let mut rng = Rng::new(plan.seed ^ 0xC11E);
        let mut off = 0;
        for n in write_sizes(plan.seed, plan.bytes, max_write) {
            let data = pattern::bytes(plan.conn, off, n);
            w.write_with(plan.client_write, Got::Bytes(data), &mut rng)
                .await?;
            off += n as u64;
        }
        w.finish().await
    };
    let reader = async {
        let mut rng = Rng::new(plan.seed ^ 0x4EAD);
        let mut pick = Rng::new(plan.seed ^ 0x91C4);
        let mut off = 0u64;
        let mut scratch = Vec::new();
        loop {
            let len = rng.range(1, MAX_READ) as usize;
            let read = r.read_with(plan.client_read, len, &mut pick);
            let got = match plan.reader {
                Reader::Dropping if rng.one_in(3) => {
                    let wait = Duration::from_micros(rng.range(1, 300));
                    match runtime::time::timeout(wait, read).await {
                        Ok(got) => got?,
                        Err(_) => {
                            dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    }
                }
                _ => read.await?,
            };
            let bytes = got.bytes();
            if bytes.is_empty() {
                break;
            }
            if off + bytes.len() as u64 > plan.bytes {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} bytes past the {} sent",
                        off + bytes.len() as u64 - plan.bytes,
                        plan.bytes
                    ),
                ));
            }
            pattern::check(plan.conn, off, bytes, conns, &mut scratch)
                .map_err(|m| io::Error::new(io::ErrorKind::InvalidData, m.to_string()))?;
            off += bytes.len() as u64;
            if plan.reader == Reader::Slow && rng.one_in(8) {
                runtime::time::sleep(Duration::from_millis(1)).await;
            }
        }
        if off != plan.bytes {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the echo ended after {off} of {} bytes", plan.bytes),
            ));
        }
        Ok(())
    };
    let (wr, rd) = futures::join!(writer, reader);
    rd.and(wr)
}

/// Waits (a second at most) for this core to be at rest: its read ring's buffers all back,
/// only `baseline` tasks alive.
async fn at_rest(baseline: u64) -> Result<(), String> {
    let mut waited = 0;
    loop {
        let out = runtime::buf::core_ring().map_or(0, |r| r.outstanding());
        let tasks = runtime::core_metrics().map_or(0, |s| s.alive_tasks);
        if out == 0 && tasks <= baseline {
            return Ok(());
        }
        if waited >= 200 {
            return Err(format!(
                "not at rest: {out} provided buffers out of the ring, {tasks} tasks alive \
                 ({baseline} before)"
            ));
        }
        runtime::time::sleep(Duration::from_millis(5)).await;
        waited += 1;
    }
}

/// The first few errors, and how many there were.
fn summarize(errors: Vec<String>) -> String {
    let n = errors.len();
    let mut s = errors.into_iter().take(5).collect::<Vec<_>>().join("; ");
    if n > 5 {
        s.push_str(&format!("; and {} more", n - 5));
    }
    s
}

/// A fresh directory for a Unix socket.
fn unix_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "stress-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A self-signed certificate for `localhost` and the configurations around it.
pub(super) fn tls_configs() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("a self-signed certificate");
    let cert = certified.cert.der().clone();
    let key = pki_types::PrivateKeyDer::Pkcs8(pki_types::PrivatePkcs8KeyDer::from(
        certified.key_pair.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .expect("the server certificate");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).expect("the root certificate");
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    (Arc::new(server), Arc::new(client))
}
